"""Stored text made safe to show: the one home for folding, cutting and one-line summaries.

Everything a user or an agent wrote is data. Before it is shown on a terminal, quoted in a
handoff, written into a commit subject or a graph label, it goes through one of these:

``fold(text)``
    The text on one line. Whitespace runs (``\\n``, U+2028, NEL and the rest) become one space;
    format characters (bidi overrides, zero-width spaces) are dropped, except the zero-width
    joiner inside emoji sequences; any other character that is not printable becomes U+FFFD, so
    that its presence stays visible.
``one_line(text, width)``
    ``fold`` cut to ``width`` characters, ending in "…" where it was cut: for listings, commit
    subjects and messages that quote what was given.
``cut_words(text, width)``
    the same cut for text already on one line, after a whole word: for commit subjects.
``cut(text, limit)``
    ``text`` in at most ``limit`` UTF-8 bytes, cut at a word boundary with "…": for budgets
    counted in bytes (the fuse's restored context).
``plural(n, noun)``
    a count and the noun that agrees with it ("1 task", "2 tasks"), for every summary line.
"""

from __future__ import annotations

import unicodedata

MARKER = "…"
ZWJ = "\u200d"  # kept: it joins emoji sequences


def fold(text: str) -> str:
    """Stored text on one line: whitespace runs become one space, control characters go.

    Line and paragraph separators (``\\n``, U+2028, NEL …) count as whitespace; format characters
    (bidi overrides, zero-width spaces) are dropped, except the joiner inside emoji sequences;
    every other character that is not printable (controls, surrogates, private use, unassigned)
    becomes U+FFFD so its presence stays visible. The result is printable but for that joiner.
    """
    if not text.isprintable():  # only then is there anything but plain spaces to fold
        joined = " ".join(text.split())  # whitespace of every kind, the common case
        if joined.isprintable():
            return joined
        table: dict[int, str | None] = {}
        for ch in set(text):
            if ch.isspace():
                table[ord(ch)] = " "
                continue
            if ch == ZWJ or ch.isprintable():
                continue
            # Format characters vanish; the rest (controls, surrogates, private use, unassigned)
            # show as U+FFFD.
            table[ord(ch)] = None if unicodedata.category(ch) == "Cf" else "\ufffd"
        text = text.translate(table)
    return " ".join(text.split())


def one_line(text: object, width: int = 72, *, empty: str = "", words: bool = False) -> str:
    """``text`` folded onto one line of at most ``width`` characters ("…" where it was cut).

    ``None`` and text that folds to nothing give ``empty``; any other value is shown as ``str()``.
    ``words``: cut between words (``cut_words``), as commit subjects are.
    """
    flat = "" if text is None else fold(text if isinstance(text, str) else str(text))
    if not flat:
        return empty
    if words:
        return cut_words(flat, width)
    return flat if len(flat) <= width else flat[: width - 1].rstrip() + MARKER


def cut_words(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, cut after a whole word and marked with '…'
    (mid-word only when a single word is longer than a third of the room)."""
    if len(text) <= width:
        return text
    room = text[: width - 1]
    space = room.rfind(" ")
    if text[width - 1] != " " and space >= width // 3:  # the room ends inside a word
        room = room[:space]
    return room.rstrip(" ,;:") + MARKER


def cut(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` UTF-8 bytes, cut at a word boundary with '…'."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    if limit < 4:
        return ""
    head = data[: limit - 3].decode("utf-8", errors="ignore")
    space = head.rfind(" ")
    if space > len(head) * 0.6:
        head = head[:space]
    return head.rstrip(" ,;:-…") + MARKER


__all__ = ["MARKER", "ZWJ", "cut", "cut_words", "fold", "one_line"]


def plural(n: int, singular: str, plural: str | None = None) -> str:
    """``n`` and the noun that agrees with it: "1 task", "2 tasks", "1 entry", "3 entries"."""
    return f"{n} {singular if n == 1 else plural or singular + 's'}"
