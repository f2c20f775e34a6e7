"""Replay the boundary judge over labelled sessions and score it.

    python benchmarks/judge_replay.py [--corpus DIR] [--eval FILE] [--json FILE] [--show-misses]
        [--sets NAMES] [--model NAME] [--process N] [--hook N] [--process-only]

Two kinds of labelled data, scored alike and reported per set, per kind and all together:

- **the development set** (``eval/boundaries.json``, set name ``eval``): real Claude Code
  sessions from other projects, labelled by taskcut's rules by a reviewer who did not see the
  judge. Each labelled step is judged as ``score_judge.py`` does it: the transcript cut right
  after the step, its last step judged with floor 0.
- **taskcut's replay sets** (``taskcut-replay/``), described next.

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

taskcut's sets are split in two so the rules can be checked on sessions they were not first tuned
on: DEV is what the rules were read against while writing them, HELD_OUT is reported apart.

Per set it prints: boundary windows caught and false NEXT with the rules alone, the share of
steps the rules mark unsure (what a model would be asked about), and the reach: the share of
windows holding a NEXT or an unsure step (what rules plus a model could catch at best); and the
median time the judge takes per step in the process. ``--process N`` also times N steps of the
development set as whole ``gitledger judge step`` processes (start-up included), each on a fresh
cut with no ledger (as ``score_judge.py`` runs it: a whole read); ``--hook N`` times N steps of
each session as Claude Code's PostToolUse hook runs them (``judge step --hook --checkpoint``, the
hook payload on stdin, a ledger with a few tasks, the transcript growing at one path, so the
judge reads on from where its cache left off; ``--gitledger COMMAND`` times another command than
this Python's ``-m gitledger``, an installed console script say); both print the floor, ``python
-c pass`` timed after each step; ``--process-only`` skips the scoring.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitledger import judge  # noqa: E402

SHARED_CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
DEFAULT_CORPUS = SHARED_CORPUS / "taskcut-replay"
DEFAULT_EVAL = SHARED_CORPUS / "eval" / "boundaries.json"
DEFAULT_TRANSCRIPTS = SHARED_CORPUS / "claude-code"
EVAL = "eval"
DEV = ("click-zh--on", "issues-long--on", "mechanism", "sqlglot-long--default")
HELD_OUT = ("click-zh--off", "issues-long--off", "sqlglot-long--off")


@dataclass
class Judged:
    set: str
    n: int
    label: str
    verdict: judge.Verdict
    excerpt: str
    ms: float = 0.0  # the judge's time for this step, in the process


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
        out.append(judge_one(path.stem, number, label, ctx, model))
    return out


def judge_one(name: str, number: int, label: str, ctx: Any, model: Any) -> Judged:
    judge.clear_caches()  # each step is timed cold, as a hook process meets it
    started = time.perf_counter()
    verdict = judge.judge_step(ctx, floor=0, model=model)
    ms = (time.perf_counter() - started) * 1000.0
    return Judged(name, number, label, verdict, ctx.step.text[:110], ms)


def transcript_path(roots: Sequence[Path], rel: str) -> Path:
    for root in roots:
        for candidate in (root / rel, root / (rel + ".gz")):
            if candidate.exists():
                return candidate
    raise SystemExit(f"judge_replay: transcript not found: {rel}")


def eval_contexts(path: Path, lines: Sequence[int]) -> dict[int, Any]:
    """The step each labelled line closes, as ``gitledger judge step --transcript CUT`` sees it
    with the transcript cut right after that line (``lines`` are 0-based, as score_judge's)."""
    import gzip
    import tempfile

    from gitledger.transcripts import read_events

    if path.suffix == ".gz":
        with (
            gzip.open(path, "rb") as handle,
            tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False) as plain,
        ):
            plain.write(handle.read())
        path = Path(plain.name)
    events = list(read_events(path))
    out: dict[int, Any] = {}
    for line in lines:
        cut = [e for e in events if e.line is None or e.line <= line + 1]
        contexts = judge.contexts_from_events(cut)
        out[line] = contexts[-1] if contexts else None
    return out


def run_eval(labels_path: Path, roots: Sequence[Path], model: Any = None) -> list[Judged]:
    data = json.loads(labels_path.read_text(encoding="utf-8"))
    out: list[Judged] = []
    for transcript in data["transcripts"]:
        steps = transcript["steps"]
        path = transcript_path(roots, transcript["file"])
        contexts = eval_contexts(path, [int(s["line"]) for s in steps])
        name = f"{EVAL}:{transcript['file']}"
        for raw in steps:
            ctx = contexts[int(raw["line"])]
            if ctx is None:
                none = judge.Verdict(judge.SAME, "no step", "no-step", False, by="gate")
                out.append(Judged(name, int(raw["line"]), raw["label"], none, ""))
                continue
            out.append(judge_one(name, int(raw["line"]), raw["label"], ctx, model))
    return out


def time_processes(
    labels_path: Path, roots: Sequence[Path], count: int
) -> tuple[list[float], list[float], int, list[float]]:
    """Time ``gitledger judge step --transcript CUT --floor 0 --json`` on ``count`` labelled steps
    spread over the development set, as ``score_judge.py`` runs it (no ledger: a whole read):
    (wall ms, CPU ms of the process: user + system, errors, CPU ms of ``python -c pass`` run
    after each). Bytecode may be written (an installed gitledger has its .pyc files), and one
    run before the timed ones writes it."""
    import tempfile

    data = json.loads(labels_path.read_text(encoding="utf-8"))
    chosen = [(t["file"], s["line"]) for t in data["transcripts"] for s in t["steps"]]
    stride = max(1, len(chosen) // max(count, 1))
    chosen = chosen[::stride][:count]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    walls: list[float] = []
    cpus: list[float] = []
    floors: list[float] = []
    errors = 0
    cache: dict[str, list[bytes]] = {}
    with tempfile.TemporaryDirectory() as folder:
        cut = Path(folder) / "cut.jsonl"
        argv = [sys.executable, "-m", "gitledger", "judge", "step", "--transcript", str(cut)]
        argv += ["--floor", "0", "--json"]
        for number, (rel, line) in enumerate([chosen[0], *chosen] if chosen else []):
            if rel not in cache:
                cache[rel] = transcript_path(roots, rel).read_bytes().splitlines(True)
            cut.write_bytes(b"".join(cache[rel][: int(line) + 1]))
            wall, cpu, code = _run(argv, cwd=folder, env=env)
            if number == 0:
                continue  # the warm-up run that writes the bytecode
            walls.append(wall)
            cpus.append(cpu)
            errors += code != 0
            floors.append(_run([sys.executable, "-c", "pass"], cwd=folder, env=env)[1])
    return walls, cpus, errors, floors


def _run(argv: Sequence[str], **options: Any) -> tuple[float, float, int]:
    """One whole process: (wall ms, CPU ms: user + system of the child, exit code)."""
    import subprocess

    stdin = options.pop("stdin", None)
    started = time.perf_counter()
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        **options,
    )
    if stdin is not None:
        assert process.stdin is not None
        process.stdin.write(stdin)
        process.stdin.close()
    _pid, status, usage = os.wait4(process.pid, 0)
    wall = (time.perf_counter() - started) * 1000.0
    return wall, (usage.ru_utime + usage.ru_stime) * 1000.0, os.waitstatus_to_exitcode(status)


def _hook_payload(line: bytes, transcript: Path, cwd: Path) -> bytes:
    """The PostToolUse payload Claude Code sends after the step's last tool call (the tool's
    output stands in as a short string: the judge never reads it)."""
    try:
        record = json.loads(line)
        content = record.get("message", {}).get("content") or []
        uses = [c for c in content if isinstance(c, dict) and c.get("type") == "tool_use"]
        session = str(record.get("sessionId") or "session")
    except (ValueError, AttributeError):
        uses, session = [], "session"
    use = uses[-1] if uses else {}
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": str(transcript),
            "cwd": str(cwd),
            "permission_mode": "default",
            "hook_event_name": "PostToolUse",
            "tool_name": use.get("name", "Bash"),
            "tool_input": use.get("input", {}),
            "tool_use_id": use.get("id", ""),
            "tool_response": {"stdout": "ok\n" * 50, "stderr": "", "interrupted": False},
        }
    ).encode()


def time_hook(
    labels_path: Path, roots: Sequence[Path], count: int, command: Sequence[str]
) -> dict[str, list[float] | int]:
    """Time ``gitledger judge step --hook --checkpoint`` as Claude Code's PostToolUse hook runs
    it in a session: the hook payload on stdin, in a project whose ledger holds a few tasks and
    the setting ``floor=0`` (every labelled step is judged, none skipped below the floor), the
    transcript growing at one path, cut after each of the development set's labelled steps in
    order, the last ``count`` + 1 of each session (late in a session, where the transcript is
    long). The first step of a session has nothing kept (a whole read, the settings read from the
    ledger); the others read on from the cache. After each step, ``python -c pass`` is timed the
    same way: the floor of any Python process on the machine at that moment. Returns wall and CPU
    ms of the first steps, the others and the floor, and the errors."""
    import subprocess
    import tempfile

    data = json.loads(labels_path.read_text(encoding="utf-8"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE",)}
    env.pop("GITLEDGER_DIR", None)
    out: dict[str, Any] = {
        key: [] for key in ("first_wall", "first_cpu", "wall", "cpu", "floor_wall", "floor_cpu")
    }
    out["errors"] = 0
    floor = [sys.executable, "-c", "pass"]
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder) / "project"
        project.mkdir()
        subprocess.run(["git", "init", "-q", str(project)], check=True)

        def setup(*args: str) -> None:
            subprocess.run([*command, *args], env=env, capture_output=True, check=True, cwd=project)

        setup("init")
        for number in range(1, 6):
            setup("task", "create", f"Piece {number} of the work", "--criteria", "tests pass")
        setup("judge", "config", "floor=0")
        argv = [*command, "judge", "step", "--hook", "--checkpoint"]
        for number, transcript in enumerate(data["transcripts"]):
            lines = transcript_path(roots, transcript["file"]).read_bytes().splitlines(True)
            cut = Path(folder) / f"session-{number}.jsonl"
            for index, step in enumerate(transcript["steps"][-(count + 1) :]):
                line = int(step["line"])
                cut.write_bytes(b"".join(lines[: line + 1]))
                payload = _hook_payload(lines[line], cut, project)
                wall, cpu, code = _run(argv, stdin=payload, env=env, cwd=project)
                out["errors"] += code != 0
                if number == 0 and index == 0:
                    continue  # the warm-up run that writes the bytecode
                out["first_wall" if index == 0 else "wall"].append(wall)
                out["first_cpu" if index == 0 else "cpu"].append(cpu)
                wall, cpu, _ = _run(floor, env=env, cwd=project)
                out["floor_wall"].append(wall)
                out["floor_cpu"].append(cpu)
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
    reach = 0  # windows a model asked about the unsure steps could catch at best
    for items in by_set.values():
        for w in windows(items):
            reach += any(x.verdict.is_next or x.verdict.unsure for x in w)
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
        "unsure_pct": 100 * sum(1 for x in results if x.verdict.unsure) / max(len(results), 1),
        "reach": reach,
        "reach_pct": 100 * reach / len(caught) if caught else 0.0,
        "ms_median": statistics.median([x.ms for x in results]) if results else 0.0,
    }


def groups(results: Sequence[Judged]) -> dict[str, list[Judged]]:
    """Each taskcut set, the development set, and the sums the docs quote."""
    out: dict[str, list[Judged]] = {}
    for item in results:
        out.setdefault(EVAL if item.set.startswith(EVAL + ":") else item.set, []).append(item)
    taskcut = [x for x in results if not x.set.startswith(EVAL + ":")]
    if taskcut:
        out["taskcut"] = taskcut
        out["taskcut_dev"] = [x for x in taskcut if x.set in DEV]
        out["taskcut_held_out"] = [x for x in taskcut if x.set in HELD_OUT]
    out["all"] = list(results)
    return {name: items for name, items in out.items() if items}


def print_table(arm: str, figures: dict[str, dict[str, Any]], wall: float) -> None:
    steps = figures["all"]["steps"]
    print(f"\n{arm}: {steps} labelled steps, {wall:.2f} s")
    print(
        f"{'set':<22} {'steps':>5} {'windows':>7} {'caught':>13} {'false NEXT':>15} "
        f"{'unsure':>13} {'reach':>13} {'model':>5} {'ms/step':>7}"
    )
    for name, s in figures.items():
        print(
            f"{name:<22} {s['steps']:>5} {s['windows']:>7} "
            f"{s['caught']:>4} = {s['caught_pct']:5.1f}% "
            f"{s['false_next']:>3}/{s['s_steps']:<3} = {s['false_next_pct']:4.1f}% "
            f"{s['unsure_steps']:>4} = {s['unsure_pct']:5.1f}% "
            f"{s['reach']:>4} = {s['reach_pct']:5.1f}% {s['model_calls']:>5} {s['ms_median']:>7.2f}"
        )
    a = figures["all"]
    print(
        f"all: Wilson 95% caught {a['caught_wilson'][0]:.1f}-{a['caught_wilson'][1]:.1f}%, "
        f"false NEXT {a['false_next_wilson'][0]:.1f}-{a['false_next_wilson'][1]:.1f}%"
    )


def show_misses(results: Sequence[Judged]) -> None:
    by_set: dict[str, list[Judged]] = {}
    for item in results:
        by_set.setdefault(item.set, []).append(item)
    for items in by_set.values():
        for w in windows(items):
            if not any(x.verdict.is_next for x in w):
                for x in w:
                    print(
                        f"  MISSED {x.set}#{x.n} {x.label} [{x.verdict.rule}"
                        f"{' unsure' if x.verdict.unsure else ''}] {x.excerpt!r}"
                    )
    for x in results:
        if x.label == "S" and x.verdict.is_next:
            print(f"  FALSE  {x.set}#{x.n} [{x.verdict.rule}] {x.verdict.reason} | {x.excerpt!r}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="taskcut-replay/")
    parser.add_argument("--eval", type=Path, default=DEFAULT_EVAL, help="boundaries.json")
    parser.add_argument(
        "--transcripts",
        type=Path,
        action="append",
        help="where the development set's transcripts are (default: shared/corpus/claude-code)",
    )
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    parser.add_argument(
        "--show-misses", action="store_true", help="list missed windows and false NEXTs"
    )
    parser.add_argument(
        "--sets", help=f"comma-separated set names, {EVAL!r} for the development set (default: all)"
    )
    parser.add_argument(
        "--model",
        help="also run deterministic-then-model with this model (ANTHROPIC_BASE_URL/API_KEY)",
    )
    parser.add_argument(
        "--process",
        type=int,
        default=0,
        metavar="N",
        help="also time N development-set steps as whole `gitledger judge step` processes",
    )
    parser.add_argument(
        "--hook",
        type=int,
        default=0,
        metavar="N",
        help="also time N steps of each development-set session as Claude Code's PostToolUse "
        "hook runs them (payload on stdin, a ledger, the transcript growing at one path)",
    )
    parser.add_argument(
        "--gitledger",
        metavar="COMMAND",
        help="with --hook: the command to time (default: this Python's -m gitledger), e.g. an "
        "installed console script",
    )
    parser.add_argument(
        "--process-only",
        action="store_true",
        help="with --process: only the whole-process timing, no scoring",
    )
    args = parser.parse_args(argv)
    wanted = set(args.sets.split(",")) if args.sets else None
    paths = sorted(args.corpus.glob("*.json")) if args.corpus.is_dir() else []
    if wanted is not None:
        paths = [p for p in paths if p.stem in wanted]
    roots = args.transcripts or [DEFAULT_TRANSCRIPTS]
    use_eval = args.eval.is_file() and (wanted is None or EVAL in wanted)
    if not paths and not use_eval:
        print(
            f"No labelled sets at {args.corpus} or {args.eval}; pass --corpus DIR.", file=sys.stderr
        )
        return 1
    arms: dict[str, Any] = {"deterministic": None}
    if args.model:
        from gitledger.judge.model import ModelJudge

        arms["deterministic+model"] = ModelJudge(args.model)
    report: dict[str, Any] = {
        "data": {
            "taskcut": args.corpus.name if paths else None,
            "eval": str(args.eval.name) if use_eval else None,
        },
        "arms": {},
    }
    timing_only = args.process_only and (args.process or args.hook)
    for arm, model in arms.items() if not timing_only else ():
        results: list[Judged] = []
        started = time.perf_counter()
        if use_eval:
            results.extend(run_eval(args.eval, roots, model))
        for path in paths:
            results.extend(run_set(path, model))
        wall = time.perf_counter() - started
        figures = {name: score(items) for name, items in groups(results).items()}
        times = [x.ms for x in results]
        report["arms"][arm] = {
            **figures,
            "ms_per_step_median": statistics.median(times) if times else 0.0,
            "ms_per_step_max": max(times) if times else 0.0,
            "wall_s": wall,
        }
        if model is not None:
            report["arms"][arm]["model_cost"] = {
                "calls": model.calls,
                "failures": model.failures,
                "input_tokens": model.input_tokens,
                "output_tokens": model.output_tokens,
            }
        print_table(arm, figures, wall)
        if args.show_misses:
            show_misses(results)
    if args.process and use_eval:
        walls, cpus, errors, floors = time_processes(args.eval, roots, args.process)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        report["process"] = {
            "steps": len(walls),
            "errors": errors,
            "wall_ms_median": statistics.median(walls) if walls else 0.0,
            "cpu_ms_median": statistics.median(cpus) if cpus else 0.0,
            "wall_ms_max": max(walls) if walls else 0.0,
            "floor_cpu_ms_median": statistics.median(floors) if floors else 0.0,
            "load_average": load,
        }
        p = report["process"]
        print(
            f"\nwhole process (`gitledger judge step --transcript CUT`, no ledger): {len(walls)} "
            f"steps, median {p['wall_ms_median']:.0f} ms wall ({p['cpu_ms_median']:.0f} ms CPU; "
            f"`python -c pass` {p['floor_cpu_ms_median']:.0f} ms CPU), max "
            f"{p['wall_ms_max']:.0f} ms, {errors} errors; load average {load:.1f}"
        )
    if args.hook and use_eval:
        command = shlex.split(args.gitledger) if args.gitledger else None
        got = time_hook(args.eval, roots, args.hook, command or [sys.executable, "-m", "gitledger"])
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")

        def median(key: str) -> float:
            values = got[key]
            assert isinstance(values, list)
            return statistics.median(values) if values else 0.0

        walls = got["wall"]
        assert isinstance(walls, list)
        report["hook"] = {
            "command": args.gitledger or "python -m gitledger",
            "sessions": len(got["first_wall"]),
            "steps": len(walls),
            "errors": got["errors"],
            "first_wall_ms_median": median("first_wall"),
            "first_cpu_ms_median": median("first_cpu"),
            "wall_ms_median": median("wall"),
            "cpu_ms_median": median("cpu"),
            "wall_ms_max": max(walls) if walls else 0.0,
            "floor_wall_ms_median": median("floor_wall"),
            "floor_cpu_ms_median": median("floor_cpu"),
            "load_average": load,
        }
        h = report["hook"]
        print(
            f"\nas the PostToolUse hook in a session (`{h['command']} judge step --hook "
            "--checkpoint`, payload on stdin, a ledger, the transcript growing):\n"
            "| steps | wall ms median | CPU ms median | wall ms max |\n|---|---|---|---|\n"
            f"| {len(walls)} after the first of each session | {h['wall_ms_median']:.0f} | "
            f"{h['cpu_ms_median']:.0f} | {h['wall_ms_max']:.0f} |\n"
            f"| the first of each of {h['sessions']} sessions | {h['first_wall_ms_median']:.0f} | "
            f"{h['first_cpu_ms_median']:.0f} | |\n"
            f"| `python -c pass`, after each step | {h['floor_wall_ms_median']:.0f} | "
            f"{h['floor_cpu_ms_median']:.0f} | |\n"
            f"{got['errors']} errors; load average {load:.1f}"
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
