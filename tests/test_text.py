"""The one home of text folding (gitledger/text.py): its contract, over any text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gitledger.text import MARKER, ZWJ, cut, fold, one_line


@given(st.text())
def test_fold_gives_one_printable_line(text: str) -> None:
    folded = fold(text)
    assert all(ch.isprintable() or ch == ZWJ for ch in folded)
    assert "  " not in folded and folded == folded.strip()
    assert fold(folded) == folded


def test_fold_keeps_the_presence_of_controls_and_drops_format_characters() -> None:
    assert fold("a\x1b[31m\tb\u2028c\x85d\u202eevil\u202c\ue000") == "a\ufffd[31m b c devil\ufffd"
    assert fold("family 👨\u200d👩\u200d👧") == "family 👨\u200d👩\u200d👧"


@given(st.one_of(st.none(), st.text(), st.integers()), st.integers(2, 200))
def test_one_line_fits_its_width(value: object, width: int) -> None:
    line = one_line(value, width, empty="—")
    assert 0 < len(line) <= width
    assert line == "—" or line.endswith(MARKER) or line == fold(str(value))


def test_one_line_cuts_with_a_marker() -> None:
    assert one_line("word " * 30, 12) == "word word w…"
    assert one_line(None) == "" and one_line("  \n ", empty="—") == "—"


@given(st.text(), st.integers(0, 300))
def test_cut_fits_its_byte_limit(text: str, limit: int) -> None:
    out = cut(text, limit)
    assert len(out.encode("utf-8")) <= limit or out == text
    assert out == text or out.endswith(MARKER) or out == ""
