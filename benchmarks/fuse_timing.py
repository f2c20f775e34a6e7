"""Whole-process timings of the fuse hooks on a 5 MB transcript, and peak memory on a 100 MB one.

Each run is a fresh ``python -m gitledger`` process fed a hook payload on stdin, as Claude Code
runs it, with its bytecode cached as an installed package has it (``PYTHONDONTWRITEBYTECODE`` is
dropped for the runs and one warm-up run writes the cache; without it every run compiles every
module again). Each row gives the median wall time and the median CPU time (user + sys) of the
process, with the load average before and after. Peak memory is the process's own maximum resident set size (ru_maxrss), compared with a
command that reads no transcript at all. The transcripts are generated in a temporary folder
(``gitledger.transcripts.synthetic.write_large_session``) and deleted afterwards.

    python benchmarks/fuse_timing.py [--runs 7] [--mb 5] [--big-mb 100] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gitledger.transcripts import synthetic

# Runs a gitledger command in this process and reports its peak RSS (KiB on Linux) on stderr.
_PEAK = (
    "import resource, runpy, sys\n"
    "sys.argv = ['gitledger'] + sys.argv[1:]\n"
    "try:\n"
    "    runpy.run_module('gitledger', run_name='__main__')\n"
    "except SystemExit:\n"
    "    pass\n"
    "usage = resource.getrusage(resource.RUSAGE_SELF)\n"
    "sys.stderr.write('PEAK_KB %d\\n' % usage.ru_maxrss)\n"
    "sys.stderr.write('CPU_S %.4f\\n' % (usage.ru_utime + usage.ru_stime))\n"
)


def run(args: list[str], stdin: str, env: dict[str, str]) -> tuple[float, int, float]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{args} failed: {done.stderr}")
    lines = done.stderr.splitlines()
    peak = next(int(line.split()[1]) for line in lines if line.startswith("PEAK_KB"))
    cpu = next(float(line.split()[1]) for line in lines if line.startswith("CPU_S"))
    return elapsed, peak, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--mb", type=int, default=5, help="Size of the timed transcript.")
    parser.add_argument("--big-mb", type=int, default=100)
    parser.add_argument("--json", dest="json_file")
    options = parser.parse_args()

    results: dict[str, object] = {"runs": options.runs}
    with tempfile.TemporaryDirectory(prefix="gitledger-fuse-bench-") as tmp:
        folder = Path(tmp)
        env = dict(os.environ, GITLEDGER_DIR=str(folder / "ledger"), HOME=str(folder))
        env.pop("GITLEDGER_ACTOR", None)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its bytecode
        subprocess.run(
            [sys.executable, "-m", "gitledger", "init"], env=env, check=True, capture_output=True
        )
        small = synthetic.write_large_session(folder / "small.jsonl", options.mb * 1_000_000)
        mb = f"{options.mb} MB"
        save_payload = json.dumps(
            {"session_id": "bench", "transcript_path": str(small), "cwd": tmp, "trigger": "auto"}
        )
        start_payload = json.dumps({"session_id": "bench", "source": "compact"})
        rows = []
        results["load_before"] = os.getloadavg()
        for label, args, stdin in (
            ("fuse status (no transcript: the floor)", ["fuse", "status", "--json"], ""),
            (f"fuse save --hook, {mb} (PreCompact)", ["fuse", "save", "--hook"], save_payload),
            ("fuse restore --hook (SessionStart)", ["fuse", "restore", "--hook"], start_payload),
        ):
            run(args, stdin, env)  # the warm-up: writes the bytecode cache
            runs = [run(args, stdin, env) for _ in range(options.runs)]
            rows.append(
                {
                    "command": label,
                    "median_ms": statistics.median(r[0] for r in runs) * 1000,
                    "min_ms": min(r[0] for r in runs) * 1000,
                    "cpu_median_ms": statistics.median(r[2] for r in runs) * 1000,
                }
            )
        results["load_after"] = os.getloadavg()
        results["timings"] = rows
        results["small_bytes"] = small.stat().st_size
        # The same work in-process: what the fuse itself costs, without interpreter start-up.
        from gitledger import fuse
        from gitledger.ledger import Ledger

        ledger = Ledger.open(folder / "ledger")
        saves, restores = [], []
        for _ in range(options.runs):
            started = time.perf_counter()
            fuse.save(ledger, "inproc", small, trigger="auto")
            saves.append(time.perf_counter() - started)
            started = time.perf_counter()
            fuse.restore_text(ledger, "inproc", fuse.DEFAULT_BUDGET, interface="cli")
            restores.append(time.perf_counter() - started)
        results["in_process"] = {
            "save_small_median_ms": statistics.median(saves) * 1000,
            "restore_median_ms": statistics.median(restores) * 1000,
        }

        big = synthetic.write_large_session(folder / "big.jsonl", options.big_mb * 1_000_000)
        big_payload = json.dumps(
            {"session_id": "big", "transcript_path": str(big), "cwd": tmp, "trigger": "auto"}
        )
        _, floor_kb, _ = run(["fuse", "status", "--json"], "", env)
        _, small_kb, _ = run(["fuse", "save", "--hook"], save_payload, env)
        big_s, big_kb, _ = run(["fuse", "save", "--hook"], big_payload, env)
        results["memory"] = {
            "big_bytes": big.stat().st_size,
            "floor_peak_mb": floor_kb / 1024,
            "save_small_peak_mb": small_kb / 1024,
            "save_big_peak_mb": big_kb / 1024,
            "save_big_seconds": big_s,
        }

    before, after = results["load_before"], results["load_after"]
    print(
        f"Fuse hooks as whole processes (median of {options.runs}; load average "
        f"{before[0]:.1f} before, {after[0]:.1f} after, {os.cpu_count()} cores)"  # type: ignore[index]
    )
    print(f"{'command':44} {'wall ms':>10} {'min ms':>8} {'CPU ms':>8}")
    for row in results["timings"]:  # type: ignore[union-attr]
        print(
            f"{row['command']:44} {row['median_ms']:>10.0f} {row['min_ms']:>8.0f}"
            f" {row['cpu_median_ms']:>8.0f}"
        )
    inproc = results["in_process"]
    print(
        f"{'in-process: save ' + str(options.mb) + ' MB / restore 6,000 B':44} "
        f"{inproc['save_small_median_ms']:>10.0f} {inproc['restore_median_ms']:>8.1f}"  # type: ignore[index]
    )
    memory = results["memory"]
    print()
    print(f"{'peak RSS':44} {'MB':>10}")
    print(f"{'fuse status (floor)':44} {memory['floor_peak_mb']:>10.1f}")  # type: ignore[index]
    print(
        f"{'fuse save, ' + str(options.mb) + ' MB transcript':44} {memory['save_small_peak_mb']:>10.1f}"
    )  # type: ignore[index]
    big_label = f"fuse save, {memory['big_bytes'] // 1_000_000} MB transcript"  # type: ignore[index]
    print(
        f"{big_label:44} {memory['save_big_peak_mb']:>10.1f}"  # type: ignore[index]
        f"   ({memory['save_big_seconds']:.1f} s)"  # type: ignore[index]
    )
    if options.json_file:
        Path(options.json_file).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
