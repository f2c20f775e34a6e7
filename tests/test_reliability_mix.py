"""Issue 11, the remote half: kill -9 during sync, backup and restore against real remotes, and
16 processes mixing updates, claims, imports and syncs through one remote.

Both run the benchmarks small (``benchmarks/kill_harness.py sync`` and
``benchmarks/reliability_mix.py``; their full runs are the figures in docs/RELIABILITY.md), with a
bare repository on disk and a ``git daemon`` on loopback as the remotes.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from gitledger.errors import ClaimConflict

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_killed_sync_backup_and_restore_lose_nothing_and_need_no_repair(tmp_path: Path) -> None:
    harness = _load("kill_harness")
    report = harness.run_sync_kills(tmp_path, 16, lanes=("path", "daemon"), seed=5)
    assert report.kills >= 16
    assert report.local_notes_acked > 0 and report.other_notes_synced > 0
    # Every kind of command was killed at least once (4 kinds of pick, 16+ rounds).
    assert {op for op, stats in report.by_op.items() if stats["kills"]} >= {"sync", "restore"}
    problems = {
        "lost_local": report.lost_local,
        "lost_remote": report.lost_remote,
        "lost_after_next_sync": report.lost_after_next_sync,
        "notes_duplicated": report.notes_duplicated,
        "acked_remote_mismatches": report.acked_remote_mismatches,
        "acked_restore_mismatches": report.acked_restore_mismatches,
        "verify_local_failures": report.verify_local_failures,
        "verify_remote_failures": report.verify_remote_failures,
        "fsck_remote_failures": report.fsck_remote_failures,
        # A ref lock left by a kill is removed by the next write once it is past gitledger's
        # stale age (5 s); a next command that needed more than that wait needed a repair.
        "next_command_needing_repair": report.next_command_failures - report.healed_after_waiting,
        "still_failing_after_repair": report.still_failing_after_repair,
        "failures_without_kill": report.failures_without_kill,
        "index_mismatches": report.index_mismatches,
    }
    assert all(v == 0 for v in problems.values()), (problems, report.failure_messages)
    assert report.remote_verifies >= 2


@pytest.mark.slow
def test_sixteen_processes_mixing_updates_claims_imports_and_syncs_lose_nothing(
    tmp_path: Path,
) -> None:
    mix = _load("reliability_mix")
    report = mix.run_mix(tmp_path, workers=16, machines=4, tasks=50, ops=4, seed=3)
    assert report.ops_attempted == 16 * (4 + 5)
    assert report.claims_attempted == 16 * 5
    assert report.notes_acked + report.imports_acked > 0
    assert report.claims_won == 5
    assert report.claim_tasks_without_one_winner == 0
    assert report.owner_mismatches == 0
    assert report.lost_on_remote == 0 and report.lost_on_machines == 0
    assert report.misplaced == 0 and report.duplicated == 0
    assert report.unexpected_errors == 0, report.error_messages
    assert report.worker_failures == 0, report.error_messages
    assert report.final_sync_failures == 0, report.error_messages
    assert report.verify_failures == 0, report.error_messages
    assert report.index_vs_refs_mismatches == 0
    assert report.index_vs_rebuild_mismatches == 0, report.error_messages
    assert not mix.bad(report)


def test_the_mix_tally_counts_acknowledgements_winners_and_give_ups() -> None:
    """Two workers told they won one claim are both counted (the check then flags the claim)."""
    mix = _load("reliability_mix")
    report = mix.MixReport(workers=2, machines=1, tasks=2, claim_tasks=1, remote="path")
    results = [
        {"op": "note", "task": "T1", "token": "w0-note-1"},
        {"op": "claim", "task": "T0", "won": True, "actor": "worker-0"},
        {"op": "claim", "task": "T0", "won": True, "actor": "worker-1"},
        {"op": "sync", "error": "RemoteMoved", "message": "the remote kept moving"},
        {"op": "done", "peak_rss_mb": 12.5},
    ]
    mix._tally(report, results)
    assert report.ops_attempted == 4
    assert report.notes_acked == 1 and report.claims_won == 2
    assert report.syncs_gave_up == 1 and report.unexpected_errors == 0
    assert report.peak_worker_rss_mb == 12.5


def test_a_claim_the_remote_accepted_is_not_overturned_by_a_sync_of_an_uncounted_claim(
    tmp_path: Path,
) -> None:
    """The mix's two winners, made step by step: worker a on machine 1 is inside
    ``sync.claim`` (its local claim commit made, its push not yet sent); worker b on machine 2
    claims with --push and is told it won; another process on machine 1 runs ``sync``; then a's
    ``sync.claim`` goes on."""
    import subprocess

    from gitledger import sync
    from gitledger.ledger import Ledger

    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    first = Ledger.open(tmp_path / "m1", create=True, actor="setup")
    task = first.create("contested").id
    sync.backup(first, str(remote))
    sync.restore(Ledger.open(tmp_path / "m2", create=True, actor="setup"), str(remote))

    Ledger.open(tmp_path / "m1").claim(task, actor="worker-a")  # a's claim, not pushed yet
    b_won = sync.claim(Ledger.open(tmp_path / "m2"), task, str(remote), actor="worker-b")
    assert b_won.owner == "worker-b"  # the remote accepted b's claim: b is told it won
    sync.sync(Ledger.open(tmp_path / "m1"), url=str(remote))  # another process on machine 1
    try:
        a_won = (
            sync.claim(Ledger.open(tmp_path / "m1"), task, str(remote), actor="worker-a").owner
            == "worker-a"
        )
    except ClaimConflict:
        a_won = False
    assert not a_won, "two workers were told they won the same claim"
    assert Ledger.open(remote).show(task).owner == "worker-b"


def test_a_staging_lock_left_by_a_killed_sync_does_not_block_the_next_sync(
    tmp_path: Path,
) -> None:
    import os
    import subprocess
    import time

    from conftest import run_cli

    from gitledger import sync
    from gitledger.ledger import Ledger

    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    a = Ledger.open(tmp_path / "a", create=True, actor="a")
    task = a.create("fetched by the next sync").id
    sync.backup(a, str(remote))
    b = Ledger.open(tmp_path / "b", create=True, actor="b")
    sync.restore(b, str(remote))
    b.update(task, notes=["from b"])
    sync.sync(Ledger.open(tmp_path / "b"), url=str(remote))
    # What a sync killed inside its fetch leaves: the lock of the staged ref, an hour old.
    lock = tmp_path / "a" / f"{sync.remote.staging_namespace(str(remote))}tasks/{task}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("0" * 40 + "\n")
    os.utime(lock, (time.time() - 3600, time.time() - 3600))
    done = run_cli("sync", str(remote), "--json", env={"GITLEDGER_DIR": str(tmp_path / "a")})
    assert done.returncode == 0, done.stderr
    assert "from b" in [n.text for n in Ledger.open(tmp_path / "a").show(task).notes]
