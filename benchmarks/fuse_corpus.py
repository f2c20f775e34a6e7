"""The fuse on real sessions: probe facts kept after compaction, alone and beside Claude's summary.

Two probe sets, scored the same way:

- ``dev``: the development set in ``../shared/corpus/eval/`` (``fuse-probes.json``: 14 cuts of nine
  real sessions from other projects, 10 at real compactions, 197 probe facts written by a reviewer
  who did not see our code; its README). A probe is kept when one of its ``any_of`` strings occurs
  in the text (case-insensitive); ``in_claude_summary`` says whether Claude's own summary has it.
- ``own``: our own corpus, the five spotter sessions of ``../shared/corpus/claude-code/spotter/``
  cut at their compaction, with the facts listed below (chosen by reading each transcript before
  the cut; a regular expression each, checked to occur there). Whether Claude's summary holds a
  fact is its probe matched against that summary.

Two ways to reach the model:

- ``fuse``: the fuse alone. At every compaction before the cut and at the cut the transcript so far
  is saved (as the PreCompact hook does), then restored at 2,000 / 6,000 / 9,500 bytes.
- ``hooks``: what Claude Code runs. The hooks are installed with ``gitledger fuse setup --write``
  into a throw-away HOME, and at every compaction up to the cut what settings.json registers is
  run as separate processes, the way ``eval/hookrun.py`` runs them: PreCompact (the transcript up
  to the boundary), PostCompact (``compact_summary``: the summary Claude wrote there), SessionStart
  (source ``compact``). Scored on Claude's summary plus the SessionStart context. Each hook
  process is timed (wall clock, start to exit).

    python benchmarks/fuse_corpus.py [--set dev|own|both] [--mode fuse|hooks|both] [--json FILE]
                                     [--missed]   (list the probes missed at 6,000 bytes / by hooks)
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CORPUS = SHARED / "corpus" / "claude-code"
EVAL = SHARED / "corpus" / "eval" / "fuse-probes.json"
BUDGETS = (2_000, 6_000, 9_500)

# Our own corpus: session file stem prefix -> [(kind, fact, probe)]
FACTS: dict[str, list[tuple[str, str, str]]] = {
    "258c7280": [
        ("goal", "implement the spotter-gqc epic", r"spotter-gqc(?![.\d])"),
        ("request", "new beads were added to the epic: tackle them", r"new beads|tackle them"),
        ("open", "gqc.6 close project review session", r"gqc\.6"),
        ("open", "gqc.7 launch project review conversation", r"gqc\.7"),
        ("constraint", "close only annotations currently open", r"currently open"),
        ("constraint", "keep all logic in ProjectReviewLive", r"no new service module"),
        (
            "decision",
            "SQLite migration by table rewrite (no ALTER for nullability)",
            r"table rewrite",
        ),
        (
            "decision",
            "LiveView tests need the Ecto sandbox shared with the test",
            r"shared sandbox|:shared, self",
        ),
        ("decision", "lazy_html added as a test dependency", r"lazy_html"),
        ("left_off", "adding flash messages to the ProjectReviewLive template", r"flash"),
        ("file", "project_review_live.ex", r"project_review_live\.ex"),
        ("file", "project_review_live_test.exs", r"project_review_live_test\.exs"),
        ("file", "mix.exs", r"\bmix\.exs"),
    ],
    "4d5611e5": [
        ("goal", "work on the spotter-dov epic", r"spotter-dov(?![.\d])"),
        ("request", "continue", r"\bcontinue\b"),
        ("open", "dov.3 debug JSON sidecar and expand controls", r"dov\.3"),
        ("constraint", "button text exactly 'Show N more lines'", r"Show N more lines"),
        (
            "constraint",
            "highlight.js stays the only syntax highlighter",
            r"only syntax highlighter",
        ),
        (
            "decision",
            "dov.1: shared transcript computer (AshComputer) and component",
            r"AshComputer",
        ),
        (
            "decision",
            "dov.2: silent 5-line truncation removed, 10 lines visible",
            r"5-line truncation",
        ),
        (
            "decision",
            "merge the TranscriptSelection hook into TranscriptHighlighter",
            r"TranscriptSelection into TranscriptHighlighter",
        ),
        ("left_off", "shared transcript component: debug sidecar and expand controls", r"sidecar"),
        ("file", "transcript_components.ex", r"transcript_components\.ex"),
        ("file", "transcript_computers.ex", r"transcript_computers\.ex"),
        ("file", "transcript_renderer_test.exs", r"transcript_renderer_test\.exs"),
    ],
    "8463c716": [
        ("goal", "work on the spotter-fum epic", r"spotter-fum(?![.\d])"),
        ("request", "work on bead spotter-fum (the only request)", r"bd ready"),
        ("open", "fum.3 integrate highlight.js (in progress)", r"fum\.3"),
        ("open", "fum.4 regression coverage", r"fum\.4"),
        ("constraint", "no CDN dependency", r"No CDN"),
        ("constraint", "code with HTML-like content stays escaped", r"remain escaped"),
        ("decision", "priv/static/assets is git-ignored: add -f", r"add -f"),
        ("decision", "inline tool threading is the chosen mode", r"threading"),
        ("left_off", "adding the highlight.js theme to spotter.css", r"theme"),
        ("file", "spotter.css", r"spotter\.css"),
        ("file", "session_live.ex", r"session_live\.ex"),
        ("file", "app.js", r"app\.js"),
    ],
    "ae4a77f8": [
        ("goal", "work on the spotter-4te epic", r"spotter-4te(?![.\d])"),
        ("request", "work on bead spotter-4te (the only request)", r"bd ready"),
        ("open", "4te.4 opentelemetry_ash", r"4te\.4"),
        ("open", "4te.5 LiveView and channel tracing", r"4te\.5"),
        ("open", "4te.6 regression tests and runbook", r"4te\.6"),
        ("constraint", "helper must never raise if the span is missing", r"never raise"),
        ("constraint", "never store raw request bodies as span attributes", r"raw request bod"),
        ("decision", "Dialyzer false positive blocks the commit", r"false positive"),
        ("decision", "pre-commit runs format, credo and dialyzer", r"pre-commit"),
        ("left_off", "4te.3 closed but its code is not committed", r"4te\.3"),
        ("file", "otel_trace_helpers.ex", r"otel_trace_helpers\.ex"),
        ("file", "hooks_controller.ex", r"\bhooks_controller\.ex"),
        ("file", ".dialyzerignore", r"dialyzerignore"),
    ],
    "fa812bfe": [
        ("goal", "work on the spotter-a0y epic", r"spotter-a0y(?![.\d])"),
        ("request", "continue until all are done", r"until all are done"),
        ("open", "a0y.4 wire PubSub into LiveViews (in progress)", r"a0y\.4"),
        ("constraint", "do not use Oban for tail workers", r"Oban"),
        ("constraint", "repeated sync must not create duplicates", r"duplicates"),
        ("decision", "tail adapter behaviour with a tail -F implementation via Port", r"\bPort\b"),
        ("decision", "ActiveSessionRegistry GenServer backed by ETS", r"\bETS\b"),
        ("left_off", "catch-all handler for terminal_scrolled", r"terminal_scrolled"),
        ("file", "session_live.ex", r"session_live\.ex"),
        ("file", "pane_list_live.ex", r"pane_list_live\.ex"),
        ("file", "spotter.css", r"spotter\.css"),
    ],
}


@dataclass
class Probe:
    kind: str
    fact: str
    found: Callable[[str], bool]
    in_summary: bool | None  # None: the cut is not at a compaction


@dataclass
class Cut:
    name: str
    lines: list[str]
    cut: int  # the transcript is lines[:cut]
    compaction: bool  # the cut is at a real compaction
    probes: list[Probe] = field(default_factory=list)

    def boundaries(self) -> list[int]:
        """The compactions at or before the cut (their compact_boundary lines)."""
        return [i for i, line in enumerate(self.lines[: self.cut + 1]) if _is_boundary(line)]


def _is_boundary(line: str) -> bool:
    return '"compact_boundary"' in line


def _read_lines(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return f.read().splitlines(True)


def summary_after(lines: list[str], boundary: int) -> str:
    """The summary Claude wrote at a compaction (the isCompactSummary record after it)."""
    for line in lines[boundary + 1 : boundary + 4]:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("isCompactSummary"):
            content = (record.get("message") or {}).get("content")
            if isinstance(content, list):
                content = "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
            return content or ""
    return ""


def dev_cuts() -> list[Cut]:
    data = json.loads(EVAL.read_text(encoding="utf-8"))
    cuts = []
    for entry in data["transcripts"]:
        path = CORPUS / entry["file"]
        if not path.exists():
            path = path.with_name(path.name + ".gz")
        lines = _read_lines(path)
        cut = Cut(entry["file"], lines, entry["cut_line"], entry["has_compaction"])
        for p in entry["probes"]:
            needles = [s.lower() for s in p["any_of"]]
            cut.probes.append(
                Probe(
                    p["kind"],
                    p["fact"],
                    lambda text, n=needles: any(s in text.lower() for s in n),  # type: ignore[misc]
                    p["in_claude_summary"],
                )
            )
        cuts.append(cut)
    return cuts


def own_cuts() -> list[Cut]:
    cuts = []
    for prefix, facts in FACTS.items():
        (path,) = (CORPUS / "spotter").glob(f"{prefix}*.jsonl")
        lines = _read_lines(path)
        boundary = next(i for i, line in enumerate(lines) if _is_boundary(line))
        before, summary = "".join(lines[:boundary]), summary_after(lines, boundary)
        cut = Cut(prefix, lines, boundary, True)
        for kind, fact, pattern in facts:
            regex = re.compile(pattern, re.I)
            if not regex.search(before):
                sys.exit(f"{prefix}: fact not in the transcript before the cut: {fact}")
            cut.probes.append(
                Probe(
                    kind,
                    fact,
                    lambda text, r=regex: bool(r.search(text)),
                    bool(regex.search(summary)),
                )  # type: ignore[misc]
            )
        cuts.append(cut)
    return cuts


# --- the fuse alone -----------------------------------------------------------------------------


def run_fuse(cuts: list[Cut], tmp: Path) -> dict[str, object]:
    from gitledger import fuse
    from gitledger.ledger import Ledger

    kept = {b: 0 for b in BUDGETS}
    kept_c = {b: 0 for b in BUDGETS}
    union = {b: 0 for b in BUDGETS}
    by_kind: dict[str, list[int]] = {}
    missed: list[str] = []
    over: list[str] = []
    save_ms: list[float] = []
    restore_ms: list[float] = []
    for n, cut in enumerate(cuts):
        session = f"bench-{n}"
        # a ledger per cut, as a session's own project would have: no memory from the other cuts
        ledger = Ledger.open(tmp / f"fuse-ledger-{n}", create=True, actor="bench <bench@local>")
        transcript = tmp / f"{session}.jsonl"
        for stop in [b for b in cut.boundaries() if b < cut.cut] + [cut.cut]:
            transcript.write_text("".join(cut.lines[:stop]), encoding="utf-8")
            started = time.perf_counter()
            fuse.save(ledger, session, transcript, trigger="auto")
            save_ms.append((time.perf_counter() - started) * 1000)
        for budget in BUDGETS:
            started = time.perf_counter()
            text, _ = fuse.restore_text(ledger, session, budget, interface="cli")
            restore_ms.append((time.perf_counter() - started) * 1000)
            if len(text.encode()) + 1 > budget:  # printed with its newline
                over.append(f"{cut.name}@{budget}: {len(text.encode()) + 1} B")
            for probe in cut.probes:
                hit = probe.found(text)
                kept[budget] += hit
                if cut.compaction:
                    kept_c[budget] += hit
                    union[budget] += hit or probe.in_summary is True
                if budget == 6_000:
                    counts = by_kind.setdefault(probe.kind, [0, 0])
                    counts[0] += hit
                    counts[1] += 1
                    if not hit:
                        missed.append(f"{cut.name[:40]}@{cut.cut} {probe.kind}: {probe.fact[:110]}")
    return {
        "probes": sum(len(c.probes) for c in cuts),
        "probes_at_compactions": sum(len(c.probes) for c in cuts if c.compaction),
        "kept": kept,
        "kept_at_compactions": kept_c,
        "with_summary": union,
        "by_kind_6000": by_kind,
        "over_budget": over,
        "save_ms_median": statistics.median(save_ms),
        "restore_ms_median": statistics.median(restore_ms),
        "missed_6000": missed,
    }


# --- through the installed hooks ----------------------------------------------------------------


def _matches(matcher: str, value: str) -> bool:
    if not matcher or matcher == "*":
        return True
    try:
        return re.fullmatch(matcher, value) is not None
    except re.error:
        return matcher == value


def _run_event(
    settings: dict[str, object],
    event: str,
    value: str,
    payload: dict[str, object],
    cwd: Path,
    env: dict[str, str],
    times: dict[str, list[float]],
) -> list[tuple[int, str, str]]:
    outs = []
    groups = settings.get("hooks", {}).get(event, [])  # type: ignore[attr-defined]
    for group in groups:
        if not _matches(group.get("matcher", ""), value):
            continue
        for hook in group.get("hooks", []):
            if hook.get("type") != "command":
                continue
            started = time.perf_counter()
            done = subprocess.run(
                ["bash", "-c", hook["command"]],
                input=json.dumps(payload),
                capture_output=True,
                text=True,
                timeout=hook.get("timeout", 60),
                cwd=cwd,
                env=env,
            )
            times.setdefault(event, []).append((time.perf_counter() - started) * 1000)
            outs.append((done.returncode, done.stdout, done.stderr))
    return outs


def _context(outs: list[tuple[int, str, str]]) -> str:
    texts = []
    for rc, out, _ in outs:
        if rc != 0 or not out.strip():
            continue
        try:
            doc = json.loads(out)
            texts.append((doc.get("hookSpecificOutput") or {}).get("additionalContext") or "")
        except ValueError:
            texts.append(out)
    return "\n".join(texts)


def run_hooks(cuts: list[Cut], tmp: Path) -> dict[str, object]:
    total = kept = union = claude = 0
    by_kind: dict[str, list[int]] = {}
    times: dict[str, list[float]] = {}
    missed: list[str] = []
    errors: list[str] = []
    context_bytes: list[int] = []
    steer_bytes: list[int] = []
    for n, cut in enumerate(cuts):
        if not cut.compaction:
            continue
        home, project = tmp / f"home-{n}", tmp / f"project-{n}"
        (home / ".claude").mkdir(parents=True)
        project.mkdir()
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        env = dict(os.environ, HOME=str(home))
        setup = subprocess.run(
            [sys.executable, "-m", "gitledger", "fuse", "setup", "--write"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
        )
        if setup.returncode:
            errors.append(f"setup: {setup.stderr.strip()[-160:]}")
            continue
        settings = json.loads((home / ".claude" / "settings.json").read_text())
        session = f"hook-{n}"
        transcript = tmp / f"{session}.jsonl"
        context = ""
        for boundary in cut.boundaries():
            transcript.write_text("".join(cut.lines[:boundary]), encoding="utf-8")
            base = {"session_id": session, "transcript_path": str(transcript), "cwd": str(project)}
            pre = _run_event(
                settings,
                "PreCompact",
                "auto",
                {**base, "hook_event_name": "PreCompact", "trigger": "auto"},
                project,
                env,
                times,
            )
            steer_bytes += [len(out.encode()) for rc, out, _ in pre if rc == 0]
            summary = summary_after(cut.lines, boundary)
            transcript.write_text("".join(cut.lines[: boundary + 2]), encoding="utf-8")
            _run_event(
                settings,
                "PostCompact",
                "auto",
                {
                    **base,
                    "hook_event_name": "PostCompact",
                    "trigger": "auto",
                    "compact_summary": summary,
                },
                project,
                env,
                times,
            )
            outs = _run_event(
                settings,
                "SessionStart",
                "compact",
                {**base, "hook_event_name": "SessionStart", "source": "compact"},
                project,
                env,
                times,
            )
            errors += [f"SessionStart rc={rc}: {err.strip()[-120:]}" for rc, _, err in outs if rc]
            context = _context(outs)
        context_bytes.append(len(context.encode()))
        for probe in cut.probes:
            hit = probe.found(context)
            either = hit or probe.in_summary is True
            total += 1
            kept += hit
            union += either
            claude += probe.in_summary is True
            counts = by_kind.setdefault(probe.kind, [0, 0])
            counts[0] += either
            counts[1] += 1
            if not either:
                missed.append(f"{cut.name[:40]}@{cut.cut} {probe.kind}: {probe.fact[:110]}")
    return {
        "probes": total,
        "context_alone": kept,
        "summary_alone": claude,
        "summary_plus_context": union,
        "by_kind": by_kind,
        "context_bytes_max": max(context_bytes, default=0),
        "steer_bytes_max": max(steer_bytes, default=0),
        "ms_median": {event: statistics.median(ms) for event, ms in times.items()},
        "ms_max": {event: max(ms) for event, ms in times.items()},
        "errors": errors,
        "missed": missed,
    }


# --- report -------------------------------------------------------------------------------------


def _pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.0f}%)" if d else "-"


def report(name: str, fuse_result: dict | None, hooks_result: dict | None, missed: bool) -> None:  # type: ignore[type-arg]
    print(f"\n== {name} ==")
    if fuse_result:
        r = fuse_result
        print(f"fuse alone ({r['probes']} probes, {r['probes_at_compactions']} at compactions):")
        print(f"{'budget':>7}  {'all cuts':>14}  {'at compactions':>14}  {'with summary':>14}")
        for b in BUDGETS:
            print(
                f"{b:>7}  {_pct(r['kept'][b], r['probes']):>14}  "
                f"{_pct(r['kept_at_compactions'][b], r['probes_at_compactions']):>14}  "
                f"{_pct(r['with_summary'][b], r['probes_at_compactions']):>14}"
            )
        kinds = ", ".join(f"{k} {v[0]}/{v[1]}" for k, v in sorted(r["by_kind_6000"].items()))
        print(f"by kind at 6,000 (all cuts): {kinds}")
        print(
            f"in process: save {r['save_ms_median']:.0f} ms, restore {r['restore_ms_median']:.0f} ms "
            f"(medians); over budget: {len(r['over_budget'])} {r['over_budget'][:3]}"
        )
        if missed:
            for line in r["missed_6000"]:
                print("  missed at 6000:", line)
    if hooks_result:
        r = hooks_result
        print(f"through the installed hooks, at real compactions ({r['probes']} probes):")
        print(f"  Claude's summary alone     {_pct(r['summary_alone'], r['probes'])}")
        print(f"  SessionStart context alone {_pct(r['context_alone'], r['probes'])}")
        print(f"  summary + context          {_pct(r['summary_plus_context'], r['probes'])}")
        kinds = ", ".join(f"{k} {v[0]}/{v[1]}" for k, v in sorted(r["by_kind"].items()))
        print(f"  by kind (summary + context): {kinds}")
        ms = ", ".join(
            f"{e} {r['ms_median'][e]:.0f} ms (max {r['ms_max'][e]:.0f})" for e in r["ms_median"]
        )
        print(f"  per hook process (median): {ms}")
        print(
            f"  context max {r['context_bytes_max']} B, PreCompact stdout max "
            f"{r['steer_bytes_max']} B; errors {len(r['errors'])} {r['errors'][:2]}"
        )
        if missed:
            for line in r["missed"]:
                print("  missed:", line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=("dev", "own", "both"), default="both")
    parser.add_argument("--mode", choices=("fuse", "hooks", "both"), default="both")
    parser.add_argument("--json", dest="json_file")
    parser.add_argument("--missed", action="store_true", help="List the probes missed.")
    options = parser.parse_args()
    if not CORPUS.is_dir():
        sys.exit("../shared/corpus is absent: this benchmark needs the development checkout.")
    sets = {"dev": dev_cuts, "own": own_cuts}
    names = ["dev", "own"] if options.set == "both" else [options.set]
    out: dict[str, object] = {}
    for name in names:
        cuts = sets[name]()
        with tempfile.TemporaryDirectory(prefix="gitledger-fuse-corpus-") as tmp:
            fuse_result = run_fuse(cuts, Path(tmp)) if options.mode != "hooks" else None
            hooks_result = run_hooks(cuts, Path(tmp)) if options.mode != "fuse" else None
        report(name, fuse_result, hooks_result, options.missed)
        out[name] = {"fuse": fuse_result, "hooks": hooks_result}
    if options.json_file:
        Path(options.json_file).write_text(json.dumps(out, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
