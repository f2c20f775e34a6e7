"""Merging two diverged versions of one task: a three-way merge that never loses an entry.

When two machines change the same task before they sync, its ref has two tips with a common
ancestor (the merge base). ``merge_tasks(base, ours, theirs)`` makes the record of the merge commit
(whose parents are both tips). The rules, field by field:

- **Scalars** (goal, criteria, status, owner, blocker, next, priority, parent): a field only one
  side changed takes that side's value. A field both sides changed to different values goes to the
  later write by the hybrid logical clock stamp each version keeps per field (``Task.clock``; see
  ``model.HybridClock``), never by raw wall time; equal stamps (the same writer node and tick) are
  broken by comparing the values' canonical JSON, so every machine picks the same winner. The
  losing value is recorded in ``Task.conflicts`` so a person can see and undo the choice.
- **The claim** (owner, agent and lease, ``held_at``, decided together so a task never ends up
  owned by one person's claim and held by another's agent) is the exception that makes claims
  fair: when both sides hold a claim, the *first* claim (the earlier owner stamp) wins, as it
  would have on one machine. When one side is what a remote holds (``sync``, ``restore``:
  ``theirs_is_remote``), the remote's claim wins instead: the server decides claims, and a claim
  it accepted must not be overturned by a local one that never reached it, however early
  (``sync.claim --push`` tells its caller it won once the server took it). A release against a
  claim goes to the later write. Both sides holding the same claim keep the later lease.
- **Labels and dependencies** are sets merged three-way: an element is kept when both sides have
  it, or one side added it; it goes when one side removed it and the other left it alone.
- **Conflicts** recorded earlier are kept, except one that the base had and one side no longer
  has: an update there resolved it (``Ledger.update`` drops a field's conflict when it sets the
  field), and a merge must not bring it back.
- **Notes, decisions and evidence** are the union by entry id (ids are random per entry), ordered by
  time then id: nothing either side wrote is lost.
- **version** is ``max(ours, theirs) + 1``, which is what ``Ledger.verify`` expects of a commit with
  two parents; the clock keeps, per field, the later stamp of the two sides.

The merge is a pure function of its inputs (and ``at``/``actor``): merging A into B and B into A
gives the same record, which the tests check with hypothesis. Gates (the done gate, cycles) are
not re-run: a merge records what both sides did rather than refusing to exist.

Settings documents (``refs/gitledger/config/judge``, ``refs/gitledger/config/memory``) are merged
by ``merge_settings``, key by key against their merge base: a key one side changed takes that
side's value; a key both changed to different values takes the later write's, and is named so
sync can say so.
"""

from __future__ import annotations

import json
from typing import Any

from .model import (
    ENTRY_FIELDS,
    SCALAR_FIELDS,
    SET_FIELDS,
    Entry,
    FieldConflict,
    Task,
)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _pick_scalar(
    name: str, base: Task | None, ours: Task, theirs: Task
) -> tuple[Any, FieldConflict | None]:
    """The merged value of one scalar field and, when both sides changed it, the conflict."""
    o, t = getattr(ours, name), getattr(theirs, name)
    if o == t:
        return o, None
    if base is not None:
        b = getattr(base, name)
        if o == b:
            return t, None
        if t == b:
            return o, None
    so, st = ours.clock.get(name, ""), theirs.clock.get(name, "")
    if so != st:
        ours_wins = so > st
    else:
        ours_wins = _canonical(o) > _canonical(t)
    kept, dropped = (o, t) if ours_wins else (t, o)
    stamp = max(so, st)
    return kept, FieldConflict(field=name, kept=kept, dropped=dropped, at=stamp)


def _holder(task: Task) -> list[str | None]:
    return [task.owner, task.agent]


def _pick_claim(
    base: Task | None, ours: Task, theirs: Task, theirs_is_remote: bool
) -> tuple[Task, FieldConflict | None, str]:
    """The side whose claim stands, the conflict when both changed it, and the rule that chose."""
    o, t = _holder(ours), _holder(theirs)
    if o == t:
        return (ours if (ours.held_at or "") >= (theirs.held_at or "") else theirs), None, ""
    if base is not None:
        b = _holder(base)
        if o == b:
            return theirs, None, ""
        if t == b:
            return ours, None, ""
    so, st = ours.clock.get("owner", ""), theirs.clock.get("owner", "")
    # Both sides claimed: the task was free, or both hold an agent's claim (a lapsed one taken
    # over twice). Reassigning with --owner on both sides is an ordinary later-write-wins.
    both_claimed = bool(ours.owner and theirs.owner) and (
        base is None or base.owner is None or bool(ours.held_at and theirs.held_at)
    )
    if both_claimed and theirs_is_remote:
        ours_wins, why = False, "the claim the remote accepted first won"
    elif both_claimed and so != st:
        ours_wins, why = so < st, "the earlier claim won"
    elif so != st:
        ours_wins, why = so > st, "the later write won"
    else:
        ours_wins, why = _canonical(o) > _canonical(t), "equal stamps: the larger value won"
    kept, dropped = (ours, theirs) if ours_wins else (theirs, ours)
    name = "owner" if ours.owner != theirs.owner else "agent"
    conflict = FieldConflict(
        field=name, kept=getattr(kept, name), dropped=getattr(dropped, name), at=max(so, st)
    )
    return kept, conflict, why


def _merge_set(base: list[str] | None, ours: list[str], theirs: list[str]) -> list[str]:
    b = set(base or ())
    o, t = set(ours), set(theirs)
    keep = (o & t) | (o - b) | (t - b)
    out = [x for x in ours if x in keep]
    out += sorted(x for x in theirs if x in keep and x not in o)
    return out


def _union_entries(ours: list[Entry], theirs: list[Entry]) -> list[Any]:
    by_id: dict[str, Entry] = {}
    for entry in (*ours, *theirs):
        # The same id means the same entry (written once, then copied by sync); keep one copy.
        by_id.setdefault(entry.id, entry)
    return sorted(by_id.values(), key=lambda e: (e.at, e.id))


def _conflict_key(c: FieldConflict) -> tuple[str, str, str, str]:
    return (c.at, c.field, _canonical(c.kept), _canonical(c.dropped))


def merge_tasks(
    base: Task | None,
    ours: Task,
    theirs: Task,
    *,
    at: str,
    actor: str,
    theirs_is_remote: bool = False,
    reasons: dict[str, str] | None = None,
) -> Task:
    """The record of a merge commit joining ``ours`` and ``theirs`` (see the module docstring).

    ``base`` is the record at the merge base, or None when the two histories share no commit.
    ``theirs_is_remote``: ``theirs`` is what a remote holds, so when both sides claimed the task
    the remote's claim wins (it reached the server first; the server decides claims).
    ``reasons``, when given, receives field -> the rule that decided each new conflict.
    """
    if ours.id != theirs.id:
        raise ValueError(f"cannot merge different tasks {ours.id} and {theirs.id}")
    changes: dict[str, Any] = {}
    new_conflicts: list[FieldConflict] = []
    for name in SCALAR_FIELDS:
        if name == "owner":
            continue
        value, conflict = _pick_scalar(name, base, ours, theirs)
        changes[name] = value
        if conflict is not None:
            new_conflicts.append(conflict)
            if reasons is not None:
                reasons[name] = "the later write won"
    holder, conflict, why = _pick_claim(base, ours, theirs, theirs_is_remote)
    changes["owner"], changes["agent"], changes["held_at"] = (
        holder.owner,
        holder.agent,
        holder.held_at,
    )
    if conflict is not None:
        new_conflicts.append(conflict)
        if reasons is not None:
            reasons[conflict.field] = why
    for name in SET_FIELDS:
        changes[name] = _merge_set(
            getattr(base, name) if base is not None else None,
            getattr(ours, name),
            getattr(theirs, name),
        )
    for name in ENTRY_FIELDS:
        changes[name] = _union_entries(getattr(ours, name), getattr(theirs, name))
    # A conflict the base had and one side no longer has was resolved there: it stays resolved.
    had = {_conflict_key(c) for c in base.conflicts} if base is not None else set()
    on_both = {_conflict_key(c) for c in ours.conflicts} & {
        _conflict_key(c) for c in theirs.conflicts
    }
    seen: dict[tuple[str, str, str, str], FieldConflict] = {}
    for c in (*ours.conflicts, *theirs.conflicts, *new_conflicts):
        key = _conflict_key(c)
        if key in had and key not in on_both:
            continue
        seen.setdefault(key, c)
    changes["conflicts"] = sorted(seen.values(), key=_conflict_key)
    clock = dict(ours.clock)
    for name, stamp in theirs.clock.items():
        if stamp > clock.get(name, ""):
            clock[name] = stamp
    changes["clock"] = clock
    changes["version"] = max(ours.version, theirs.version) + 1
    changes["created_at"] = min(ours.created_at, theirs.created_at)
    changes["updated_at"] = at
    changes["actor"] = actor
    # replace() checks the result as a whole (a merged set could exceed a limit, e.g. MAX_LABELS).
    return ours.replace(**changes)


def new_conflicts(before: Task, merged: Task) -> list[FieldConflict]:
    """Conflicts the merge recorded that ``before`` did not have."""
    had = {_conflict_key(c) for c in before.conflicts}
    return [c for c in merged.conflicts if _conflict_key(c) not in had]


_ABSENT = object()


def merge_settings(
    base: dict[str, Any] | None,
    ours: dict[str, Any],
    theirs: dict[str, Any],
    *,
    ours_later: bool,
) -> tuple[dict[str, Any], dict[str, str]]:
    """Two machines' settings documents joined key by key (see the module docstring); returns
    the merged document and, per key both sides changed, the rule that decided it."""
    base = base or {}
    merged: dict[str, Any] = {}
    rules: dict[str, str] = {}
    for key in sorted({*base, *ours, *theirs}):
        was, mine, other = (d.get(key, _ABSENT) for d in (base, ours, theirs))
        if _same(mine, other) or _same(other, was):
            value = mine
        elif _same(mine, was):
            value = other
        else:
            value = mine if ours_later else other
            side = "this machine's" if ours_later else "the remote's"
            rules[key] = f"both machines changed it; the later write won ({side})"
        if value is not _ABSENT:
            merged[key] = value
    return merged, rules


def _same(a: Any, b: Any) -> bool:
    if a is _ABSENT or b is _ABSENT:
        return a is b
    return bool(json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True))


__all__ = [
    "merge_settings",
    "merge_tasks",
    "new_conflicts",
]
