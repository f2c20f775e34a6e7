"""16 processes on several machines' ledgers mixing updates, claims, imports and syncs through one
remote, across 50 tasks; then count what was lost.

    python benchmarks/reliability_mix.py [--workers 16] [--machines 4] [--tasks 50] [--ops 30]
                                         [--remote daemon|path] [--seed N] [--json FILE]

Setup: machine 0 creates ``--tasks`` tasks and backs them up to one remote (a bare repository
behind ``git daemon`` on loopback, or a bare repository path); every other machine restores from
it. A tenth of the tasks are claim targets.

Each of ``--workers`` processes works on the ledger of machine ``worker % machines`` (so several
processes share each ledger, and several ledgers share the remote) through the gitledger API, one
interpreter per process so that an operation costs its work and not a start-up. Each runs
``--ops`` operations in random order, plus one claim of every claim target:

- ``note``: ``Ledger.update(task, notes=[token])``; acknowledged when it returns.
- ``import``: a JSONL line built from the task as ``task show --json`` prints it, plus one new
  note, through ``transfer.import_tasks`` (what ``gitledger task import FILE`` runs): an update by
  import; acknowledged when the report counts it updated. Imports touch the tasks that are not
  claim targets: an import line carries every field of the record, owner included, so a line
  built before a claim landed undoes it (documented whole-record semantics, not a race).
- ``sync``: ``sync.sync`` with the remote; it may give up when the remote keeps moving (exit 3 on
  the CLI), which loses nothing.
- ``claim``: ``sync.claim`` (what ``task claim ID --push`` runs): the claim counts once the remote
  accepted it; a worker is told it won or gets ``ClaimConflict``.

Every task any worker touches is one of the same ``--tasks``. Afterwards every machine syncs, twice
round, and the run checks: every acknowledged note (update or import) is on the remote and on every
machine, in its task, exactly once; every claim target has exactly one worker told it won, and its
owner on the remote and on every machine is that worker; ``verify`` passes on every ledger and on
the remote; and on every machine ``task list`` and ``task inbox`` served by the index equal what a
fresh ``index rebuild`` serves, and the refs. A sync or claim that failed only because another ran
at the same time (nothing lost or changed) is counted by cause under ``concurrency_failures``;
any other failure is ``unexpected_errors``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GL = [sys.executable, "-m", "gitledger"]
# A sync or push-claim that failed because another one ran at the same time (the findings in
# docs/RELIABILITY.md): nothing is lost or changed, but the command fails. Cause -> words.
CONCURRENCY_CAUSES = {
    "lock collision in the ledger's staging refs or shallow.lock": (
        "failed to lock file",
        "failed to create locked file",
        "unable to update local ref",
        "cannot lock ref",
    ),
    "another fetch's objects not complete yet, reported as a damaged remote": (
        "a Git object is missing",
        "Unable to read tree",
    ),
    "a push landed on top before the after-push check": ("does not hold what was pushed",),
}

WORKER = r"""
import json, random, resource, sys, traceback
from pathlib import Path
from gitledger import sync
from gitledger.errors import ClaimConflict, LedgerError
from gitledger.transfer import import_tasks
from gitledger.ledger import Ledger
from gitledger.model import new_entry_id, now_iso

ledger_path, url, worker, seed, ops = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
note_ids, claim_ids = json.loads(sys.stdin.read())
rng = random.Random(seed)
actor = f"worker-{worker}"
path = Path(ledger_path)
kinds = ["note"] * 5 + ["import"] * 2 + ["sync"] * 2
plan = [("claim", c) for c in claim_ids] + [(rng.choice(kinds), None) for _ in range(ops)]
rng.shuffle(plan)


def say(**data):
    print(json.dumps(data), flush=True)


for n, (kind, target) in enumerate(plan):
    led = Ledger.open(path, actor=actor)
    token = f"w{worker}-{kind}-{n}"
    try:
        if kind == "claim":
            try:
                task = sync.claim(led, target, url, actor=actor)
                say(op="claim", task=target, won=task.owner == actor, actor=actor)
            except ClaimConflict:
                say(op="claim", task=target, won=False, actor=actor)
        elif kind == "note":
            target = rng.choice(note_ids + claim_ids)
            led.update(target, notes=[token], actor=actor)
            say(op="note", task=target, token=token)
        elif kind == "import":
            target = rng.choice(note_ids)
            line = led.show(target).to_json_dict()
            line["notes"] = list(line["notes"]) + [
                {"id": new_entry_id(), "text": token, "at": now_iso(), "actor": actor}
            ]
            report = import_tasks(led, [json.dumps(line)], actor=actor)
            say(op="import", task=target, token=token, acked=report.updated == 1,
                locked=report.locked, conflicts=report.conflicts)
        else:
            report = sync.sync(led, url=url)
            say(op="sync", ok=True, merged=len(report.merged), pushed=len(report.pushed),
                attempts=report.attempts)
    except LedgerError as exc:
        say(op=kind, task=target, token=token, error=type(exc).__name__, message=exc.message)
    except Exception as exc:
        say(op=kind, task=target, token=token, error=type(exc).__name__,
            message="".join(traceback.format_exception(exc))[-800:])
say(op="done", peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1))
"""


@dataclass
class MixReport:
    workers: int
    machines: int
    tasks: int
    claim_tasks: int
    remote: str
    ops_attempted: int = 0
    notes_attempted: int = 0
    notes_acked: int = 0
    imports_attempted: int = 0
    imports_acked: int = 0
    syncs_attempted: int = 0
    syncs_ok: int = 0
    syncs_gave_up: int = 0  # RemoteMoved after every retry: nothing lost, the next sync goes on
    concurrency_failures: dict[str, int] = field(default_factory=dict)  # cause -> failed ops
    claims_attempted: int = 0
    claims_won: int = 0
    claim_tasks_without_one_winner: int = 0
    owner_mismatches: int = 0  # a machine or the remote names another owner than the winner
    lost_on_remote: int = 0  # acknowledged note (update or import) missing on the remote
    lost_on_machines: int = 0  # ... missing on some machine after the final syncs
    misplaced: int = 0  # stored in another task than the one acknowledged
    duplicated: int = 0
    unexpected_errors: int = 0  # an operation that failed other than by losing a race
    errors_by_kind: dict[str, int] = field(default_factory=dict)
    error_messages: list[str] = field(default_factory=list)
    worker_failures: int = 0
    final_sync_failures: int = 0
    verify_failures: int = 0  # over every machine and the remote
    index_vs_rebuild_mismatches: int = -1  # task list / inbox rows differing from a fresh rebuild
    index_vs_refs_mismatches: int = -1
    seconds: float = 0.0
    ops_per_second: float = 0.0
    peak_worker_rss_mb: float = 0.0
    peak_child_rss_mb: float = 0.0


def _harness() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "kill_harness", ROOT / "benchmarks" / "kill_harness.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["kill_harness"] = module
    spec.loader.exec_module(module)
    return module


def _env(ledger: Path, actor: str = "mix") -> dict[str, str]:
    env = dict(os.environ)
    env["GITLEDGER_DIR"] = str(ledger)
    env["GITLEDGER_ACTOR"] = actor
    env.pop("GITLEDGER_FSYNC", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    return env


def _cli(ledger: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*GL, *args],
        env=_env(ledger),
        cwd=ledger.parent,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _rows(ledger: Path) -> dict[str, Any]:
    """What the index serves: ``task list`` and ``task inbox`` rows (id, version, owner, status)."""
    out: dict[str, Any] = {}
    for view in ("list", "inbox"):
        limit = ["--limit", "100000"] if view == "list" else ["100000"]
        args = ["task", view, *limit, "--json"]
        proc = _cli(ledger, *args)
        if proc.returncode != 0:
            out[view] = f"failed: {proc.stderr[-200:]}"
            continue
        out[view] = sorted(
            (t["id"], t["version"], t.get("owner"), t.get("status"))
            for t in json.loads(proc.stdout)
        )
    return out


def index_against_rebuild(ledger: Path) -> list[str]:
    """Rows of list and inbox that differ between the index as the run left it and a rebuild."""
    before = _rows(ledger)
    rebuilt = _cli(ledger, "index", "rebuild", "--json")
    if rebuilt.returncode != 0:
        return [f"{ledger.name}: index rebuild failed: {rebuilt.stderr[-300:]}"]
    after = _rows(ledger)
    found = []
    for view in ("list", "inbox"):
        a, b = before[view], after[view]
        if isinstance(a, str) or isinstance(b, str):
            found.append(f"{ledger.name} {view}: {a if isinstance(a, str) else b}")
            continue
        for row in sorted(set(a) ^ set(b)):
            side = "index only" if row in a else "rebuild only"
            found.append(f"{ledger.name} {view} {side}: {row}")
    return found


def run_mix(
    root: Path,
    *,
    workers: int = 16,
    machines: int = 4,
    tasks: int = 50,
    ops: int = 30,
    remote: str = "daemon",
    seed: int = 0,
) -> MixReport:
    from gitledger import sync
    from gitledger.ledger import Ledger

    harness = _harness()
    n_claim = max(1, tasks // 10)
    report = MixReport(
        workers=workers, machines=machines, tasks=tasks, claim_tasks=n_claim, remote=remote
    )
    with contextlib.ExitStack() as stack:
        if remote == "daemon":
            base = root / "served"
            port = stack.enter_context(harness.git_daemon(base))
            remote_path = base / "ledger.git"
            url = f"git://127.0.0.1:{port}/ledger.git"
        else:
            remote_path = root / "remote.git"
            url = str(remote_path)
        subprocess.run(["git", "init", "-q", "--bare", str(remote_path)], check=True)
        paths = [root / f"machine-{m}" for m in range(machines)]
        first = Ledger.open(paths[0], create=True, actor="setup")
        ids = [first.create(f"mix task {i}").id for i in range(tasks)]
        sync.backup(first, url)
        for p in paths[1:]:
            sync.restore(Ledger.open(p, create=True, actor="setup"), url)
        claim_ids, note_ids = ids[:n_claim], ids[n_claim:]
        payload = json.dumps([note_ids, claim_ids])
        started = time.perf_counter()
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", WORKER, str(paths[w % machines]), url, str(w)]
                + [str(seed * 1000 + w), str(ops)],
                env=_env(paths[w % machines], f"worker-{w}"),
                cwd=root,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for w in range(workers)
        ]
        for proc in procs:  # every worker is up before any gets its plan: they start together
            assert proc.stdin is not None
            proc.stdin.write(payload)
            proc.stdin.close()
            proc.stdin = None
        results: list[dict[str, Any]] = []
        for w, proc in enumerate(procs):
            out, err = proc.communicate(timeout=3600)
            if proc.returncode != 0:
                report.worker_failures += 1
                report.error_messages.append(f"worker {w} exit {proc.returncode}: {err[-400:]}")
            results += [json.loads(line) for line in out.splitlines() if line.strip()]
        report.seconds = round(time.perf_counter() - started, 2)
        _tally(report, results)
        # The final syncs: every machine, twice round, so that each has everyone's work.
        for _round in range(2):
            for p in paths:
                done = _cli(p, "sync", url, "--json")
                if done.returncode != 0:
                    report.final_sync_failures += 1
                    report.error_messages.append(f"final sync of {p.name}: {done.stderr[-300:]}")
        _check(report, results, paths, remote_path, claim_ids, harness)
    report.peak_child_rss_mb = round(
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1
    )
    return report


def _concurrency_cause(message: str) -> str | None:
    for cause, words in CONCURRENCY_CAUSES.items():
        if any(w in message for w in words):
            return cause
    return None


def _tally(report: MixReport, results: list[dict[str, Any]]) -> None:
    for r in results:
        op = r["op"]
        if op == "done":
            report.peak_worker_rss_mb = max(report.peak_worker_rss_mb, r["peak_rss_mb"])
            continue
        report.ops_attempted += 1
        if "error" in r:
            kind = f"{op}: {r['error']}"
            report.errors_by_kind[kind] = report.errors_by_kind.get(kind, 0) + 1
            message = r.get("message", "")
            if op == "sync" and r["error"] == "RemoteMoved":
                report.syncs_gave_up += 1
            elif cause := _concurrency_cause(message):
                c = report.concurrency_failures
                c[cause] = c.get(cause, 0) + 1
            elif op == "claim" and r["error"] == "RemoteMoved":
                pass  # the remote kept moving: the claim never counted, and says so
            else:
                report.unexpected_errors += 1
                if len(report.error_messages) < 10:
                    report.error_messages.append(f"{kind}: {r['message'][-500:]}")
        if op == "note":
            report.notes_attempted += 1
            report.notes_acked += "error" not in r
        elif op == "import":
            report.imports_attempted += 1
            report.imports_acked += bool(r.get("acked"))
        elif op == "sync":
            report.syncs_attempted += 1
            report.syncs_ok += bool(r.get("ok"))
        elif op == "claim":
            report.claims_attempted += 1
            report.claims_won += bool(r.get("won"))
    elapsed = report.seconds or 1.0
    report.ops_per_second = round(report.ops_attempted / elapsed, 1)


def _check(
    report: MixReport,
    results: list[dict[str, Any]],
    paths: list[Path],
    remote_path: Path,
    claim_ids: list[str],
    harness: ModuleType,
) -> None:
    from gitledger.ledger import Ledger

    acked = [
        r
        for r in results
        if "error" not in r and (r["op"] == "note" or (r["op"] == "import" and r.get("acked")))
    ]
    winners: dict[str, list[str]] = {c: [] for c in claim_ids}
    for r in results:
        if r["op"] == "claim" and r.get("won"):
            winners[r["task"]].append(r["actor"])
    report.claim_tasks_without_one_winner = sum(1 for v in winners.values() if len(v) != 1)
    for task_id, won in winners.items():
        if len(won) != 1:
            # How the owner moved on the remote: which claims and merges decided it.
            log = subprocess.run(
                ["git", "--git-dir", str(remote_path), "log", "--format=%h %an: %s"]
                + [f"refs/gitledger/tasks/{task_id}"],
                capture_output=True,
                text=True,
            ).stdout.splitlines()
            moves = [line for line in log if "owner" in line or "merge" in line or "claim" in line]
            report.error_messages.append(
                f"{task_id[:8]} won by {won}; its remote history, newest first: {moves[:8]}"
            )
    for where in [remote_path, *paths]:
        stored = harness.stored_notes(where)
        by_text: dict[str, list[str]] = {}
        for (task, text), count in stored.items():
            by_text.setdefault(text, []).extend([task] * count)
        for r in acked:
            places = by_text.get(r["token"], [])
            if not places:
                if where == remote_path:
                    report.lost_on_remote += 1
                else:
                    report.lost_on_machines += 1
            elif places != [r["task"]]:
                report.misplaced += r["task"] not in places
                report.duplicated += len(places) > 1
        led = Ledger.open(where)
        for task_id, won in winners.items():
            owner = led.show(task_id).owner
            if len(won) == 1 and owner != won[0]:
                report.owner_mismatches += 1
                if len(report.error_messages) < 12:
                    report.error_messages.append(
                        f"{where.name}: {task_id[:8]} owned by {owner}, won by {won[0]}"
                    )
        verify = _cli(where, "verify", "--json")
        if verify.returncode != 0:
            report.verify_failures += 1
            report.error_messages.append(f"verify {where.name}: {verify.stdout[-300:]}")
    report.index_vs_refs_mismatches = sum(harness.index_mismatches(p) for p in paths)
    differences = [d for p in paths for d in index_against_rebuild(p)]
    report.index_vs_rebuild_mismatches = len(differences)
    report.error_messages += differences[:6]


def bad(report: MixReport) -> bool:
    return bool(
        report.lost_on_remote
        or report.lost_on_machines
        or report.misplaced
        or report.duplicated
        or report.claim_tasks_without_one_winner
        or report.owner_mismatches
        or report.unexpected_errors
        or report.worker_failures
        or report.final_sync_failures
        or report.verify_failures
        or report.index_vs_rebuild_mismatches
        or report.index_vs_refs_mismatches
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--machines", type=int, default=4)
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--ops", type=int, default=30, help="operations per worker, plus claims")
    parser.add_argument("--remote", choices=("daemon", "path"), default="daemon")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", dest="json_file", type=Path)
    args = parser.parse_args(argv)
    if args.workers < 1 or args.machines < 1 or args.tasks < 2 or args.ops < 0:
        parser.error("--workers and --machines at least 1, --tasks at least 2, --ops not negative")
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory(prefix="gitledger-mix-") as tmp:
        report = run_mix(
            Path(tmp),
            workers=args.workers,
            machines=args.machines,
            tasks=args.tasks,
            ops=args.ops,
            remote=args.remote,
            seed=args.seed,
        )
    data = asdict(report)
    print("updates, claims, imports and syncs mixed")
    for key, value in data.items():
        if isinstance(value, (list, dict)) and not value:
            continue
        print(f"  {key:<32} {value}")
    if args.json_file:
        args.json_file.write_text(json.dumps(data, indent=2) + "\n")
    return 1 if bad(report) else 0


if __name__ == "__main__":
    raise SystemExit(main())
