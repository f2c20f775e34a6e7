"""Fitting a restore's sections into a byte budget: every item a short slot first (breadth
first, by priority), then growth in even steps, so items are shortened before any is dropped.

``render.py`` decides what a restore says and in which order; this module only fits it. It is
not ``budget.pack`` (whole items by priority, then the rest shortened, bytes or tokens, a budget
too small refused): the fuse grants every item a slot, condenses rather than cuts, and never
refuses for want of room (docs/ARCHITECTURE.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from .condense import _clauses, _dense, condense, defang, shorten_path
from .snapshot import ITEM_CHARS


@dataclass
class Section:
    """One section of a restore: its items in priority order and how it is laid out."""

    key: str
    heading: str
    short: str  # the heading at budgets under SMALL_BUDGET
    items: list[str]
    quota: int  # items that get a short slot before any section gets more
    noun: str  # for the "left out" line
    inline: bool = False  # items joined on the heading line (files; every section when small)
    paths: bool = False  # items are file paths: shortened from the left
    first: bool = True  # its first item gets a slot in the first, breadth-first pass
    verbatim: bool = False  # the person's words: cut, never rewritten as a terse note


SMALL_BUDGET = 2_000
TERSE_BUDGET = 1_000  # under it the last line counts what was left out without naming kinds
_ALWAYS = frozenset({"task", "open"})  # sections whose every quota item is in the first pass
_FIRST = frozenset(
    {"task", "branch", "open", "requests"}
)  # sections served first in the first pass


def small(budget: int) -> bool:
    """Whether ``budget`` (the packer's, a byte kept for the newline) lays each section out on
    one line."""
    return budget + 1 < SMALL_BUDGET


class Packer:
    """Grants each item a byte length: short slots first (breadth first, by priority), then
    growth in even steps, so items are shortened before any is dropped. Under SMALL_BUDGET a
    section is one line (its heading, then its items joined by " | ")."""

    STEP = 24
    JOIN = " | "

    def __init__(
        self,
        sections: list[Section],
        budget: int,  # bytes of text, the newline a caller prints after it kept apart
        *,
        header: list[str],
        goal: str,
        more: str,
        fence: str = "fuse-data",
    ) -> None:
        self.sections = sections
        self.budget = budget
        self.small = small(budget)
        if self.small:
            for section in self.sections:
                section.inline = True
                section.verbatim = False  # a small budget holds more as terse notes
        self.header = header
        self.fence = fence
        self.goal = goal
        self.lengths = [[0] * len(s.items) for s in self.sections]
        self.goal_full = len(self.goal.encode()) + 6
        self.goal_limit = min(self.goal_full, max(80, budget // 6))
        self.min_item = max(40, min(100, budget // 25))
        self.max_short = max(self.min_item, budget // 12) if self.small else self.min_item * 2
        self.more = more
        self._short: dict[tuple[int, int, int], str] = {}
        self._section_cache: dict[int, int] = {}
        self.terse = budget + 1 < TERSE_BUDGET  # "Left out: N items." rather than by kind
        frame = [*self.header, f"~~~ {fence}", "~~~"]
        self.frame_bytes = sum(len(x.encode()) + 1 for x in frame)

    def short_slot(self, si: int, ii: int) -> int:
        """The first slot of an item: its first clause as a note, at least ``min_item`` bytes and
        at most twice that; the whole item when it is shorter."""
        item = self.sections[si].items[ii]
        full = len(item.encode())
        if full <= self.min_item and self.sections[si].key == "requests":
            return full  # a short request is quoted in the user's words
        if self.sections[si].paths:  # at first the file's name, under a small budget
            name = len(item.rsplit("/", 1)[-1].encode()) + 4
            return min(full, max(name, 20) if self.small else self.min_item)
        dense = " ".join(item.split()) if self.sections[si].verbatim else _dense(item)
        parts = _clauses(dense)
        if not parts:
            return full
        first = len(parts[0][0].encode()) + 3
        if parts[0][0].endswith(":") and len(parts) > 1:
            # "X failed:" says nothing without what follows: the slot reaches into it, or the
            # item waits for a later pass
            first += len(parts[1][0].encode()) + 1
            return min(
                full, len(dense.encode()), max(self.min_item, min(first, 2 * self.max_short))
            )
        return min(full, len(dense.encode()), max(self.min_item, min(first, self.max_short)))

    def shown(self, si: int, ii: int) -> str:
        n = self.lengths[si][ii]
        key = (si, ii, n)
        if key not in self._short:
            section = self.sections[si]
            text = section.items[ii]
            if section.paths:
                shown = shorten_path(text, n)
            else:
                shown = condense(text, n, terse=not section.verbatim)
            self._short[key] = defang(shown)
        return self._short[key]

    def heading(self, section: Section) -> str:
        return section.short if self.small else section.heading

    def joiner(self, section: Section) -> str:
        return ", " if section.paths else self.JOIN

    def goal_line(self) -> str:
        key = (-1, -1, self.goal_limit)
        if key not in self._short:
            self._short[key] = "GOAL: " + defang(condense(self.goal, max(self.goal_limit - 6, 8)))
        return self._short[key]

    def footer(self) -> str:
        left: dict[str, int] = {}
        shortened = 0
        for section, granted in zip(self.sections, self.lengths, strict=True):
            dropped = sum(1 for n in granted if n == 0)
            if dropped:
                noun = section.short.split(" ")[0].rstrip(":") if self.small else section.noun
                left[noun] = left.get(noun, 0) + dropped
            shortened += sum(
                1
                for item, n in zip(section.items, granted, strict=True)
                if 0 < n < len(item.encode())
            )
        if self.terse and left:
            total = sum(left.values())
            return f"Left out: {total} item{'' if total == 1 else 's'}."
        listed = ", ".join(f"{n} {noun}" for noun, n in left.items())
        if self.small:  # the short headings name the kinds: "Left out: RULES 1, DECIDED 2."
            listed = ", ".join(f"{noun} {n}" for noun, n in left.items())
        parts = [f"Left out: {listed}." if left else "Nothing left out."]
        if shortened and not self.small:
            parts.append(f"{shortened} item{'' if shortened == 1 else 's'} shortened.")
        if (left or shortened) and not self.small:
            parts.append(self.more)
        return " ".join(parts)

    def section_bytes(self, si: int) -> int:
        cached = self._section_cache.get(si)
        if cached is None:
            cached = self._section_cache[si] = self._section_bytes(si)
        return cached

    def _section_bytes(self, si: int) -> int:
        section = self.sections[si]
        shown = [self.shown(si, ii) for ii, n in enumerate(self.lengths[si]) if n]
        if not shown:
            return 0
        heading = len(self.heading(section).encode())
        if section.inline:
            return heading + 1 + len(self.joiner(section).join(shown).encode()) + 1
        return heading + 1 + sum(len(x.encode()) + 3 for x in shown)

    def size(self) -> int:
        body = sum(self.section_bytes(si) for si in range(len(self.sections)))
        goal = len(self.goal_line().encode()) + 1
        return self.frame_bytes + goal + body + len(self.footer().encode())

    def try_set(self, si: int, ii: int, n: int) -> bool:
        old = self.lengths[si][ii]
        self.lengths[si][ii] = n
        self._section_cache.pop(si, None)
        if self.size() <= self.budget:
            return True
        self.lengths[si][ii] = old
        self._section_cache.pop(si, None)
        return False

    def grow_goal(self, target: int) -> None:
        target = min(target, self.goal_full)
        while self.goal_limit < target:
            before = self.goal_limit
            self.goal_limit = min(target, self.goal_limit + self.STEP)
            if self.size() > self.budget:
                self.goal_limit = before
                return

    def pack(self) -> str:
        # The goal is required: shrink it (never below 60 bytes) until the bare frame fits; at the
        # smallest budgets the last line then only counts what was left out.
        while self.size() > self.budget and self.goal_limit > 60:
            self.goal_limit -= 20
        if self.size() > self.budget:
            self.terse = True
        sections = self.sections
        # The first pass: the linked task and the open items whole, the newest request (it may
        # change the goal), then the first item of every other section by priority.
        first = sorted(range(len(sections)), key=lambda si: sections[si].key not in _FIRST)
        for depth in (1, None, 10_000):
            for si in first if depth == 1 else range(len(sections)):
                section = sections[si]
                if depth == 1 and not section.first:
                    continue
                limit = section.quota if depth is None else depth
                if depth == 1 and section.key in _ALWAYS:
                    limit = section.quota  # the linked task and the open items come first, whole
                for ii, _ in enumerate(section.items[:limit]):
                    if self.lengths[si][ii] == 0:
                        self.try_set(si, ii, self.short_slot(si, ii))
        # Grow the goal to a fifth of the budget, then every shown item in even steps, then the
        # goal again, until nothing more fits.
        self.grow_goal(max(self.goal_limit, self.budget // 5))
        growing = True
        while growing:
            growing = False
            for si, section in enumerate(sections):
                for ii, item in enumerate(section.items):
                    n = self.lengths[si][ii]
                    full = min(len(item.encode()), ITEM_CHARS)
                    if 0 < n < full and self.try_set(si, ii, min(full, n + self.STEP)):
                        growing = True
        self.grow_goal(self.goal_full)
        lines = [*self.header, f"~~~ {self.fence}", self.goal_line()]
        for si, section in enumerate(sections):
            shown = [self.shown(si, ii) for ii, n in enumerate(self.lengths[si]) if n]
            if not shown:
                continue
            if section.inline:
                lines.append(self.heading(section) + " " + self.joiner(section).join(shown))
            else:
                lines.append(self.heading(section))
                lines.extend("- " + x for x in shown)
        lines += ["~~~", self.footer()]
        return "\n".join(lines)


__all__ = ["SMALL_BUDGET", "TERSE_BUDGET", "Packer", "Section", "small"]
