"""Every query of the ledger, on random ledgers, equals the plain scan of the refs (``scan.py``).

The ledger answers listing, inbox, ready, children, dependents and search through its SQLite
index only: the file kept beside the refs and updated by each write, or (read-only, or
``GITLEDGER_NO_INDEX=1``) one built in memory from the refs. Both are checked here against the
oracle after a random run of creates, updates, refused updates, refs deleted by plain git and
refs that are no readable task.
"""

from __future__ import annotations

import os
import random
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import scan
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitledger.errors import (
    ClaimConflict,
    GateRefused,
    InvalidInput,
    StorageError,
    TaskNotFound,
)
from gitledger.ledger import Ledger
from gitledger.model import STATUSES
from gitledger.refs import TASKS_PREFIX, task_ref

# Plain words (never FTS5 operators), two with diacritics, found as "cafe" and "naive" too.
VOCAB = ["parser", "cache", "retry", "token", "merge", "queue", "café", "naïve", "docs", "lint"]
OWNERS = ["ann", "bob"]
LABELS = ["ui", "db", "ops"]


def random_steps(rng: random.Random) -> list[tuple]:  # type: ignore[type-arg]
    """A run of creates, then edits of every kind, drawn by ``rng`` (so a seed replays it)."""

    def words() -> str:
        return " ".join(rng.choices(VOCAB, k=rng.randint(1, 4)))

    def pick() -> int:
        return rng.randrange(64)

    def create() -> tuple:  # type: ignore[type-arg]
        return (
            "create",
            words(),
            pick() if rng.random() < 0.4 else None,  # parent
            rng.randint(0, 4),  # priority
            rng.sample(LABELS, rng.randint(0, 2)),
            rng.choice([None, *OWNERS]),
            [pick() for _ in range(rng.choice([0, 0, 1, 2]))],  # dependencies
        )

    edits = {
        "create": (1, create),
        "note": (2, lambda: ("note", pick(), words())),
        "status": (6, lambda: ("status", pick(), rng.choice(STATUSES))),
        "label": (1, lambda: ("label", pick(), rng.choice(LABELS), rng.random() < 0.6)),
        "owner": (1, lambda: ("owner", pick(), rng.choice(["", *OWNERS]))),
        "blocker": (1, lambda: ("blocker", pick(), rng.choice(["", "waits on docs"]))),
        "depend": (2, lambda: ("depend", pick(), pick())),
        "claim": (2, lambda: ("claim", pick(), rng.choice(["one", "two"]))),
        "delete": (0.3, lambda: ("delete", pick())),
        "foreign": (0.3, lambda: ("foreign", pick())),
    }
    kinds = list(edits)
    weights = [edits[k][0] for k in kinds]
    steps = [create() for _ in range(rng.randint(4, 14))]
    steps += [edits[k][1]() for k in rng.choices(kinds, weights, k=rng.randint(10, 40))]
    return steps


@contextmanager
def no_index_file() -> Iterator[None]:
    os.environ["GITLEDGER_NO_INDEX"] = "1"
    try:
        yield
    finally:
        del os.environ["GITLEDGER_NO_INDEX"]


def git(path: Path, *args: str) -> None:
    subprocess.run(["git", "--git-dir", str(path), *args], check=True, capture_output=True)


def apply(ledger: Ledger, ids: list[str], step: tuple) -> None:  # type: ignore[type-arg]
    kind = step[0]
    if kind == "create":
        _, goal, parent, priority, labels, owner, deps = step
        task = ledger.create(
            goal,
            parent=ids[parent % len(ids)] if parent is not None and ids else None,
            priority=priority,
            labels=labels,
            owner=owner,
            dependencies=[ids[d % len(ids)] for d in deps] if ids else [],
        )
        ids.append(task.id)
        return
    if not ids:
        return
    target = ids[step[1] % len(ids)]
    if kind == "note":
        ledger.update(target, notes=[step[2]])
    elif kind == "status":
        status = step[2]
        extra: dict[str, object] = {}
        if status == "blocked":
            extra = {"blocker": "waits on lint"}
        elif status == "done":
            extra = {
                "criteria": "the queue drains",
                "decisions": ["criteria set"],
                "evidence": ["checked the queue"],
                "blocker": "",
            }
        elif status == "cancelled":
            extra = {"decisions": ["not needed"]}
        ledger.update(target, status=status, **extra)  # type: ignore[arg-type]
    elif kind == "label":
        _, _, label, add = step
        if add:
            ledger.update(target, add_labels=[label])
        else:
            ledger.update(target, remove_labels=[label])
    elif kind == "owner":
        ledger.update(target, owner=step[2])
    elif kind == "blocker":  # a blocker on an open task keeps it out of ready
        ledger.update(target, blocker=step[2])
    elif kind == "claim":  # a live claim keeps an active task out of ready
        ledger.claim(target, agent=step[2])
    elif kind == "depend":
        ledger.update(target, add_dependencies=[ids[step[2] % len(ids)]])
    elif kind == "delete":  # plain git takes a task away: its dependents wait on a missing task
        git(ledger.path, "update-ref", "-d", task_ref(target))
    elif kind == "foreign":  # a ref under tasks/ that is no task id
        tip = ledger.store.tip(task_ref(target))
        if tip is not None:
            git(ledger.path, "update-ref", f"{TASKS_PREFIX}not-an-id-{len(ids)}", tip)


def check(ledger: Ledger, s: scan.Scan) -> None:
    assert sorted(t.id for t in ledger.tasks()) == sorted(s.tasks)
    assert [p.ref for p in ledger.skipped] == s.problems
    assert [t.id for t in ledger.list_tasks()] == scan.list_tasks(s)
    for status in STATUSES:
        got = [t.id for t in ledger.list_tasks(status=status)]
        assert got == scan.list_tasks(s, statuses={status}), status
    for owner in OWNERS:
        assert [t.id for t in ledger.list_tasks(owner=owner)] == scan.list_tasks(s, owner=owner)
    for label in LABELS:
        assert [t.id for t in ledger.list_tasks(label=label)] == scan.list_tasks(s, label=label)
    for limit, offset in ((2, 0), (3, 2), (None, 4)):
        got = [t.id for t in ledger.list_tasks(limit=limit, offset=offset)]
        assert got == scan.list_tasks(s, limit=limit, offset=offset)
    for limit in (None, 3):
        assert [t.id for t in ledger.inbox(limit)] == scan.inbox(s, limit)
        assert [t.id for t in ledger.ready(limit)] == scan.ready(s, limit)
    for task_id in s.tasks:
        assert [t.id for t in ledger.children(task_id)] == scan.children(s, task_id)
        assert [t.id for t in ledger.dependents(task_id)] == scan.dependents(s, task_id)
        got = [t.id for t in ledger.list_tasks(parent=task_id)]
        assert got == scan.list_tasks(s, parent=task_id)
    queries = [[w] for w in VOCAB] + [["cafe"], ["naive"], ["par*"], ["queue", "lint"], ["ca*"]]
    for query in queries:
        hits = ledger.search_hits(" ".join(query), None)
        assert {h.task.id for h in hits} == scan.search(s, query), query
        scores = [h.score for h in hits]
        assert scores == sorted(scores), query  # best (lowest BM25) first
        open_hits = ledger.search_hits(" ".join(query), None, statuses=["open"], label="ui")
        assert {h.task.id for h in open_hits} == scan.search(
            s, query, statuses={"open"}, label="ui"
        )


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_every_query_equals_the_scan_of_the_refs(seed: int) -> None:
    steps = random_steps(random.Random(seed))
    with tempfile.TemporaryDirectory(prefix="gitledger-oracle-") as tmp:
        ledger = Ledger.open(Path(tmp) / "ledger", create=True)
        ids: list[str] = []
        for step in steps:
            try:
                apply(ledger, ids, step)
            except (GateRefused, InvalidInput, TaskNotFound, ClaimConflict):
                pass  # refused (a cycle, an unfinished dependency, ...): nothing written
            if step[0] == "delete" and ids:
                ids.remove(ids[step[1] % len(ids)])
        s = scan.scan(ledger.store)
        assert not ledger.index().in_memory
        check(ledger, s)  # the file, kept current by each write and by a rescan after plain git
        with no_index_file():
            fresh = Ledger.open(ledger.path)
            assert fresh.index().in_memory
            check(fresh, s)  # the same queries on an index built in memory from the refs


def test_a_ledger_whose_index_file_cannot_be_kept_answers_from_memory(tmp_path: Path) -> None:
    ledger = Ledger.open(tmp_path / "ledger", create=True)
    a = ledger.create("parser cache", labels=["ui"])
    b = ledger.create("retry queue", dependencies=[a.id])
    file = ledger.path / "gitledger-index.sqlite"
    file.unlink()
    file.mkdir()  # something that is no database and cannot be replaced by one
    plain = Ledger.open(ledger.path)
    assert plain.index().in_memory
    assert [t.id for t in plain.search("parser")] == [a.id]
    assert [t.id for t in plain.ready(10)] == [a.id]
    assert [t.id for t in plain.dependents(a.id)] == [b.id]
    c = plain.update(a.id, notes=["merge docs"])  # a write keeps the memory index current too
    assert [t.id for t in plain.search("merge")] == [c.id]
    assert file.is_dir() and not any(file.iterdir())
    with pytest.raises(StorageError, match="in memory"):
        plain.require_index()  # index rebuild/status need the file
