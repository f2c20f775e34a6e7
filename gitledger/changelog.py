"""A task's history as a changelog: ``gitledger log ID [-p]``.

Each version of a task is a commit on its ref; this walks that ref (any id prefix resolves to it)
newest first, as ``git log`` does, and with ``patch`` shows what each version changed in the
Markdown view (``task.md``). The machine record (``task.json``) is left out of the diff on
purpose: it stamps every field with a clock, and those stamps were 438 of 653 diff lines on a
task with a dozen versions, drowning the change itself.

A merge (two machines changed the task, ``sync`` joined them) shows one diff per parent: from
each side to the merge, which is what the other side brought to it.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from .errors import InvalidInput, LedgerError, TaskNotFound
from .refs import task_ref

if TYPE_CHECKING:
    from .ledger import Ledger

__all__ = ["LogEntry", "ParentDiff", "render_log", "task_log"]

VIEW_FILE = "task.md"


@dataclass(frozen=True)
class ParentDiff:
    """What a version changed in the Markdown view, seen from one of its parents."""

    parent: str | None  # None: the task's first version (diffed against nothing)
    diff: str  # a unified diff of task.md; "" when the view did not change

    def to_dict(self) -> dict[str, Any]:
        return {"parent": self.parent, "diff": self.diff}


@dataclass(frozen=True)
class LogEntry:
    commit: str
    parents: tuple[str, ...]
    author: str
    email: str
    at: str  # ISO 8601 with the author's own UTC offset
    message: str
    diffs: tuple[ParentDiff, ...] = field(default=())

    @property
    def subject(self) -> str:
        return self.message.splitlines()[0] if self.message else ""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "commit": self.commit,
            "parents": list(self.parents),
            "author": self.author,
            "email": self.email,
            "at": self.at,
            "subject": self.subject,
            "message": self.message,
        }
        if self.diffs:
            data["diffs"] = [d.to_dict() for d in self.diffs]
        return data


def _iso(seconds: int, offset_minutes: int) -> str:
    zone = timezone(timedelta(minutes=offset_minutes))
    return datetime.fromtimestamp(seconds, zone).isoformat()


def _view(ledger: Ledger, commit: str | None) -> list[str]:
    if commit is None:
        return []
    data = ledger.store.read_files(commit, (VIEW_FILE,)).get(VIEW_FILE)
    if data is None:
        return []
    return data.decode("utf-8", "replace").splitlines(keepends=True)


def _diff(before: list[str], after: list[str], old: str | None, new: str) -> str:
    lines = difflib.unified_diff(
        before,
        after,
        fromfile=f"a/{VIEW_FILE}" if old else "/dev/null",
        tofile=f"b/{VIEW_FILE}",
        fromfiledate=old[:12] if old else "",
        tofiledate=new[:12],
    )
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def task_log(
    ledger: Ledger, task_id: str, *, patch: bool = False, limit: int | None = None
) -> list[LogEntry]:
    """The versions of the task ``task_id`` names (any unique prefix), newest first.

    With ``patch``, each entry carries the diff of the Markdown view against each parent.
    """
    if limit is not None and limit < 1:
        raise InvalidInput("The number of versions to show must be at least 1.")
    full = ledger.resolve(task_id)
    ref = task_ref(full)
    tip = ledger.store.tip(ref)
    if tip is None:  # removed between resolve and now
        raise TaskNotFound(f"No task {task_id}.")
    views: dict[str, list[str]] = {}

    def view(commit: str) -> list[str]:
        if commit not in views:
            views[commit] = _view(ledger, commit)
        return views[commit]

    out: list[LogEntry] = []
    for info in ledger.store.walk(tip):
        if limit is not None and len(out) >= limit:
            break
        diffs: tuple[ParentDiff, ...] = ()
        if patch:
            try:
                after = view(info.oid)
                if info.parents:
                    diffs = tuple(
                        ParentDiff(p, _diff(view(p), after, p, info.oid)) for p in info.parents
                    )
                else:
                    diffs = (ParentDiff(None, _diff([], after, None, info.oid)),)
            except LedgerError as exc:  # one unreadable version does not hide the rest
                diffs = (ParentDiff(None, f"(cannot read {VIEW_FILE}: {exc.message})\n"),)
        out.append(
            LogEntry(
                commit=info.oid,
                parents=info.parents,
                author=info.author_name,
                email=info.author_email,
                at=_iso(info.time, info.offset),
                message=info.message,
                diffs=diffs,
            )
        )
    return out


def render_log(entries: list[LogEntry]) -> str:
    """The entries as ``git log`` prints them (``-p`` when they carry diffs)."""
    out: list[str] = []
    for entry in entries:
        out.append(f"commit {entry.commit}")
        if len(entry.parents) > 1:
            out.append("Merge: " + " ".join(p[:12] for p in entry.parents))
        out.append(f"Author: {entry.author} <{entry.email}>")
        out.append(f"Date:   {entry.at}")
        out.append("")
        out += [f"    {line}".rstrip() for line in entry.message.rstrip("\n").splitlines()]
        out.append("")
        merge = len(entry.parents) > 1
        for n, diff in enumerate(entry.diffs):
            if merge and diff.parent is not None:
                others = [p[:12] for i, p in enumerate(entry.parents) if i != n]
                out.append(
                    f"What {', '.join(others)} brought to {diff.parent[:12]} "
                    f"(parent {n + 1} → merge):"
                )
                out.append("")
            if diff.diff:
                out.append(diff.diff.rstrip("\n"))
            elif merge:
                out.append("(nothing: the merge kept this side's view)")
            else:
                out.append(f"({VIEW_FILE} unchanged)")
            out.append("")
    return "\n".join(out)
