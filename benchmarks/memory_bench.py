"""Memory benchmark: recall@5 on synthetic facts with decoys, and recall latency at scale.

The fact set is generated from a seeded vocabulary: each fact names a component, an action, an
object and a reason. For each of 200 target facts, a query names its component and object in
other words order plus a word of its reason; decoys share the component, or the object, or the
reason with the target, so a ranker that matches any one word is not enough.

    python benchmarks/memory_bench.py                 # 10,000 facts (and latency at 100,000)
    python benchmarks/memory_bench.py --sizes 10000 --json results.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMPONENTS = [
    f"{a}{b}"
    for a in (
        "auth",
        "billing",
        "cache",
        "deploy",
        "search",
        "upload",
        "queue",
        "report",
        "email",
        "export",
        "import",
        "audit",
        "session",
        "sync",
        "index",
        "backup",
    )
    for b in ("", "-api", "-worker", "-cli", "-db")
]
ACTIONS = [
    "must retry",
    "should batch",
    "never logs",
    "always pins",
    "times out on",
    "rejects",
    "caches",
    "streams",
    "compresses",
    "signs",
    "validates",
    "throttles",
]
OBJECTS = [
    f"{a} {b}"
    for a in (
        "large",
        "empty",
        "nested",
        "stale",
        "unicode",
        "signed",
        "partial",
        "duplicate",
        "expired",
        "encrypted",
    )
    for b in ("payloads", "tokens", "files", "rows", "headers", "cookies", "manifests", "snapshots")
]
REASONS = [
    "the vendor rate limit",
    "a kernel bug in the runner",
    "the legal retention rule",
    "memory pressure at peak",
    "clock skew between regions",
    "the old client release",
    "an audit finding",
    "a customer contract",
    "the flaky network link",
    "disk quotas",
]
KINDS = ["decision", "pitfall", "constraint", "preference", "todo", "accomplishment"]


def make_facts(n: int, targets: int, seed: int = 7) -> tuple[list[dict], list[tuple[str, str]]]:
    rng = random.Random(seed)
    facts: list[dict] = []
    queries: list[tuple[str, str]] = []
    seen: set[tuple[str, str, str, str]] = set()
    while len(facts) < n:
        combo = (
            rng.choice(COMPONENTS),
            rng.choice(ACTIONS),
            rng.choice(OBJECTS),
            rng.choice(REASONS),
        )
        if combo in seen:
            continue
        seen.add(combo)
        comp, action, obj, reason = combo
        text = f"The {comp} {action} {obj} because of {reason}"
        facts.append({"text": text, "kind": rng.choice(KINDS), "importance": rng.randint(1, 5)})
    for fact in rng.sample(facts, targets):
        words = fact["text"].split()
        comp = words[1]
        obj = " ".join(w for w in fact["text"].split(" because ")[0].split()[-2:])
        reason_word = max(fact["text"].split(" because of ")[1].split(), key=len)
        queries.append((f"{obj} in {comp}, {reason_word}", fact["text"]))
    return facts, queries


def build(path: Path, facts: list[dict]) -> float:
    from gitledger.ledger import Ledger
    from gitledger.memory import Memory

    ledger = Ledger.open(path, create=True)
    memory = Memory(ledger)
    memory.set_capacity(len(facts) + 10)
    started = time.perf_counter()
    for start in range(0, len(facts), 20000):
        memory.import_facts(facts[start : start + 20000])
    memory.stats()  # index built
    return time.perf_counter() - started


def measure(path: Path, queries: list[tuple[str, str]], runs: int) -> dict:
    from gitledger.ledger import Ledger
    from gitledger.memory import Memory

    memory = Memory(Ledger.open(path))
    found = 0
    for query, answer in queries:
        hits = memory.recall(query, 5, reinforce=False)
        found += any(h.fact.text == answer for h in hits)
    look, used = [], []
    for query, _ in queries[:runs]:
        t0 = time.perf_counter()
        memory.recall(query, 5, reinforce=False)
        look.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        memory.recall(query, 5, reinforce=True)
        used.append((time.perf_counter() - t0) * 1000)
    proc: list[float] = []
    floor: list[float] = []
    env = dict(os.environ, GITLEDGER_DIR=str(path))
    # Interleaved, one of each a round, so the machine's load hits both alike.
    for query, _ in queries[: max(21, min(runs, 41))]:
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "gitledger", "recall", query, "--no-reinforce"],
            env=env,
            capture_output=True,
            check=True,
        )
        proc.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import pygit2, click, pydantic"], check=True)
        floor.append((time.perf_counter() - t0) * 1000)

    def p95(xs: list[float]) -> float:
        return sorted(xs)[max(0, int(len(xs) * 0.95) - 1)]

    return {
        "recall_at_5": found / len(queries),
        "queries": len(queries),
        "inproc_ms_median": statistics.median(look),
        "inproc_ms_p95": p95(look),
        "inproc_reinforce_ms_median": statistics.median(used),
        "process_ms_median": statistics.median(proc),
        "import_floor_ms_median": statistics.median(floor),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated fact counts")
    parser.add_argument("--runs", type=int, default=50, help="timed recalls per size")
    parser.add_argument("--json", dest="json_out", help="write the results here")
    args = parser.parse_args()
    rows = []
    for size in [int(s) for s in args.sizes.split(",")]:
        facts, queries = make_facts(size, 200)
        with tempfile.TemporaryDirectory(prefix="gitledger-membench-") as tmp:
            seconds = build(Path(tmp) / "ledger", facts)
            row = {
                "facts": size,
                "import_s": seconds,
                **measure(Path(tmp) / "ledger", queries, args.runs),
            }
        rows.append(row)
        print(
            f"{size:>7} facts  recall@5 {row['recall_at_5']:.3f}  in-process {row['inproc_ms_median']:.1f} ms"
            f" (p95 {row['inproc_ms_p95']:.1f}, with reinforcement {row['inproc_reinforce_ms_median']:.1f})"
            f"  process {row['process_ms_median']:.0f} ms (floor {row['import_floor_ms_median']:.0f})"
            f"  import {size / seconds:,.0f} facts/s",
            flush=True,
        )
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
