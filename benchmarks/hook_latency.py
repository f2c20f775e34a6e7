"""Hook latency as Claude Code itself records it, on the scripted session and on a ~3 MB transcript.

Runs the real Claude Code (tests/e2e/node_modules) against the e2e stand-in, with the gitledger
plugin's hooks, and reads what Claude Code wrote into the session transcript:

- ``durationMs`` of each SessionStart hook run (``hook_success`` attachments): ``gitledger prime``
  at startup and ``gitledger fuse restore`` after compaction;
- ``compactMetadata.durationMs`` of each compaction, which includes the PreCompact hook but not
  the SessionStart hook after it (checked with sleeping hooks). Claude Code records no per-hook
  time for PreCompact, so ``gitledger fuse save`` shows up as the difference from a run with no
  hooks at all.

A third configuration runs a shell one-liner on the same events, the floor of any hook on the
machine at that moment, so figures taken under load can be read against it.

The ~3 MB transcript is grown by the same session writing large files (each Write puts its content
into the transcript twice), then compacted.

    python benchmarks/hook_latency.py [--runs 3] [--big-mb 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

E2E = Path(__file__).resolve().parents[1] / "tests" / "e2e"
sys.path.insert(0, str(E2E))

import scenario  # noqa: E402
from claude_harness import (  # noqa: E402
    PLUGIN_DIR,
    ClaudeSession,
    find_claude,
    gitledger_shim,
)
from standin import Reply, StandIn, text, tool_use  # noqa: E402


def install_plugin(session: ClaudeSession) -> None:
    gitledger_shim(session.bin)
    for args in (
        ("plugin", "marketplace", "add", str(PLUGIN_DIR)),
        ("plugin", "install", "gitledger@gitledger"),
    ):
        done = session.cli(*args, timeout=60)
        if done.returncode != 0:
            raise SystemExit(f"claude {' '.join(args)} failed: {done.stdout}{done.stderr}")


def grow(session: ClaudeSession, megabytes: float) -> None:
    """Write large files until the transcript is about ``megabytes`` MB."""
    chunk = ("x" * 99 + "\n") * 1500  # 150 KB of file content per Write
    n = 0
    while session.transcript.stat().st_size < megabytes * 1_000_000:
        path = session.project / f"data_{n}.txt"
        session.standin.script(
            Reply([tool_use("Write", {"file_path": str(path), "content": chunk})]),
            Reply([text(f"Wrote data_{n}.txt.")]),
        )
        session.run(f"Write data file {n}.")
        n += 1


def noop_hooks(session: ClaudeSession) -> None:
    """The same events running a shell one-liner: the floor of a hook run on this machine."""
    hook = session.root / "noop.sh"
    hook.write_text("#!/bin/sh\ncat >/dev/null\necho ok\n")
    hook.chmod(0o755)
    command = {"type": "command", "command": str(hook)}
    session.settings(
        {
            "hooks": {
                "PreCompact": [{"hooks": [command]}],
                "SessionStart": [{"matcher": "startup|compact|resume", "hooks": [command]}],
            }
        }
    )


def one_run(claude: Path, root: Path, *, hooks: str, big_mb: float) -> dict[str, Any]:
    with StandIn() as standin:
        session = ClaudeSession(claude=claude, standin=standin, root=root)
        session.extra_env["GITLEDGER_DIR"] = str(root / "ledger")
        if hooks == "gitledger plugin":
            install_plugin(session)
        elif hooks == "shell no-op":
            noop_hooks(session)
        scenario.play(session)
        if big_mb:
            grow(session, big_mb)
        size = session.transcript.stat().st_size
        started = time.perf_counter()
        session.compact()
        wall = time.perf_counter() - started
        runs = session.hook_runs()
        boundary = [r for r in session.records() if r.get("subtype") == "compact_boundary"][-1]
        by_name: dict[str, list[int]] = {}
        for run in runs:
            by_name.setdefault(run["hookName"], []).append(int(run["durationMs"]))
        return {
            "hooks": hooks,
            "transcript_bytes": size,
            "compact_durationMs": int(boundary["compactMetadata"]["durationMs"]),
            "compact_wall_s": round(wall, 3),
            "startup_hook_ms": by_name.get("SessionStart:startup", [None])[0],
            "compact_hook_ms": by_name.get("SessionStart:compact", [None])[-1],
        }


def median(values: list[Any]) -> float | None:
    clean = [v for v in values if v is not None]
    return statistics.median(clean) if clean else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--big-mb", type=float, default=3.0)
    parser.add_argument("--json", type=Path, help="Write the results here.")
    args = parser.parse_args()
    claude, reason = find_claude()
    if claude is None:
        raise SystemExit(reason)

    rows = []
    with tempfile.TemporaryDirectory(prefix="hook-latency-") as tmp:
        workloads = (("scripted session", 0.0), (f"~{args.big_mb:g} MB transcript", args.big_mb))
        for w, (label, big) in enumerate(workloads):
            for h, hooks in enumerate(("none", "shell no-op", "gitledger plugin")):
                results = [
                    one_run(claude, Path(tmp) / f"w{w}-h{h}-{i}", hooks=hooks, big_mb=big)
                    for i in range(args.runs)
                ]
                rows.append(
                    {
                        "workload": label,
                        "hooks": hooks,
                        "runs": len(results),
                        "transcript_bytes": median([r["transcript_bytes"] for r in results]),
                        "compact_durationMs": median([r["compact_durationMs"] for r in results]),
                        "startup_hook_ms": median([r["startup_hook_ms"] for r in results]),
                        "compact_hook_ms": median([r["compact_hook_ms"] for r in results]),
                        "raw": results,
                    }
                )

    header = (
        f"{'workload':<22} {'hooks':<17} {'transcript':>11} {'compaction':>11} "
        f"{'startup':>8} {'compact':>8}"
    )
    print(f"Medians of {args.runs} runs, in ms, as Claude Code recorded them: the compaction")
    print("(PreCompact hook included) and the SessionStart hooks at startup and after compaction")
    print(header)
    print("-" * len(header))

    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.0f}"

    for row in rows:
        print(
            f"{row['workload']:<22} {row['hooks']:<17} {row['transcript_bytes'] / 1e6:>9.2f}MB "
            f"{fmt(row['compact_durationMs']):>11} {fmt(row['startup_hook_ms']):>8} "
            f"{fmt(row['compact_hook_ms']):>8}"
        )
    for workload in dict.fromkeys(r["workload"] for r in rows):
        pair = {r["hooks"]: r for r in rows if r["workload"] == workload}
        base = pair["none"]["compact_durationMs"]
        for hooks in ("shell no-op", "gitledger plugin"):
            cost = pair[hooks]["compact_durationMs"] - base
            print(f"PreCompact cost, {hooks} ({workload}): {cost:+.0f} ms on the compaction")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
