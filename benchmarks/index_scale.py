"""How listing, search and show scale with the derived index, against Taskwarrior and the floor.

    python benchmarks/index_scale.py [--sizes 1000,10000,100000] [--repeat 5] [--json FILE]

For each size it builds a ledger with ``gitledger task import`` (one process, timed: import
throughput), then times whole processes, as a user or an agent runs them:

- ``gitledger task search WORD``, ``task inbox 10``, ``task ready 10``, ``task show ID``;
- the first ``task inbox 10`` after 100 new task refs arrived by a plain ``git fetch`` (the index
  must notice them and read only those 100);
- the import floor, ``python -c "import pygit2, click, pydantic"``: no gitledger command can be
  faster than the imports it needs;
- Taskwarrior 2.6 on the same tasks (loaded with its own ``task import``): ``task /WORD/ list``
  and ``task limit:10 list``, in a temporary TASKDATA/TASKRC.

Each figure is the median of ``--repeat`` runs; ratios are against the floor's median. The index
file's size is read from disk. Tasks: random goals from a small vocabulary, criteria, next
actions, labels, priorities; 60% open, 10% active, 10% blocked, 20% done; a fifth depend on an
earlier task, a tenth are children of an earlier unfinished task (an epic waits for them), and
every active task is claimed by an agent, half of the claims lapsed (held_at long past) and half
live (now), so ready has something to decide: dependencies, open children and lapsed claims.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

WORDS = (
    "parser lexer cache index graph search render token budget fuse judge memory sync remote "
    "claim ledger commit branch merge review deploy metric alert schema migrate backup restore "
    "rollout canary quota shard replica vacuum compact snapshot tracing logging billing invoice "
    "onboarding password session cookie upload thumbnail webhook retry timeout throttle"
).split()
ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
STAMP = "2026-01-01T00:00:00.000Z"
# The interpreter running this script, as the floor uses: a shell shim (pyenv) would add its own
# start-up to every figure.
GITLEDGER = [sys.executable, "-m", "gitledger"]


def new_id(rng: random.Random) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(20))


def make_tasks(n: int, seed: int, start: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    tasks: list[dict[str, Any]] = []
    unfinished: list[str] = []  # ids a child may go under (a done parent has no open children)
    live = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    for i in range(n):
        goal_words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 9)))
        roll = rng.random()
        status = (
            "open"
            if roll < 0.6
            else "active"
            if roll < 0.7
            else "blocked"
            if roll < 0.8
            else "done"
        )
        task: dict[str, Any] = {
            "id": new_id(rng),
            "version": 1,
            "goal": f"Task {start + i}: {goal_words}",
            "criteria": "the " + " ".join(rng.choice(WORDS) for _ in range(6)) + " tests pass",
            "next": "check " + rng.choice(WORDS),
            "status": status,
            "priority": rng.randint(0, 4),
            "labels": [rng.choice(WORDS)],
            "created_at": STAMP,
            "updated_at": f"2026-01-01T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}.000Z",
            "actor": "bench",
        }
        if status == "blocked":
            task["blocker"] = "waits on " + rng.choice(WORDS)
        if status == "active":  # a claim by an agent: half lapsed long ago, half live
            task.update(owner="bench", agent=f"agent-{i % 7}@bench")
            task["held_at"] = STAMP if rng.random() < 0.5 else live
        if tasks and rng.random() < 0.2:
            task["dependencies"] = [rng.choice(tasks)["id"]]
        if unfinished and rng.random() < 0.1:
            task["parent"] = rng.choice(unfinished)
        if status != "done":
            unfinished.append(task["id"])
        tasks.append(task)
    return tasks


def run(cmd: list[str], env: dict[str, str], input: str | None = None) -> str:
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, input=input)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} failed: {done.stderr.strip()[:500]}")
    return done.stdout


def taskwarrior_load(tasks: list[dict[str, Any]], work: Path) -> dict[str, str] | None:
    """Load the same tasks into a fresh Taskwarrior 2.6 (its own bulk import); its environment."""
    if shutil.which("task") is None:
        return None
    data = work / "tw-data"
    data.mkdir()
    rc = work / "taskrc"
    rc.write_text(f"data.location={data}\nconfirmation=off\nverbose=nothing\nhooks=off\n")
    env = {**os.environ, "TASKDATA": str(data), "TASKRC": str(rc)}
    prio = {0: "H", 1: "H", 2: "M", 3: "L", 4: "L"}
    lines = []
    for t in tasks:
        lines.append(
            json.dumps(
                {
                    "uuid": _uuid(t["id"]),
                    "description": t["goal"],
                    "status": "completed" if t["status"] == "done" else "pending",
                    "entry": "20260101T000000Z",
                    "priority": prio[t["priority"]],
                    "tags": t["labels"],
                    **({"end": "20260101T000000Z"} if t["status"] == "done" else {}),
                }
            )
        )
    src = work / "tw.json"
    src.write_text("\n".join(lines) + "\n")
    started = time.perf_counter()
    run(["task", "rc.confirmation=off", "import", str(src)], env)
    env["_import_per_s"] = str(len(tasks) / (time.perf_counter() - started))
    return env


def _uuid(task_id: str) -> str:
    import hashlib

    h = hashlib.sha256(task_id.encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"


def measure(size: int, repeat: int, work: Path) -> dict[str, Any]:
    env = {**os.environ}
    # Measure what a user runs: byte-code cached (an environment that forbids writing .pyc files
    # would make every process compile gitledger from source, which no installed copy does).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    ledger = work / "ledger"
    env["GITLEDGER_DIR"] = str(ledger)
    env.pop("GITLEDGER_NO_INDEX", None)
    run([*GITLEDGER, "init"], env)
    tasks = make_tasks(size, seed=size)
    src = work / "tasks.jsonl"
    src.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    started = time.perf_counter()
    before = os.times()
    report = json.loads(run([*GITLEDGER, "task", "import", str(src), "--json"], env))
    after = os.times()
    import_wall = time.perf_counter() - started
    import_cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    time.sleep(2.2)  # past the racy window: the first command below is an ordinary one
    word = "canary"
    some_id = tasks[size // 2]["id"]
    result: dict[str, Any] = {
        "size": size,
        "import_wall_s": import_wall,
        "import_per_s": size / import_wall,
        "import_per_cpu_s": size / import_cpu if import_cpu else None,
        "import_reported_per_s": report["tasks_per_second"],
    }
    tw_env = taskwarrior_load(tasks, work)
    commands: dict[str, tuple[list[str], dict[str, str]]] = {
        "floor": ([sys.executable, "-c", "import pygit2, click, pydantic"], env),
        "search": ([*GITLEDGER, "task", "search", word], env),
        "inbox10": ([*GITLEDGER, "task", "inbox", "10"], env),
        "ready10": ([*GITLEDGER, "task", "ready", "10"], env),
        "show": ([*GITLEDGER, "task", "show", some_id[:8]], env),
    }
    if tw_env is not None:
        commands["tw_search"] = (["task", "rc.confirmation=off", f"/{word}/", "list"], tw_env)
        commands["tw_limit10"] = (["task", "rc.confirmation=off", "limit:10", "list"], tw_env)
    # Round-robin, so the load of this shared machine falls on every command alike; the first
    # round warms the byte-code and page caches and is not counted.
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(repeat + 1):
        for name, (cmd, cmd_env) in commands.items():
            before = os.times()
            started = time.perf_counter()
            done = subprocess.run(cmd, env=cmd_env, capture_output=True, text=True)
            if round_:
                times[name].append(time.perf_counter() - started)
                after = os.times()
                cpu[name].append(
                    after.children_user
                    - before.children_user
                    + after.children_system
                    - before.children_system
                )
            if done.returncode != 0:
                raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.strip()[:500]}")
    for name, values in times.items():
        result[f"{name}_s"] = statistics.median(values)
        # CPU time (user + system) of the process: less at the mercy of the machine's load.
        result[f"{name}_cpu_s"] = statistics.median(cpu[name])
    result["taskwarrior"] = {
        "import_per_s": float(tw_env["_import_per_s"]) if tw_env else None,
        "search_s": result.pop("tw_search_s", None),
        "limit10_s": result.pop("tw_limit10_s", None),
        "search_cpu_s": result.pop("tw_search_cpu_s", None),
        "limit10_cpu_s": result.pop("tw_limit10_cpu_s", None),
    }
    # The first command after 100 new refs arrived by plain git fetch.
    other = work / "other"
    other_env = {**env, "GITLEDGER_DIR": str(other)}
    run([*GITLEDGER, "init"], other_env)
    firsts = []
    for round_ in range(repeat):
        batch = make_tasks(100, seed=size * 1000 + round_, start=size + round_ * 100)
        for t in batch:
            t.pop("dependencies", None)
        run(
            [*GITLEDGER, "task", "import", "-", "--quiet"],
            other_env,
            input="".join(json.dumps(t) + "\n" for t in batch),
        )
        run(
            ["git", "--git-dir", str(ledger), "fetch", "--quiet", str(other)]
            + ["+refs/gitledger/tasks/*:refs/gitledger/tasks/*"],
            env,
        )
        started = time.perf_counter()
        out = run([*GITLEDGER, "task", "search", f'"Task {size + round_ * 100 + 7}:"'], env)
        firsts.append(time.perf_counter() - started)
        if f"Task {size + round_ * 100 + 7}:" not in out:
            raise SystemExit("the fetched task was not found by the first command after fetch")
        time.sleep(2.2)
    result["after_fetch_s"] = statistics.median(firsts)
    result["in_process_ms"] = in_process(ledger, word)
    index = ledger / "gitledger-index.sqlite"
    result["index_bytes"] = sum(
        Path(f"{index}{s}").stat().st_size for s in ("", "-wal") if Path(f"{index}{s}").exists()
    )
    return result


def in_process(ledger_path: Path, word: str, repeat: int = 21) -> dict[str, float]:
    """The index's own work, in one process after start-up: median milliseconds per call."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from gitledger.ledger import Ledger

    ledger = Ledger.open(ledger_path)
    some = ledger.inbox(1)[0].id
    idx = ledger.index()
    assert idx is not None
    calls = {
        "refresh_nothing_moved": idx.refresh,
        "inbox10": lambda: ledger.inbox(10),
        "ready10": lambda: ledger.ready(10),
        "search20": lambda: ledger.search(word, 20),
        "list50": lambda: ledger.list_tasks(limit=50),
        "resolve_and_show": lambda: ledger.show(some[:8]),
    }
    out: dict[str, float] = {}
    for name, call in calls.items():
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            call()
            times.append(time.perf_counter() - started)
        out[name] = statistics.median(times) * 1000
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", dest="json_file", type=Path)
    parser.add_argument(
        "--in-process", type=Path, metavar="LEDGER", help="Only time the index's calls on LEDGER."
    )
    args = parser.parse_args()
    if args.in_process:
        print(json.dumps(in_process(args.in_process, "canary"), indent=2))
        return
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="gitledger-index-scale-") as tmp:
            print(f"measuring {size:,} tasks …", file=sys.stderr, flush=True)
            results.append(measure(size, args.repeat, Path(tmp)))
            print_row(results[-1])
    print_table(results)
    if args.json_file:
        args.json_file.write_text(json.dumps(results, indent=2) + "\n")


def ms(value: float | None) -> str:
    return "—" if value is None else f"{value * 1000:,.0f} ms"


def print_row(r: dict[str, Any]) -> None:
    print(json.dumps(r), file=sys.stderr, flush=True)


def print_table(results: list[dict[str, Any]]) -> None:
    rows = [
        ("import floor (python -c 'import pygit2, click, pydantic')", "floor_s"),
        ("gitledger task search WORD", "search_s"),
        ("gitledger task inbox 10", "inbox10_s"),
        ("gitledger task ready 10", "ready10_s"),
        ("gitledger task show ID", "show_s"),
        ("first command after 100 refs arrived by git fetch", "after_fetch_s"),
    ]
    sizes = [r["size"] for r in results]
    print(f"{'median, whole process':58}" + "".join(f"{s:>16,}" for s in sizes))
    for label, key in rows:
        cells = ""
        for r in results:
            ratio = r[key] / r["floor_s"]
            cells += f"{ms(r[key]):>10} {ratio:4.2f}x" if key != "floor_s" else f"{ms(r[key]):>16}"
        print(f"{label:58}{cells}")
    print(f"{'median CPU time (user + system)':58}")
    for label, key in rows[:5]:
        key = key.replace("_s", "_cpu_s")
        cells = ""
        for r in results:
            ratio = r[key] / r["floor_cpu_s"]
            cells += (
                f"{ms(r[key]):>10} {ratio:4.2f}x" if key != "floor_cpu_s" else f"{ms(r[key]):>16}"
            )
        print(f"{label:58}{cells}")
    for label, key in (
        ("Taskwarrior 2.6: task /WORD/ list", "search_s"),
        ("Taskwarrior 2.6: task limit:10 list", "limit10_s"),
        ("Taskwarrior 2.6: task /WORD/ list, CPU", "search_cpu_s"),
        ("Taskwarrior 2.6: task limit:10 list, CPU", "limit10_cpu_s"),
    ):
        cells = ""
        for r in results:
            tw = r["taskwarrior"]
            floor = r["floor_cpu_s"] if "cpu" in key else r["floor_s"]
            cells += f"{ms(tw[key]):>10} {tw[key] / floor:4.2f}x" if tw.get(key) else f"{'—':>16}"
        print(f"{label:58}{cells}")
    print(
        f"{'gitledger import, tasks/s (wall)':58}"
        + "".join(f"{r['import_per_s']:>16,.0f}" for r in results)
    )
    print(
        f"{'gitledger import, tasks/s (in-process, as it reports)':58}"
        + "".join(f"{r['import_reported_per_s']:>16,.0f}" for r in results)
    )
    print(
        f"{'gitledger import, tasks per CPU second':58}"
        + "".join(f"{(r['import_per_cpu_s'] or 0):>16,.0f}" for r in results)
    )
    print(
        f"{'Taskwarrior import, tasks/s (wall)':58}"
        + "".join(f"{r['taskwarrior'].get('import_per_s') or 0:>16,.0f}" for r in results)
    )
    print(
        f"{'index size on disk':58}"
        + "".join(f"{r['index_bytes'] / 1e6:>13.1f} MB" for r in results)
    )


if __name__ == "__main__":
    main()
