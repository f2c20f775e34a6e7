"""Every gate: the domain rules that refuse a change, each written once, here.

A gate sees the version before (``current``), the version that would be written (``new``) and a
way to read other tasks (``lookup``: id -> ``Task``, or None when there is none); it raises
``GateRefused`` naming the rule that refused, the field it is about, and the edits that would let
the change through (``Fix`` pieces of the message), which each interface words in its own terms
(see ``errors.py`` and ``edits.py``).

- changing the goal or the criteria, and cancelling, need a decision in the same update
  (``decision-for-goal``, ``decision-for-criteria``, ``decision-for-cancel``); a first value of
  the criteria, on a task that had none, needs none;
- ``blocked`` needs a blocker (``blocked-needs-blocker``);
- ``done`` needs criteria, a cleared blocker, every dependency done, every child finished, and
  evidence bound to this task and to the SHA-256 of the *current* criteria
  (``done-needs-criteria``, ``done-needs-unblocked``, ``done-needs-dependencies``,
  ``done-needs-children``, ``done-needs-evidence``); evidence logged before the criteria changed,
  or copied from another task, does not count;
- no self-dependency, no dependency or parent cycle, and parents and dependencies must exist
  (``no-self-parent``, ``no-parent-cycle``, ``no-self-dependency``, ``no-dependency-cycle``);
- reassigning a task someone else holds (``owner`` changed while another person or another
  agent has a live claim on it) needs a decision in the same update, as taking a live claim does
  (``reassign-needs-decision``); a free or merely assigned task, a lapsed claim and the writer's
  own claim need none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .errors import Fix, GateRefused, TaskNotFound
from .model import MIN_SHORT_ID, Task, criteria_hash
from .text import one_line

Lookup = Callable[[str], "Task | None"]
Children = Callable[[str], "list[Task]"]

# The fields whose change makes a task that is done pass the done gate again.
DONE_FIELDS = ("criteria", "blocker", "dependencies", "evidence")


def check_update(
    current: Task, new: Task, changed: Sequence[str], lookup: Lookup, children: Children
) -> None:
    """Refuse the update from ``current`` to ``new`` if a gate says no (``changed``: the fields
    the update changed, as ``changes.diff_tasks`` names them; ``children``: id -> the tasks
    whose parent it is)."""
    added_decision = len(new.decisions) > len(current.decisions)
    for name in ("goal", "criteria"):
        # A first value (criteria set on a task that had none) changes nothing agreed.
        before = getattr(current, name)
        if before and getattr(new, name) != before and not added_decision:
            raise GateRefused(
                f"Changing the {name} needs a decision saying why: add ",
                Fix("decisions"),
                " to the same update.",
                rule=f"decision-for-{name}",
                field=name,
            )
    if new.status == "cancelled" and current.status != "cancelled" and not added_decision:
        raise GateRefused(
            "Cancelling needs a decision saying why: add ",
            Fix("decisions"),
            ".",
            rule="decision-for-cancel",
            field="status",
        )
    if new.status == "blocked" and not new.blocker:
        raise GateRefused(
            "A blocked task needs a blocker: add ",
            Fix("blocker"),
            " saying what it waits on.",
            rule="blocked-needs-blocker",
            field="blocker",
        )
    if new.parent is not None and new.parent != current.parent:
        check_parent(new.id, new.parent, lookup)
    for dep in new.dependencies:
        if dep not in current.dependencies:
            check_dependency(new.id, dep, lookup)
    if new.status == "done" and (
        current.status != "done" or any(name in DONE_FIELDS for name in changed)
    ):
        check_done(new, lookup, children)


def check_reassign(
    current: Task, new_owner: str | None, state: str, mine: bool, decided: bool
) -> None:
    """The reassign gate: ``state`` is the claim's (``ledger.claim_state``: free, assigned, live,
    lapsed), ``mine`` whether the writer holds it, ``decided`` whether the update adds a
    decision."""
    if new_owner == current.owner or mine or decided or state != "live":
        return
    held = f"{current.owner} (agent {current.agent})" if current.agent else current.owner
    raise GateRefused(
        f"{held} holds a live claim on task {current.id[:MIN_SHORT_ID]}; reassigning it to "
        f"{new_owner or 'nobody'} needs a decision saying why: add ",
        Fix("decisions"),
        " to the same update (or let its holder release it).",
        rule="reassign-needs-decision",
        field="owner",
    )


def check_done(task: Task, lookup: Lookup, children: Children) -> None:
    """The done gate: criteria, no blocker, every dependency done, every child finished, and
    evidence for the current criteria."""
    if not task.criteria.strip():
        raise GateRefused(
            "Done needs completion criteria: add ",
            Fix("criteria"),
            " (with ",
            Fix("decisions"),
            ") first.",
            rule="done-needs-criteria",
            field="criteria",
        )
    if task.blocker:
        raise GateRefused(
            f"Done needs the blocker cleared (it is: {one_line(task.blocker, 60, words=True)}); "
            f"pass ",
            Fix("blocker", ""),
            ".",
            rule="done-needs-unblocked",
            field="blocker",
        )
    unfinished = []
    for dep in task.dependencies:
        record = lookup(dep)
        if record is None:
            unfinished.append(f"{dep} (missing)")
        elif record.status != "done":
            unfinished.append(f"{dep[:MIN_SHORT_ID]} ({record.status})")
    if unfinished:
        raise GateRefused(
            f"Done needs every dependency done; not yet: {', '.join(unfinished)}. Finish them "
            f"or remove them with ",
            Fix("remove_dependencies"),
            ".",
            rule="done-needs-dependencies",
            field="dependencies",
        )
    open_children = [c for c in children(task.id) if not c.finished]
    if open_children:
        shown = ", ".join(f"{c.id[:MIN_SHORT_ID]} ({c.status})" for c in open_children[:5])
        more = f" and {len(open_children) - 5} more" if len(open_children) > 5 else ""
        raise GateRefused(
            f"Done needs every child finished; not yet: {shown}{more}. Finish or cancel them "
            f"(cancelling needs a decision), or move them with ",
            Fix("parent", ""),
            ".",
            rule="done-needs-children",
            field="children",
        )
    wanted = criteria_hash(task.criteria)
    bound = [e for e in task.evidence if e.task_id == task.id and e.criteria_hash == wanted]
    if not bound:
        stale = [e for e in task.evidence if e.task_id == task.id]
        foreign = [e for e in task.evidence if e.task_id != task.id]
        why = (
            " (the evidence there was logged against earlier criteria)"
            if stale
            else " (the evidence there was bound to another task)"
            if foreign
            else ""
        )
        raise GateRefused(
            f"Done needs evidence for the current criteria{why}: add ",
            Fix("evidence"),
            " saying what shows the criteria are met.",
            rule="done-needs-evidence",
            field="evidence",
        )


def check_parent(task_id: str, parent: str, lookup: Lookup) -> None:
    """``parent`` may be the parent of ``task_id``: it exists and makes no cycle of parents."""
    if parent == task_id:
        raise GateRefused("A task cannot be its own parent.", rule="no-self-parent", field="parent")
    seen = {task_id}
    current: str | None = parent
    while current is not None:
        if current in seen:
            raise GateRefused(
                f"Making {parent[:MIN_SHORT_ID]} the parent of {task_id[:MIN_SHORT_ID]} would "
                f"make a cycle of parents.",
                rule="no-parent-cycle",
                field="parent",
            )
        seen.add(current)
        record = lookup(current)
        if record is None:
            raise TaskNotFound(f"Parent task {current} does not exist.")
        current = record.parent


def check_dependency(task_id: str, dep: str, lookup: Lookup) -> None:
    """``task_id`` may depend on ``dep``: it exists and makes no cycle of dependencies."""
    if dep == task_id:
        raise GateRefused(
            "A task cannot depend on itself.", rule="no-self-dependency", field="dependencies"
        )
    stack, seen = [dep], set()
    while stack:
        current = stack.pop()
        if current == task_id:
            raise GateRefused(
                f"Depending on {dep[:MIN_SHORT_ID]} would make a cycle: it already depends "
                f"(directly or not) on {task_id[:MIN_SHORT_ID]}.",
                rule="no-dependency-cycle",
                field="dependencies",
            )
        if current in seen:
            continue
        seen.add(current)
        record = lookup(current)
        if record is None:
            raise TaskNotFound(f"Dependency {current} does not exist.")
        stack.extend(record.dependencies)


__all__ = [
    "DONE_FIELDS",
    "Children",
    "Lookup",
    "check_dependency",
    "check_done",
    "check_parent",
    "check_reassign",
    "check_update",
]
