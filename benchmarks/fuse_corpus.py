"""The fuse against Claude Code's own summary, on the compacted sessions of the corpus.

Each spotter session in ``../shared/corpus`` was compacted once by Claude Code (four automatic,
one manual). The transcript is cut where Claude Code compacted (the ``compact_boundary`` record),
saved with ``fuse save``, and restored at 2,000, 6,000 and 9,500 bytes. The facts listed below for
each session were chosen by reading the transcript before the cut, by kind (goal, latest request,
open items, constraints from the bead being worked on, decisions and fixes, where it left off, the
last files edited); each has a probe (a regular expression, case-insensitive) that must occur in
the transcript before the cut (checked). A fact is kept when its probe occurs in the restored
text, or in the summary Claude wrote at that point (the ``isCompactSummary`` record after the cut).

    python benchmarks/fuse_corpus.py [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
BUDGETS = (2_000, 6_000, 9_500)

# session file stem prefix -> [(kind, fact, probe)]
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


def cut_session(path: Path, out: Path) -> tuple[Path, str]:
    """The transcript before its compaction, and the summary Claude Code wrote there."""
    lines = path.read_text(encoding="utf-8").splitlines()
    cut = next(i for i, line in enumerate(lines) if '"compact_boundary"' in line)
    out.write_text("\n".join(lines[:cut]) + "\n", encoding="utf-8")
    summary = ""
    for line in lines[cut:]:
        record = json.loads(line)
        if record.get("isCompactSummary"):
            content = record["message"]["content"]
            summary = content if isinstance(content, str) else json.dumps(content)
            break
    return out, summary


def kept(text: str, facts: list[tuple[str, str, str]]) -> list[str]:
    return [fact for _, fact, probe in facts if re.search(probe, text, re.I)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", dest="json_file")
    parser.add_argument("--show", action="store_true", help="Print each restore at 6,000 bytes.")
    options = parser.parse_args()
    if not CORPUS.is_dir():
        sys.exit("../shared/corpus is absent: this benchmark needs the development checkout.")

    from gitledger import fuse
    from gitledger.ledger import Ledger

    rows = []
    with tempfile.TemporaryDirectory(prefix="gitledger-fuse-corpus-") as tmp:
        ledger = Ledger.open(Path(tmp) / "ledger", create=True, actor="bench <bench@local>")
        for prefix, facts in FACTS.items():
            (path,) = (CORPUS / "claude-code" / "spotter").glob(f"{prefix}*.jsonl")
            before, summary = cut_session(path, Path(tmp) / path.name)
            source = before.read_text(encoding="utf-8")
            absent = [fact for _, fact, probe in facts if not re.search(probe, source, re.I)]
            if absent:
                sys.exit(f"{prefix}: facts not in the transcript before the cut: {absent}")
            started = time.perf_counter()
            fuse.save(ledger, prefix, before, trigger="auto")
            save_ms = (time.perf_counter() - started) * 1000
            row: dict[str, object] = {
                "session": prefix,
                "transcript_bytes": before.stat().st_size,
                "facts": len(facts),
                "summary_bytes": len(summary.encode()),
                "summary_kept": len(kept(summary, facts)),
                "summary_missing": [
                    f for f in (x[1] for x in facts) if f not in kept(summary, facts)
                ],
                "save_ms": save_ms,
            }
            for budget in BUDGETS:
                text, _ = fuse.restore_text(ledger, prefix, budget)
                got = kept(text, facts)
                row[f"fuse_{budget}"] = len(got)
                row[f"fuse_{budget}_missing"] = [x[1] for x in facts if x[1] not in got]
                if options.show and budget == 6_000:
                    print(text, end="\n\n")
            rows.append(row)

    total = sum(int(r["facts"]) for r in rows)  # type: ignore[call-overload]
    print("Facts kept after compaction: the fuse's restore against Claude Code's own summary")
    print(
        f"{'session':10} {'facts':>5} {'summary':>14} "
        + " ".join(f"{'fuse ' + str(b):>10}" for b in BUDGETS)
    )
    for r in rows:
        print(
            f"{r['session']:10} {r['facts']:>5} {r['summary_kept']:>4} ({int(r['summary_bytes']) // 1000} KB) "  # type: ignore[call-overload]
            + " ".join(f"{r[f'fuse_{b}']:>10}" for b in BUDGETS)
        )
    sums = {b: sum(int(r[f"fuse_{b}"]) for r in rows) for b in BUDGETS}  # type: ignore[call-overload]
    summary_total = sum(int(r["summary_kept"]) for r in rows)  # type: ignore[call-overload]
    print(
        f"{'total':10} {total:>5} {summary_total:>14} "
        + " ".join(f"{sums[b]:>10}" for b in BUDGETS)
    )
    for r in rows:
        print(f"\n{r['session']}: summary misses {r['summary_missing']}")
        print(f"{r['session']}: fuse at 6000 misses {r['fuse_6000_missing']}")
    if options.json_file:
        Path(options.json_file).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
