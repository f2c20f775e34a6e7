"""Kill gitledger writers with SIGKILL at random moments, race 16 writers, and count what was lost.

    python benchmarks/kill_harness.py kills [--kills 500] [--parallel 2] [--seed N]
                                            [--fsync-share 0.25] [--json FILE]
    python benchmarks/kill_harness.py race [--workers 16] [--tasks 50] [--ops 40] [--json FILE]
    python benchmarks/kill_harness.py imports [--kills 100] [--tasks 300] [--json FILE]
    python benchmarks/kill_harness.py fuse [--kills 100] [--json FILE]
    python benchmarks/kill_harness.py sync [--kills 300] [--lanes path,daemon] [--json FILE]

``kills``: each round starts ``gitledger task create`` (a third with ``--idempotency-key``) or
``gitledger task update ID --note TOKEN`` as a real process and kills it with SIGKILL, at a moment
picked one of three ways:

- ``random``: uniformly within 1.1x the command's measured duration (mostly start-up);
- ``late``:   within 0.8x to 1.1x of it (the ledger work and the write);
- ``lock``:   the instant a ``<ref>.lock`` file shows up in the task refs directory (the write).

A process that printed its result and exited 0 acknowledged its write. Afterwards: ``verify``
must pass; every acknowledged create and note must be there, exactly once; unacknowledged writes
may be there or not, never twice; every keyed create retried after its kill must give one task;
and the next command must work. Stale ``<ref>.lock`` files left by a kill are counted, and so is
whether the next write got past them and whether ``gitledger repair`` removed them.

``race``: ``--workers`` processes (each a Python process using the gitledger API, so that each
operation is one write and not one interpreter start-up) add notes to and claim ``--tasks``
tasks at once; a tenth of the tasks are claim targets that every worker tries to claim. Then: no
acknowledged note missing or doubled, exactly one winner per claim, the owner is the winner,
``verify`` passes, and ``task list`` (served by the derived SQLite index) shows every task at the
version its ref holds. The kill run checks the index the same way.

``imports``: exports a ledger of ``--tasks`` tasks (a third with a second version) and kills
``gitledger task import`` of it into a fresh ledger: at a random moment, the instant a pack file
appears, or once a random number of task refs have moved. Then ``verify`` must pass, every task
present must equal its source, and the same import run again must finish with every task as in
the source (the index agreeing, sampled).

``fuse``: kills ``gitledger fuse save`` of a fixture transcript into three sessions the same three
ways as ``kills``; every acknowledged snapshot commit must be on its session's ref, and
``fuse restore`` and the next save must work.

``sync``: per lane, a remote (a bare repository on disk, or the same behind ``git daemon`` on
loopback) and two machines' ledgers, A and B. Each round A acknowledges a few notes, B often
writes notes to the same tasks and syncs them, and then ``gitledger sync``, ``backup`` or
``restore`` (into a kept ledger, or a new one) runs against the remote and is killed at a random
moment, late, or the instant a pack file or a ref lock appears on either side. An exit 0 is held
to its promise (after a sync or backup the remote holds every local tip; after a restore every
remote tip is here); then the killed side must ``verify``, hold every note it acknowledged, and
the same command run again, not killed, must work with no ``repair``; every note a successful sync
covered must then be on the remote, and back on A. The remote is ``verify``-ed and ``git fsck``-ed
every few rounds and at the end.

All of them print their figures (attempts, acknowledgements, kills, writes lost, failures, peak child
memory) and with ``--json`` write them. ``tests/test_reliability.py`` runs both small.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import random
import resource
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GL = [sys.executable, "-m", "gitledger"]
TASKS_DIR = Path("refs") / "gitledger" / "tasks"
MODES = ("random", "late", "lock")


@dataclass
class Attempt:
    n: int
    op: str  # "create", "create-keyed" or "update"
    token: str
    mode: str
    fsync: bool
    target: str | None = None
    killed: bool = False
    acked: bool = False
    returncode: int | None = None
    printed_id: str | None = None
    error: str | None = None
    stale_locks_after: int = 0


@dataclass
class KillReport:
    kills_requested: int
    attempts: int = 0
    kills: int = 0
    acked: int = 0
    acked_after_kill_signal: int = 0  # finished just before the signal landed
    lost: int = 0  # acknowledged but missing: must be 0
    duplicated: int = 0  # a token stored twice: must be 0
    unacked_landed: int = 0  # killed after the write, before the acknowledgement (allowed)
    unacked_absent: int = 0
    keyed_retries: int = 0
    keyed_duplicates: int = 0  # a keyed create that gave two tasks when retried: must be 0
    failures_without_kill: int = 0  # a command that was not killed and still failed
    failure_messages: list[str] = field(default_factory=list)
    stale_locks_left_by_kills: int = 0  # killed updates that left their task's <ref>.lock
    attempts_on_stale_lock: int = 0  # later updates that met such a lock (they fail)
    stale_locks_at_end: int = 0
    locks_healed: int = 0  # removed by a later write (older than gitledger's stale limit)
    repair_removed: int = 0
    temp_objects_left: int = 0
    verify_ok: bool = False
    verify_problems: list[str] = field(default_factory=list)
    index_mismatches: int = -1  # tasks the listing shows at another version than the refs
    next_command_ok: bool = False
    by_mode: dict[str, dict[str, int]] = field(default_factory=dict)
    median_command_ms: float = 0.0
    peak_child_rss_mb: float = 0.0
    seconds: float = 0.0


def _env(ledger: Path, fsync: bool = False, actor: str = "killer") -> dict[str, str]:
    env = dict(os.environ)
    env["GITLEDGER_DIR"] = str(ledger)
    env["GITLEDGER_ACTOR"] = actor
    env.pop("GITLEDGER_FSYNC", None)
    if fsync:
        env["GITLEDGER_FSYNC"] = "1"
    return env


def gitledger(
    ledger: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*GL, *args],
        env=env or _env(ledger),
        cwd=ledger.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )


def ref_locks(ledger: Path) -> list[Path]:
    return sorted(p for p in (ledger / "refs").rglob("*.lock"))


def temp_objects(ledger: Path) -> int:
    return sum(1 for p in (ledger / "objects").rglob("*") if p.is_file() and "tmp" in p.name)


def _argv(attempt: Attempt) -> list[str]:
    if attempt.op == "update":
        assert attempt.target is not None
        return [*GL, "task", "update", attempt.target, "--note", attempt.token, "--json"]
    argv = [*GL, "task", "create", f"kill harness {attempt.token}", "--json"]
    if attempt.op == "create-keyed":
        argv += ["--idempotency-key", attempt.token]
    return argv


def _locks_in(where: Path) -> set[str]:
    try:
        return {name for name in os.listdir(where) if name.endswith(".lock")}
    except FileNotFoundError:
        return set()


def _wait_timed(
    child: subprocess.Popen[bytes], mode: str, rng: random.Random, aim: float, late_from: float
) -> bool:
    """Let ``child`` run until the kill moment of a timed ``mode``: 'random', any moment up to
    1.1x a usual run (``aim`` seconds); 'late', from ``late_from`` of it. False for other modes,
    which wait on a file-system event instead."""
    if mode not in ("random", "late"):
        return False
    low = 0.0 if mode == "random" else late_from * aim
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(timeout=rng.uniform(low, 1.1 * aim))
    return True


def _wait_for_lock(
    proc: subprocess.Popen[bytes],
    where: Path,
    target: str | None,
    limit: float,
    stale: set[str] | None = None,
) -> None:
    """Poll until a new ref lock appears (then return at once), the process ends, or ``limit``.

    ``stale`` names lock files that were there before the process started (left by earlier
    kills); they do not count, or the kill would land at start-up instead of in the write.
    """
    deadline = time.monotonic() + limit
    old = stale or set()
    specific = f"{target}.lock" if target else None
    if specific is not None and specific in old:
        # The ref is blocked already: the process will fail on it; let it, unkilled.
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=limit)
        return
    while time.monotonic() < deadline and proc.poll() is None:
        if specific is not None:
            if (where / specific).exists():
                return
        elif _locks_in(where) - old:
            return


def run_one(attempt: Attempt, ledger: Path, duration: float, rng: random.Random) -> float:
    """Run one attempt, killing it as its mode says; returns how long it ran."""
    env = _env(ledger, attempt.fsync)
    stale = _locks_in(ledger / TASKS_DIR)
    started = time.perf_counter()
    proc = subprocess.Popen(
        _argv(attempt), env=env, cwd=ledger.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    if attempt.mode == "random":
        delay = rng.uniform(0, 1.1 * duration)
    elif attempt.mode == "late":
        delay = rng.uniform(0.8 * duration, 1.1 * duration)
    else:
        delay = 0.0
        _wait_for_lock(proc, ledger / TASKS_DIR, attempt.target, 120.0, stale)
    if delay:
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            pass
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
        attempt.killed = True
    out, err = proc.communicate()
    elapsed = time.perf_counter() - started
    attempt.returncode = proc.returncode
    if proc.returncode == 0:
        try:
            data = json.loads(out)
            attempt.printed_id = data["id"]
            attempt.acked = True
        except (ValueError, KeyError):
            attempt.error = "exit 0 without a JSON task on stdout"
    elif not attempt.killed or proc.returncode != -signal.SIGKILL:
        attempt.error = err.decode("utf-8", "replace").strip()[-400:]
    return elapsed


def measure_duration(ledger: Path, target: str, runs: int = 3) -> float:
    times = []
    for i in range(runs):
        start = time.perf_counter()
        gitledger(ledger, "task", "update", target, "--note", f"warm-up {i}")
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run_kills(
    ledger: Path,
    kills: int,
    *,
    seed: int = 0,
    fsync_share: float = 0.25,
    targets: int = 4,
    parallel: int = 2,
    progress: bool = False,
) -> tuple[KillReport, list[Attempt]]:
    from gitledger.ledger import Ledger

    started = time.perf_counter()
    led = Ledger.open(ledger, create=True, actor="killer")
    target_ids = [led.create(f"kill target {i}").id for i in range(targets * parallel)]
    duration = measure_duration(ledger, target_ids[0])
    report = KillReport(kills_requested=kills, median_command_ms=round(duration * 1000, 1))
    attempts: list[Attempt] = []
    guard = threading.Lock()
    completed: list[float] = []
    killed_in_a_row = [0]  # attempts killed since one last finished, across the workers
    numbers = itertools.count(1)

    def worker(index: int) -> None:
        # Each worker owns its update targets, so a lock file on one of them after its own
        # attempt ended can only be that attempt's.
        rng = random.Random(seed * 100 + index)
        mine = target_ids[index * targets : (index + 1) * targets]
        while True:
            with guard:
                if report.kills >= kills:
                    return
                n = next(numbers)
            op = rng.choice(("create", "create-keyed", "update", "update"))
            attempt = Attempt(
                n=n,
                op=op,
                token=f"tok-{n}-{secrets.token_hex(4)}",
                mode=rng.choice(MODES),
                fsync=rng.random() < fsync_share,
                target=rng.choice(mine) if op == "update" else None,
            )
            with guard:
                # The machine's load changes; aim by how long recent commands took to finish.
                recent = completed[-25:]
                aim = statistics.median(recent) if len(recent) >= 5 else duration
                # An aim too short for this machine kills every attempt, and with nothing
                # finishing it would never learn better: widen it while nothing finishes.
                aim *= 1.5 ** (killed_in_a_row[0] // 5)
            lock = ledger / TASKS_DIR / f"{attempt.target}.lock" if attempt.target else None
            had_lock = lock is not None and lock.exists()
            elapsed = run_one(attempt, ledger, aim, rng)
            with guard:
                if not attempt.killed and attempt.returncode == 0:
                    completed.append(elapsed)
                killed_in_a_row[0] = killed_in_a_row[0] + 1 if attempt.killed else 0
                attempts.append(attempt)
                report.kills += attempt.killed
                if attempt.killed and lock is not None and lock.exists() and not had_lock:
                    report.stale_locks_left_by_kills += 1
                if had_lock and not attempt.killed:
                    report.attempts_on_stale_lock += 1
                if attempt.error and not attempt.killed:
                    report.failures_without_kill += 1
                    if len(report.failure_messages) < 5:
                        report.failure_messages.append(f"#{n} {op}: {attempt.error}")
                if progress and len(attempts) % 50 == 0:
                    print(f"  {len(attempts)} attempts, {report.kills} kills", file=sys.stderr)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(parallel)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    attempts.sort(key=lambda a: a.n)
    report.attempts = len(attempts)
    check(ledger, attempts, report, target_ids)
    report.peak_child_rss_mb = round(
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1
    )
    report.seconds = round(time.perf_counter() - started, 1)
    return report, attempts


def check(ledger: Path, attempts: list[Attempt], report: KillReport, target_ids: list[str]) -> None:
    """Everything acknowledged is there once; nothing is there twice; the ledger still works."""
    from gitledger.ledger import Ledger

    report.stale_locks_at_end = len(ref_locks(ledger))
    report.temp_objects_left = temp_objects(ledger)
    # The next command, before any repair: a write to every target and a new task.
    next_ok = True
    for target in target_ids:
        proc = gitledger(ledger, "task", "update", target, "--note", f"after the kills {target}")
        if proc.returncode != 0:
            next_ok = False
            report.failure_messages.append(f"next update of {target}: {proc.stderr.strip()[-300:]}")
    proc = gitledger(ledger, "task", "create", "after the kills", "--json")
    next_ok = next_ok and proc.returncode == 0
    report.next_command_ok = next_ok
    # Keyed creates that were not acknowledged: the caller would retry them with the same key.
    for a in attempts:
        if a.op == "create-keyed" and not a.acked:
            report.keyed_retries += 1
            retry = gitledger(
                ledger,
                "task",
                "create",
                f"kill harness {a.token}",
                "--idempotency-key",
                a.token,
                "--json",
            )
            if retry.returncode != 0:
                report.failure_messages.append(f"keyed retry {a.token}: {retry.stderr[-300:]}")
    verify = gitledger(ledger, "verify", "--json")
    try:
        verdict = json.loads(verify.stdout)
        report.verify_ok = verify.returncode == 0 and verdict["ok"]
        report.verify_problems = [f"{p['ref']}: {p['message']}" for p in verdict["problems"]][:10]
    except (ValueError, KeyError):
        report.verify_ok = False
        report.verify_problems = [verify.stderr.strip()[-300:]]

    led = Ledger.open(ledger)
    tasks = {t.id: t for t in led.tasks()}
    goals = Counter(t.goal for t in tasks.values())
    notes = Counter(e.text for t in tasks.values() for e in t.notes)
    keyed = Counter(t.idempotency_key for t in tasks.values() if t.idempotency_key)
    for a in attempts:
        if a.op == "update":
            count = notes[a.token]
            landed = count > 0
        else:
            count = goals[f"kill harness {a.token}"]
            landed = count > 0
            if a.op == "create-keyed" and not a.acked:
                # After its retry the key must name exactly one task.
                report.keyed_duplicates += keyed[a.token] > 1
                count = min(count, 1)
        if a.acked:
            report.acked += 1
            report.acked_after_kill_signal += a.killed
            ok = count == 1
            if a.op != "update":
                ok = ok and a.printed_id in tasks
            else:
                ok = ok and a.printed_id == a.target
            report.lost += not ok and count == 0
            report.duplicated += count > 1
        else:
            report.duplicated += count > 1
            if a.op == "create-keyed":
                landed = False  # a retry put it there; not a landed kill
            report.unacked_landed += landed
            report.unacked_absent += not landed and a.op != "create-keyed"
        mode = report.by_mode.setdefault(
            a.mode, {"attempts": 0, "kills": 0, "acked": 0, "unacked_landed": 0}
        )
        mode["attempts"] += 1
        mode["kills"] += a.killed
        mode["acked"] += a.acked
        mode["unacked_landed"] += (not a.acked) and landed
    report.index_mismatches = index_mismatches(ledger)
    # A later write removes a ref lock older than gitledger's stale limit by itself (under the
    # writer lock only a dead writer can own one); count those, then repair the rest.
    report.locks_healed = report.stale_locks_at_end - len(ref_locks(ledger))
    if report.stale_locks_at_end:
        repair = gitledger(ledger, "repair", "--older-than", "0", "--json")
        if repair.returncode == 0:
            report.repair_removed = len(json.loads(repair.stdout)["removed"])


def index_mismatches(ledger: Path) -> int:
    """Tasks whose version in ``task list`` (served by the derived index) differs from the refs."""
    from gitledger.ledger import Ledger
    from gitledger.refs import TASKS_PREFIX

    led = Ledger.open(ledger)
    truth = {
        name[len(TASKS_PREFIX) :]: led.show(name[len(TASKS_PREFIX) :]).version
        for name, _tip in led.store.refs(TASKS_PREFIX)
    }
    listed = gitledger(ledger, "task", "list", "--limit", "10000000", "--json")
    seen = {t["id"]: t["version"] for t in json.loads(listed.stdout)}
    return sum(1 for k in truth.keys() | seen.keys() if truth.get(k) != seen.get(k))


# --- the race ------------------------------------------------------------------------------------

WORKER = r"""
import json, random, sys
from gitledger.errors import ClaimConflict
from gitledger.ledger import Ledger
ledger, worker, seed, ops = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
note_ids, claim_ids = json.loads(sys.stdin.read())
rng = random.Random(seed)
actor = f"worker-{worker}"
led = Ledger.open(__import__("pathlib").Path(ledger), actor=actor)
plan = [("claim", c) for c in claim_ids] + [("note", None)] * ops
rng.shuffle(plan)
for n, (kind, target) in enumerate(plan):
    if kind == "claim":
        try:
            task = led.claim(target, actor=actor)
            won = task.owner == actor
        except ClaimConflict:
            won = False
        print(json.dumps({"op": "claim", "task": target, "won": won, "actor": actor}))
    else:
        target = rng.choice(note_ids + claim_ids)
        token = f"w{worker}-n{n}"
        led.update(target, notes=[token], actor=actor)
        print(json.dumps({"op": "note", "task": target, "token": token}))
    sys.stdout.flush()
"""


@dataclass
class RaceReport:
    workers: int
    tasks: int
    claim_tasks: int
    ops_attempted: int = 0
    notes_acked: int = 0
    notes_lost: int = 0
    notes_duplicated: int = 0
    claims_attempted: int = 0
    claims_won: int = 0
    claim_tasks_without_one_winner: int = 0
    owner_mismatches: int = 0
    worker_failures: int = 0
    failure_messages: list[str] = field(default_factory=list)
    verify_ok: bool = False
    index_mismatches: int = -1
    seconds: float = 0.0
    writes_per_second: float = 0.0
    peak_child_rss_mb: float = 0.0


def run_race(
    ledger: Path, *, workers: int = 16, tasks: int = 50, ops: int = 40, seed: int = 0
) -> RaceReport:
    from gitledger.ledger import Ledger

    led = Ledger.open(ledger, create=True, actor="setup")
    ids = [led.create(f"race task {i}").id for i in range(tasks)]
    n_claim = max(1, tasks // 10)
    claim_ids, note_ids = ids[:n_claim], ids[n_claim:]
    report = RaceReport(workers=workers, tasks=tasks, claim_tasks=n_claim)
    env = _env(ledger)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    payload = json.dumps([note_ids, claim_ids])
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(ledger), str(w), str(seed * 1000 + w), str(ops)],
            env=env,
            cwd=ledger.parent,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(workers)
    ]
    # Hand every worker its plan only once all of them are up, so that they start together.
    results: list[dict[str, Any]] = []
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write(payload)
        proc.stdin.flush()
        proc.stdin.close()
        proc.stdin = None  # communicate() below must not touch the closed pipe
    for w, proc in enumerate(procs):
        out, err = proc.communicate(timeout=1800)
        if proc.returncode != 0:
            report.worker_failures += 1
            report.failure_messages.append(f"worker {w}: {err.strip()[-400:]}")
        results += [json.loads(line) for line in out.splitlines() if line.strip()]
    report.seconds = round(time.perf_counter() - started, 2)
    report.ops_attempted = workers * (ops + n_claim)

    final = {t.id: t for t in Ledger.open(ledger).tasks()}
    notes = Counter(e.text for t in final.values() for e in t.notes)
    stored_in = {e.text: t.id for t in final.values() for e in t.notes}
    acked_notes = [r for r in results if r["op"] == "note"]
    report.notes_acked = len(acked_notes)
    report.notes_lost = sum(1 for r in acked_notes if stored_in.get(r["token"]) != r["task"])
    report.notes_duplicated = sum(1 for c in notes.values() if c > 1)
    claims = [r for r in results if r["op"] == "claim"]
    report.claims_attempted = len(claims)
    winners: dict[str, list[str]] = {c: [] for c in claim_ids}
    for r in claims:
        if r["won"]:
            winners[r["task"]].append(r["actor"])
    report.claims_won = sum(len(v) for v in winners.values())
    report.claim_tasks_without_one_winner = sum(1 for v in winners.values() if len(v) != 1)
    report.owner_mismatches = sum(
        1 for c, v in winners.items() if len(v) == 1 and final[c].owner != v[0]
    )
    writes = report.notes_acked + report.claims_won
    report.writes_per_second = round(writes / report.seconds, 1) if report.seconds else 0.0
    verify = gitledger(ledger, "verify", "--json")
    report.verify_ok = verify.returncode == 0 and json.loads(verify.stdout)["ok"]
    report.index_mismatches = index_mismatches(ledger)
    report.peak_child_rss_mb = round(
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1
    )
    return report


# --- bulk import under kill -9 --------------------------------------------------------------------

IMPORT_MODES = ("random", "pack", "refs")


@dataclass
class ImportKillReport:
    kills_requested: int
    source_tasks: int = 0
    source_versions: int = 0
    attempts: int = 0
    kills: int = 0
    finished_before_kill: int = 0
    verify_failures_after_kill: int = 0  # must be 0: nothing half-written visible
    tasks_present_after_kill: int = 0  # partly applied imports are allowed; each task whole
    tasks_wrong_after_kill: int = 0  # a task present but not as in the source: must be 0
    stale_locks_after_kill: int = 0
    retry_failures: int = 0  # the same import run again, not killed: must succeed
    mismatches_after_retry: int = 0  # tasks missing or different after the retry: must be 0
    index_mismatches: int = 0
    failure_messages: list[str] = field(default_factory=list)
    by_mode: dict[str, dict[str, int]] = field(default_factory=dict)
    seconds: float = 0.0


def _fingerprint(ledger: Path) -> dict[str, tuple[int, str, tuple[str, ...]]]:
    from gitledger.ledger import Ledger

    return {
        t.id: (t.version, t.goal, tuple(n.text for n in t.notes))
        for t in Ledger.open(ledger).tasks()
    }


def run_import_kills(
    root: Path, kills: int, *, tasks: int = 300, seed: int = 0, progress: bool = False
) -> ImportKillReport:
    """Kill ``task import`` of an export of ``tasks`` tasks, check, retry it, check again."""
    from gitledger.ledger import Ledger

    started = time.perf_counter()
    rng = random.Random(seed)
    source = root / "source"
    led = Ledger.open(source, create=True, actor="exporter")
    for i in range(tasks):
        task = led.create(f"imported task {i}", criteria="it is there")
        if i % 3 == 0:
            led.update(task.id, notes=[f"note on {i}"], next="keep going")
    export = root / "export.jsonl"
    proc = gitledger(source, "task", "export", "-o", str(export))
    if proc.returncode != 0:
        raise RuntimeError(f"export failed: {proc.stderr}")
    expected = _fingerprint(source)
    report = ImportKillReport(
        kills_requested=kills,
        source_tasks=len(expected),
        source_versions=sum(v[0] for v in expected.values()),
    )
    durations: list[float] = []
    n = 0
    while report.kills < kills:
        n += 1
        target = root / f"target-{n}"
        Ledger.open(target, create=True)
        mode = rng.choice(IMPORT_MODES)
        aim = statistics.median(durations[-15:]) if len(durations) >= 3 else 2.0
        t0 = time.perf_counter()
        child = subprocess.Popen(
            [*GL, "task", "import", str(export), "--json"],
            env=_env(target),
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        if mode == "random":
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=rng.uniform(0.2 * aim, 1.1 * aim))
        else:
            # 'pack': the moment a pack file appears; 'refs': once some task refs have moved.
            want = rng.randint(1, tasks)
            deadline = time.monotonic() + 120
            while child.poll() is None and time.monotonic() < deadline:
                if mode == "pack":
                    if any((target / "objects" / "pack").iterdir()):
                        break
                else:
                    with contextlib.suppress(FileNotFoundError):
                        if len(os.listdir(target / TASKS_DIR)) >= want:
                            break
        killed = child.poll() is None
        if killed:
            child.send_signal(signal.SIGKILL)
        child.communicate()
        if not killed:
            durations.append(time.perf_counter() - t0)
        report.attempts += 1
        report.kills += killed
        report.finished_before_kill += not killed
        stats = report.by_mode.setdefault(mode, {"attempts": 0, "kills": 0, "tasks_present": 0})
        stats["attempts"] += 1
        stats["kills"] += killed
        verify = gitledger(target, "verify", "--json")
        if verify.returncode != 0:
            report.verify_failures_after_kill += 1
            if len(report.failure_messages) < 5:
                report.failure_messages.append(f"#{n} verify: {verify.stdout[-300:]}")
        present = _fingerprint(target)
        report.tasks_present_after_kill += len(present)
        stats["tasks_present"] += len(present)
        report.tasks_wrong_after_kill += sum(1 for k, v in present.items() if expected.get(k) != v)
        locks = ref_locks(target)
        if locks:
            report.stale_locks_after_kill += len(locks)
            gitledger(target, "repair", "--older-than", "0")
        retry = gitledger(target, "task", "import", str(export), "--json")
        if retry.returncode != 0:
            report.retry_failures += 1
            if len(report.failure_messages) < 5:
                report.failure_messages.append(f"#{n} retry: {retry.stderr[-300:]}")
        after = _fingerprint(target)
        report.mismatches_after_retry += sum(
            1 for k in expected.keys() | after.keys() if expected.get(k) != after.get(k)
        )
        if n % 10 == 1:  # the index check costs a process; sample it
            report.index_mismatches += index_mismatches(target)
        shutil.rmtree(target, ignore_errors=True)
        if progress and n % 10 == 0:
            print(f"  {n} imports, {report.kills} kills", file=sys.stderr)
    report.seconds = round(time.perf_counter() - started, 1)
    return report


# --- fuse save under kill -9 ----------------------------------------------------------------------

FUSE_DIR = Path("refs") / "gitledger" / "fuse"
DEFAULT_TRANSCRIPT = ROOT / "tests" / "fixtures" / "transcripts" / "claude_2_1_session.jsonl"


@dataclass
class FuseKillReport:
    kills_requested: int
    attempts: int = 0
    kills: int = 0
    acked: int = 0
    lost: int = 0  # an acknowledged snapshot commit not on its session's ref: must be 0
    failures_without_kill: int = 0
    failure_messages: list[str] = field(default_factory=list)
    stale_locks_at_end: int = 0
    locks_healed: int = 0  # removed by a later write (older than gitledger's stale limit)
    repair_removed: int = 0
    restore_ok: bool = False  # 'fuse restore' of every session with a save, after the kills
    next_save_ok: bool = False
    by_mode: dict[str, dict[str, int]] = field(default_factory=dict)
    seconds: float = 0.0


def run_fuse_kills(
    root: Path,
    kills: int,
    *,
    transcript: Path = DEFAULT_TRANSCRIPT,
    sessions: int = 3,
    seed: int = 0,
    progress: bool = False,
) -> FuseKillReport:
    """Kill ``gitledger fuse save`` (the PreCompact hook's work) and check every acked save."""
    from gitledger.ledger import Ledger

    started = time.perf_counter()
    rng = random.Random(seed)
    ledger = root / "ledger"
    Ledger.open(ledger, create=True)
    report = FuseKillReport(kills_requested=kills)
    acked: dict[str, list[str]] = {f"session-{i}": [] for i in range(sessions)}
    durations: list[float] = []
    n = 0
    while report.kills < kills:
        n += 1
        session = rng.choice(sorted(acked))
        mode = rng.choice(MODES)
        aim = statistics.median(durations[-25:]) if len(durations) >= 3 else 2.0
        argv = [*GL, "fuse", "save", "--transcript", str(transcript), "--session", session]
        stale = _locks_in(ledger / FUSE_DIR)
        t0 = time.perf_counter()
        child = subprocess.Popen(
            [*argv, "--json"],
            env=_env(ledger, rng.random() < 0.25),
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        if not _wait_timed(child, mode, rng, aim, late_from=0.8):
            _wait_for_lock(child, ledger / FUSE_DIR, session, 120.0, stale)
        killed = child.poll() is None
        if killed:
            child.send_signal(signal.SIGKILL)
        out, err = child.communicate()
        report.attempts += 1
        report.kills += killed
        stats = report.by_mode.setdefault(mode, {"attempts": 0, "kills": 0, "acked": 0})
        stats["attempts"] += 1
        stats["kills"] += killed
        if child.returncode == 0:
            durations.append(time.perf_counter() - t0)
            with contextlib.suppress(ValueError, KeyError):
                acked[session].append(json.loads(out)["commit"])
                report.acked += 1
                stats["acked"] += 1
        elif not killed:
            report.failures_without_kill += 1
            if len(report.failure_messages) < 5:
                report.failure_messages.append(f"#{n}: {err.decode(errors='replace')[-300:]}")
        if progress and n % 25 == 0:
            print(f"  {n} saves, {report.kills} kills", file=sys.stderr)
    saved_sessions = []
    for session, commits in acked.items():
        listed = subprocess.run(
            ["git", "--git-dir", str(ledger), "rev-list", f"refs/gitledger/fuse/{session}"],
            capture_output=True,
            text=True,
        ).stdout.split()
        on_ref = set(listed)
        report.lost += sum(1 for c in commits if c not in on_ref)
        if listed:
            saved_sessions.append(session)
    report.stale_locks_at_end = len(ref_locks(ledger))
    restores = [
        gitledger(ledger, "fuse", "restore", "--session", s, "--plain") for s in saved_sessions
    ]
    report.restore_ok = all(r.returncode == 0 and r.stdout.strip() for r in restores)
    nexts = [
        gitledger(ledger, "fuse", "save", "--transcript", str(transcript), "--session", s)
        for s in sorted(acked)
    ]
    report.next_save_ok = all(r.returncode == 0 for r in nexts)
    for r in nexts:
        if r.returncode != 0 and len(report.failure_messages) < 8:
            report.failure_messages.append(f"next save: {r.stderr[-300:]}")
    # A later write removes a ref lock older than gitledger's stale limit by itself (under the
    # writer lock only a dead writer can own one); count those, then repair the rest.
    report.locks_healed = report.stale_locks_at_end - len(ref_locks(ledger))
    if report.stale_locks_at_end:
        repair = gitledger(ledger, "repair", "--older-than", "0", "--json")
        if repair.returncode == 0:
            report.repair_removed = len(json.loads(repair.stdout)["removed"])
    report.seconds = round(time.perf_counter() - started, 1)
    return report


# --- sync, backup and restore under kill -9 -------------------------------------------------------

SYNC_OPS = ("sync", "sync", "backup", "restore")
SYNC_MODES = ("random", "late", "io")
LEDGER_REFS = "refs/gitledger/"
STAGING_REFS = "refs/gitledger-staging/"


@contextlib.contextmanager
def git_daemon(base: Path) -> Any:
    """A ``git daemon`` on loopback serving ``base`` (push enabled); yields its port. The one
    loopback server of the tests (``tests/gitdaemon.py``)."""
    if str(ROOT / "tests") not in sys.path:
        sys.path.insert(0, str(ROOT / "tests"))
    from gitdaemon import served

    with served(base) as daemon:
        yield daemon.port


def git_refs(git_dir: Path, prefix: str = LEDGER_REFS) -> dict[str, str]:
    """Every ref under ``prefix`` and its tip, as plain git sees them (no gitledger code)."""
    out = subprocess.run(
        ["git", "--git-dir", str(git_dir), "for-each-ref", "--format=%(refname) %(objectname)"]
        + [prefix],
        capture_output=True,
        text=True,
    ).stdout
    return dict(line.split(" ", 1) for line in out.splitlines() if line.strip())


def is_ancestor(git_dir: Path, ancestor: str, descendant: str) -> bool:
    if ancestor == descendant:
        return True
    done = subprocess.run(
        ["git", "--git-dir", str(git_dir), "merge-base", "--is-ancestor", ancestor, descendant],
        capture_output=True,
    )
    return done.returncode == 0


def stored_notes(git_dir: Path) -> Counter[tuple[str, str]]:
    """(task id, note text) of every note in every task, read from the refs (not the index)."""
    from gitledger.ledger import Ledger
    from gitledger.refs import TASKS_PREFIX

    led = Ledger.open(git_dir)
    found: Counter[tuple[str, str]] = Counter()
    for name, _tip in led.store.refs(TASKS_PREFIX):
        task = led.show(name[len(TASKS_PREFIX) :])
        found.update((task.id, e.text) for e in task.notes)
    return found


def lock_files(git_dir: Path) -> set[str]:
    return {str(p.relative_to(git_dir)) for p in (git_dir / "refs").rglob("*.lock")}


def _io_marks(dirs: list[Path]) -> set[str]:
    """File names in the pack directories and ref locks: what a transfer creates first."""
    marks: set[str] = set()
    for d in dirs:
        with contextlib.suppress(FileNotFoundError):
            marks.update(f"{d}/{name}" for name in os.listdir(d / "objects" / "pack"))
        with contextlib.suppress(FileNotFoundError):
            for path in (d / "refs").rglob("*.lock"):
                marks.add(str(path))
    return marks


@dataclass
class SyncKillReport:
    kills_requested: int
    lanes: list[str] = field(default_factory=list)  # "path" (a bare repository) or "daemon"
    rounds: int = 0
    kills: int = 0
    local_notes_acked: int = 0  # notes the killed side's ledger acknowledged (API writes)
    other_notes_synced: int = 0  # notes another machine wrote and synced (exit 0) first
    lost_local: int = 0  # an acknowledged note missing from the ledger that acknowledged it
    lost_remote: int = 0  # a note a sync or backup exiting 0 covered, missing on the remote
    lost_after_next_sync: int = 0  # a note on the remote missing here after the next sync
    notes_duplicated: int = 0
    acked_remote_mismatches: int = 0  # sync/backup exit 0 but the remote lacks a local tip
    acked_restore_mismatches: int = 0  # restore exit 0 but a remote tip is not here
    backups_refused_remote_ahead: int = 0  # exit 3: another machine pushed first (allowed)
    failures_without_kill: int = 0
    other_machine_sync_failures: int = 0  # B's unkilled sync failing (a remote left stuck)
    verify_local_failures: int = 0
    verify_remote_failures: int = 0
    remote_verifies: int = 0
    fsck_remote_failures: int = 0
    next_command_failures: int = 0  # the unkilled sync/restore after a kill: must be 0
    next_failures_by_cause: dict[str, int] = field(default_factory=dict)
    healed_after_waiting: int = 0  # the same command worked once the lock was past the stale age
    repairs_run: int = 0  # a failed next command, then remote locks deleted and 'repair' run
    remote_locks_removed_by_hand: int = 0
    local_locks_repaired: int = 0
    still_failing_after_repair: int = 0
    locks_left_local: int = 0  # <ref>.lock files a kill left in the killed side's ledger
    locks_left_remote: int = 0
    staging_refs_left: int = 0  # refs/gitledger-staging/ refs at the end (not visible to listings)
    index_mismatches: int = -1
    failure_messages: list[str] = field(default_factory=list)
    by_op: dict[str, dict[str, int]] = field(default_factory=dict)
    by_mode: dict[str, dict[str, int]] = field(default_factory=dict)
    median_ms: dict[str, float] = field(default_factory=dict)
    peak_child_rss_mb: float = 0.0
    seconds: float = 0.0


class _Lane:
    """One remote, the machine whose commands are killed (A), another machine (B), restores (R)."""

    def __init__(self, root: Path, kind: str, url: str, remote: Path, rng: random.Random) -> None:
        from gitledger import sync
        from gitledger.ledger import Ledger

        self.root, self.kind, self.url, self.remote, self.rng = root, kind, url, remote, rng
        self.a, self.b, self.r = root / "a", root / "b", root / "r"
        led = Ledger.open(self.a, create=True, actor="machine-a")
        self.tasks = [led.create(f"sync kill task {i}").id for i in range(12)]
        sync.backup(led, url)
        sync.restore(Ledger.open(self.b, create=True, actor="machine-b"), url)
        self.acked_a: list[tuple[str, str]] = []  # acknowledged by A's ledger
        self.synced: list[tuple[str, str]] = []  # on the remote by a sync/backup that exited 0
        self.fresh = 0


def _mark_synced(lane: _Lane) -> None:
    """A sync or backup of A exited 0: every note A acknowledged is now the remote's too."""
    known = set(lane.synced)
    lane.synced += [x for x in lane.acked_a if x not in known]


def _note(ledger: Path, actor: str, task: str, token: str) -> None:
    from gitledger.ledger import Ledger

    Ledger.open(ledger, actor=actor).update(task, notes=[token])


def run_sync_kills(
    root: Path,
    kills: int,
    *,
    lanes: tuple[str, ...] = ("path", "daemon"),
    seed: int = 0,
    remote_verify_every: int = 5,
    progress: bool = False,
) -> SyncKillReport:
    """Kill ``sync``, ``backup`` and ``restore`` against real remotes; check after every kill."""
    started = time.perf_counter()
    report = SyncKillReport(kills_requested=kills, lanes=list(lanes))
    guard = threading.Lock()
    durations: dict[str, list[float]] = {op: [] for op in ("sync", "backup", "restore")}
    made: list[_Lane] = []

    def fail(message: str) -> None:
        with guard:
            if len(report.failure_messages) < 12:
                report.failure_messages.append(message[-500:])

    def lane_worker(index: int, kind: str, url: str, remote: Path) -> None:
        rng = random.Random(seed * 100 + index)
        lane = _Lane(root / f"lane-{index}", kind, url, remote, rng)
        with guard:
            made.append(lane)
        n = 0
        while True:
            with guard:
                if report.kills >= kills:
                    return
            n += 1
            _sync_round(lane, n, report, guard, durations, fail, remote_verify_every)
            if progress and n % 25 == 0:
                print(f"  lane {index} ({kind}): {n} rounds, {report.kills} kills", file=sys.stderr)

    with contextlib.ExitStack() as stack:
        threads = []
        for i, kind in enumerate(lanes):
            if kind == "daemon":
                base = root / f"served-{i}"
                port = stack.enter_context(git_daemon(base))
                remote = base / "ledger.git"
                url = f"git://127.0.0.1:{port}/ledger.git"
            else:
                remote = root / f"remote-{i}.git"
                url = str(remote)
            subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
            threads.append(threading.Thread(target=lane_worker, args=(i, kind, url, remote)))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        # The end: every lane's remote verifies and fsck-checks, nothing is lost anywhere.
        for i, kind in enumerate(lanes):
            lane_root = root / f"lane-{i}"
            remote = (
                root / f"served-{i}" / "ledger.git"
                if kind == "daemon"
                else root / f"remote-{i}.git"
            )
            _check_remote_repo(remote, report, fail)
            report.staging_refs_left += len(git_refs(lane_root / "a", STAGING_REFS))
            mismatches = index_mismatches(lane_root / "a")
            report.index_mismatches = max(report.index_mismatches, 0) + mismatches
    report.local_notes_acked = sum(len(lane.acked_a) for lane in made)
    report.other_notes_synced = sum(
        1 for lane in made for task_token in lane.synced if task_token[1].startswith("b")
    )
    for op, times in durations.items():
        if times:
            report.median_ms[op] = round(statistics.median(times) * 1000, 1)
    report.peak_child_rss_mb = round(
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1
    )
    report.seconds = round(time.perf_counter() - started, 1)
    return report


def _check_remote_repo(remote: Path, report: SyncKillReport, fail: Any) -> None:
    report.remote_verifies += 1
    verify = gitledger(remote, "verify", "--json")
    if verify.returncode != 0:
        report.verify_remote_failures += 1
        fail(f"verify of the remote: {verify.stdout[-300:]} {verify.stderr[-300:]}")
    fsck = subprocess.run(
        ["git", "--git-dir", str(remote), "fsck", "--no-dangling"], capture_output=True, text=True
    )
    if fsck.returncode != 0:
        report.fsck_remote_failures += 1
        fail(f"git fsck of the remote: {fsck.stderr[-300:]}")


def _sync_round(
    lane: _Lane,
    n: int,
    report: SyncKillReport,
    guard: threading.Lock,
    durations: dict[str, list[float]],
    fail: Any,
    remote_verify_every: int,
) -> None:
    from gitledger import sync
    from gitledger.ledger import Ledger

    rng = lane.rng
    # 1. Work on both machines: A writes and acknowledges notes; B writes some of the same tasks
    #    and syncs them (so A's sync has to fetch and merge diverged histories).
    for _ in range(rng.randint(1, 3)):
        task, token = rng.choice(lane.tasks), f"a{lane.kind[0]}-{n}-{secrets.token_hex(3)}"
        _note(lane.a, "machine-a", task, token)
        lane.acked_a.append((task, token))
    if rng.random() < 0.6:
        wrote = []
        for _ in range(rng.randint(1, 2)):
            task, token = rng.choice(lane.tasks), f"b{lane.kind[0]}-{n}-{secrets.token_hex(3)}"
            _note(lane.b, "machine-b", task, token)
            wrote.append((task, token))
        try:
            sync.sync(Ledger.open(lane.b, actor="machine-b"), url=lane.url)
            lane.synced += wrote
        except Exception as exc:  # noqa: BLE001 - reported, not raised: the run goes on
            with guard:
                report.other_machine_sync_failures += 1
            fail(f"round {n}: machine B's sync failed: {exc}")
    # 2. The command under test, killed at a random moment.
    op = rng.choice(SYNC_OPS)
    mode = rng.choice(SYNC_MODES)
    fresh = op == "restore" and rng.random() < 0.3
    if op == "restore":
        target = lane.root / f"fresh-{n}" if fresh else lane.r
    else:
        target = lane.a
    local_before = git_refs(target) if target.exists() else {}
    remote_before = git_refs(lane.remote)
    locks_before = lock_files(target) if target.exists() else set()
    remote_locks_before = lock_files(lane.remote)
    with guard:
        recent = durations[op][-15:]
    aim = statistics.median(recent) if len(recent) >= 3 else 1.5
    marks_before = _io_marks([target, lane.remote])
    t0 = time.perf_counter()
    child = subprocess.Popen(
        [*GL, op, lane.url, "--json"],
        env=_env(target, actor="machine-a"),
        cwd=lane.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    if not _wait_timed(child, mode, rng, aim, late_from=0.6):
        # 'io': the instant a pack file or a ref lock appears on either side
        deadline = time.monotonic() + 120
        while child.poll() is None and time.monotonic() < deadline:
            if _io_marks([target, lane.remote]) - marks_before:
                break
    killed = child.poll() is None
    if killed:
        child.send_signal(signal.SIGKILL)
    out, err = child.communicate()
    elapsed = time.perf_counter() - t0
    code = child.returncode
    with guard:
        report.rounds += 1
        report.kills += killed
        stats = report.by_op.setdefault(
            op, {"attempts": 0, "kills": 0, "acked": 0, "refused": 0, "failed": 0}
        )
        stats["attempts"] += 1
        stats["kills"] += killed
        mstats = report.by_mode.setdefault(mode, {"attempts": 0, "kills": 0})
        mstats["attempts"] += 1
        mstats["kills"] += killed
        if code == 0:
            stats["acked"] += 1
            durations[op].append(elapsed)
    # 3. What an exit 0 promises.
    if code == 0:
        remote_now = git_refs(lane.remote)
        local_now = git_refs(target)
        if op in ("sync", "backup"):
            # Nothing else writes A or the remote meanwhile: every local tip must be there, and
            # after a sync the two sides must hold exactly the same refs.
            bad = [
                r for r, tip in local_before.items() if not is_ancestor(target, tip, local_now[r])
            ]
            bad += [r for r, tip in local_now.items() if remote_now.get(r) != tip]
            if op == "sync":
                bad += [r for r in remote_now if r not in local_now]
            if bad:
                with guard:
                    report.acked_remote_mismatches += len(bad)
                fail(f"round {n}: {op} exited 0 but the remote and A differ at {bad[0]}")
            else:
                _mark_synced(lane)
        else:
            bad = [
                r
                for r, tip in remote_before.items()
                if r not in local_now or not is_ancestor(target, tip, local_now[r])
            ]
            if bad:
                with guard:
                    report.acked_restore_mismatches += len(bad)
                fail(f"round {n}: restore exited 0 but {bad[0]} is not here")
    elif op == "backup" and code == 3 and not killed:
        with guard:
            report.backups_refused_remote_ahead += 1
            stats["refused"] += 1
    elif not killed:
        with guard:
            report.failures_without_kill += 1
            stats["failed"] += 1
        fail(f"round {n}: {op} exit {code}: {err.decode(errors='replace')[-300:]}")
    # 4. After the kill: the killed side verifies, holds what it acknowledged, and the next
    #    command (the same kind, not killed) works without repair.
    if killed:
        with guard:
            report.locks_left_local += (
                len(lock_files(target) - locks_before) if target.exists() else 0
            )
            report.locks_left_remote += len(lock_files(lane.remote) - remote_locks_before)
    if target.exists() and (target / "HEAD").exists():
        verify = gitledger(target, "verify", "--json")
        if verify.returncode != 0:
            with guard:
                report.verify_local_failures += 1
            fail(
                f"round {n}: verify after {op} ({mode}): {verify.stdout[-300:]}{verify.stderr[-200:]}"
            )
    if op != "restore":
        have = stored_notes(lane.a)
        missing = [x for x in lane.acked_a if not have.get(x)]
        if missing:
            with guard:
                report.lost_local += len(missing)
            fail(f"round {n}: after a killed {op}, A lacks its acknowledged note {missing[0]}")
    next_op = "restore" if op == "restore" else "sync"
    t1 = time.perf_counter()
    again = gitledger(target, next_op, lane.url, "--json", env=_env(target, actor="machine-a"))
    if again.returncode == 0:
        # The unkilled command's time aims the next kills (most killed ones never finish).
        with guard:
            durations[next_op].append(time.perf_counter() - t1)
            if next_op == "sync":
                durations["backup"].append(time.perf_counter() - t1)
    if again.returncode != 0:
        text = again.stderr
        cause = (
            "shallow.lock left here"
            if "shallow.lock" in text
            else "staging ref lock left here"
            if STAGING_REFS in text and "lock" in text
            else "ref lock left in the remote"
            if "Pushing to" in text and "lock" in text
            else "ledger ref lock left here"
            if LEDGER_REFS in text and "lock" in text
            else "other"
        )
        with guard:
            report.next_command_failures += 1
            key = f"{op} {mode}: {cause}"
            report.next_failures_by_cause[key] = report.next_failures_by_cause.get(key, 0) + 1
        fail(f"round {n}: the {next_op} after a killed {op} ({mode}): {text[-400:]}")
        # A ref lock older than gitledger's stale limit is removed by the next write by itself:
        # wait that long after the kill and try once more before calling it a repair.
        from gitledger.gitstore import STALE_REF_LOCK_S

        time.sleep(max(0.0, t0 + elapsed + STALE_REF_LOCK_S + 1 - time.perf_counter()))
        again = gitledger(target, next_op, lane.url, "--json", env=_env(target, actor="machine-a"))
        if again.returncode == 0:
            with guard:
                report.healed_after_waiting += 1
    if again.returncode != 0:
        # Unstick the lane as a user would have to, by hand, so that the run goes on testing:
        # delete the ref locks left in the remote, run 'gitledger repair' here, try again.
        stuck = lock_files(lane.remote)
        for rel in stuck:
            (lane.remote / rel).unlink(missing_ok=True)
        repaired = gitledger(target, "repair", "--older-than", "0", "--json")
        again = gitledger(target, next_op, lane.url, "--json", env=_env(target, actor="machine-a"))
        with guard:
            report.remote_locks_removed_by_hand += len(stuck)
            report.repairs_run += 1
            if repaired.returncode == 0:
                report.local_locks_repaired += len(json.loads(repaired.stdout)["removed"])
            report.still_failing_after_repair += again.returncode != 0
        if again.returncode != 0:
            fail(f"round {n}: the {next_op} still fails after the repair: {again.stderr[-300:]}")
    if again.returncode == 0:
        if next_op == "sync":
            _mark_synced(lane)
        remote_notes = stored_notes(lane.remote)
        missing = [x for x in lane.synced if not remote_notes.get(x)]
        here = stored_notes(target)
        behind = [x for x in lane.synced if not here.get(x)]
        with guard:
            report.lost_remote += len(missing)
            report.lost_after_next_sync += len(behind)
            report.notes_duplicated += sum(1 for c in remote_notes.values() if c > 1)
        if missing:
            fail(f"round {n}: a synced note is not on the remote: {missing[0]}")
        if behind:
            fail(f"round {n}: after the next {next_op}, {target.name} lacks {behind[0]}")
    if fresh:
        shutil.rmtree(target, ignore_errors=True)
    if remote_verify_every and n % remote_verify_every == 0:
        with guard:
            _check_remote_repo(lane.remote, report, fail)


# --- command line ----------------------------------------------------------------------------


def _print(title: str, data: dict[str, Any]) -> None:
    print(title)
    for key, value in data.items():
        if isinstance(value, list) and not value:
            continue
        print(f"  {key:<32} {value}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    k = sub.add_parser("kills", help="SIGKILL writers at random moments")
    k.add_argument("--kills", type=int, default=500)
    k.add_argument("--seed", type=int, default=1)
    k.add_argument("--fsync-share", type=float, default=0.25)
    k.add_argument("--parallel", type=int, default=2, help="attempts in flight at once")
    k.add_argument("--json", dest="json_file", type=Path)
    r = sub.add_parser("race", help="16 writers mixing notes and claims across 50 tasks")
    r.add_argument("--workers", type=int, default=16)
    r.add_argument("--tasks", type=int, default=50)
    r.add_argument("--ops", type=int, default=40, help="note updates per worker")
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--json", dest="json_file", type=Path)
    m = sub.add_parser("imports", help="SIGKILL 'task import' and retry it")
    m.add_argument("--kills", type=int, default=100)
    m.add_argument("--tasks", type=int, default=300)
    m.add_argument("--seed", type=int, default=1)
    m.add_argument("--json", dest="json_file", type=Path)
    f = sub.add_parser("fuse", help="SIGKILL 'fuse save' (the PreCompact hook's work)")
    f.add_argument("--kills", type=int, default=100)
    f.add_argument("--seed", type=int, default=1)
    f.add_argument("--json", dest="json_file", type=Path)
    s = sub.add_parser("sync", help="SIGKILL 'sync', 'backup' and 'restore' against real remotes")
    s.add_argument("--kills", type=int, default=300)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument(
        "--lanes",
        default="path,daemon",
        help="remotes run side by side: 'path' (a bare repository) and/or 'daemon' (git daemon)",
    )
    s.add_argument("--json", dest="json_file", type=Path)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory(prefix="gitledger-kill-") as tmp:
        ledger = Path(tmp) / "ledger"
        if args.what == "kills":
            report, _ = run_kills(
                ledger,
                args.kills,
                seed=args.seed,
                fsync_share=args.fsync_share,
                parallel=args.parallel,
                progress=True,
            )
            data = asdict(report)
            _print("kill harness", data)
            bad = report.lost or report.duplicated or report.keyed_duplicates
            bad = bad or not report.verify_ok or not report.next_command_ok
            bad = bad or report.index_mismatches != 0
        elif args.what == "sync":
            lanes = tuple(x.strip() for x in args.lanes.split(",") if x.strip())
            if not lanes or any(x not in ("path", "daemon") for x in lanes):
                parser.error("--lanes takes 'path' and/or 'daemon', comma-separated")
            syncs = run_sync_kills(
                Path(tmp), args.kills, lanes=lanes, seed=args.seed, progress=True
            )
            data = asdict(syncs)
            _print("sync/backup/restore kill harness", data)
            bad = syncs.lost_local or syncs.lost_remote or syncs.lost_after_next_sync
            bad = bad or syncs.acked_remote_mismatches or syncs.acked_restore_mismatches
            bad = bad or syncs.verify_local_failures or syncs.verify_remote_failures
            bad = bad or syncs.fsck_remote_failures
            bad = bad or syncs.next_command_failures != syncs.healed_after_waiting
            bad = bad or syncs.still_failing_after_repair
            bad = bad or syncs.failures_without_kill or syncs.notes_duplicated
            bad = bad or syncs.index_mismatches != 0
        elif args.what == "fuse":
            fuse_report = run_fuse_kills(Path(tmp), args.kills, seed=args.seed, progress=True)
            data = asdict(fuse_report)
            _print("fuse save kill harness", data)
            bad = fuse_report.lost or not fuse_report.restore_ok or not fuse_report.next_save_ok
        elif args.what == "imports":
            imports = run_import_kills(
                Path(tmp), args.kills, tasks=args.tasks, seed=args.seed, progress=True
            )
            data = asdict(imports)
            _print("import kill harness", data)
            bad = imports.verify_failures_after_kill or imports.tasks_wrong_after_kill
            bad = bad or imports.retry_failures or imports.mismatches_after_retry
            bad = bad or imports.index_mismatches
        else:
            race = run_race(
                ledger, workers=args.workers, tasks=args.tasks, ops=args.ops, seed=args.seed
            )
            data = asdict(race)
            _print("race", data)
            bad = race.notes_lost or race.notes_duplicated or race.claim_tasks_without_one_winner
            bad = bad or race.owner_mismatches or race.worker_failures or not race.verify_ok
            bad = bad or race.index_mismatches != 0
    if args.json_file:
        args.json_file.write_text(json.dumps(data, indent=2) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
