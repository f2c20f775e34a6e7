"""The packer core of every budgeted text: required lines, then optional items by priority
under a budget of UTF-8 bytes or cl100k_base tokens, then the line saying what was left out.

``context.py``'s docstring states the design (required state first, two passes of whole then
shortened items, no item over a quarter of the budget, measured the same way, stored text
quoted as data, cuts never breaking a character); this module is its one implementation, used
by ``task_context()`` and ``prime()``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from .errors import BudgetTooSmall, InvalidInput
from .text import MARKER, fold

UNITS = ("bytes", "tokens")
MAX_BUDGET = 10_000_000
MIN_SHORTENED_CHARS = 20
_JOINERS = {"\u200d", "\u034f"}  # zero-width joiner, combining grapheme joiner


# --- rendering stored text safely ----------------------------------------------------------------


def _escape(folded: str) -> str:
    return folded.replace("\\", "\\\\").replace('"', '\\"')


def quote(text: str) -> str:
    """Folded text in double quotes; ``\\`` and ``"`` escaped so the quotes cannot be closed."""
    return f'"{_escape(fold(text))}"'


def _safe_cuts(text: str) -> list[int]:
    """Positions where ``text`` can be cut without splitting a user-perceived character."""
    cuts = []
    for i in range(1, len(text)):
        ch, before = text[i], text[i - 1]
        if unicodedata.combining(ch) or ch in _JOINERS or before in _JOINERS:
            continue
        if "\ufe00" <= ch <= "\ufe0f" or "\U0001f3fb" <= ch <= "\U0001f3ff":
            continue  # variation selectors and skin-tone modifiers belong to what precedes them
        cuts.append(i)
    return cuts


def shorten(text: str, fits: Callable[[str], bool], max_chars: int | None = None) -> str | None:
    """The longest prefix of ``text``, cut at a word boundary and ended with the marker, that
    ``fits``; ``None`` when no shortened form of at least ``MIN_SHORTENED_CHARS`` fits.

    Text without spaces (CJK, long identifiers) is cut between characters instead.
    ``max_chars`` bounds the search when the caller knows no longer prefix can fit.
    """
    window = text if max_chars is None else text[: max_chars + 1]
    cuts = [c for c in _safe_cuts(window) if c >= MIN_SHORTENED_CHARS]
    if not cuts:
        return None

    def form(cut: int) -> str:
        return text[:cut].rstrip() + MARKER

    lo, hi = 0, len(cuts) - 1
    best = -1
    while lo <= hi:  # the longest cut that fits (shorter prefixes never cost more)
        mid = (lo + hi) // 2
        if fits(form(cuts[mid])):
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    if best < 0:
        return None
    cut = cuts[best]
    space = text.rfind(" ", 0, cut + 1)
    # Prefer a word boundary unless it would throw away more than half of what fits.
    if space >= MIN_SHORTENED_CHARS and space >= cut // 2 and text[cut : cut + 1] != " ":
        candidate = text[:space].rstrip(" ,;:")
        if len(candidate) >= MIN_SHORTENED_CHARS and fits(candidate + MARKER):
            return candidate + MARKER
    return form(cut) if fits(form(cut)) else None


# --- measuring -----------------------------------------------------------------------------------


def measurer(unit: str) -> Callable[[str], int]:
    """How a budget is counted: UTF-8 bytes, or cl100k_base tokens (tiktoken loaded only here)."""
    if unit == "bytes":
        return lambda text: len(text.encode("utf-8"))
    if unit == "tokens":
        from . import tokens

        tokens.encoding()
        return tokens.count
    raise InvalidInput(f"Unknown unit '{unit}'. Use bytes or tokens.")


def check_budget(budget: int, unit: str) -> None:
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise InvalidInput(f"A budget is a whole number of {unit}, not {budget!r}.")
    if budget < 1 or budget > MAX_BUDGET:
        raise InvalidInput(f"A budget is 1 to {MAX_BUDGET:,} {unit}, not {budget:,}.")


# --- packing -------------------------------------------------------------------------------------


@dataclass
class Item:
    """One optional line: ``prefix`` is rendered as is, ``text`` (stored text) is quoted and may
    be shortened; ``suffix`` follows the quoted text."""

    kind: str
    prefix: str
    text: str = ""
    suffix: str = ""

    def __post_init__(self) -> None:
        self.text = fold(self.text)  # once, so packing can render and cut it cheaply

    def render(self, body: str | None = None) -> str:
        value = self.text if body is None else body
        quoted = f'"{_escape(value)}"' if value else ""
        return f"{self.prefix}{quoted}{self.suffix}"


@dataclass
class Section:
    """A titled list; ``title_many`` (when given) replaces ``title`` once two items are kept, so
    "newest first" is said only where there is an order to speak of."""

    kind: str
    title: str
    items: list[Item]
    title_many: str | None = None

    def heading(self, kept: int) -> str | None:
        if kept == 0:
            return None
        return self.title_many if kept > 1 and self.title_many else self.title


@dataclass
class Packed:
    text: str
    size: int
    minimum: int
    kept: dict[str, int]
    shortened: dict[str, int]
    omitted: dict[str, int]


def omitted_line(omitted: dict[str, int], kinds: dict[str, tuple[str, str]]) -> str:
    parts = []
    for kind, (one, many) in kinds.items():
        n = omitted.get(kind, 0)
        if n:
            parts.append(f"{n} {one if n == 1 else many}")
    return "omitted: " + (", ".join(parts) if parts else "nothing")


def pack(
    required: list[str],
    sections: list[Section],
    budget: int,
    unit: str,
    kinds: dict[str, tuple[str, str]],
    *,
    what: str,
) -> Packed:
    """Required lines, then as many optional items as fit, then the omitted line."""
    check_budget(budget, unit)
    measure = measurer(unit)
    total_items = {s.kind: 0 for s in sections}
    for s in sections:
        total_items[s.kind] += len(s.items)
    # chosen[(section index, item index)] = rendered line
    chosen: dict[tuple[int, int], str] = {}
    shortened: set[tuple[int, int]] = set()
    order: list[tuple[int, int]] = []

    def counts() -> tuple[dict[str, int], dict[str, int]]:
        kept = {k: 0 for k in total_items}
        for si, _ in chosen:
            kept[sections[si].kind] += 1
        omitted = {k: total_items[k] - kept[k] for k in total_items}
        return kept, omitted

    def render() -> str:
        lines = list(required)
        for si, section in enumerate(sections):
            rows = [chosen[(si, ii)] for ii in range(len(section.items)) if (si, ii) in chosen]
            heading = section.heading(len(rows))
            if heading is not None:
                lines.append(heading)
                lines += rows
        lines.append(omitted_line(counts()[1], kinds))
        return "\n".join(lines) + "\n"

    def cost(line: str) -> int:
        return measure(line + "\n")

    minimum_text = render()
    minimum = measure(minimum_text)
    if minimum > budget:
        raise BudgetTooSmall(what, budget, unit, minimum)

    used = sum(cost(line) for line in required)
    in_section = [0] * len(sections)
    omitted_now = {k: total_items[k] for k in total_items}
    cap = max(budget // 4, 1)

    def room_for(si: int) -> tuple[int, dict[str, int], int]:
        after = dict(omitted_now)
        after[sections[si].kind] -= 1
        section, n = sections[si], in_section[si]
        before, now = section.heading(n), section.heading(n + 1)
        title = (cost(now) if now else 0) - (cost(before) if before else 0)
        return budget - used - title - cost(omitted_line(after, kinds)), after, title

    def take(si: int, ii: int, line: str, title: int, after: dict[str, int]) -> None:
        nonlocal used, omitted_now
        chosen[(si, ii)] = line
        order.append((si, ii))
        used += title + cost(line)
        in_section[si] += 1
        omitted_now = after

    # Search prefixes of at most this many characters per unit of room: a character is at least
    # a byte; English runs ~4 characters a token, so 16 leaves ample slack (a tighter window
    # only makes a stub shorter, never over budget).
    per_unit = 1 if unit == "bytes" else 16

    def over(line: str, limit: int) -> bool:
        """Whether ``line`` costs more than ``limit``, without encoding all of a huge line."""
        if unit == "tokens" and len(line) > 4 * limit + 64:
            if measure(line[: 4 * limit + 64]) > limit + 1:
                return True
        return cost(line) > limit

    def shortened_to(item: Item, limit: int) -> str | None:
        if cost(item.prefix + '"' + item.text[:MIN_SHORTENED_CHARS] + MARKER + '"') > limit:
            return None  # not even the shortest stub fits
        body = shorten(item.text, lambda b: cost(item.render(b)) <= limit, limit * per_unit)
        return None if body is None else item.render(body)

    # Pass 1, by priority: whole items (or, past the cap, their cap-sized short form) that fit.
    for si, section in enumerate(sections):
        for ii, item in enumerate(section.items):
            room, after, title = room_for(si)
            full = item.render()
            if not over(full, cap):
                if not over(full, room):
                    take(si, ii, full, title, after)
            elif item.text and room >= cap:
                line = shortened_to(item, cap)
                if line is not None:
                    take(si, ii, line, title, after)
                    shortened.add((si, ii))
    # Pass 2, by priority: what was left out, shortened into the room that remains.
    for si, section in enumerate(sections):
        for ii, item in enumerate(section.items):
            if (si, ii) in chosen or not item.text:
                continue
            room, after, title = room_for(si)
            if room < measure(MARKER) + 2:
                continue
            line = shortened_to(item, min(room, cap))
            if line is not None:
                take(si, ii, line, title, after)
                shortened.add((si, ii))

    text = render()
    size = measure(text)
    while size > budget and order:  # tokens only, in practice: see the module docstring
        last = order.pop()
        chosen.pop(last)
        shortened.discard(last)
        text = render()
        size = measure(text)
    kept, omitted = counts()
    short = {k: 0 for k in total_items}
    for si, _ in shortened:
        short[sections[si].kind] += 1
    return Packed(text, size, minimum, kept, short, omitted)


__all__ = [
    "MAX_BUDGET",
    "MIN_SHORTENED_CHARS",
    "UNITS",
    "Item",
    "Packed",
    "Section",
    "check_budget",
    "measurer",
    "omitted_line",
    "pack",
    "quote",
    "shorten",
]
