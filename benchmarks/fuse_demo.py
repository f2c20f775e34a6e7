"""``gitledger fuse demo`` as a benchmark: probe facts kept per budget, with timings.

A synthetic Claude Code session (about 185 KB, about 95 messages) holds 14 probe facts, each once;
it is saved into a throwaway ledger and restored at each budget. Render times are the median of
``--runs`` restores (in-process; the whole-process figures are in fuse_timing.py).

    python benchmarks/fuse_demo.py [--runs 5] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from gitledger.fuse import DEMO_BUDGETS, run_demo

# The published table of the peer tool on its own kind of workload, and the aim.
PEER = {600: 5, 1_000: 6, 1_500: 12, 2_000: 14, 6_000: 14}
AIM = {600: 8, 1_000: 12, 1_500: 14, 2_000: 14, 6_000: 14}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", dest="json_file")
    options = parser.parse_args()
    results = []
    for _ in range(options.runs):
        with tempfile.TemporaryDirectory(prefix="gitledger-fuse-demo-") as tmp:
            results.append(run_demo(Path(tmp), DEMO_BUDGETS))
    first = results[0]
    print(
        f"Synthetic session: {first['transcript_bytes'] / 1000:.0f} KB, {first['messages']} "
        f"messages, {first['probes']} probes; save median "
        f"{statistics.median(r['save_ms'] for r in results):.0f} ms (in-process)"
    )
    print(
        f"{'budget':>7} {'bytes':>6} {'kept':>6} {'peer':>5} {'aim':>5} {'render ms':>10}  missing"
    )
    rows = []
    for i, budget in enumerate(DEMO_BUDGETS):
        row = first["budgets"][i]
        render = statistics.median(r["budgets"][i]["render_ms"] for r in results)
        rows.append({**row, "render_ms": render, "peer": PEER.get(budget), "aim": AIM.get(budget)})
        print(
            f"{budget:>7} {row['bytes']:>6} {row['kept']:>3}/{first['probes']} "
            f"{PEER.get(budget, '-')!s:>5} {AIM.get(budget, '-')!s:>5} {render:>10.1f}  "
            f"{', '.join(row['missing']) or '-'}"
        )
    if options.json_file:
        out = {**first, "budgets": rows, "runs": options.runs}
        Path(options.json_file).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
