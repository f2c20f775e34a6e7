"""How tasks look on a terminal and in --json (one place, so every command agrees)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..text import one_line

if TYPE_CHECKING:
    from ..ledger import Ledger, Version
    from ..model import Task


def task_dict(task: Task, short: str | None = None, *, ready: bool = False) -> dict[str, Any]:
    data = task.to_json_dict()
    data["short_id"] = short or task.id[:6]
    if ready:  # the ready queue's: "open", or "lapsed" for an active task whose claim lapsed
        data["claim"] = "lapsed" if task.status == "active" else "open"
    return data


def task_line(task: Task, short: str) -> str:
    return f"{short:<8} {task.status:<9} p{task.priority}  {one_line(task.goal, 64)}"


def task_lines(ledger: Ledger, tasks: list[Task], *, ready: bool = False) -> list[str]:
    """One line per task; ``ready``: the ready queue's, where an active task is a lapsed claim
    (``Ledger.ready``) and says whose it was."""
    shorts = ledger.short_ids(t.id for t in tasks) if tasks else {}
    return [task_line(t, shorts[t.id]) + (lapsed_mark(t) if ready else "") for t in tasks]


def lapsed_mark(task: Task) -> str:
    if task.status != "active":
        return ""
    from ..claims import holder_text

    return f"  [claim lapsed: {one_line(holder_text(task), 80)}]"


def task_text(ledger: Ledger, task: Task) -> str:
    short = ledger.short_id(task.id)

    def dep_state(dep: str) -> str:
        try:
            other = ledger.show(dep)
            return f"{dep[: len(short)]} ({other.status})"
        except Exception:  # noqa: BLE001 - a missing dependency must not hide the task
            return f"{dep[: len(short)]} (missing)"

    out = [
        f"{short}  {one_line(task.goal, 200)}",
        f"  id:       {task.id}",
        f"  version:  {task.version}   status: {task.status}   priority: {task.priority}",
        f"  owner:    {one_line(task.owner) or '—'}{_held(task)}",
        f"  next:     {one_line(task.next, 200) or '—'}",
        f"  blocker:  {one_line(task.blocker, 200) or '—'}",
        f"  criteria: {one_line(task.criteria, 200) or '—'}",
    ]
    if task.parent:
        out.append(f"  parent:   {dep_state(task.parent)}")
    kids = ledger.children(task.id)
    if kids:
        out.append(f"  children: {progress(kids)}")
        shorts = ledger.short_ids(k.id for k in kids)
        out += [f"    - {shorts[k.id]} {k.status:<9} {one_line(k.goal, 120)}" for k in kids]
    if task.dependencies:
        out.append(f"  depends:  {', '.join(dep_state(d) for d in task.dependencies)}")
    needed_by = ledger.dependents(task.id)
    if needed_by:
        out.append(
            f"  needed by: {', '.join(f'{t.id[: len(short)]} ({t.status})' for t in needed_by)}"
        )
    if task.labels:
        out.append(f"  labels:   {', '.join(task.labels)}")
    for title, entries in (
        ("decisions", task.decisions),
        ("evidence", task.evidence),
        ("notes", task.notes),
    ):
        if entries:
            out.append(f"  {title}:")
            out += [f"    - {one_line(e.text, 160)}  ({e.actor}, {e.at[:16]})" for e in entries]
    missing = ledger.unverified_evidence(task) if task.evidence else []
    if missing:
        out.append(
            f"  unverified: evidence cites {', '.join(m[:12] for m in missing)}, not in this "
            f"repository (fetch it; 'gitledger verify' lists them)"
        )
    if task.conflicts:
        out.append("  merge conflicts:")
        out += [
            f"    - {c.field}: kept {c.kept!r}, other side had {c.dropped!r}"
            for c in task.conflicts
        ]
    out.append(f"  updated:  {task.updated_at} by {one_line(task.actor)}")
    return "\n".join(out)


def progress(children: list[Task]) -> str:
    """``3/5 done`` (cancelled children are left out of both counts, and said apart)."""
    cancelled = sum(1 for c in children if c.status == "cancelled")
    done = sum(1 for c in children if c.status == "done")
    text = f"{done}/{len(children) - cancelled} done"
    return text + (f", {cancelled} cancelled" if cancelled else "")


def _held(task: Task) -> str:
    if not task.agent:
        return ""
    since = f", since {task.held_at[:16].replace('T', ' ')}" if task.held_at else ""
    return f"   (agent {one_line(task.agent, 60)}{since})"


def version_text(version: Version) -> str:
    lines = [f"v{version.version}  {version.at}  {version.actor}  {version.summary}"]
    lines += [f"    {c.describe()}" for c in version.changes]
    return "\n".join(lines)


__all__ = [
    "progress",
    "task_dict",
    "task_line",
    "task_lines",
    "task_text",
    "version_text",
]
