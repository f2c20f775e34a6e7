"""What changed between two versions of a task, and how a version is written down.

``diff_tasks`` lists the changes field by field; ``commit_message`` turns them into the commit
message of the version (a subject of at most 72 characters that reads as a changelog line, one
body line a change, and the ``Version:``/``Task:`` trailer every task commit ends with, written by
``version_message`` alone); ``stamp_clock`` gives each changed field the hybrid-clock stamp a
merge compares (``merge.py``); ``history`` lists a task's versions newest first, and
``version_at`` finds one by number. The ledger's update, the bulk import and sync's merge all use
these, so a version written by any of them reads the same in ``git log``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import VersionNotFound
from .model import ENTRY_FIELDS, SCALAR_FIELDS, SET_FIELDS, HybridClock, Task, read_record
from .text import cut_words, one_line

if TYPE_CHECKING:
    from .gitstore import GitStore

_SINGULAR = {
    "notes": "note",
    "decisions": "decision",
    "dependencies": "dependency",
    "labels": "label",
    "conflicts": "conflict",
}


@dataclass(frozen=True)
class Change:
    """One field's change between two versions."""

    field: str
    kind: str  # "set", "added" or "removed"
    old: Any = None
    new: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "kind": self.kind, "old": self.old, "new": self.new}

    def describe(self) -> str:
        if self.kind == "set":
            return f"{self.field}: {_short(self.old)} → {_short(self.new)}"
        sign = "+" if self.kind == "added" else "-"
        value = self.new if self.kind == "added" else self.old
        return f"{sign}{_SINGULAR.get(self.field, self.field)}: {_short(value)}"


def _short(value: Any, width: int = 60) -> str:
    return one_line(value, width, empty="—", words=True)


def diff_tasks(old: Task | None, new: Task) -> list[Change]:
    """Field-by-field changes from ``old`` to ``new`` (everything is added when ``old`` is None)."""
    out: list[Change] = []
    if old is None:
        for name in SCALAR_FIELDS:
            value = getattr(new, name)
            if value not in (None, "", []):
                out.append(Change(name, "set", None, value))
        for name in SET_FIELDS:
            out += [Change(name, "added", None, v) for v in getattr(new, name)]
        for name in ENTRY_FIELDS:
            out += [Change(name, "added", None, e.text) for e in getattr(new, name)]
        return out
    for name in SCALAR_FIELDS:
        if getattr(old, name) != getattr(new, name):
            out.append(Change(name, "set", getattr(old, name), getattr(new, name)))
    if old.agent != new.agent:  # the claim's agent (a merge decides it with the owner)
        out.append(Change("agent", "set", old.agent, new.agent))
    for name in SET_FIELDS:
        before, after = getattr(old, name), getattr(new, name)
        out += [Change(name, "removed", v, None) for v in before if v not in after]
        out += [Change(name, "added", None, v) for v in after if v not in before]
    for name in ENTRY_FIELDS:
        before_ids = {e.id for e in getattr(old, name)}
        after_ids = {e.id for e in getattr(new, name)}
        out += [
            Change(name, "removed", e.text, None)
            for e in getattr(old, name)
            if e.id not in after_ids
        ]
        out += [
            Change(name, "added", None, e.text)
            for e in getattr(new, name)
            if e.id not in before_ids
        ]
    # An update that sets a field resolves its conflict (removed); a merge records new ones.
    out += [
        Change("conflicts", "removed", c.field, None)
        for c in old.conflicts
        if c not in new.conflicts
    ]
    out += [
        Change("conflicts", "added", None, c.field) for c in new.conflicts if c not in old.conflicts
    ]
    return out


SUBJECT_WIDTH = 72


def commit_message(task: Task, changes: list[Change] | None) -> str:
    """The commit message of a version: ``changes`` None means the task's first version.

    The subject (at most 72 characters) reads as a changelog line: what was set, how many entries
    were added, and a decision's own words, cut after a whole word when they do not fit.
    """
    if changes is None:
        subject = cut_words(f"create: {_short(task.goal, 200)}", SUBJECT_WIDTH)
        return version_message(subject, "", task)
    heads = []
    for change in changes:
        if change.kind == "set" and change.field in ("status", "priority"):
            heads.append(f"{change.field} {change.old}→{change.new}")
        elif change.kind == "set":
            heads.append(change.field)
    counts: dict[str, int] = {}
    for change in changes:
        if change.kind != "set":
            key = f"{'+' if change.kind == 'added' else '-'}{change.field}"
            counts[key] = counts.get(key, 0) + 1
    decided = [c.new for c in changes if c.field == "decisions" and c.kind == "added"]
    counts.pop("+decisions", None)
    heads += [f"{k} {v}" if v > 1 else k for k, v in counts.items()]
    subject = f"update: {', '.join(heads)}" if heads else "update:"
    if decided:
        more = f" (+{len(decided) - 1} more)" if len(decided) > 1 else ""
        lead = f"{subject}{',' if heads else ''} decision{more}: "
        if len(lead) < SUBJECT_WIDTH - 16:  # room for a few words of the decision itself
            subject = lead + _short(decided[0], SUBJECT_WIDTH - len(lead))
        else:
            subject = (
                f"{subject}, +decisions {len(decided)}"
                if len(decided) > 1
                else (f"{subject}, +decisions")
            )
    subject = cut_words(subject, SUBJECT_WIDTH)
    body = "\n".join(f"- {c.describe()}" for c in changes)
    return version_message(subject, body, task)


def version_message(subject: str, body: str, task: Task) -> str:
    """A task commit's message: subject, the body if any, then the trailer naming the version."""
    middle = f"{body}\n\n" if body else ""
    return f"{subject}\n\n{middle}Version: {task.version}\nTask: {task.id}\n"


def stamp_clock(current: Task, updated: Task, seen: Iterable[str] = ()) -> dict[str, str]:
    """``updated``'s per-field clock: every field that differs from ``current`` gets one new stamp,
    later than every stamp of ``current`` and of ``seen``."""
    stamp = HybridClock.tick([*current.clock.values(), *seen])
    clock = dict(current.clock)
    for name in (*SCALAR_FIELDS, *SET_FIELDS):
        if getattr(updated, name) != getattr(current, name):
            clock[name] = stamp
    return clock


@dataclass(frozen=True)
class Version:
    version: int
    commit: str
    actor: str
    at: str
    summary: str
    changes: tuple[Change, ...]
    parents: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "commit": self.commit,
            "actor": self.actor,
            "at": self.at,
            "summary": self.summary,
            "parents": list(self.parents),
            "changes": [c.to_dict() for c in self.changes],
        }


def history(
    store: GitStore, tip: str, where: str, limit: int | None = None, offset: int = 0
) -> list[Version]:
    """The versions of the task at ``tip`` (its ref ``where``) newest first, each with what
    changed in it against its first parent."""
    cache: dict[str, Task] = {}

    def record(oid: str) -> Task:
        if oid not in cache:
            cache[oid] = read_record(store, oid, where)[0]
        return cache[oid]

    out: list[Version] = []
    for n, info in enumerate(store.walk(tip)):
        if n < offset:
            continue
        if limit is not None and len(out) >= limit:
            break
        current = record(info.oid)
        previous = record(info.parents[0]) if info.parents else None
        changes = tuple(diff_tasks(previous, current))
        out.append(
            Version(
                version=current.version,
                commit=info.oid,
                actor=info.author_name,
                at=current.updated_at,
                summary=info.message.splitlines()[0] if info.message else "",
                changes=changes,
                parents=info.parents,
            )
        )
    return out


def version_at(store: GitStore, tip: str, where: str, current: Task, at: int) -> Task:
    """Version ``at`` of the task whose tip ``tip`` holds ``current``, read down the main line
    (first parents); ``VersionNotFound`` when it has no such version there."""
    if at == current.version:
        return current
    task_id = where.rpartition("/")[2]
    if at < 1 or at > current.version:
        raise VersionNotFound(
            f"Task {task_id} has versions 1 to {current.version}; there is no version {at}."
        )
    for info in store.first_parent_chain(tip):
        record = read_record(store, info.oid, where)[0]
        if record.version == at:
            return record
        if record.version < at:
            break
    raise VersionNotFound(f"Task {task_id} has no version {at} on its main line of history.")


__all__ = [
    "Version",
    "history",
    "version_at",
    "SUBJECT_WIDTH",
    "Change",
    "commit_message",
    "diff_tasks",
    "stamp_clock",
    "version_message",
]
