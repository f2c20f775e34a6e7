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

from ..errors import InvalidInput, LedgerError, NotFound, Step
from ..redact import redact, redact_value
from ..text import cut
from .condense import _norm, clean
from .extract import snapshot_file
from .render import budget_beside, check_budget, lost_summary, render, summary_coverage
from .snapshot import DEFAULT_BUDGET, FORMAT_VERSION, FUSE_REF_PREFIX, Snapshot

if TYPE_CHECKING:
    from ..edits import Interface
    from ..ledger import Ledger, VerifyReport

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


MAX_RECORD_DEPTH = 16  # a snapshot nests 3 deep; a record nested deeper is not one of ours
_STR_FIELDS = ("session", "source", "cwd", "goal", "branch", "left_off", "plan", "last_action")
_STR_LISTS = (
    "goal_history",
    "done_items",
    "constraints",
    "decisions",
    "pitfalls",
    "recent_requests",
    "outcomes",
    "turn",
    "actions_before",
    "answers",
    "checks",
    "files_edited",
    "edited_names",
    "task_state",
)


def _json(raw: bytes, what: str) -> Any:
    """A stored JSON document, or CorruptRecord naming it (``documents.load_json``): a record
    arriving by sync may hold anything, so one nested deeper than ours is refused too. (Storage
    is imported where it is used, as everywhere in the fuse: ``import gitledger.fuse`` stays
    free of pygit2.)"""
    from ..gitstore.documents import load_json

    return load_json(raw, what, max_depth=MAX_RECORD_DEPTH)


def _snapshot_from(data: Any, what: str) -> Snapshot:
    """A snapshot from its stored JSON, every field of the type the renderer reads, or
    CorruptRecord: a record that would break a restore is refused when read, not when shown."""
    from ..errors import CorruptRecord

    problem = ""
    if not isinstance(data, dict):
        problem = f"holds a JSON {type(data).__name__}, not an object"
    else:
        for key in _STR_FIELDS:
            if key in data and not isinstance(data[key], str):
                problem = f"has a {key} that is not text"
        for key in _STR_LISTS:
            value = data.get(key, [])
            if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
                problem = f"has a {key} that is not a list of texts"
        for key, inner in (("open_items", "text"), ("subagent_results", "text"), ("specs", "ref")):
            value = data.get(key, [])
            if not isinstance(value, list) or not all(
                isinstance(x, dict) and isinstance(x.get(inner), str) for x in value
            ):
                problem = f"has {key} of the wrong shape"
    if not problem:
        try:
            snap = Snapshot.from_dict(data)
            for spec in snap.specs:
                if not all(isinstance(x, str) for x in [*spec.criteria, *spec.constraints]):
                    raise TypeError("a spec's lines are not texts")
            return snap
        except (TypeError, ValueError, AttributeError) as exc:
            problem = f"does not read as a snapshot ({exc})"
    raise CorruptRecord(f"{what} {problem}.")


def _read_saved(ledger: Ledger, session: str, commit: str) -> SavedSnapshot:
    """One saved snapshot; CorruptRecord when its snapshot.json or delta.json does not read."""
    files = ledger.store.read_files(commit, _FILES)
    what = f"Fuse snapshot {commit[:12]} of session {session}"
    raw = files.get("snapshot.json")
    snapshot = Snapshot(session=session)
    if raw:
        snapshot = _snapshot_from(_json(raw, what + " (snapshot.json)"), what + " (snapshot.json)")
    link_raw = files.get("link.json")
    link = None
    if link_raw:
        try:
            found = _json(link_raw, what + " (link.json)")
            link = found.get("task") if isinstance(found, dict) else None
            link = link if isinstance(link, str) else None
        except LedgerError:
            link = None
    delta_raw = files.get("delta.json")
    delta = _json(delta_raw, what + " (delta.json)") if delta_raw else {}
    if not isinstance(delta, dict):
        from ..errors import CorruptRecord

        raise CorruptRecord(f"{what} (delta.json) is not a JSON object.")
    text = (files.get("restore.md") or b"").decode("utf-8", errors="replace")
    info = ledger.store.commit_info(commit)
    return SavedSnapshot(
        session=session,
        commit=commit,
        snapshot=snapshot,
        trigger=(files.get("trigger") or b"").decode("utf-8", errors="replace").strip(),
        text=text,
        delta=delta,
        link=link,
        time=info.time,
        bytes=len(raw or b""),
        summary=(files.get("summary.md") or b"").decode("utf-8", errors="replace"),
    )


def _previous(ledger: Ledger, session: str, tip: str | None) -> SavedSnapshot | None:
    """The snapshot a save builds on; a corrupt one (it may have arrived by sync) is skipped, so
    the save starts fresh on top of it (said on stderr) and the ref's history stays as it was."""
    if tip is None:
        return None
    try:
        return _read_saved(ledger, session, tip)
    except LedgerError as exc:
        sys.stderr.write(f"gitledger: {exc} Starting this session's task line afresh.\n")
        return None


def problems(ledger: Ledger) -> list[tuple[str, str, str]]:
    """(ref, commit, what is wrong) for every session whose latest snapshot does not read: the
    fuse's part of ``gitledger verify``."""
    found = []
    for name, tip in ledger.store.refs(FUSE_REF_PREFIX):
        session = name[len(FUSE_REF_PREFIX) :]
        try:
            _read_saved(ledger, session, tip)
        except LedgerError as exc:
            found.append((name, tip, str(exc)))
    return found


def verify(ledger: Ledger) -> VerifyReport:
    """``Ledger.verify`` with the fuse's records checked too: a session whose latest snapshot does
    not read (a sync brought a damaged one) is a problem, named with its commit. The ledger layer
    cannot look at fuse refs itself (the fuse sits above it), so every interface verifies here."""
    from ..verify import Problem

    report = ledger.verify()
    for ref, commit, reason in problems(ledger):
        report.problems.append(
            Problem(ref, f"{reason} (snapshot {commit[:12]}; the next save starts afresh on it)")
        )
    return report


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
    from ..gitstore.documents import write_version

    refname = fuse_ref(session)
    trigger = clean(trigger)[:40] or "manual"
    with ledger.store.lock():
        tip = ledger.store.tip(refname)
        previous = _previous(ledger, session, tip)
        snap = snapshot_file(
            Path(transcript), previous.snapshot if previous else None, session=session
        )
        snap = redact_snapshot(snap)  # before anything (memory, the text) sees it
        link = previous.link if previous else None
        if link:
            snap.task_id = link
        else:  # nobody linked the session: the task its agent holds (for the handoff elsewhere)
            snap.task_id = held_task(ledger, snap.task_id, actor=actor)
        if snap.task_id:
            try:
                snap.task_state = task_lines(ledger, ledger.resolve(snap.task_id))
            except Exception:  # noqa: BLE001 - a vanished task must not stop the save
                snap.task_state = previous.snapshot.task_state if previous else []
        changes = delta(previous.snapshot if previous else None, snap)
        files, text = _snapshot_files(snap, trigger, changes, link)
        message = f"fuse save ({trigger}): {cut(clean(snap.goal), 60) or 'no goal yet'}\n"
        commit = write_version(
            ledger.store, refname, files, message, ledger.author(actor), expected_tip=tip
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


def held_task(ledger: Ledger, seen: str | None = None, *, actor: str | None = None) -> str | None:
    """The task a save of a session nobody linked goes with: the unfinished task this session's
    agent claimed (``ledger.agent_id()``: a hook's is the session id), else the task the session
    was seen claiming (``seen``, from its transcript or its previous save), else this person's
    single active task, else ``seen`` as it was (a task another machine may hold). A full id
    when found here, so the handoff and ``fuse restore --task`` find the snapshot by it."""
    name, _ = ledger.author(actor)
    agent = ledger.agent_id()
    try:
        mine = ledger.list_tasks(status=("active", "blocked"), owner=name)
    except LedgerError:
        return seen
    for task in mine:
        if task.agent == agent:
            return task.id
    if seen:
        try:
            return ledger.resolve(seen)
        except LedgerError:
            pass  # a task id the transcript named that is not (or not only) here
    active = [t for t in mine if t.status == "active"]
    return active[0].id if len(active) == 1 else seen


def merge_snapshots(older: Snapshot, newer: Snapshot) -> Snapshot:
    """Two machines' snapshots of one session joined: every list keeps both sides' items (the
    older side's first, then what only the newer one has), counters take the larger, and every
    other field (the goal, where it left off, the plan, the linked task) comes from the newer."""
    a, b = older.to_dict(), newer.to_dict()
    out: dict[str, Any] = {}
    for key, value in b.items():
        before = a.get(key)
        if isinstance(value, list) and isinstance(before, list):
            seen = {json.dumps(v, sort_keys=True) for v in before}
            out[key] = before + [v for v in value if json.dumps(v, sort_keys=True) not in seen]
        elif isinstance(value, int) and isinstance(before, int) and key != "format":
            out[key] = max(value, before)
        else:
            out[key] = value
    return Snapshot.from_dict(out)


def merge_saved(ledger: Ledger, session: str, ours_tip: str, theirs_tip: str) -> str:
    """Join a fuse ref that diverged (the same session saved on two machines) in a merge commit
    with both tips as parents; the newer snapshot (by its transcript's last timestamp, then
    commit time) gives the goal. Returns the commit. The caller holds the writer lock."""
    from ..gitstore.documents import write_version

    ours = _read_saved(ledger, session, ours_tip)
    theirs = _read_saved(ledger, session, theirs_tip)

    def age(saved: SavedSnapshot) -> tuple[str, int, str]:
        return (saved.snapshot.last_timestamp or "", saved.time, saved.commit)

    older, newer = sorted((ours, theirs), key=age)
    snap = merge_snapshots(older.snapshot, newer.snapshot)
    link = newer.link or older.link
    changes = delta(ours.snapshot, snap)
    files, _text = _snapshot_files(snap, "merge", changes, link)
    message = (
        f"fuse merge: session {cut(clean(session), 40)} saved on two machines\n\n"
        f"The goal is from the newer save ({newer.commit[:12]}); both sides' items are kept.\n"
    )
    return write_version(
        ledger.store,
        fuse_ref(session),
        files,
        message,
        ledger.author(),
        expected_tip=ours_tip,
        parents=[ours_tip, theirs_tip],
    )


def redact_snapshot(snap: Snapshot) -> Snapshot:
    """The snapshot with every secret-looking string redacted (``redact.py``): snapshots are
    pushed by sync, and transcripts' tool output can hold keys and tokens."""
    data = snap.to_dict()
    keep: dict[str, Any] = {k: data.pop(k) for k in ("session", "task_id", "format") if k in data}
    return Snapshot.from_dict({**redact_value(data), **keep})


def _snapshot_files(
    snap: Snapshot, trigger: str, delta: dict[str, Any], link: str | None
) -> tuple[dict[str, bytes], str]:
    """The tree of one saved snapshot (save, link and merge write the same layout), and its text.
    Every string is redacted first: nothing a transcript held as a secret is committed."""
    from ..gitstore.documents import encode

    snap = redact_snapshot(snap)
    delta = redact_value(delta)
    # restore.md is a record a person reads with ``git log -p``: worded as the CLI prints it
    text = render(snap, DEFAULT_BUDGET, trigger=trigger, interface="cli")
    files = {
        "format": f"{FORMAT_VERSION}\n".encode(),
        "snapshot.json": encode(snap.to_dict()),
        "restore.md": text.encode(),
        "trigger": f"{trigger}\n".encode(),
        "delta.json": encode(delta),
    }
    if link:
        files["link.json"] = encode({"task": link})
    return files, text


def snapshot_facts(snap: Snapshot) -> list[tuple[str, str]]:
    """The snapshot split into per-fact memory entries: (kind, text)."""
    # Only what someone stated as a decision, a constraint or a pitfall becomes a fact: open
    # items and accomplishments are one session's state (they stay in the snapshot), and as
    # memory they surfaced as hints in unrelated tasks' handoffs.
    facts = [("decision", d) for d in snap.decisions]
    facts += [("pitfall", p) for p in snap.pitfalls]
    facts += [("constraint", c) for c in snap.constraints]
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
    from ..gitstore.documents import write_version

    refname = fuse_ref(session)
    task_id = ledger.resolve(task)
    with ledger.store.lock():
        tip = ledger.store.tip(refname)
        previous = _previous(ledger, session, tip)
        snap = previous.snapshot if previous else Snapshot(session=session)
        snap.task_id = task_id
        snap.task_state = task_lines(ledger, task_id)
        delta = {"task_id": {"from": previous.link if previous else None, "to": task_id}}
        files, text = _snapshot_files(snap, "link", delta, task_id)
        commit = write_version(
            ledger.store,
            refname,
            files,
            f"fuse link: session {session} works on task {ledger.short_id(task_id)}\n",
            ledger.author(actor),
            expected_tip=tip,
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
    ledger: Ledger,
    session: str | None = None,
    budget: int | None = None,
    *,
    saved: SavedSnapshot | None = None,
    interface: Interface = "python",
) -> tuple[str, SavedSnapshot]:
    """The rendered restore of a session (the newest saved session when None); ``saved``: its
    save, when the caller has just loaded it. ``budget`` None: the default (``render``'s: 6,000
    bytes, 9,500 beside a recorded summary that lost the session). Its last line names the
    whole restore as ``interface`` offers it."""
    if budget is not None:
        check_budget(budget)
    if saved is not None:
        return _restore(ledger, saved, budget, interface), saved
    if session is None:
        found = sessions(ledger)
        if not found:
            raise NotFound(
                "No fuse snapshots in this ledger yet. Save one with ", Step("fuse save"), "."
            )
        session = found[0][0]
    saved = load(ledger, session)
    if saved is None:
        raise NotFound(
            f"No fuse snapshot for session {session}. List sessions with ", Step("fuse status"), "."
        )
    return _restore(ledger, saved, budget, interface), saved


def _restore(ledger: Ledger, saved: SavedSnapshot, budget: int | None, interface: Interface) -> str:
    lines = saved.snapshot.task_state
    if saved.snapshot.task_id:
        try:
            lines = task_lines(
                ledger,
                ledger.resolve(saved.snapshot.task_id),
                budget=(budget or DEFAULT_BUDGET) // 4,
            )
        except Exception:  # noqa: BLE001 - fall back to the state saved with the snapshot
            lines = saved.snapshot.task_state
    return render(
        saved.snapshot,
        budget,
        trigger=saved.trigger,
        task_lines=lines,
        hints=memory_hints(ledger, saved.snapshot),
        known=saved.summary,
        interface=interface,
    )


def record_summary(
    ledger: Ledger, session: str, summary: str, *, trigger: str = "auto", actor: str | None = None
) -> SavedSnapshot | None:
    """Record the summary the agent wrote at a compaction (Claude Code's PostCompact) on the
    session's ref, beside the snapshot saved just before it: ``summary.md`` holds what the agent
    kept, ``restore.md`` what the fuse adds to it (the complement), so ``git log -p`` on the ref
    shows both per compaction. None when the session has no snapshot (nothing to pair it with)."""
    from ..gitstore.documents import encode, write_version

    refname = fuse_ref(session)
    data = summary.encode("utf-8", errors="replace")[:MAX_SUMMARY_BYTES]
    summary = redact(data.decode("utf-8", errors="ignore"))  # it leaves the machine with sync
    if not summary.strip():
        return None
    with ledger.store.lock():
        tip = ledger.store.tip(refname)
        if tip is None:
            return None
        saved = _read_saved(ledger, session, tip)
        files = {k: v for k, v in ledger.store.read_files(tip, _FILES).items() if v is not None}
        judged, said = summary_coverage(saved.snapshot, summary)
        lost = lost_summary(judged, said)
        budget = budget_beside(judged, said)  # the restore's default beside it
        text = render(
            saved.snapshot, budget, trigger=saved.trigger, known=summary, interface="cli"
        )  # a record, worded as the CLI prints it (as _snapshot_files does)
        files["summary.md"] = summary.encode()
        files["restore.md"] = text.encode()
        files["delta.json"] = encode({"summary_bytes": len(summary.encode())})
        message = (
            f"fuse summary ({clean(trigger)[:40] or 'auto'}): the agent's summary, "
            f"{len(summary.encode()):,} bytes, and what the fuse adds to it\n\n"
            f"The summary says {said} of the {judged} items the snapshot holds; the restore "
            f"beside it takes {len(text.encode()) + 1:,} of {budget:,} bytes"
            f"{' (the summary lost the session)' if lost else ''}.\n"
        )
        commit = write_version(
            ledger.store, refname, files, message, ledger.author(actor), expected_tip=tip
        )
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


__all__ = [
    "MAX_SUMMARY_BYTES",
    "SavedSnapshot",
    "check_session",
    "delta",
    "fuse_ref",
    "held_task",
    "history",
    "link",
    "load",
    "memory_hints",
    "record_summary",
    "remember_snapshot",
    "restore_text",
    "save",
    "sessions",
    "snapshot_facts",
    "task_lines",
    "verify",
]
