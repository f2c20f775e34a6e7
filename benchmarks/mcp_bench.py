"""Per-call latency of the MCP server over stdio, beside the same operations as CLI processes.

For each ledger size: build a ledger (bulk import when the index module offers it, else one
``Ledger.create`` per task), start ``gitledger mcp`` under the SDK's own stdio client, and time
``task_context``, ``task_show``, ``task_search`` and ``task_update`` from the client side (the
whole round trip: JSON-RPC over the pipes, argument check, the library call, the reply). Then run
the same four operations as ``gitledger task …`` processes. Also counts the cl100k_base tokens of
the ``tools/list`` result as a client receives it.

    python benchmarks/mcp_bench.py                      # 1,000 tasks
    python benchmarks/mcp_bench.py --sizes 1000 100000 --json mcp.json

Medians and 95th percentiles in milliseconds. Timings on a shared machine are noisy: quote
medians and ratios, and say what the machine was doing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

WORDS = (
    "parser lexer cache index render budget merge claim ledger commit snapshot network retry "
    "schema import export token window session hook"
).split()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[k]


def build_ledger(path: Path, size: int) -> str:
    """A ledger of ``size`` tasks plus one anchor task with some history; the anchor's id."""
    os.environ["GITLEDGER_DIR"] = str(path)
    from gitledger.ledger import Ledger

    led = Ledger.init()
    filler = size - 1
    try:
        from gitledger.transfer import import_tasks
    except ImportError:
        import_tasks = None  # type: ignore[assignment]
    started = time.perf_counter()
    if import_tasks is not None and filler > 0:
        lines = (
            json.dumps(
                {
                    "goal": f"Task {i}: {WORDS[i % len(WORDS)]} {WORDS[(i * 7) % len(WORDS)]}",
                    "criteria": f"check {i} passes",
                    "labels": [WORDS[i % 5]],
                    "priority": i % 5,
                }
            )
            for i in range(filler)
        )
        import_tasks(led, lines)
    else:
        for i in range(filler):
            led.create(f"Task {i}: {WORDS[i % len(WORDS)]}", criteria=f"check {i} passes")
    anchor = led.create(
        "Anchor: make the zebracorn parser resumable",
        criteria="pytest tests/test_resume.py passes",
        next="Write the resume test",
        labels=["anchor"],
    )
    led.update(
        anchor.id,
        notes=[f"note {i}: tried approach {i}" for i in range(12)],
        decisions=["Keep state in the ledger because transcripts get compacted"],
        evidence=["tests/test_resume.py::test_basic passes"],
    )
    sys.stderr.write(f"built {size} tasks in {time.perf_counter() - started:.1f} s\n")
    return anchor.id


async def mcp_latency(
    anchor: str, calls: int, search_calls: int, mixed_calls: int
) -> dict[str, list[float]]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "gitledger", "mcp"], env=dict(os.environ)
    )
    ops: dict[str, tuple[str, Any]] = {
        "context": ("task_context", lambda i: {"id": anchor}),
        "show": ("task_show", lambda i: {"id": anchor}),
        "search": ("task_search", lambda i: {"query": "zebracorn", "limit": 10}),
        "update": ("task_update", lambda i: {"id": anchor, "next": f"step {i}"}),
    }
    out: dict[str, list[float]] = {}
    async with Client(params, read_timeout_seconds=600) as client:
        for name, (tool, args) in ops.items():
            n = search_calls if name == "search" else calls
            for i in range(5):  # warm-up: first index refresh, imports, caches
                result = await client.call_tool(tool, args(-i - 1))
                assert not result.is_error, result.structured_content
            times = []
            for i in range(n):
                t0 = time.perf_counter()
                result = await client.call_tool(tool, args(i))
                times.append((time.perf_counter() - t0) * 1000)
                assert not result.is_error, result.structured_content
            out[name] = times
        # An agent's rhythm: write, then read the handoff back. The read comes right after a ref
        # moved, so it also pays for bringing the index up to date.
        times = []
        for i in range(mixed_calls):
            result = await client.call_tool("task_update", {"id": anchor, "next": f"mixed {i}"})
            assert not result.is_error, result.structured_content
            t0 = time.perf_counter()
            result = await client.call_tool("task_context", {"id": anchor})
            times.append((time.perf_counter() - t0) * 1000)
            assert not result.is_error, result.structured_content
        out["context after update"] = times
    return out


def cli_latency(anchor: str, calls: int) -> dict[str, list[float]]:
    exe = shutil.which("gitledger")
    base = [exe] if exe else [sys.executable, "-m", "gitledger"]
    ops: dict[str, Callable[[int], list[str]]] = {
        "context": lambda i: ["task", "context", anchor, "--json"],
        "show": lambda i: ["task", "show", anchor, "--json"],
        "search": lambda i: ["task", "search", "zebracorn", "--limit", "10", "--json"],
        "update": lambda i: ["task", "update", anchor, "--next", f"cli step {i}", "--json"],
    }
    out: dict[str, list[float]] = {}
    for name, argv in ops.items():
        times = []
        for i in range(calls + 1):
            t0 = time.perf_counter()
            proc = subprocess.run([*base, *argv(i)], capture_output=True, text=True)
            elapsed = (time.perf_counter() - t0) * 1000
            if proc.returncode != 0:
                raise SystemExit(f"CLI {name} failed: {proc.stderr.strip()}")
            if i:  # the first run warms the page cache
                times.append(elapsed)
        out[name] = times
    return out


def tools_list_tokens() -> dict[str, Any]:
    from gitledger import mcp_server

    text = mcp_server.tools_list_json()
    try:
        from gitledger.tokens import count
    except ImportError:  # measured the same way tokens.py does it would be better; say so
        import tiktoken

        count = tiktoken.get_encoding("cl100k_base").encode  # type: ignore[assignment]
    tokens = count(text)
    return {
        "tools": len(json.loads(text)["tools"]),
        "bytes": len(text.encode()),
        "tokens": tokens if isinstance(tokens, int) else len(tokens),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000])
    parser.add_argument("--calls", type=int, default=200, help="MCP calls per operation")
    parser.add_argument(
        "--search-calls", type=int, default=None, help="MCP search calls (default: --calls)"
    )
    parser.add_argument("--cli-calls", type=int, default=20, help="CLI processes per operation")
    parser.add_argument(
        "--mixed-calls", type=int, default=50, help="update-then-context pairs over MCP"
    )
    parser.add_argument("--json", dest="json_file", help="Also write the results here.")
    parser.add_argument("--keep", action="store_true", help="Keep the ledgers (prints where).")
    args = parser.parse_args()

    results: dict[str, Any] = {"tools_list": tools_list_tokens(), "sizes": {}}
    tl = results["tools_list"]
    print(f"tools/list: {tl['tools']} tools, {tl['bytes']} bytes, {tl['tokens']} cl100k tokens\n")
    print(f"{'tasks':>8} {'op':<8} {'MCP med':>8} {'MCP p95':>8} {'n':>4}   "
          f"{'CLI med':>8} {'CLI p95':>8} {'n':>4}   {'CLI/MCP':>7}")  # fmt: skip
    for size in args.sizes:
        workdir = Path(tempfile.mkdtemp(prefix=f"mcp-bench-{size}-"))
        try:
            anchor = build_ledger(workdir / "ledger", size)
            mcp = asyncio.run(
                mcp_latency(anchor, args.calls, args.search_calls or args.calls, args.mixed_calls)
            )
            cli = cli_latency(anchor, args.cli_calls)
            rows: dict[str, Any] = {}
            for op in ("context", "show", "search", "update"):
                m, c = mcp[op], cli[op]
                row = {
                    "mcp_median_ms": statistics.median(m),
                    "mcp_p95_ms": percentile(m, 0.95),
                    "mcp_calls": len(m),
                    "cli_median_ms": statistics.median(c),
                    "cli_p95_ms": percentile(c, 0.95),
                    "cli_calls": len(c),
                }
                row["cli_over_mcp"] = row["cli_median_ms"] / row["mcp_median_ms"]
                rows[op] = row
                print(
                    f"{size:>8} {op:<8} {row['mcp_median_ms']:>8.2f} {row['mcp_p95_ms']:>8.2f} "
                    f"{len(m):>4}   {row['cli_median_ms']:>8.1f} {row['cli_p95_ms']:>8.1f} "
                    f"{len(c):>4}   {row['cli_over_mcp']:>6.0f}x"
                )
            mixed = mcp["context after update"]
            if mixed:
                rows["context after update"] = {
                    "mcp_median_ms": statistics.median(mixed),
                    "mcp_p95_ms": percentile(mixed, 0.95),
                    "mcp_calls": len(mixed),
                }
                print(
                    f"{size:>8} {'ctx+upd':<8} {statistics.median(mixed):>8.2f} "
                    f"{percentile(mixed, 0.95):>8.2f} {len(mixed):>4}   (context read right "
                    f"after an update)"
                )
            results["sizes"][str(size)] = rows
            sys.stdout.flush()
        finally:
            if args.keep:
                sys.stderr.write(f"kept {workdir}\n")
            else:
                shutil.rmtree(workdir, ignore_errors=True)
    results["machine"] = {"cpus": os.cpu_count(), "load_average": os.getloadavg()}
    print(f"\nload average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if args.json_file:
        Path(args.json_file).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
