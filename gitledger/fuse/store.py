"""Saved snapshots: one commit per save on ``refs/gitledger/fuse/<session>``, read back,
linked to a task, restored."""

from __future__ import annotations

import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput, LedgerError, NotFound
from ..text import cut
from .condense import _norm, clean
from .extract import snapshot_file
from .render import check_budget, render
from .snapshot import DEFAULT_BUDGET, FORMAT_VERSION, FUSE_REF_PREFIX, Snapshot

if TYPE_CHECKING:
    from ..ledger import Ledger

_SESSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_session(session: str) -> str:
    """A session id that is safe as one refname component, or InvalidInput naming the rule."""
    if (
        not isinstance(session, str)
        or not _SESSION_RE.match(session)
        or ".." in session
        or session.endswith((".lock", "."))
    ):
        raise InvalidInput(
            f"Session id {session!r} is not usable: use 1-128 letters, digits, '.', '_' or '-', "
            f"starting with a letter or digit, without '..' or a '.lock' ending."
        )
    return session


def fuse_ref(session: str) -> str:
    return FUSE_REF_PREFIX + check_session(session)


@dataclass
class SavedSnapshot:
    session: str
    commit: str
    snapshot: Snapshot
    trigger: str
    text: str
    delta: dict[str, Any]
    link: str | None
    time: int
    bytes: int
    summary: str = ""  # the summary the agent wrote at this compaction (PostCompact), if recorded

    def to_dict(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "commit": self.commit,
            "trigger": self.trigger,
            "bytes": self.bytes,
            "time": self.time,
            "link": self.link,
            "delta": self.delta,
            "snapshot": self.snapshot.to_dict(),
        }


def delta(old: Snapshot | None, new: Snapshot) -> dict[str, Any]:
    """What changed between two snapshots: added and removed items per list, changed scalars."""
    if old is None:
        return {"first": True}
    out: dict[str, Any] = {}
    a, b = old.to_dict(), new.to_dict()
    for key, value in b.items():
        if key in {"stats", "events", "format"}:
            continue
        before = a.get(key)
        if isinstance(value, list):
            keyed_before = [json.dumps(v, sort_keys=True) for v in before or []]
            keyed_after = [json.dumps(v, sort_keys=True) for v in value]
            added = [v for v, k in zip(value, keyed_after, strict=True) if k not in keyed_before]
            removed = [
                v for v, k in zip(before or [], keyed_before, strict=True) if k not in keyed_after
            ]
            if added or removed:
                out[key] = {"added": added, "removed": removed}
        elif value != before:
            out[key] = {"from": before, "to": value}
    return out


_FILES = (
    "snapshot.json",
    "restore.md",
    "trigger",
    "delta.json",
    "link.json",
    "format",
    "summary.md",
)
MAX_SUMMARY_BYTES = 200_000  # a compaction summary is 5-25 KB; more is not a summary


def _read_saved(ledger: Ledger, session: str, commit: str) -> SavedSnapshot:
    files = ledger.store.read_files(commit, _FILES)
    raw = files.get("snapshot.json")
    snapshot = Snapshot(session=session)
    if raw:
        try:
            snapshot = Snapshot.from_dict(json.loads(raw))
        except (ValueError, TypeError) as exc:
            from ..errors import CorruptRecord

            raise CorruptRecord(
                f"Fuse snapshot {commit[:12]} of session {session} is not valid JSON ({exc})."
            ) from exc
    link_raw = files.get("link.json")
    link = None
    if link_raw:
        try:
            link = json.loads(link_raw).get("task")
        except (ValueError, AttributeError):
            link = None
    delta_raw = files.get("delta.json")
    text = (files.get("restore.md") or b"").decode("utf-8", errors="replace")
    info = ledger.store.commit_info(commit)
    return SavedSnapshot(
        session=session,
        commit=commit,
        snapshot=snapshot,
        trigger=(files.get("trigger") or b"").decode("utf-8", errors="replace").strip(),
        text=text,
        delta=json.loads(delta_raw) if delta_raw else {},
        link=link,
        time=info.time,
        bytes=len(raw or b""),
        summary=(files.get("summary.md") or b"").decode("utf-8", errors="replace"),
    )


def load(ledger: Ledger, session: str) -> SavedSnapshot | None:
    """The latest saved snapshot of a session, or None."""
    tip = ledger.store.tip(fuse_ref(session))
    if tip is None:
        return None
    return _read_saved(ledger, session, tip)


def history(ledger: Ledger, session: str, limit: int | None = None) -> list[SavedSnapshot]:
    tip = ledger.store.tip(fuse_ref(session))
    out: list[SavedSnapshot] = []
    if tip is None:
        return out
    for info in ledger.store.first_parent_chain(tip):
        out.append(_read_saved(ledger, session, info.oid))
        if limit is not None and len(out) >= limit:
            break
    return out


def sessions(ledger: Ledger) -> list[tuple[str, str]]:
    """(session, tip) for every session with a snapshot, newest save first."""
    found = []
    for name, tip in ledger.store.refs(FUSE_REF_PREFIX):
        found.append((ledger.store.commit_info(tip).time, name[len(FUSE_REF_PREFIX) :], tip))
    found.sort(reverse=True)
    return [(session, tip) for _, session, tip in found]


# The restore lists the linked task's lines as "- " items, so the handoff's own list items
# ("decisions:" then "- ...") would show as "- - ...": each item carries its kind instead.
_ITEM_LABELS = {"decisions": "decision", "notes": "note", "related": "related", "memory": "hint"}


def _label_items(lines: list[str]) -> list[str]:
    out: list[str] = []
    label = ""
    for line in lines:
        if line.startswith("- "):
            out.append(f"{label}: {line[2:]}" if label else line[2:])
        elif line.endswith(":"):
            word = line.split()[0].rstrip(":,")
            label = _ITEM_LABELS.get(word, word)
        else:
            label = ""
            out.append(line)
    return out


def task_lines(ledger: Ledger, task_id: str, budget: int = 1_500) -> list[str]:
    """The linked task's required state as lines (the context assembler's when it exists)."""
    try:
        from .. import context

        # The fuse offers memory hints in a section of its own, never inside the task's state.
        handoff = context.task_context(ledger, task_id, budget=budget, unit="bytes", hints=())
        lines = [clean(x) for x in str(getattr(handoff, "text", "")).splitlines()]
        # The handoff's own header and empty fields cost bytes the restore needs elsewhere.
        kept = [
            x
            for x in lines
            if x
            and not x.startswith("gitledger handoff")
            and not x.endswith((": none", ": nothing"))
        ]
        if kept:
            return _label_items(kept)[:24]
    except Exception:  # noqa: BLE001 - the assembler is optional; fall back to the fields
        pass
    task = ledger.show(task_id)
    lines = [f"{ledger.short_id(task.id)} [{task.status}] {task.goal}"]
    if task.criteria:
        lines.append("done when: " + task.criteria)
    if task.next:
        lines.append("next: " + task.next)
    if task.blocker:
        lines.append("blocked by: " + task.blocker)
    for entry in task.decisions[-3:]:
        lines.append("decided: " + entry.text)
    return [clean(x) for x in lines]


def save(
    ledger: Ledger,
    session: str,
    transcript: Path,
    *,
    trigger: str = "manual",
    actor: str | None = None,
) -> SavedSnapshot:
    """Snapshot ``transcript`` and commit it on ``refs/gitledger/fuse/<session>``."""
    refname = fuse_ref(session)
    trigger = clean(trigger)[:40] or "manual"
    with ledger.store.lock():
        tip = ledger.store.tip(refname)
        previous = _read_saved(ledger, session, tip) if tip else None
        snap = snapshot_file(
            Path(transcript), previous.snapshot if previous else None, session=session
        )
        link = previous.link if previous else None
        if link:
            snap.task_id = link
        if snap.task_id:
            try:
                snap.task_state = task_lines(ledger, ledger.resolve(snap.task_id))
            except Exception:  # noqa: BLE001 - a vanished task must not stop the save
                snap.task_state = previous.snapshot.task_state if previous else []
        changes = delta(previous.snapshot if previous else None, snap)
        files, text = _snapshot_files(snap, trigger, changes, link)
        message = f"fuse save ({trigger}): {cut(clean(snap.goal), 60) or 'no goal yet'}\n"
        commit = ledger.store.write(
            refname, files, message, ledger.author(actor), [tip] if tip else [], tip
        )
    remember_snapshot(ledger, snap, session, actor=actor)
    return SavedSnapshot(
        session=session,
        commit=commit,
        snapshot=snap,
        trigger=trigger,
        text=text,
        delta=changes,
        link=link,
        time=int(time.time()),
        bytes=len(files["snapshot.json"]),
    )


def _snapshot_files(
    snap: Snapshot, trigger: str, delta: dict[str, Any], link: str | None
) -> tuple[dict[str, bytes], str]:
    """The tree of one saved snapshot (save and link write the same layout), and its text."""
    text = render(snap, DEFAULT_BUDGET, trigger=trigger)
    files = {
        "format": f"{FORMAT_VERSION}\n".encode(),
        "snapshot.json": json.dumps(snap.to_dict(), ensure_ascii=False, indent=1).encode(),
        "restore.md": text.encode(),
        "trigger": f"{trigger}\n".encode(),
        "delta.json": json.dumps(delta, ensure_ascii=False, indent=1).encode(),
    }
    if link:
        files["link.json"] = json.dumps({"task": link}).encode()
    return files, text


def snapshot_facts(snap: Snapshot) -> list[tuple[str, str]]:
    """The snapshot split into per-fact memory entries: (kind, text)."""
    facts = [("decision", d) for d in snap.decisions]
    facts += [("pitfall", p) for p in snap.pitfalls]
    facts += [("constraint", c) for c in snap.constraints]
    facts += [("todo", item.text) for item in snap.open_items]
    facts += [("accomplishment", text) for text in snap.done_items]
    return facts


def remember_snapshot(
    ledger: Ledger, snap: Snapshot, session: str, *, actor: str | None = None
) -> dict[str, int]:
    """Remember the snapshot's facts (new ones only); memory is optional, so never raises."""
    import sqlite3

    from ..memory import Memory

    try:
        return Memory(ledger).absorb(
            snapshot_facts(snap), session=session, task=snap.task_id, actor=actor
        )
    except (LedgerError, sqlite3.Error, OSError) as exc:
        sys.stderr.write(f"gitledger: memory not updated ({exc})\n")
        return {"created": 0, "known": 0}


def link(ledger: Ledger, session: str, task: str, *, actor: str | None = None) -> SavedSnapshot:
    """Tie a session to a ledger task: its next restores include the task's required state."""
    refname = fuse_ref(session)
    task_id = ledger.resolve(task)
    with ledger.store.lock():
        tip = ledger.store.tip(refname)
        previous = _read_saved(ledger, session, tip) if tip else None
        snap = previous.snapshot if previous else Snapshot(session=session)
        snap.task_id = task_id
        snap.task_state = task_lines(ledger, task_id)
        delta = {"task_id": {"from": previous.link if previous else None, "to": task_id}}
        files, text = _snapshot_files(snap, "link", delta, task_id)
        commit = ledger.store.write(
            refname,
            files,
            f"fuse link: session {session} works on task {ledger.short_id(task_id)}\n",
            ledger.author(actor),
            [tip] if tip else [],
            tip,
        )
    return SavedSnapshot(
        session,
        commit,
        snap,
        "link",
        text,
        {},
        task_id,
        int(time.time()),
        len(files["snapshot.json"]),
    )


def restore_text(
    ledger: Ledger, session: str | None = None, budget: int = DEFAULT_BUDGET
) -> tuple[str, SavedSnapshot]:
    """The rendered restore of a session (the newest saved session when None)."""
    check_budget(budget)
    if session is None:
        found = sessions(ledger)
        if not found:
            raise NotFound(
                "No fuse snapshots in this ledger yet. Save one with "
                "'gitledger fuse save --transcript PATH --session ID'."
            )
        session = found[0][0]
    saved = load(ledger, session)
    if saved is None:
        raise NotFound(
            f"No fuse snapshot for session {session}. List sessions with 'gitledger fuse status'."
        )
    lines = saved.snapshot.task_state
    if saved.snapshot.task_id:
        try:
            lines = task_lines(ledger, ledger.resolve(saved.snapshot.task_id), budget=budget // 4)
        except Exception:  # noqa: BLE001 - fall back to the state saved with the snapshot
            lines = saved.snapshot.task_state
    text = render(
        saved.snapshot,
        budget,
        trigger=saved.trigger,
        task_lines=lines,
        hints=memory_hints(ledger, saved.snapshot),
        known=saved.summary,
    )
    return text, saved


def record_summary(
    ledger: Ledger, session: str, summary: str, *, trigger: str = "auto", actor: str | None = None
) -> SavedSnapshot | None:
    """Record the summary the agent wrote at a compaction (Claude Code's PostCompact) on the
    session's ref, beside the snapshot saved just before it: ``summary.md`` holds what the agent
    kept, ``restore.md`` what the fuse adds to it (the complement), so ``git log -p`` on the ref
    shows both per compaction. None when the session has no snapshot (nothing to pair it with)."""
    refname = fuse_ref(session)
    data = summary.encode("utf-8", errors="replace")[:MAX_SUMMARY_BYTES]
    summary = data.decode("utf-8", errors="ignore")
    if not summary.strip():
        return None
    with ledger.store.lock():
        tip = ledger.store.tip(refname)
        if tip is None:
            return None
        saved = _read_saved(ledger, session, tip)
        files = {k: v for k, v in ledger.store.read_files(tip, _FILES).items() if v is not None}
        text = render(saved.snapshot, DEFAULT_BUDGET, trigger=saved.trigger, known=summary)
        files["summary.md"] = summary.encode()
        files["restore.md"] = text.encode()
        files["delta.json"] = json.dumps({"summary_bytes": len(summary.encode())}).encode()
        message = (
            f"fuse summary ({clean(trigger)[:40] or 'auto'}): the agent's summary, "
            f"{len(summary.encode()):,} bytes, and what the fuse adds to it\n"
        )
        commit = ledger.store.write(refname, files, message, ledger.author(actor), [tip], tip)
    return SavedSnapshot(
        session=session,
        commit=commit,
        snapshot=saved.snapshot,
        trigger=saved.trigger,
        text=text,
        delta={"summary_bytes": len(summary.encode())},
        link=saved.link,
        time=int(time.time()),
        bytes=saved.bytes,
        summary=summary,
    )


def memory_hints(ledger: Ledger, snap: Snapshot, k: int = 3) -> list[str]:
    """Remembered facts related to the goal and open items that the snapshot does not already
    hold (from other sessions, usually); empty when memory is missing or damaged."""
    from ..memory import Memory

    query = " ".join([snap.goal, *(i.text for i in snap.open_items[:3])])
    own = {_norm(x) for x in (*snap.decisions, *snap.pitfalls, *snap.constraints)}
    own |= {_norm(i.text) for i in snap.open_items} | {_norm(x) for x in snap.done_items}
    facts = Memory(ledger).hints(query, k=k + len(own))
    return [f"{f.kind}: {f.text}" for f in facts if _norm(f.text) not in own][:k]
