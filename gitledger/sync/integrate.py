"""Fetched refs brought into the ledger: every incoming tip checked, then each ref created,
fast-forwarded, kept or merged, under the ledger's writer lock.

``integrate`` runs after a fetch has put the remote's objects here (the refs wait in the
remote's staging namespace, ``remote.staging``). It first checks every incoming tip (its objects
re-hash, a task's record validates and names its ref); one failure moves nothing and says
which. Then per ref: a tip already here or behind ours is kept, a new ref is created, one that
descends from ours is fast-forwarded, and one whose history diverged is merged by its kind
(``merges.merge_diverged``) or, when no merge knows its kind, kept local and reported
``unmerged``. Every move is a compare-and-swap from the tip read this round, so a write that
came in between is left for the next round, never overwritten; the task versions written are
handed to the derived index so the next command does not re-read every ref.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import gitstore
from ..errors import CorruptRecord, Fix, LedgerError, RemoteError, Step
from ..gitstore import RefMoved
from ..model import Task, read_record
from ..refs import LEDGER_PREFIX, TASKS_PREFIX
from .merges import Written, merge_diverged, mergeable, ref_task_id
from .report import SyncReport

if TYPE_CHECKING:
    from ..ledger import Ledger


def integrate(
    ledger: Ledger,
    remote_tips: dict[str, str],
    report: SyncReport,
    local: dict[str, str] | None = None,
) -> dict[str, str]:
    """Bring the remote's tips (their objects already fetched) into the ledger, under its lock.

    Every incoming tip is checked first (its objects re-hash, a task's record validates and names
    its ref); if any fails, nothing moves and ``RemoteError`` says which. ``local``: the ledger's
    tips as read this round (every move is a compare-and-swap, so a tip that changed since is
    left alone, not overwritten). Returns the ledger's tips after integrating.
    """
    store = ledger.store
    local = dict(store.refs(LEDGER_PREFIX)) if local is None else local
    plan: list[tuple[str, str | None, str, str]] = []  # ref, ours, theirs, action
    damaged: list[list[str | Fix | Step]] = []  # each refusal's message, as its parts
    incoming: dict[str, tuple[Task, bytes]] = {}  # task records checked here, for the index
    for ref, theirs in sorted(remote_tips.items()):
        ours = local.get(ref)
        if ours == theirs:
            continue
        try:
            if ours is not None and gitstore.is_ancestor(store, theirs, ours):
                report.kept.append(ref)
                continue
            store.check_objects(theirs)
            task_id = ref_task_id(ref)
            if task_id is not None:
                record, raw = read_record(store, theirs, ref)
                incoming[ref] = (record, raw)
                if record.id != task_id:
                    raise CorruptRecord(f"{ref}: the record says id {record.id}")
            if ours is None or gitstore.is_ancestor(store, ours, theirs):
                action = "create" if ours is None else "forward"
            else:
                action = "merge" if mergeable(ref) else "diverged"
        except LedgerError as exc:
            damaged.append(list(exc.parts))
            continue
        plan.append((ref, ours, theirs, action))
    if damaged:
        first = damaged[0]
        if first and isinstance(first[-1], str):
            first[-1] = first[-1].rstrip(".")
        raise RemoteError(
            f"The remote {report.remote} holds {len(damaged)} damaged or invalid record(s) (first: ",
            *first,
            "). Nothing was changed here; repair the remote (run git fsck there) or restore from "
            "another backup.",
        )
    stamp_before = gitstore.refs_stamp(store.path, TASKS_PREFIX.rstrip("/")).encode()
    written: list[Written] = []  # task versions now at their refs' tips
    for ref, ours, theirs, action in plan:
        try:
            if action in ("create", "forward"):
                store.set_ref(ref, theirs, ours)
                (report.created if ours is None else report.fast_forwarded).append(ref)
                local[ref] = theirs
                if ref in incoming:
                    written.append((*incoming[ref], theirs))
            elif action == "merge" and ours is not None:
                local[ref], version = merge_diverged(ledger, ref, ours, theirs, report)
                if version is not None:
                    written.append(version)
            else:
                report.unmerged.append(ref)
        except RefMoved:
            # A writer outside gitledger's lock moved it just now: leave it for the next round
            # (its push is planned from the tip as it is then, so nothing is lost).
            report.kept.append(ref)
    if written:
        # so the next command costs what this sync changed, not a full pass
        ledger.index().wrote_many(written, stamp_before)
    return local


__all__ = ["integrate"]
