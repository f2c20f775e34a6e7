"""The rules' patterns built from kept programs (``gitledger.judge.patterns``) are the patterns
``re.compile`` gives: the same attributes and the same matches on real text, and anything that
does not read as kept programs of this interpreter is compiled anew."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_cli

from gitledger.judge import patterns, pieces

FIXTURES = Path(__file__).parent / "fixtures" / "judge"
RULES = {name: value for name, value in vars(pieces).items() if isinstance(value, patterns.Lazy)}


def texts() -> list[str]:
    """Every text of the judge's fixture transcripts, lowercased too, and a few made up."""
    out = [
        "Issue 4 passes. Now issue 5: the parser.",
        "T2 verified; launching T3",
        "第 4 个问题已完成，接下来做第 5 个",
        "Would you like me to fix part (b) as well?",
        "Before moving on to task #12, a checkpoint.",
        "Done.",
    ]
    for path in sorted(FIXTURES.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            out.extend(_strings(json.loads(line)))
    return out + [text.lower() for text in out]


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def same(one: re.Pattern[str], two: re.Pattern[str], corpus: list[str]) -> None:
    assert (one.pattern, one.flags, one.groups, one.groupindex) == (
        two.pattern,
        two.flags,
        two.groups,
        two.groupindex,
    )
    for text in corpus:
        assert [m.span() + m.groups() for m in one.finditer(text)] == [
            m.span() + m.groups() for m in two.finditer(text)
        ], (one.pattern, text)
        assert one.split(text) == two.split(text)


@pytest.fixture(autouse=True)
def _alone() -> Iterator[None]:
    patterns.keep_in(None)
    yield
    patterns.keep_in(None)


def test_the_rules_patterns_from_kept_programs_are_res(tmp_path: Path) -> None:
    tmp_path = tmp_path / "kept"
    assert len(RULES) > 20
    corpus = texts()
    patterns.keep_in(tmp_path)
    made = {name: patterns.compile_pattern(p.pattern, p.flags) for name, p in RULES.items()}
    patterns.save()
    kept = list(tmp_path.iterdir())
    assert len(kept) == 1 and kept[0].name.startswith("patterns.")
    patterns.keep_in(tmp_path)  # a later process: every program is read, none compiled
    assert len(patterns._kept) == len(RULES) and not patterns._made
    for name, lazy in RULES.items():
        real = re.compile(lazy.pattern, lazy.flags)
        same(made[name], real, corpus)
        same(patterns.compile_pattern(lazy.pattern, lazy.flags), real, corpus)
    assert not patterns._made
    patterns.save()  # nothing new: the file is not written again
    assert kept[0].stat().st_mtime_ns == list(tmp_path.iterdir())[0].stat().st_mtime_ns


def test_what_does_not_read_as_kept_programs_is_compiled_anew(tmp_path: Path) -> None:
    tmp_path = tmp_path / "kept"
    lazy = pieces.HEADING_RE
    patterns.keep_in(tmp_path)
    patterns.compile_pattern(lazy.pattern, lazy.flags)
    patterns.save()
    (path,) = tmp_path.iterdir()
    good = path.read_bytes()
    for damaged in (good[:-1] + bytes([good[-1] ^ 1]), good[:10], b"", b"\x00" * 64):
        path.write_bytes(damaged)
        patterns.keep_in(tmp_path)
        assert patterns._kept == {}
        compiled = patterns.compile_pattern(lazy.pattern, lazy.flags)
        same(compiled, re.compile(lazy.pattern, lazy.flags), texts()[:50])
    # A program the engine refuses is dropped and the pattern compiled anew.
    patterns.keep_in(None)
    patterns._kept[(lazy.pattern, lazy.flags)] = (0, [1, 2, 3], 0, {}, ())
    compiled = patterns.compile_pattern(lazy.pattern, lazy.flags)
    same(compiled, re.compile(lazy.pattern, lazy.flags), texts()[:50])
    assert (lazy.pattern, lazy.flags) not in patterns._kept
    patterns.forget(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_save_that_cannot_be_written_leaves_nothing_behind(tmp_path: Path) -> None:
    patterns.keep_in(tmp_path)
    try:
        patterns.compile_pattern(r"\bsaved? (?:once|twice)\b")
        (tmp_path / patterns._file_name()).mkdir()  # the kept file's name taken: replace fails
        patterns.save()
        kept = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("patterns."))
        assert kept == [patterns._file_name()]
        assert patterns._made  # not counted as kept: a later save tries again
    finally:
        patterns.keep_in(None)


def test_the_step_command_keeps_the_programs_in_the_ledger(ledger: object, tmp_path: Path) -> None:
    step = ("judge", "step", "--transcript", str(FIXTURES / "boundary.jsonl"), "--floor", "0")
    first = run_cli(*step, "--json")
    assert first.returncode == 0, first.stderr
    folder = tmp_path / "ledger" / "gitledger-judge"
    assert list(folder.glob("patterns.*"))
    again = run_cli(*step, "--json")
    strip = {"elapsed_ms"}
    assert {k: v for k, v in json.loads(again.stdout).items() if k not in strip} == {
        k: v for k, v in json.loads(first.stdout).items() if k not in strip
    }
    assert run_cli("judge", "config", "enabled=false").returncode == 0
    assert run_cli(*step).returncode == 0
    assert not list(folder.glob("patterns.*"))  # a disabled judge keeps nothing
