"""Two diverged histories of one ledger ref joined in a merge commit, by the ref's kind.

Both tips become the merge commit's parents, so nothing either machine wrote is lost and the
next sync of either is a fast-forward. What the commit holds depends on what the ref is:

- a task (``refs/gitledger/tasks/<id>``): ``merge.merge_tasks`` (scalars by hybrid logical
  clock, lists as unions, a claim the remote accepted winning); a field both sides changed is a
  conflict the report names, with the rule that decided it;
- a fuse snapshot: ``fuse.store.merge_saved``;
- a memory fact: ``memory.merge_facts``;
- a session's judge state: the newer save (``merge_judge_state``: it is one session's counters,
  and the newer save has seen more of the session);
- a settings document (``SETTINGS_DOCUMENTS``: ``refs/gitledger/config/judge``,
  ``refs/gitledger/config/memory``): key by key, ``merge.merge_settings`` (a key both machines
  changed goes to the later write, and ``report.ref_rules`` says so).

Any other diverged ref is not ``mergeable``: integration keeps it at the local tip, does not push
it, and reports it in ``unmerged``. Every function here runs under the ledger's writer lock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import gitstore
from ..changes import version_message
from ..gitstore.documents import decode, encode
from ..judge.state import STATE_FILE as JUDGE_STATE_FILE
from ..memory.config import CONFIG_FILE as MEMORY_CONFIG_FILE
from ..merge import merge_settings, merge_tasks, new_conflicts
from ..model import ID_PATTERN, Task, now_iso, read_record, record_files
from ..refs import (
    FUSE_PREFIX,
    JUDGE_CONFIG_REF,
    JUDGE_PREFIX,
    MEMORY_CONFIG_REF,
    MEMORY_PREFIX,
    TASKS_PREFIX,
)
from .report import SyncReport

if TYPE_CHECKING:
    from ..ledger import Ledger

# Settings documents merged key by key: ref -> the JSON file with the keys, and the files beside
# it (taken from the newer side).
SETTINGS_DOCUMENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    JUDGE_CONFIG_REF: (JUDGE_STATE_FILE, ("FORMAT",)),
    MEMORY_CONFIG_REF: (MEMORY_CONFIG_FILE, ()),
}
JUDGE_STATE_FILES = ("FORMAT", JUDGE_STATE_FILE)

# A task version a merge wrote: its record, the record's bytes, the commit (for the index).
Written = tuple[Task, bytes, str]


def ref_task_id(ref: str) -> str | None:
    """The task id a ref names, or None when it is not a task ref (or names no valid id)."""
    if not ref.startswith(TASKS_PREFIX):
        return None
    leaf = ref[len(TASKS_PREFIX) :]
    return leaf if ID_PATTERN.match(leaf) else None


def mergeable(ref: str) -> bool:
    """Whether two diverged histories of ``ref`` can be joined (``merge_diverged`` knows its
    kind)."""
    return (
        ref_task_id(ref) is not None
        or ref.startswith((MEMORY_PREFIX, FUSE_PREFIX, JUDGE_PREFIX))
        or ref in SETTINGS_DOCUMENTS
    )


def merge_diverged(
    ledger: Ledger, ref: str, ours_tip: str, theirs_tip: str, report: SyncReport
) -> tuple[str, Written | None]:
    """Join a ``mergeable`` ref's two tips in a merge commit; returns the ref's tip after, and
    for a task the version written."""
    if ref.startswith(FUSE_PREFIX):
        from ..fuse.store import merge_saved

        tip = merge_saved(ledger, ref[len(FUSE_PREFIX) :], ours_tip, theirs_tip)
        report.merged.append(ref)
        return tip, None
    if ref.startswith(MEMORY_PREFIX):
        merge_fact(ledger, ref, ours_tip, theirs_tip, report)
        return ledger.store.tip(ref) or ours_tip, None
    if ref.startswith(JUDGE_PREFIX):
        return merge_judge_state(ledger, ref, ours_tip, theirs_tip, report), None
    if ref in SETTINGS_DOCUMENTS:
        return merge_settings_document(ledger, ref, ours_tip, theirs_tip, report), None
    written = merge_task(ledger, ref, ref[len(TASKS_PREFIX) :], ours_tip, theirs_tip, report)
    return written[2], written


def merge_task(
    ledger: Ledger, ref: str, task_id: str, ours_tip: str, theirs_tip: str, report: SyncReport
) -> Written:
    """Join two diverged histories of a task in a merge commit; returns its record, the record's
    bytes and the commit."""
    store = ledger.store
    ours = read_record(store, ours_tip, ref)[0]
    theirs = read_record(store, theirs_tip, ref)[0]
    base_tip = gitstore.merge_base(store, ours_tip, theirs_tip)
    base = read_record(store, base_tip, ref)[0] if base_tip else None
    name, email = ledger.author()
    # theirs is what the remote holds: a claim it accepted counted first (finding S3)
    rules: dict[str, str] = {}
    merged = merge_tasks(
        base, ours, theirs, at=now_iso(), actor=name, theirs_is_remote=True, reasons=rules
    )
    fresh = new_conflicts(ours, merged)
    fresh = [c for c in fresh if c not in theirs.conflicts]
    subject = "merge: diverged histories joined"
    if fresh:
        subject += f", {len(fresh)} conflicting field(s): " + ", ".join(c.field for c in fresh)
        report.conflicts[task_id] = [c.field for c in fresh]
        report.conflict_rules[task_id] = {
            c.field: rules.get(c.field, "the later write won") for c in fresh
        }
    body = "\n".join(f"- {c.field}: kept {c.kept!r}, dropped {c.dropped!r}" for c in fresh)
    message = version_message(subject, body, merged)
    files = record_files(merged)
    commit = store.write(ref, files, message, (name, email), [ours_tip, theirs_tip], ours_tip)
    report.merged.append(ref)
    return merged, files["task.json"], commit


def merge_fact(
    ledger: Ledger, ref: str, ours_tip: str, theirs_tip: str, report: SyncReport
) -> None:
    """A remembered fact changed on both sides: merged by ``memory.merge_facts``."""
    from ..memory import fact_files, merge_facts, read_fact

    store = ledger.store
    base_tip = gitstore.merge_base(store, ours_tip, theirs_tip)
    merged = merge_facts(
        read_fact(store, base_tip, ref) if base_tip else None,
        read_fact(store, ours_tip, ref),
        read_fact(store, theirs_tip, ref),
    )
    store.write(
        ref,
        fact_files(merged),
        "merge: a fact changed on two machines\n",
        ledger.author(),
        [ours_tip, theirs_tip],
        ours_tip,
    )
    report.merged.append(ref)


def _later(ledger: Ledger, ours_tip: str, theirs_tip: str) -> bool:
    """Whether our tip is the later write (commit time, then the commit id: every machine picks
    the same side)."""
    ours, theirs = (ledger.store.commit_info(t) for t in (ours_tip, theirs_tip))
    return (ours.time, ours_tip) > (theirs.time, theirs_tip)


def merge_judge_state(
    ledger: Ledger, ref: str, ours_tip: str, theirs_tip: str, report: SyncReport
) -> str:
    """A session's judge state saved on two machines: a merge commit holding the newer save."""
    ours_later = _later(ledger, ours_tip, theirs_tip)
    newer = ours_tip if ours_later else theirs_tip
    files = {k: v for k, v in ledger.store.read_files(newer, JUDGE_STATE_FILES).items() if v}
    side = "this machine's" if ours_later else "the remote's"
    commit = ledger.store.write(
        ref,
        files,
        f"merge: judge state saved on two machines, kept the newer ({side})\n",
        ledger.author(),
        [ours_tip, theirs_tip],
        ours_tip,
    )
    report.merged.append(ref)
    report.ref_rules[ref] = {"state": f"the newer save won ({side})"}
    return commit


def merge_settings_document(
    ledger: Ledger, ref: str, ours_tip: str, theirs_tip: str, report: SyncReport
) -> str:
    """A settings document changed on two machines, merged key by key (``merge_settings``)."""
    store = ledger.store
    name, beside = SETTINGS_DOCUMENTS[ref]
    base_tip = gitstore.merge_base(store, ours_tip, theirs_tip)
    ours_later = _later(ledger, ours_tip, theirs_tip)

    def doc(tip: str | None) -> tuple[dict[str, Any], bool]:
        return decode(store.read_files(tip, (name,))[name]) if tip else ({}, False)

    base, ours, theirs = doc(base_tip)[0], doc(ours_tip), doc(theirs_tip)
    rules: dict[str, str] = {}
    if ours[1] or theirs[1]:  # a damaged side holds nothing to keep: the other side stands
        merged = theirs[0] if ours[1] else ours[0]
    else:
        merged, rules = merge_settings(base, ours[0], theirs[0], ours_later=ours_later)
    newer = ours_tip if ours_later else theirs_tip
    files = {k: v for k, v in store.read_files(newer, beside).items() if v} if beside else {}
    files[name] = encode(merged)
    said = "; ".join(f"{key}: {rule}" for key, rule in rules.items())
    commit = store.write(
        ref,
        files,
        "merge: settings changed on two machines, joined key by key\n"
        + (f"\n{said}\n" if said else ""),
        ledger.author(),
        [ours_tip, theirs_tip],
        ours_tip,
    )
    report.merged.append(ref)
    if rules:
        report.ref_rules[ref] = rules
    return commit


__all__ = [
    "JUDGE_STATE_FILES",
    "SETTINGS_DOCUMENTS",
    "Written",
    "merge_diverged",
    "merge_fact",
    "merge_judge_state",
    "merge_settings_document",
    "merge_task",
    "mergeable",
    "ref_task_id",
]
