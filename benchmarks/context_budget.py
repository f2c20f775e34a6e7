"""The context assembler on the published workload, against the peer and the naive baseline.

    python benchmarks/context_budget.py [--tasks 1000] [--runs 11] [--json FILE] [--keep DIR]

The workload is the one a peer published (ContextSpindle's task-ledger benchmark), with its exact
texts: one anchor task (goal, criteria, next action, one decision, one evidence item, 24 notes)
and ``--tasks - 1`` unrelated tasks, all created through the Python API in a fresh ledger.

Printed:

- for each budget (512, 1,024, 2,048 and 4,096 bytes): the handoff's UTF-8 bytes and cl100k_base
  tokens, optional items kept (of them shortened) and omitted, the peer's kept count, and whether
  the goal and next action are present; then the same budgets counted in tokens;
- the naive baseline: every page of ``gitledger task list --json`` (100 tasks a page, as the
  peer paged), concatenated;
- timing: ``task_context(…, 2048)`` in-process (median of ``--runs``), and ``gitledger task
  context ID 2048`` as a whole process beside ``gitledger --version`` (the start-up floor).

Nothing is asserted; figures go to docs/CONTEXT.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

GOAL = "Publish ContextSpindle without losing the original task across interruptions"
CRITERIA = "Repository is renamed, tests pass, and recovery instructions are documented"
NEXT = "Verify benchmark evidence and publish the README"
DECISION = "The durable task ledger is authoritative; cache hints are optional"
EVIDENCE = "docs/TASK-LEDGER-BENCHMARK.md"
NOTE = (
    "Checkpoint {n}: validated a release, documentation, or recovery detail; keep the next "
    "action explicit so another agent can resume without rereading the transcript."
)
UNRELATED = "Unrelated task {n:04d}: investigate a separate service, issue, or review request"
BUDGETS = (512, 1024, 2048, 4096)
PEER_KEPT = {512: 1, 1024: 4, 2048: 10, 4096: 22}  # of 26 optional items
PEER_BASELINE = {"bytes": 322_607, "tokens": 94_701}
PEER_2048 = {"bytes": 1_908, "tokens": 420, "omitted": 16}
GL = [sys.executable, "-m", "gitledger"]


def build(path: Path, tasks: int) -> str:
    from gitledger.ledger import Ledger

    os.environ["GITLEDGER_DIR"] = str(path)
    # An explicit identity: outside a Git work tree each write would otherwise call
    # pygit2.discover_repository(), which (pygit2 1.21) returns None without taking a reference
    # and crashes a long-running process after ~10,000 writes ("none_dealloc").
    os.environ.setdefault("GIT_AUTHOR_NAME", "gitledger benchmark")
    os.environ.setdefault("GIT_AUTHOR_EMAIL", "bench@gitledger.invalid")
    ledger = Ledger.init()
    anchor = ledger.create(GOAL, criteria=CRITERIA)
    ledger.update(
        anchor.id,
        status="active",
        next=NEXT,
        decisions=[DECISION],
        evidence=[EVIDENCE],
        notes=[NOTE.format(n=i + 1) for i in range(24)],
    )
    started = time.perf_counter()
    for n in range(1, tasks):
        ledger.create(UNRELATED.format(n=n))
        if n % 1000 == 0:
            rate = n / (time.perf_counter() - started)
            print(f"  created {n:,} tasks ({rate:,.0f}/s)", file=sys.stderr)
    return anchor.id


def run(argv: list[str]) -> tuple[str, float]:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"{' '.join(argv[2:])} failed: {done.stderr.strip()}")
    return done.stdout, elapsed


def baseline(tasks: int, as_json: bool) -> str:
    pages = []
    flag = ["--json"] if as_json else []
    for offset in range(0, tasks, 100):
        page, _ = run([*GL, "task", "list", *flag, "--limit", "100", "--offset", str(offset)])
        pages.append(page.rstrip("\n"))
    return "\n".join(pages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--json", dest="json_file", type=Path)
    parser.add_argument("--keep", type=Path, help="Build the ledger here and keep it.")
    parser.add_argument(
        "--no-baseline",
        action="store_true",
        help="Skip the naive baseline (one process per page of 100: slow at 100,000 tasks).",
    )
    args = parser.parse_args()

    from gitledger import tokens
    from gitledger.context import task_context
    from gitledger.ledger import Ledger

    tmp = Path(tempfile.mkdtemp(prefix="gitledger-context-bench-"))
    ledger_dir = args.keep or tmp / "ledger"
    try:
        print(f"building {args.tasks:,} tasks …", file=sys.stderr)
        started = time.perf_counter()
        anchor = build(ledger_dir, args.tasks)
        build_s = time.perf_counter() - started
        ledger = Ledger.open(ledger_dir)
        results: dict[str, Any] = {
            "tasks": args.tasks,
            "build_seconds": round(build_s, 1),
            "machine": f"{platform.platform()}, {os.cpu_count()} cores (shared, loaded)",
            "python": platform.python_version(),
        }

        rows = []
        for unit in ("bytes", "tokens"):
            for budget in BUDGETS:
                h = task_context(ledger, anchor, budget=budget, unit=unit)
                rows.append(
                    {
                        "unit": unit,
                        "budget": budget,
                        "bytes": len(h.text.encode("utf-8")),
                        "tokens": tokens.count(h.text),
                        "kept": h.kept_total,
                        "shortened": sum(h.shortened.values()),
                        "omitted": h.omitted_total,
                        "peer_kept": PEER_KEPT[budget] if unit == "bytes" else None,
                        "goal_and_next": GOAL in h.text and NEXT in h.text,
                        "minimum": h.minimum,
                    }
                )
        results["contexts"] = rows

        if not args.no_baseline:
            for name, as_json in (("naive_baseline", True), ("naive_baseline_text", False)):
                naive = baseline(args.tasks, as_json)
                results[name] = {
                    "pages": (args.tasks + 99) // 100,
                    "bytes": len(naive.encode("utf-8")),
                    "tokens": tokens.count(naive),
                }

        in_process = []
        for _ in range(args.runs):
            started = time.perf_counter()
            task_context(ledger, anchor, budget=2048)
            in_process.append(time.perf_counter() - started)
        in_process_tokens = []
        for _ in range(args.runs):
            started = time.perf_counter()
            task_context(ledger, anchor, budget=2048, unit="tokens")
            in_process_tokens.append(time.perf_counter() - started)
        whole, show, floor = [], [], []
        for _ in range(args.runs):  # interleaved, so load on the machine hits each alike
            whole.append(run([*GL, "task", "context", anchor, "2048"])[1])
            show.append(run([*GL, "task", "show", anchor])[1])
            floor.append(run([*GL, "--version"])[1])
        results["timing_ms"] = {
            "runs": args.runs,
            "in_process_bytes_2048": round(statistics.median(in_process) * 1000, 1),
            "in_process_tokens_2048": round(statistics.median(in_process_tokens) * 1000, 1),
            "process_task_context_2048": round(statistics.median(whole) * 1000, 1),
            "process_task_show": round(statistics.median(show) * 1000, 1),
            "process_version_floor": round(statistics.median(floor) * 1000, 1),
        }
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)

    print(f"\n{args.tasks:,} tasks (built in {results['build_seconds']} s)\n")
    print("unit    budget   bytes  tokens  kept (short)  omitted  peer kept  goal+next")
    for r in rows:
        peer = "" if r["peer_kept"] is None else str(r["peer_kept"])
        print(
            f"{r['unit']:<7} {r['budget']:>6} {r['bytes']:>7} {r['tokens']:>7} "
            f"{r['kept']:>5} ({r['shortened']})   {r['omitted']:>7}  {peer:>9}  "
            f"{'yes' if r['goal_and_next'] else 'NO'}"
        )
    two = next(r for r in rows if r["unit"] == "bytes" and r["budget"] == 2048)
    print(
        f"\n2,048-byte handoff: {two['bytes']:,} bytes / {two['tokens']} tokens "
        f"(peer's: {PEER_2048['bytes']:,} / {PEER_2048['tokens']}, {PEER_2048['omitted']} omitted)"
    )
    for name, what in (("naive_baseline", "--json"), ("naive_baseline_text", "text")):
        if name in results:
            nb = results[name]
            print(
                f"naive baseline ({nb['pages']} pages of task list {what}): {nb['bytes']:,} "
                f"bytes, {nb['tokens']:,} tokens; the handoff has "
                f"{100 * (1 - two['tokens'] / nb['tokens']):.2f}% fewer tokens"
            )
    print(
        f"(peer's baseline: {PEER_BASELINE['bytes']:,} bytes / {PEER_BASELINE['tokens']:,} tokens)"
    )
    t = results["timing_ms"]
    print(f"\ntiming, median of {t['runs']} runs (ms):")
    for key in (
        "in_process_bytes_2048",
        "in_process_tokens_2048",
        "process_task_context_2048",
        "process_task_show",
        "process_version_floor",
    ):
        print(f"  {key:<28} {t[key]:>8.1f}")
    if args.json_file:
        args.json_file.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
