"""The three-way task merge: never loses an entry, picks scalars by clock, is symmetric."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gitledger.merge import merge_tasks
from gitledger.model import SCALAR_FIELDS, SET_FIELDS, Entry, Evidence, Task, criteria_hash

TASK_ID = "0123456789abcdefghjk"
OTHER = ["1" * 20, "2" * 20, "3" * 20, "4" * 20]
AT = "2026-01-01T00:00:00.000Z"


def stamp(wall: int, node: str = "aaaaaaaa", counter: int = 0) -> str:
    return f"{wall:013d}.{counter:04d}.{node}"


def base_task(**kw: Any) -> Task:
    fields: dict[str, Any] = {
        "id": TASK_ID,
        "version": 1,
        "goal": "ship it",
        "created_at": AT,
        "updated_at": AT,
        "actor": "base",
        "clock": {f: stamp(1000) for f in (*SCALAR_FIELDS, *SET_FIELDS)},
    }
    fields.update(kw)
    return Task(**fields)


def edit(task: Task, wall: int, node: str, **changes: Any) -> Task:
    clock = dict(task.clock)
    for name in changes:
        if name in (*SCALAR_FIELDS, *SET_FIELDS):
            clock[name] = stamp(wall, node)
    return task.replace(**{**changes, "clock": clock, "version": task.version + 1})


def entry(text: str, n: int) -> Entry:
    return Entry(id=f"{n:012x}", text=text, at=f"2026-01-01T00:00:{n % 60:02d}.000Z", actor="x")


def merge(base: Task | None, ours: Task, theirs: Task) -> Task:
    return merge_tasks(base, ours, theirs, at=AT, actor="merger")


def test_one_side_changes_win_without_conflict() -> None:
    base = base_task(next="n0")
    ours = edit(base, 2000, "aaaa0001", next="ours")
    theirs = edit(base, 3000, "bbbb0002", status="active")
    merged = merge(base, ours, theirs)
    assert merged.next == "ours"
    assert merged.status == "active"
    assert merged.conflicts == []
    assert merged.version == 3
    assert merged.clock["next"] == stamp(2000, "aaaa0001")
    assert merged.clock["status"] == stamp(3000, "bbbb0002")


def test_both_changed_later_clock_wins_and_conflict_recorded() -> None:
    base = base_task(next="n0")
    ours = edit(base, 5000, "aaaa0001", next="ours, later")
    theirs = edit(base, 4000, "bbbb0002", next="theirs, earlier")
    merged = merge(base, ours, theirs)
    assert merged.next == "ours, later"
    [conflict] = merged.conflicts
    assert (conflict.field, conflict.kept, conflict.dropped) == (
        "next",
        "ours, later",
        "theirs, earlier",
    )
    # A wall clock that stepped back does not matter: the stamps decide, not updated_at.
    swapped = merge(base, theirs, ours)
    assert swapped.next == "ours, later"


def test_equal_stamps_break_ties_the_same_way_on_every_machine() -> None:
    base = base_task(priority=2)
    ours = edit(base, 7000, "same0000", priority=1)
    theirs = edit(base, 7000, "same0000", priority=3)
    assert merge(base, ours, theirs).priority == merge(base, theirs, ours).priority


def test_first_claim_wins_owner() -> None:
    base = base_task()
    early = edit(base, 1500, "aaaa0001", owner="alice", status="active")
    late = edit(base, 2500, "bbbb0002", owner="bob", status="active")
    assert merge(base, late, early).owner == "alice"
    assert merge(base, early, late).owner == "alice"
    # Reassigning an owned task is an ordinary scalar: the later write wins.
    owned = base_task(owner="alice")
    a = edit(owned, 3000, "aaaa0001", owner="carol")
    b = edit(owned, 4000, "bbbb0002", owner="dave")
    assert merge(owned, a, b).owner == "dave"


def test_sets_merge_three_way() -> None:
    base = base_task(labels=["a", "b"], dependencies=[OTHER[0], OTHER[1]])
    ours = edit(base, 2000, "aaaa0001", labels=["a", "c"], dependencies=[OTHER[0]])
    theirs = edit(
        base, 3000, "bbbb0002", labels=["a", "b", "d"], dependencies=[OTHER[0], OTHER[1], OTHER[2]]
    )
    merged = merge(base, ours, theirs)
    assert sorted(merged.labels) == ["a", "c", "d"]  # b removed by ours, c and d added
    assert sorted(merged.dependencies) == sorted([OTHER[0], OTHER[2]])


def test_entries_union_by_id_never_lost() -> None:
    shared = entry("shared", 1)
    base = base_task(notes=[shared])
    ours = edit(base, 2000, "aaaa0001", notes=[shared, entry("ours", 2)])
    theirs = edit(base, 3000, "bbbb0002", notes=[shared, entry("theirs", 3)])
    evidence = Evidence(
        id="e" * 12,
        text="tests pass",
        at=AT,
        actor="x",
        task_id=TASK_ID,
        criteria_hash=criteria_hash(""),
    )
    theirs = theirs.replace(**{"evidence": [evidence]})
    merged = merge(base, ours, theirs)
    assert [n.text for n in merged.notes] == ["shared", "ours", "theirs"]
    assert merged.evidence == [evidence]


def test_no_common_base() -> None:
    a = base_task(next="x")
    b = edit(base_task(), 9000, "bbbb0002", next="y")
    merged = merge(None, a, b)
    assert merged.next == "y"
    assert merged.conflicts[0].field == "next"


# --- properties ---------------------------------------------------------------------------------

texts = st.sampled_from(["a", "b", "c", None])
label_sets = st.lists(st.sampled_from(["x", "y", "z", "w"]), unique=True, max_size=4)
dep_sets = st.lists(st.sampled_from(OTHER), unique=True, max_size=4)


@st.composite
def side(draw: st.DrawFn, base: Task, node: str, first_entry: int) -> Task:
    changes: dict[str, Any] = {}
    if draw(st.booleans()):
        changes["next"] = draw(texts)
    if draw(st.booleans()):
        changes["status"] = draw(st.sampled_from(["open", "active", "done"]))
    if draw(st.booleans()):
        changes["priority"] = draw(st.integers(0, 4))
    if draw(st.booleans()):
        changes["labels"] = draw(label_sets)
    if draw(st.booleans()):
        changes["dependencies"] = draw(dep_sets)
    count = draw(st.integers(0, 3))
    new_notes = [entry(f"{node}-{i}", first_entry + i) for i in range(count)]
    wall = draw(st.integers(1001, 1010))
    task = edit(base, wall, node, **changes)
    return task.replace(**{"notes": base.notes + new_notes})


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Task, Task, Task]:
    base = base_task(
        next=draw(texts),
        labels=draw(label_sets),
        dependencies=draw(dep_sets),
        notes=[entry("base", 0)],
    )
    return base, draw(side(base, "aaaa0001", 100)), draw(side(base, "bbbb0002", 200))


def _dump(task: Task, exclude: set[str]) -> dict[str, object]:
    return {k: v for k, v in task.to_json_dict().items() if k not in exclude}


@settings(max_examples=200, deadline=None)
@given(scenarios())
def test_merge_is_symmetric_and_loses_no_entry(case: tuple[Task, Task, Task]) -> None:
    base, ours, theirs = case
    one = merge(base, ours, theirs)
    other = merge(base, theirs, ours)
    comparable = {"labels", "dependencies"}
    dump_one = _dump(one, exclude=comparable)
    dump_other = _dump(other, exclude=comparable)
    assert dump_one == dump_other
    assert sorted(one.labels) == sorted(other.labels)
    assert sorted(one.dependencies) == sorted(other.dependencies)
    ids = {n.id for n in one.notes}
    assert {n.id for n in ours.notes} | {n.id for n in theirs.notes} == ids
    assert one.version == max(ours.version, theirs.version) + 1
    # Merging a side with itself, or with its own ancestor, changes nothing but the version.
    again = merge(base, one, base)
    assert _dump(again, exclude={"version"}) == _dump(one, exclude={"version"})
