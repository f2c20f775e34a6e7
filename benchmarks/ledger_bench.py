"""Time gitledger's commands as whole processes, beside Taskwarrior 2.6 and the import floor.

    python benchmarks/ledger_bench.py [--sizes 1000,10000,100000] [--runs 21] [--json FILE]
                                      [--slow-budget SECONDS] [--keep DIR] [--no-taskwarrior]

The workload a peer published: one anchor task with 24 notes and 999 unrelated tasks, then grown
to 10,000 and 100,000 tasks. Tasks are created through the Python API (``Ledger.create``) in this
one process; the ledger grows in place from one size to the next, so each size's figures are
taken on the same repository the smaller size was measured on, plus the new tasks. With
``--fast-load`` the plain tasks are written by ``bulk_create`` (the same records, one writer-lock
hold per thousand) so that 100,000 tasks load in minutes on a loaded machine; ``--only`` limits
the commands timed (the import floor is always timed).

At each size every command runs as a fresh process (``python -m gitledger`` has the same start-up
as the ``gitledger`` entry point, minus the console-script shim), ``--runs`` times, interleaved
round by round so that load from other processes on the machine spreads over every command
alike. A command whose runs exceed ``--slow-budget`` seconds in total stops early; the table says
how many runs each figure rests on. Median and p95 (nearest rank) are reported, with ratios to the
import floor (``python -c "import pygit2, click, pydantic"``) and to Taskwarrior's nearest
command on the same workload (``task add``, ``task ID info``, ``task limit:10 list``), loaded by
``task import`` into a temporary TASKDATA with its own TASKRC. Besides wall time, each command's
CPU time (user + system, from ``getrusage`` of the child) is reported: on a shared, loaded machine
it is the steadier figure, since it does not count the time a process waited for a core.

Nothing here is asserted: figures are printed and, with ``--json``, written for docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

ANCHOR_NOTES = 24
FLOOR_CMD = [sys.executable, "-c", "import pygit2, click, pydantic"]
GL = [sys.executable, "-m", "gitledger"]
WORDS = (
    "parser cache retry token budget index merge schema render export import queue worker "
    "handoff flaky timeout migrate refactor release docs benchmark lint profile"
).split()


@dataclass
class Op:
    name: str
    argv: list[str]
    env: dict[str, str]
    compare: str | None = None  # name of the Taskwarrior op to compare with
    cwd: Path | None = None
    times: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    failures: int = 0

    def run_once(self) -> None:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(
            self.argv, env=self.env, cwd=self.cwd, capture_output=True, timeout=900
        )
        elapsed = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpu.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
        if proc.returncode != 0:
            self.failures += 1
            if self.failures == 1:
                err = proc.stderr.decode("utf-8", "replace").strip()[-300:]
                print(f"  ! {self.name} exited {proc.returncode}: {err}", file=sys.stderr)
        self.times.append(elapsed)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def goal_text(i: int) -> str:
    a, b = WORDS[i % len(WORDS)], WORDS[(i * 7 + 3) % len(WORDS)]
    return f"Task {i}: {a} the {b} module"


# --- gitledger workload -------------------------------------------------------------------------


def load_ledger(led: Any, start: int, stop: int, anchor: str | None, fast: bool = False) -> str:
    """Create tasks ``start``..``stop``-1; task 0 is the anchor (it gets 24 notes)."""
    t0 = time.perf_counter()
    batch: list[int] = []
    for i in range(start, stop):
        if i == 0:
            task = led.create(
                "Anchor: ship the release notes for the ledger",
                criteria="The notes are merged and the tag is pushed",
                labels=["anchor"],
                next="Draft the highlights",
            )
            anchor = task.id
            for n in range(ANCHOR_NOTES):
                led.update(anchor, notes=[f"Anchor note {n + 1}: checked {WORDS[n % len(WORDS)]}"])
            continue
        if fast:
            batch.append(i)
            if len(batch) < 1000 and i + 1 < stop:
                continue
            bulk_create(led, batch)
            batch = []
        else:
            led.create(goal_text(i), criteria="tests pass", priority=i % 5)
        if (i + 1) % 10000 == 0:
            rate = (time.perf_counter() - t0) / (i + 1 - start) * 1000
            print(f"  created {i + 1:,} tasks ({rate:.2f} ms each)", file=sys.stderr)
    assert anchor is not None
    return anchor


def bulk_create(led: Any, numbers: list[int]) -> None:
    """Write the records ``Ledger.create`` would, holding the writer lock once per batch.

    For ``--fast-load`` only: the same Task model, record files, commit message and
    compare-and-swap ref write, minus what a plain create without parent, dependencies or
    idempotency key does not need per task (the lock round trip and the id collision read).
    """
    from gitledger.model import SCALAR_FIELDS, SET_FIELDS, HybridClock, Task, new_id, now_iso
    from gitledger.refs import task_ref

    name, email = led.author()
    with led.store.lock():
        for i in numbers:
            task_id, at, stamp = new_id(), now_iso(), HybridClock.tick([])
            task = Task(
                id=task_id,
                version=1,
                goal=goal_text(i),
                criteria="tests pass",
                priority=i % 5,
                created_at=at,
                updated_at=at,
                actor=name,
                clock={f: stamp for f in (*SCALAR_FIELDS, *SET_FIELDS)},
            )
            message = f"create: {goal_text(i)}\n\nVersion: 1\nTask: {task_id}\n"
            led.store.write(
                task_ref(task_id), led.record_files(task), message, (name, email), [], None
            )


# --- Taskwarrior workload -----------------------------------------------------------------------


def tw_env(base: Path) -> dict[str, str]:
    data = base / "taskdata"
    data.mkdir(parents=True, exist_ok=True)
    rc = base / "taskrc"
    if not rc.exists():
        rc.write_text(
            f"data.location={data}\nconfirmation=off\nverbose=nothing\nnews.version=2.6.2\n"
        )
    env = dict(os.environ)
    env.update({"TASKDATA": str(data), "TASKRC": str(rc)})
    return env


def tw(env: dict[str, str], *args: str, stdin: bytes | None = None) -> str:
    proc = subprocess.run(
        ["task", "rc.confirmation=off", "rc.verbose=nothing", *args],
        env=env,
        input=stdin,
        capture_output=True,
        timeout=3600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"task {' '.join(args)}: {proc.stderr.decode()[-400:]}")
    return proc.stdout.decode()


def load_taskwarrior(env: dict[str, str], base: Path, start: int, stop: int) -> str:
    """Import tasks ``start``..``stop``-1 the same shape as the ledger's; returns the anchor uuid."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    rows = []
    anchor_uuid = str(uuid.uuid5(uuid.NAMESPACE_URL, "gitledger-bench-anchor"))
    for i in range(start, stop):
        row: dict[str, Any] = {"status": "pending", "entry": stamp, "modified": stamp}
        if i == 0:
            row.update(
                uuid=anchor_uuid,
                description="Anchor: ship the release notes for the ledger",
                tags=["anchor"],
                annotations=[
                    {"entry": stamp, "description": f"Anchor note {n + 1}"}
                    for n in range(ANCHOR_NOTES)
                ],
            )
        else:
            row.update(uuid=str(uuid.uuid4()), description=goal_text(i))
        rows.append(row)
    path = base / f"import-{start}.json"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    tw(env, "import", str(path))
    path.unlink()
    return anchor_uuid


# --- one size ----------------------------------------------------------------------------------


def measure(
    size: int,
    ledger_dir: Path,
    anchor: str,
    other: str,
    tw_base: Path | None,
    tw_anchor_id: str | None,
    runs: int,
    slow_budget: float,
    only: set[str] | None = None,
) -> dict[str, Any]:
    env = dict(os.environ)
    env.update({"GITLEDGER_DIR": str(ledger_dir), "GITLEDGER_ACTOR": "bench"})
    ops = [
        Op("import floor", FLOOR_CMD, env),
        Op("task show", [*GL, "task", "show", anchor[:8]], env, compare="tw ID info"),
        Op("task inbox 10", [*GL, "task", "inbox", "10"], env, compare="tw limit:10 list"),
        Op("task search", [*GL, "task", "search", "anchor", "highlights"], env),
        Op("task update", [*GL, "task", "update", other[:8], "--note", "bench note"], env),
        Op("task create", [*GL, "task", "create", "bench created task"], env, compare="tw add"),
        Op("verify", [*GL, "verify"], env),
    ]
    if only:
        ops = [op for op in ops if op.name == "import floor" or op.name in only]
    if tw_base is not None and tw_anchor_id is not None:
        tenv = tw_env(tw_base)
        base = ["task", "rc.confirmation=off", "rc.verbose=nothing"]
        tw_ops = [
            Op("tw add", [*base, "add", "bench created task"], tenv),
            Op("tw ID info", [*base, tw_anchor_id, "info"], tenv),
            Op("tw limit:10 list", [*base, "limit:10", "list"], tenv),
        ]
        ops += [op for op in tw_ops if not only or op.name in only]
    for op in ops:
        op.cwd = ledger_dir.parent  # not the checkout: python -m puts the cwd first on sys.path
    # One untimed run each: byte-compiles the snapshot and warms the page cache.
    for op in ops:
        op.run_once()
        op.times.clear()
        op.cpu.clear()
        op.failures = 0
    spent = {op.name: 0.0 for op in ops}
    for round_no in range(runs):
        for op in ops:
            if round_no >= 3 and spent[op.name] > slow_budget:
                continue
            op.run_once()
            spent[op.name] = sum(op.times)
        print(f"  size {size:,}: round {round_no + 1}/{runs}", file=sys.stderr)
    by_name = {op.name: op for op in ops}
    floor = statistics.median(by_name["import floor"].times)
    floor_cpu = statistics.median(by_name["import floor"].cpu)
    rows = []
    for op in ops:
        med = statistics.median(op.times)
        row: dict[str, Any] = {
            "command": op.name,
            "runs": len(op.times),
            "failures": op.failures,
            "median_ms": round(med * 1000, 1),
            "p95_ms": round(p95(op.times) * 1000, 1),
            "vs_floor": round(med / floor, 2),
            "cpu_median_ms": round(statistics.median(op.cpu) * 1000, 1),
            "cpu_vs_floor": round(statistics.median(op.cpu) / floor_cpu, 2),
        }
        if op.compare and op.compare in by_name:
            row["vs_taskwarrior"] = round(med / statistics.median(by_name[op.compare].times), 2)
            row["cpu_vs_taskwarrior"] = round(
                statistics.median(op.cpu) / statistics.median(by_name[op.compare].cpu), 2
            )
            row["taskwarrior_command"] = op.compare
        rows.append(row)
    return {"size": size, "rows": rows}


def print_table(result: dict[str, Any]) -> None:
    print(f"\n{result['size']:,} tasks")
    head = (
        f"{'command':<18}{'runs':>5}{'median ms':>11}{'p95 ms':>9}{'x floor':>9}{'x tw':>7}"
        f"{'cpu ms':>9}{'cpu x floor':>12}{'cpu x tw':>9}"
    )
    print(head)
    print("-" * len(head))
    for r in result["rows"]:
        vs_tw = f"{r['vs_taskwarrior']:.2f}" if "vs_taskwarrior" in r else ""
        cpu_tw = f"{r['cpu_vs_taskwarrior']:.2f}" if "cpu_vs_taskwarrior" in r else ""
        fail = f"  ({r['failures']} failed)" if r["failures"] else ""
        print(
            f"{r['command']:<18}{r['runs']:>5}{r['median_ms']:>11.1f}{r['p95_ms']:>9.1f}"
            f"{r['vs_floor']:>9.2f}{vs_tw:>7}{r['cpu_median_ms']:>9.1f}{r['cpu_vs_floor']:>12.2f}"
            f"{cpu_tw:>9}{fail}"
        )


def import_profile(ledger_dir: Path, anchor: str, top: int = 15) -> dict[str, Any]:
    """``python -X importtime`` of ``task show``: where its start-up goes.

    Returns the slowest modules by cumulative time (with their nesting depth, so that a package
    and what it pulls in can be told apart) and the slowest by their own time.
    """
    env = dict(os.environ)
    env.update({"GITLEDGER_DIR": str(ledger_dir), "GITLEDGER_ACTOR": "bench"})
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "gitledger", "task", "show", anchor[:8]],
        env=env,
        cwd=ledger_dir.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    rows: list[dict[str, Any]] = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cum_us, name = line.split(":", 1)[1].split("|", 2)
        name = name[1:]  # one space after the bar; each level of nesting adds two more
        depth = (len(name) - len(name.lstrip(" "))) // 2
        rows.append(
            {
                "module": name.strip(),
                "depth": depth,
                "self_ms": round(int(self_us) / 1000, 1),
                "cumulative_ms": round(int(cum_us) / 1000, 1),
            }
        )
    total = sum(r["cumulative_ms"] for r in rows if r["depth"] == 0)
    by_cum = sorted((r for r in rows if r["depth"] <= 2), key=lambda r: -r["cumulative_ms"])
    by_self = sorted(rows, key=lambda r: -r["self_ms"])
    return {"total_ms": round(total, 1), "cumulative": by_cum[:top], "self": by_self[:top]}


def snapshot(rev: str, dest: Path) -> str:
    """Export ``gitledger/`` at ``rev`` to ``dest``; returns the commit's short id."""
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short=12", f"{rev}^{{commit}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, "gitledger"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    # An installed package has its bytecode compiled; without this, PYTHONDONTWRITEBYTECODE in
    # the environment would make every timed process compile gitledger's sources again.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(dest / "gitledger")], check=True)
    return commit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument(
        "--slow-budget",
        type=float,
        default=60.0,
        help="stop a command after 3 runs once its runs took this many seconds",
    )
    parser.add_argument("--json", dest="json_file", type=Path)
    parser.add_argument("--keep", type=Path, help="build the workload in DIR and keep it")
    parser.add_argument("--no-taskwarrior", action="store_true")
    parser.add_argument(
        "--only", help="time only these commands, by table name, comma-separated (floor always)"
    )
    parser.add_argument(
        "--fast-load",
        action="store_true",
        help="write the workload's plain tasks in batches under one writer lock (bulk_create)",
    )
    parser.add_argument(
        "--at", default="HEAD", help="the commit of gitledger to measure (default HEAD)"
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    if sizes != sorted(sizes) or sizes[0] < 2:
        parser.error("--sizes must be increasing, each at least 2")
    use_tw = not args.no_taskwarrior and shutil.which("task") is not None

    work = args.keep or Path(tempfile.mkdtemp(prefix="gitledger-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    ledger_dir = work / "ledger"
    tw_base = work / "taskwarrior" if use_tw else None
    os.environ.setdefault("GITLEDGER_ACTOR", "bench")
    commit = snapshot(args.at, work / "src")
    # Every process, this one included, imports gitledger from the snapshot: others may be
    # editing the working tree while the benchmark runs.
    os.environ["PYTHONPATH"] = str(work / "src")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.path.insert(0, str(work / "src"))
    from gitledger.ledger import Ledger

    meta = {
        "commit": commit,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}",
        "taskwarrior": subprocess.run(
            ["task", "--version"], capture_output=True, text=True, env=tw_env(tw_base)
        ).stdout.strip()
        if tw_base
        else None,
        "runs": args.runs,
        "fast_load": args.fast_load,
        "only": args.only,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    led = Ledger.open(ledger_dir, create=True, actor="bench")
    anchor: str | None = None
    other: str | None = None
    tw_anchor_id: str | None = None
    done = 0
    results: list[dict[str, Any]] = []
    create_rates: list[dict[str, Any]] = []
    try:
        for size in sizes:
            t0 = time.perf_counter()
            anchor = load_ledger(led, done, size, anchor, fast=args.fast_load)
            api_ms = (time.perf_counter() - t0) / (size - done) * 1000
            if other is None:
                other = next(t.id for t in led.list_tasks(limit=2) if t.id != anchor)
            tw_ms = None
            if tw_base is not None:
                env = tw_env(tw_base)
                t0 = time.perf_counter()
                anchor_uuid = load_taskwarrior(env, tw_base, done, size)
                tw_ms = (time.perf_counter() - t0) / (size - done) * 1000
                tw_anchor_id = tw(env, "_get", f"{anchor_uuid}.id").strip()
            create_rates.append(
                {
                    "size": size,
                    "api_create_ms_per_task": round(api_ms, 2),
                    "taskwarrior_import_ms_per_task": round(tw_ms, 3) if tw_ms else None,
                }
            )
            print(f"loaded {size:,}: API create {api_ms:.2f} ms/task", file=sys.stderr)
            done = size
            result = measure(
                size,
                ledger_dir,
                anchor,
                other,
                tw_base,
                tw_anchor_id,
                args.runs,
                args.slow_budget,
                {c.strip() for c in args.only.split(",")} if args.only else None,
            )
            results.append(result)
            print_table(result)
            sys.stdout.flush()
        assert anchor is not None
        profile = import_profile(ledger_dir, anchor)
        print(f"\n'task show' imports (python -X importtime): {profile['total_ms']:.1f} ms in all")
        print("  slowest, cumulative (depth <= 2):")
        for row in profile["cumulative"]:
            print(f"    {row['cumulative_ms']:>8.1f}  {'  ' * row['depth']}{row['module']}")
        print("  slowest, own time:")
        for row in profile["self"]:
            print(f"    {row['self_ms']:>8.1f}  {row['module']}")
        meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        out = {"meta": meta, "load": create_rates, "sizes": results, "import_profile": profile}
        if args.json_file:
            args.json_file.write_text(json.dumps(out, indent=2) + "\n")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
