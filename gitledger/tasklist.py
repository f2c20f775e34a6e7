"""The agent's own task list, mirrored into the ledger: ``gitledger hook tasklist``.

Claude Code keeps a task list of its own (TaskCreate/TaskUpdate since 2.1, TodoWrite before). A
PostToolUse hook on those tools hands this module each call as it happens, and each item becomes
a subtask of the task the session works on, so ``task ready``, ``prime`` and another machine see
the plan without the agent calling gitledger.

What the hook receives, as checked in the real Claude Code 2.1.332 (tests/e2e):

- TaskCreate: ``tool_input`` ``{"subject", "description", "activeForm"}``, ``tool_response``
  ``{"task": {"id": "1", "subject", "description"}}`` (ids count from 1 in each session).
- TaskUpdate: ``tool_input`` ``{"taskId": "1", "status": "in_progress"}`` (also ``subject``),
  ``tool_response`` ``{"success": true, "statusChange": {"from", "to"}}``. Statuses: pending,
  in_progress, completed, deleted.
- TodoWrite (older releases; disabled in 2.1): ``tool_input`` ``{"todos": [{"content",
  "status", "activeForm"}]}``, the whole list each time.

The rules:

- **Which task.** The session's linked task (``gitledger fuse link``, or a claim the fuse saw),
  else a task for the session itself ("Agent session 1a2b3c4d"), made once.
- **Created once.** An item's subtask carries the label ``agent-task:`` + a digest of (session,
  item id) and is created with that as its idempotency key, so a second run of the same call, a
  hook fired twice, or two hooks racing make one subtask.
- **Status as the list says.** pending is open, in_progress active, completed done (with
  evidence naming the call: the list said so), deleted cancelled (with a decision saying why). A
  call that changes nothing writes nothing, and a move back to open or active applies only from
  the status the call says the item left (``statusChange.from``), so replaying old calls (a hook
  run twice, a resumed or compacted session) never undoes a later one. An item that leaves a
  TodoWrite list is left as it is: the list did not say it was done.
- **Never fails the agent.** The hook prints nothing and exits 0 whatever happens; a refusal
  (a gate, a lock held too long) is one line on stderr.
- **Off by a setting**: ``gitledger config tasklist.mirror=false`` (or
  ``GITLEDGER_TASKLIST_MIRROR=false``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import settings
from .errors import LedgerError
from .text import one_line

if TYPE_CHECKING:
    from .ledger import Ledger
    from .model import Task

__all__ = ["MirrorReport", "TOOLS", "item_label", "mirror"]

TOOLS = frozenset({"TaskCreate", "TaskUpdate", "TodoWrite"})
STATUSES = {"pending": "open", "in_progress": "active", "completed": "done", "deleted": "cancelled"}
ITEM_CRITERIA = "The agent's task list marks it completed."
SESSION_LABEL = "agent-session"
ITEM_LABEL = "agent-task"


@dataclass
class MirrorReport:
    """What one call did to the ledger."""

    parent: str | None = None
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    skipped: str = ""  # why nothing was looked at (off, not a task-list tool, no session)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def item_label(session: str, item: str) -> str:
    """The label (and idempotency key) of the subtask mirroring ``item`` of ``session``'s list."""
    digest = hashlib.sha256(f"{session}\0{item}".encode()).hexdigest()[:20]
    return f"{ITEM_LABEL}:{digest}"


def _session_task(ledger: Ledger, session: str, actor: str | None) -> str:
    """The task this session works on: its linked task, else one made for the session."""
    from .fuse.store import load

    try:
        saved = load(ledger, session)
    except LedgerError:
        saved = None
    if saved is not None and saved.snapshot.task_id:
        try:
            return ledger.resolve(saved.snapshot.task_id)
        except LedgerError:
            pass  # the linked task is gone: fall back to the session's own
    key = f"{SESSION_LABEL}:{hashlib.sha256(session.encode()).hexdigest()[:20]}"
    task = ledger.create(
        f"Agent session {one_line(session, 100)[:8]}: its task list",
        labels=[SESSION_LABEL],
        idempotency_key=key,
        actor=actor,
    )
    return task.id


def _find(ledger: Ledger, label: str) -> Task | None:
    found = ledger.list_tasks(label=label, limit=1)
    return found[0] if found else None


def _ensure(
    ledger: Ledger, parent: str, label: str, subject: str, report: MirrorReport, actor: str | None
) -> Task:
    task = _find(ledger, label)
    if task is None:
        task = ledger.create(
            one_line(subject, 300) or "(an item of the agent's task list)",
            criteria=ITEM_CRITERIA,
            parent=parent,
            labels=[ITEM_LABEL, label],
            idempotency_key=label,
            actor=actor,
        )
        report.created.append(task.id)
    return task


def _set_status(
    ledger: Ledger,
    task: Task,
    status: str,
    why: str,
    report: MirrorReport,
    actor: str | None,
    subject: str | None = None,
    previous: str | None = None,
) -> None:
    wanted = STATUSES.get(status)
    changes: dict[str, Any] = {}
    if subject and one_line(subject, 300) != task.goal:
        changes["goal"] = one_line(subject, 300)
        changes["decisions"] = [f"The agent renamed it in its task list ({why})."]
    # A replayed call must not undo a later one: a move to open or active applies only from where
    # the list says it moved from (statusChange.from), or, when the call does not say, to a task
    # not finished. done and cancelled are where the list ends up: they always apply.
    if wanted in ("open", "active") and wanted != task.status:
        moved_from = STATUSES.get(previous or "")
        if (moved_from is not None and moved_from != task.status) or (
            moved_from is None and task.finished
        ):
            wanted = None
    if wanted is not None and wanted != task.status:
        changes["status"] = wanted
        if wanted == "done":
            if not task.criteria:
                changes["criteria"] = ITEM_CRITERIA
            changes["evidence"] = [f"The agent's task list marked it completed ({why})."]
        elif wanted == "cancelled":
            changes.setdefault("decisions", []).append(
                f"The agent deleted it from its task list ({why})."
            )
    if not changes:
        return
    try:
        ledger.update(task.id, actor=actor, **changes)
    except LedgerError as exc:  # a gate (a dependency not done …): say so, go on
        report.refused.append(f"{ledger.short_id(task.id)}: {exc.message}")
        return
    report.updated.append(task.id)


def mirror(ledger: Ledger, payload: Mapping[str, Any], *, actor: str | None = None) -> MirrorReport:
    """Apply one PostToolUse payload of a task-list tool to the ledger (see the module's rules)."""
    from .hooks import text_field

    report = MirrorReport()
    if not settings.tasklist_mirror(ledger.store):
        report.skipped = "tasklist.mirror is off"
        return report
    tool = text_field(payload, "tool_name")
    if tool not in TOOLS:
        report.skipped = f"not a task-list tool ({one_line(tool or 'none', 40)})"
        return report
    session = text_field(payload, "session_id")
    if session is None:
        report.skipped = "the payload names no session"
        return report
    data = payload.get("tool_input")
    data = data if isinstance(data, Mapping) else {}
    response = payload.get("tool_response")
    response = response if isinstance(response, Mapping) else {}
    call = text_field(payload, "tool_use_id") or tool
    why = f"{tool} {one_line(call, 60)}"

    def parent() -> str:  # made only once there is an item to put under it
        if report.parent is None:
            report.parent = _session_task(ledger, session, actor)
        return report.parent

    if tool == "TaskCreate":
        created = response.get("task")
        item = created.get("id") if isinstance(created, Mapping) else None
        subject = data.get("subject")
        if not isinstance(item, str | int) or not isinstance(subject, str):
            report.skipped = "TaskCreate without a task id or subject"
            return report
        _ensure(ledger, parent(), item_label(session, str(item)), subject, report, actor)
    elif tool == "TaskUpdate":
        item = data.get("taskId")
        if not isinstance(item, str | int) or str(item) == "":
            report.skipped = "TaskUpdate without a taskId"
            return report
        subject = data.get("subject") if isinstance(data.get("subject"), str) else None
        label = item_label(session, str(item))
        task = _ensure(ledger, parent(), label, subject or f"Agent task #{item}", report, actor)
        status = data.get("status")
        change = response.get("statusChange")
        previous = change.get("from") if isinstance(change, Mapping) else None
        _set_status(
            ledger,
            task,
            status if isinstance(status, str) else "",
            why,
            report,
            actor,
            subject if task.id not in report.created else None,
            previous if isinstance(previous, str) else None,
        )
    else:  # TodoWrite: the whole list, each time
        todos = data.get("todos")
        for n, todo in enumerate(todos if isinstance(todos, list) else []):
            if not isinstance(todo, Mapping) or not isinstance(todo.get("content"), str):
                continue
            key = str(todo.get("id") or todo["content"] or n)
            task = _ensure(
                ledger, parent(), item_label(session, key), todo["content"], report, actor
            )
            status = todo.get("status")
            _set_status(ledger, task, status if isinstance(status, str) else "", why, report, actor)
    return report
