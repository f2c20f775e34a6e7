"""The handoff to another machine: what a new session starts with, with no typing.

A person's session on machine A compacts and stops; a fresh session on machine B (after sync)
should know what is in hand and pick up A's task line. ``session_start(ledger)`` is that
SessionStart(startup) context, at most ``MAX_CHARS`` characters (Claude Code caps hook context at
10,000):

1. the session-start digest (``context.prime``: tasks in hand, the ready queue, recent decisions,
   recent fuse snapshots, the last sync), then who holds each active or claimed task (person and
   agent, the agent's ``@HOST`` saying where) and when it was last touched;
2. for the task this session most plausibly resumes (held by this person, most recently active)
   its handoff (``context.task_context``) and the latest fuse snapshot linked to it
   (``fuse.restore_text``);

Everything stored is quoted by the parts it comes from (the handoff, the restore); the lines this
module writes hold only ids, statuses, names and times.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING

from .edits import Interface, word_command
from .errors import LedgerError
from .text import fold

if TYPE_CHECKING:
    from .context import Digest
    from .ledger import Ledger
    from .model import Task

MAX_CHARS = 9_500
PRIME_PART = 2_500  # bytes of the digest at the top
RECENT_SNAPSHOTS = 5
SCANNED_SESSIONS = 50  # newest sessions read to find a task's latest snapshot


def last_touched(task: Task) -> str:
    return task.held_at or task.updated_at


def _when(stamp: str | None) -> str:
    return stamp[:16].replace("T", " ") + " UTC" if stamp else "never"


def in_hand(ledger: Ledger) -> list[Task]:
    """Active tasks and blocked ones someone holds, most recently touched first."""
    working = ledger.list_tasks(status="active") + [
        t for t in ledger.list_tasks(status="blocked") if t.owner
    ]
    return sorted(working, key=last_touched, reverse=True)


def resumed_task(ledger: Ledger, actor: str | None = None) -> Task | None:
    """The task a new session of this person most plausibly resumes: held by them (any of their
    agents), most recently active."""
    name, _ = ledger.author(actor)
    mine = [t for t in in_hand(ledger) if t.owner == name]
    return mine[0] if mine else None


def latest_session_for(ledger: Ledger, task_id: str) -> str | None:
    """The newest fuse session linked to ``task_id`` (among the newest saved sessions)."""
    from .fuse.store import load, sessions

    for session, _tip in sessions(ledger)[:SCANNED_SESSIONS]:
        saved = load(ledger, session)
        if saved is not None and (saved.snapshot.task_id or saved.link) == task_id:
            return session
    return None


def recent_snapshots(ledger: Ledger, limit: int = RECENT_SNAPSHOTS) -> list[tuple[str, str]]:
    """Per recently saved session, newest first: a line start (its id, linked task, when) and its
    goal (stored text, for the caller to quote)."""
    from .fuse.store import load, sessions

    out = []
    for session, _tip in sessions(ledger)[:limit]:
        saved = load(ledger, session)
        if saved is None:
            continue
        task = saved.snapshot.task_id or saved.link
        when = datetime.fromtimestamp(saved.time, timezone.utc).isoformat()
        linked = f" task {task[:8]}" if task else ""
        out.append((f"- {fold(session)[:40]}{linked} {_when(when)}: ", saved.snapshot.goal))
    return out


def prime(
    ledger: Ledger,
    budget: int | None = None,
    unit: str = "bytes",
    *,
    interface: Interface = "python",
) -> Digest:
    """``context.prime`` with the recent fuse snapshots listed: the digest every interface shows,
    naming its calls as ``interface`` offers them."""
    from .context import PRIME_BUDGET
    from .context import prime as digest

    return digest(
        ledger,
        PRIME_BUDGET if budget is None else budget,
        unit,
        snapshots=recent_snapshots,
        interface=interface,
    )


def session_start(
    ledger: Ledger,
    *,
    actor: str | None = None,
    max_chars: int = MAX_CHARS,
    interface: Interface = "python",
) -> str:
    """The SessionStart(startup) context for a new session (see the module docstring), naming
    its calls as ``interface`` offers them (the hook's: ``cli``)."""
    from .context import quote, task_context

    # the digest (the ready queue, recent decisions and snapshots, the last sync) comes first
    digest = prime(ledger, budget=PRIME_PART, interface=interface)
    lines = [digest.text.rstrip("\n"), "who holds what:"]
    working = in_hand(ledger)
    if working:
        shorts = ledger.short_ids(t.id for t in working)
        for t in working[:15]:
            holder = (t.owner or "nobody")[:60]
            agent = f" (agent {quote(t.agent[:60])})" if t.agent else ""
            lines.append(
                f"- {shorts[t.id]} {t.status} held by {quote(holder)}{agent}, touched "
                f"{_when(last_touched(t))}: {quote(t.goal[:100])}"
            )
    else:
        ready = word_command("task ready", interface)
        lines.append(f"- nobody holds a task ({ready} lists what can start)")
    head = "\n".join(lines) + "\n"
    task = resumed_task(ledger, actor)
    if task is None:
        return head[:max_chars]
    room = max_chars - len(head) - 200
    parts = [head, f"\nYou most likely resume task {task.id} (yours, most recently active):\n"]
    try:
        handoff = task_context(ledger, task.id, budget=max(600, min(3_000, room // 2)), hints=())
        parts.append(handoff.text)
    except LedgerError:
        pass
    session = latest_session_for(ledger, task.id)
    left = max_chars - sum(len(p) for p in parts) - 80
    if session is not None and left >= 400:
        from .fuse.store import restore_text

        try:
            text, _saved = restore_text(
                ledger, session, budget=min(6_000, left), interface=interface
            )
            parts.append(f"\nIts latest fuse snapshot (session {fold(session)[:40]}):\n{text}")
        except LedgerError:
            pass
    out = "".join(parts)
    return out if len(out) <= max_chars else out[: max_chars - 1] + "…"


__all__ = [
    "in_hand",
    "latest_session_for",
    "prime",
    "recent_snapshots",
    "resumed_task",
    "session_start",
]
