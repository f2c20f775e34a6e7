"""The edits of one update: what ``Ledger.update`` checked, applied to a version it read.

``UpdateEdits`` holds them as ``edits.UPDATE_EDITS`` names them (``renamed`` maps the old
keywords, with a warning); ``apply_edits`` makes the next record from the current one (entries
with fresh ids, evidence bound to the criteria it was logged against, clock stamps) and
``settle_conflicts`` drops the merge conflicts on the fields it sets; the small
checks of what a caller passes (priority, labels, optional text, ids) are here, once, for
``create`` and ``update`` alike. The gates are not: they judge the result (``gates.py``).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .changes import stamp_clock
from .errors import Fix, InvalidInput
from .model import (
    PRIORITY_MAX,
    PRIORITY_MIN,
    STATUSES,
    Entry,
    Evidence,
    Task,
    check_label,
    check_text,
    criteria_hash,
    new_entry_id,
)
from .text import one_line

# How often a write re-reads a tip that moved under it before giving up.
WRITE_ATTEMPTS = 20


@dataclass(frozen=True)
class UpdateEdits:
    """The edits of one update, checked once by ``Ledger.update`` and applied to each version
    it reads (named as ``edits.UPDATE_EDITS`` names them)."""

    goal: str | None
    criteria: str | None
    status: str | None
    next: str | None
    blocker: str | None
    owner: str | None
    priority: int | None
    parent: str | None
    add_labels: list[str]
    remove_labels: list[str]
    notes: tuple[str, ...]
    decisions: tuple[str, ...]
    evidence: tuple[str, ...]
    add_dependencies: list[str]
    remove_dependencies: list[str]

    @property
    def empty(self) -> bool:
        scalars = (self.goal, self.criteria, self.status, self.next, self.blocker, self.owner)
        if any(v is not None for v in (*scalars, self.priority, self.parent)):
            return False
        lists = (self.add_labels, self.remove_labels, self.notes, self.decisions, self.evidence)
        return not any((*lists, self.add_dependencies, self.remove_dependencies))

    def check(self, *, hold: str | None = None) -> None:
        """Each value checked alone (status known, texts within their limits, a goal not blank,
        something to change); the gates judge the record they make (``gates.py``)."""
        if self.status is not None and self.status not in STATUSES:
            raise InvalidInput(
                f"Unknown status '{one_line(self.status, 30)}'. Use one of: {', '.join(STATUSES)}.",
                field="status",
            )
        if self.goal is not None:
            check_text(self.goal, "goal")
            if not self.goal.strip():
                raise InvalidInput("The goal cannot be blank.", field="goal")
        for value, name in (
            (self.criteria, "criteria"),
            (self.next, "next"),
            (self.blocker, "blocker"),
            (self.owner, "owner"),
        ):
            if value is not None:
                check_text(value, name)
        if self.priority is not None:
            check_priority(self.priority)
        for texts, kind in (
            (self.notes, "note"),
            (self.decisions, "decision"),
            (self.evidence, "evidence"),
        ):
            for text in texts:
                check_text(text, kind)
        if self.empty and hold is None:  # a claim of an active task changes the hold alone
            raise InvalidInput(
                "Nothing to update: give at least one field, e.g. ",
                Fix("status", "active"),
                " or ",
                Fix("notes"),
                ".",
            )


# Keywords of Ledger.update before the edits had one spelling (edits.py): old name -> new.
RENAMED = {
    "labels_add": "add_labels",
    "labels_remove": "remove_labels",
    "dependencies_add": "add_dependencies",
    "dependencies_remove": "remove_dependencies",
}


def renamed(deprecated: dict[str, Sequence[str]]) -> dict[str, Sequence[str]]:
    out: dict[str, Sequence[str]] = {}
    for old, value in deprecated.items():
        new = RENAMED.get(old)
        if new is None:
            raise TypeError(f"Ledger.update() got an unexpected keyword argument '{old}'")
        warnings.warn(
            f"Ledger.update({old}=...) is deprecated; use {new}=...", DeprecationWarning, 3
        )
        out[new] = value
    return out


def entries(texts: Iterable[str], kind: str, actor: str, at: str) -> list[Entry]:
    return [
        Entry(id=new_entry_id(), text=check_text(t, kind), at=at, actor=actor)
        for t in texts
        if nonblank(t, kind)
    ]


def apply_edits(current: Task, edit: UpdateEdits, *, at: str, actor: str) -> Task:
    changes: dict[str, Any] = {}
    for name in ("goal", "criteria", "status", "priority"):
        if getattr(edit, name) is not None:
            changes[name] = getattr(edit, name)
    for name in ("next", "blocker", "owner"):
        value = getattr(edit, name)
        if value is not None:
            changes[name] = value if value.strip() else None
    if edit.parent is not None:
        changes["parent"] = edit.parent or None
    labels = [lb for lb in current.labels if lb not in edit.remove_labels]
    labels += [lb for lb in edit.add_labels if lb not in labels]
    changes["labels"] = labels
    missing = [d for d in edit.remove_dependencies if d not in current.dependencies]
    if missing:
        raise InvalidInput(
            f"Task {current.id} does not depend on {', '.join(missing)}; nothing to remove.",
            field="dependencies",
        )
    deps = [d for d in current.dependencies if d not in edit.remove_dependencies]
    deps += [d for d in edit.add_dependencies if d not in deps]
    changes["dependencies"] = deps
    new_criteria = changes.get("criteria", current.criteria)
    changes["notes"] = current.notes + entries(edit.notes, "note", actor, at)
    changes["decisions"] = current.decisions + entries(edit.decisions, "decision", actor, at)
    changes["evidence"] = current.evidence + [
        Evidence(
            id=new_entry_id(),
            text=text,
            at=at,
            actor=actor,
            task_id=current.id,
            criteria_hash=criteria_hash(new_criteria),
        )
        for text in edit.evidence
        if nonblank(text, "evidence")
    ]
    updated = current.replace(**changes)
    clock = stamp_clock(current, updated)
    return updated.replace(clock=clock, updated_at=at, actor=actor)


def settle_conflicts(current: Task, new: Task, edit: UpdateEdits, *, claim_moved: bool) -> Task:
    """``new`` without the conflicts a merge left on the fields this update sets: setting a field
    in conflict resolves it; a claim taken, released or reassigned (``claim_moved``) settles
    owner and agent."""
    if not current.conflicts:
        return new
    scalars = ("goal", "criteria", "status", "next", "blocker", "owner", "priority", "parent")
    resolved = {name for name in scalars if getattr(edit, name) is not None}
    if claim_moved:
        resolved |= {"owner", "agent"}
    return new.replace(conflicts=[c for c in current.conflicts if c.field not in resolved])


def check_priority(priority: int) -> None:
    if not isinstance(priority, int) or not PRIORITY_MIN <= priority <= PRIORITY_MAX:
        raise InvalidInput(
            f"Priority is {PRIORITY_MIN} (highest) to {PRIORITY_MAX} (lowest), not {priority!r}."
        )


def clean_labels(labels: Sequence[str]) -> list[str]:
    out: list[str] = []
    for label in labels:
        label = check_label(label.strip())
        if label not in out:
            out.append(label)
    return out


def optional_text(value: str | None, name: str) -> str | None:
    if value is None:
        return None
    check_text(value, name)
    return value if value.strip() else None


def nonblank(text: str, kind: str) -> bool:
    if not text.strip():
        raise InvalidInput(f"A {kind} cannot be blank.")
    return True


def unique(ids: Iterable[str]) -> list[str]:
    out: list[str] = []
    for task_id in ids:
        if task_id not in out:
            out.append(task_id)
    return out


__all__ = [
    "RENAMED",
    "UpdateEdits",
    "apply_edits",
    "check_priority",
    "clean_labels",
    "entries",
    "nonblank",
    "optional_text",
    "renamed",
    "settle_conflicts",
    "unique",
]
