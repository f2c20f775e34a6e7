"""Replay the boundary judge over taskcut's labelled sessions and score it.

    python benchmarks/judge_replay.py [--corpus DIR] [--json FILE] [--show-misses] [--model NAME]

Each set in ``taskcut-replay/`` is a session as segments of messages (tool output blanked) and the
steps taskcut judged, with a label per judged step in ``<set>.labels``: N (the work moves on), S
(it does not), E (either). A boundary window is an N plus the E steps directly before it; it is
caught when the judge says NEXT at any step of it. False NEXT is counted on S steps; E steps
outside a window count nowhere. 95% intervals come from 2,000 bootstrap resamples of windows and
of S steps.

The judge sees each labelled step the way it would live: the messages of its segment before it
(from the last compaction on), the step's own text and calls, never a tool's output. The gate is
run with floor 0 (every labelled step is past taskcut's floor already); a labelled step the other
not-judged conditions skip counts as a SAME.

Sets are split in two so the rules can be checked on sessions they were not tuned on: DEV is what
the rules were read against while writing them, HELD_OUT is reported apart.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitledger import judge  # noqa: E402

DEFAULT_CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "taskcut-replay"
DEV = ("click-zh--on", "issues-long--on", "mechanism", "sqlglot-long--default")
HELD_OUT = ("click-zh--off", "issues-long--off", "sqlglot-long--off")


@dataclass
class Judged:
    set: str
    n: int
    label: str
    verdict: judge.Verdict
    excerpt: str


def read_labels(path: Path) -> dict[int, str]:
    labels: dict[int, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        number, label, *_ = line.split(None, 2)
        labels[int(number)] = label
    return labels


def replay_contexts(data: Mapping[str, Any]) -> dict[int, judge.StepContext]:
    """Every step of a taskcut replay set (``eval/replay/<set>.json``) as the judge would see it.

    A set is the session as segments (one per compaction; each after the first opens with the
    summary) and its steps, each at ``segment[pos:end]``. Tool output is already blanked there.
    """
    segments = [[judge.read_message(m) for m in seg] for seg in data.get("segments", ())]
    steps = list(data.get("steps", ()))
    window = judge.window_for(s.get("context") for s in steps)
    first_usage: dict[int, int] = {}
    for raw in steps:
        first_usage.setdefault(int(raw["segment"]), int(raw.get("context") or 0))
    out: dict[int, judge.StepContext] = {}
    for raw in steps:
        seg_no = int(raw["segment"])
        history = tuple(segments[seg_no][: int(raw["pos"])])
        body = raw.get("step") or {}
        step = judge.Step(
            str(body.get("text") or ""),
            tuple(
                judge.Call(str(c.get("name", "")), dict(c.get("input") or {}))
                for c in body.get("calls") or ()
            ),
        )
        compacted = bool(history) and history[0].role == "summary"
        work = any(
            not judge.is_read_only(call)
            for m in history
            if m.role == "assistant"
            for call in m.calls
        )
        out[int(raw["n"])] = judge.StepContext(
            history=history,
            step=step,
            context_tokens=int(raw.get("context") or 0) or None,
            window=window,
            first_in_turn=int(raw.get("index", 0)) == 0,
            ends_turn=not step.calls,
            after_compaction=compacted,
            work_since_compaction=work if compacted else True,
            post_compaction_tokens=first_usage.get(seg_no) if compacted else None,
        )
    return out


def run_set(path: Path, model: Any = None) -> list[Judged]:
    data = json.loads(path.read_text(encoding="utf-8"))
    labels = read_labels(path.with_suffix(".labels"))
    contexts = replay_contexts(data)
    out = []
    for number, label in sorted(labels.items()):
        ctx = contexts[number]
        judge.clear_caches()
        verdict = judge.judge_step(ctx, floor=0, model=model)
        out.append(Judged(path.stem, number, label, verdict, ctx.step.text[:110]))
    return out


def windows(results: Sequence[Judged]) -> list[list[Judged]]:
    """Each N with the E steps directly before it (in judged order, within one set)."""
    found: list[list[Judged]] = []
    for i, item in enumerate(results):
        if item.label != "N":
            continue
        window = [item]
        j = i - 1
        while j >= 0 and results[j].label == "E" and results[j].set == item.set:
            window.insert(0, results[j])
            j -= 1
        found.append(window)
    return found


def bootstrap(values: Sequence[int], rounds: int = 2000, seed: int = 8) -> tuple[float, float]:
    if not values:
        return (0.0, 0.0)
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(rng.choices(values, k=n)) / n for _ in range(rounds))
    return (100 * means[int(0.025 * rounds)], 100 * means[int(0.975 * rounds) - 1])


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval, in percent: unlike the bootstrap it is not [0, 0] at 0 hits."""
    if n == 0:
        return (0.0, 0.0)
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return (100 * max(0.0, centre - half), 100 * min(1.0, centre + half))


def score(results: Sequence[Judged]) -> dict[str, Any]:
    by_set: dict[str, list[Judged]] = {}
    for item in results:
        by_set.setdefault(item.set, []).append(item)
    caught: list[int] = []
    for items in by_set.values():
        caught.extend(int(any(x.verdict.is_next for x in w)) for w in windows(items))
    missed_unsure = 0
    for items in by_set.values():
        for w in windows(items):
            if not any(x.verdict.is_next for x in w) and any(x.verdict.unsure for x in w):
                missed_unsure += 1
    false_next = [int(x.verdict.is_next) for x in results if x.label == "S"]
    judged_calls = [x for x in results if x.verdict.by == "model"]
    return {
        "steps": len(results),
        "windows": len(caught),
        "caught": sum(caught),
        "caught_pct": 100 * sum(caught) / len(caught) if caught else 0.0,
        "caught_ci": bootstrap(caught),
        "s_steps": len(false_next),
        "false_next": sum(false_next),
        "false_next_pct": 100 * sum(false_next) / len(false_next) if false_next else 0.0,
        "false_next_ci": bootstrap(false_next),
        "caught_wilson": wilson(sum(caught), len(caught)),
        "false_next_wilson": wilson(sum(false_next), len(false_next)),
        "model_calls": len(judged_calls),
        # Steps the rules are unsure of: with --model these, and only these, go to the model.
        "unsure_steps": sum(1 for x in results if x.verdict.unsure),
        "unsure_s_steps": sum(1 for x in results if x.verdict.unsure and x.label == "S"),
        "missed_windows_with_an_unsure_step": missed_unsure,
        "skipped_by_gate": sum(1 for x in results if not x.verdict.judged),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    parser.add_argument(
        "--show-misses", action="store_true", help="list missed windows and false NEXTs"
    )
    parser.add_argument("--sets", help="comma-separated set names (default: all)")
    parser.add_argument(
        "--model",
        help="also run deterministic-then-model with this model (ANTHROPIC_BASE_URL/API_KEY)",
    )
    args = parser.parse_args(argv)
    if not args.corpus.is_dir():
        print(f"No replay corpus at {args.corpus}; pass --corpus DIR.", file=sys.stderr)
        return 1
    paths = sorted(args.corpus.glob("*.json"))
    if args.sets:
        wanted = set(args.sets.split(","))
        paths = [p for p in paths if p.stem in wanted]
    arms: dict[str, Any] = {"deterministic": None}
    if args.model:
        from gitledger.judge.model import ModelJudge

        arms["deterministic+model"] = ModelJudge(args.model)
    report: dict[str, Any] = {"corpus": args.corpus.name, "arms": {}}
    for arm, model in arms.items():
        results: list[Judged] = []
        started = time.perf_counter()
        for path in paths:
            results.extend(run_set(path, model))
        wall = time.perf_counter() - started
        times = [x.verdict.elapsed_ms for x in results]
        figures = {
            "all": score(results),
            "dev": score([x for x in results if x.set in DEV]),
            "held_out": score([x for x in results if x.set in HELD_OUT]),
            "ms_per_step_median": statistics.median(times) if times else 0.0,
            "ms_per_step_max": max(times) if times else 0.0,
            "wall_s": wall,
        }
        report["arms"][arm] = figures
        print(f"\n{arm}: {len(results)} labelled steps, {wall:.2f} s")
        print(
            f"{'split':<10} {'windows':>7} {'caught':>17} {'95% CI':>15} {'S steps':>8} {'false NEXT':>15} {'95% CI':>13} {'model calls':>11}"
        )
        for split in ("all", "dev", "held_out"):
            s = figures[split]
            print(
                f"{split:<10} {s['windows']:>7} {s['caught']:>5} = {s['caught_pct']:5.1f}%   "
                f"{s['caught_ci'][0]:5.1f}–{s['caught_ci'][1]:5.1f}% {s['s_steps']:>8} "
                f"{s['false_next']:>4} = {s['false_next_pct']:4.1f}%   "
                f"{s['false_next_ci'][0]:4.1f}–{s['false_next_ci'][1]:4.1f}% {s['model_calls']:>11}"
            )
        for split in ("all", "dev", "held_out"):
            s = figures[split]
            print(
                f"{split:<10} Wilson 95%: caught {s['caught_wilson'][0]:.1f}–"
                f"{s['caught_wilson'][1]:.1f}%, false NEXT {s['false_next_wilson'][0]:.1f}–"
                f"{s['false_next_wilson'][1]:.1f}%"
            )
        for split in ("all", "dev", "held_out"):
            s = figures[split]
            print(
                f"{split:<10} unsure steps (would go to a model): {s['unsure_steps']}/{s['steps']}"
                f" = {100 * s['unsure_steps'] / max(s['steps'], 1):.1f}%; of them S: "
                f"{s['unsure_s_steps']}; missed windows holding one: "
                f"{s['missed_windows_with_an_unsure_step']}"
            )
        print(
            f"time per step: median {figures['ms_per_step_median']:.2f} ms, max {figures['ms_per_step_max']:.2f} ms"
        )
        if args.show_misses:
            by_set: dict[str, list[Judged]] = {}
            for item in results:
                by_set.setdefault(item.set, []).append(item)
            for items in by_set.values():
                for w in windows(items):
                    if not any(x.verdict.is_next for x in w):
                        for x in w:
                            print(
                                f"  MISSED {x.set}#{x.n} {x.label} [{x.verdict.rule}] {x.excerpt!r}"
                            )
            for x in results:
                if x.label == "S" and x.verdict.is_next:
                    print(
                        f"  FALSE  {x.set}#{x.n} [{x.verdict.rule}] {x.verdict.reason} | {x.excerpt!r}"
                    )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
