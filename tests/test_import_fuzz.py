"""Hypothesis over import lines: any line is imported or refused with a gitledger error, a refused
file changes nothing, and a minimal file imports, re-imports unchanged and round-trips.

Figures for docs/RELIABILITY.md come from running this file (the example counts are below).
"""

from __future__ import annotations

import io
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from gitledger.errors import LedgerError
from gitledger.ledger import Ledger
from gitledger.trackers import convert
from gitledger.transfer import export_tasks, import_records, import_tasks

FIELDS = [
    "id", "ref", "goal", "criteria", "status", "owner", "blocker", "next", "priority", "labels",
    "parent", "dependencies", "decisions", "evidence", "notes", "history", "version", "clock",
    "created_at", "updated_at", "actor", "short_id", "conflicts", "text",
]  # fmt: skip
SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SLOW = settings(SETTINGS, max_examples=40)  # a ledger, an export and a second ledger per example
CHEAP = settings(SETTINGS, max_examples=300)

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 9), st.text(max_size=12),
    st.sampled_from(["open", "done", "a", "ab", "0" * 20, "bd-1", "x y", "\x00"]),
)  # fmt: skip
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(FIELDS), inner, max_size=4)
    ),
    max_leaves=12,
)
words = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), min_size=1, max_size=30
)
noise = st.dictionaries(st.sampled_from(FIELDS), values, max_size=8)
# A line a person could have meant: a goal, and a few fields of any value.
near = st.builds(
    lambda goal, extra: {"goal": goal, **extra},
    words,
    st.dictionaries(st.sampled_from(FIELDS[3:]), values, max_size=2),
)
lines = st.one_of(noise, near)


class Scratch:
    """A fresh ledger per example, without a function-scoped fixture."""

    def __enter__(self) -> Ledger:
        self.dir = Path(tempfile.mkdtemp(prefix="gitledger-fuzz-"))
        return Ledger.init(self.dir / "ledger")

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def refs(ledger: Ledger) -> dict[str, str]:
    return dict(ledger.store.refs("refs/gitledger/"))


@SETTINGS
@given(st.lists(st.one_of(lines, st.text(max_size=20)), min_size=1, max_size=4))
def test_any_lines_import_or_are_refused_without_a_trace(rows: list[Any]) -> None:
    text = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    with Scratch() as ledger:
        before = refs(ledger)
        try:
            report = import_tasks(ledger, text)
        except LedgerError as exc:
            event(f"refused: {type(exc).__name__}")
            assert refs(ledger) == before  # refused: nothing written
            return
        event("imported")
        assert report.created + report.updated + report.unchanged == sum(
            1 for t in text if t.strip()
        )
        assert ledger.verify().ok


@SETTINGS
@given(st.lists(st.one_of(lines, st.text(max_size=20)), min_size=1, max_size=5))
def test_partial_keeps_exactly_the_lines_it_does_not_name(rows: list[Any]) -> None:
    text = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    with Scratch() as ledger:
        try:
            report = import_tasks(ledger, text, partial=True)
        except LedgerError:  # a cycle refuses the whole file even with --partial
            event("refused whole")
            assert refs(ledger) == {}
            return
        lines_given = {n for n, t in enumerate(text, 1) if t.strip()}
        skipped = {n for n, _ in report.skipped}
        event(f"kept {len(lines_given - skipped)} of {len(lines_given)}")
        assert skipped <= lines_given
        assert report.created == len(lines_given - skipped) == len(list(ledger.tasks()))


words = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), min_size=1, max_size=30
)


@st.composite
def minimal_files(draw: st.DrawFn) -> list[dict[str, Any]]:
    count = draw(st.integers(1, 6))
    out: list[dict[str, Any]] = []
    for n in range(count):
        line: dict[str, Any] = {"ref": f"r{n}", "goal": draw(words)}
        earlier = [f"r{i}" for i in range(n)]
        if earlier and draw(st.booleans()):
            line["dependencies"] = draw(st.lists(st.sampled_from(earlier), unique=True, max_size=3))
        if earlier and draw(st.booleans()):
            line["parent"] = draw(st.sampled_from(earlier))
        for kind in ("notes", "decisions", "evidence"):
            if draw(st.booleans()):
                line[kind] = draw(
                    st.lists(st.one_of(words, st.builds(lambda t: {"text": t}, words)), max_size=3)
                )
        if draw(st.booleans()):
            line["priority"] = draw(st.integers(0, 4))
        out.append(line)
    return out


@SLOW
@given(minimal_files())
def test_minimal_files_import_reimport_unchanged_and_round_trip(file: list[dict[str, Any]]) -> None:
    with Scratch() as ledger:
        report = import_tasks(ledger, [json.dumps(x) for x in file])
        assert report.created == len(file)
        exported = list(export_tasks(ledger))
        before = refs(ledger)
        again = import_tasks(ledger, [json.dumps(x) for x in exported])
        assert again.unchanged == len(file) and refs(ledger) == before
        fresh = Ledger.init(ledger.path.parent / "fresh")
        import_tasks(fresh, [json.dumps(x) for x in exported])
        assert list(export_tasks(fresh)) == exported


ITEM_KEYS = {
    "beads": ("id", "title", "status", "priority", "labels", "dependencies", "comments", "notes"),
    "taskwarrior": ("uuid", "description", "status", "tags", "depends", "annotations", "entry"),
    "github": ("number", "title", "state", "labels", "assignees", "comments", "body"),
}
item_values = st.one_of(values, st.integers(0, 99), words)


@st.composite
def exports(draw: st.DrawFn) -> tuple[str, list[Any]]:
    source = draw(st.sampled_from(sorted(ITEM_KEYS)))
    keys = st.sampled_from(ITEM_KEYS[source])
    item = st.one_of(values, st.dictionaries(keys, item_values, max_size=6))
    return source, draw(st.lists(item, max_size=4))


@CHEAP
@given(exports())
def test_converters_refuse_only_with_gitledger_errors(export: tuple[str, list[Any]]) -> None:
    source, items = export
    if source == "beads":
        text = "".join(json.dumps(i) + "\n" for i in items)
    else:
        text = json.dumps(items)
    try:
        rows = list(convert(source, io.StringIO(text)))
    except LedgerError:
        event("refused whole")
        return
    for _n, row in rows:
        assert isinstance(row, dict | LedgerError)
        event("item converted" if isinstance(row, dict) else "item refused")
    with Scratch() as ledger:  # and what converted imports, or is refused, like any line
        try:
            report = import_records(ledger, iter(rows), partial=True)
        except LedgerError:
            event("import refused whole")
            assert refs(ledger) == {}
            return
        assert report.created == len(list(ledger.tasks()))
