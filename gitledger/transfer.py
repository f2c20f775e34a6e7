"""Import and export: every task as JSON lines, and back.

Export reads the refs, not the index, so a damaged index never shortens a backup. Import writes
thousands of task versions into one pack (``gitstore.BulkWriter``) under one hold of the writer
lock and feeds the index the records it wrote, so no record is read back.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .changes import commit_message, diff_tasks, stamp_clock
from .errors import GateRefused, InvalidInput, LedgerError, TaskNotFound
from .gitstore import BulkWriter, ref_tips
from .index import index_for
from .model import (
    ENTRY_FIELDS,
    ID_PATTERN,
    SCALAR_FIELDS,
    SET_FIELDS,
    HybridClock,
    Task,
    new_id,
    now_iso,
    read_record,
)
from .refs import TASKS_DIR, TASKS_PREFIX, task_ref

if TYPE_CHECKING:
    from .ledger import Ledger

__all__ = ["ExportStats", "ImportReport", "export_tasks", "import_tasks"]


@dataclass
class ExportStats:
    tasks: int = 0
    versions: int = 0
    problems: list[tuple[str, str]] = field(default_factory=list)


def export_tasks(
    ledger: Ledger, *, history: bool = True, stats: ExportStats | None = None
) -> Iterator[dict[str, Any]]:
    """Each task as ``task show --json`` prints it, read from the refs (not the index), in id
    order. With ``history``, a ``history`` list carries every earlier version on the task's main
    line (first parents), oldest first, so an import rebuilds the same versions."""
    from .ledger import Ledger as _Ledger

    stats = stats if stats is not None else ExportStats()
    tips = ref_tips(ledger.path, TASKS_DIR)
    ids = sorted(n[len(TASKS_PREFIX) :] for n in tips if ID_PATTERN.match(n[len(TASKS_PREFIX) :]))
    shorts = _Ledger.short_ids(ids)
    for task_id in ids:
        name = TASKS_PREFIX + task_id
        try:
            task, _raw = read_record(ledger.store, tips[name], name)
            data = task.to_json_dict()
            data["short_id"] = shorts[task_id]
            if history:
                earlier = []
                chain = iter(ledger.store.first_parent_chain(tips[name]))
                next(chain)
                for info in chain:
                    earlier.append(read_record(ledger.store, info.oid, name)[0].to_json_dict())
                data["history"] = earlier[::-1]
                stats.versions += len(earlier)
        except LedgerError as exc:
            stats.problems.append((name, exc.message))
            continue
        stats.tasks += 1
        stats.versions += 1
        yield data


@dataclass
class ImportReport:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    versions: int = 0
    seconds: float = 0.0
    conflicts: list[str] = field(default_factory=list)
    locked: list[str] = field(default_factory=list)

    @property
    def tasks_per_second(self) -> float:
        done = self.created + self.updated + self.unchanged
        return done / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "created": self.created,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "versions": self.versions,
            "seconds": round(self.seconds, 3),
            "tasks_per_second": round(self.tasks_per_second, 1),
            "conflicts": self.conflicts,
            "locked": self.locked,
        }


_IGNORED_KEYS = ("short_id",)


def _epoch(stamp: str) -> int:
    from datetime import datetime

    try:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return int(time.time())


def _validate(raw: dict[str, Any], where: str) -> Task:
    try:
        return Task.from_dict(raw)
    except InvalidInput as exc:
        raise InvalidInput(f"{where}: {exc.message}.") from exc


def _parse_line(text: str, lineno: int, at: str, actor: str, stamp: str) -> tuple[list[Task], bool]:
    """The versions a line asks for, oldest first, and whether the line named its id."""
    where = f"line {lineno}"
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{where} is not JSON ({exc.msg}); each line must be one task as "
            f"'gitledger task show --json' prints it."
        ) from exc
    except RecursionError as exc:
        raise InvalidInput(f"{where} nests JSON too deeply to read.") from exc
    if not isinstance(raw, dict):
        raise InvalidInput(f"{where} is not a JSON object; each line must be one task.")
    for key in _IGNORED_KEYS:
        raw.pop(key, None)
    history = raw.pop("history", None) or []
    if not isinstance(history, list) or not all(isinstance(h, dict) for h in history):
        raise InvalidInput(f"{where}: history must be a list of task records.")
    named = "id" in raw
    task_id = raw.get("id") or new_id()
    versions: list[Task] = []
    chain = [*history, raw]
    for n, record in enumerate(chain, 1):
        record = dict(record)
        record.pop("short_id", None)
        record.setdefault("id", task_id)
        record.setdefault("version", n)
        record.setdefault("created_at", chain[0].get("created_at", at))
        record.setdefault("updated_at", record["created_at"] if n == 1 else at)
        record.setdefault("actor", actor)
        if "clock" not in record:
            record["clock"] = {f: stamp for f in (*SCALAR_FIELDS, *SET_FIELDS)}
        task = _validate(record, where)
        if task.id != task_id:
            raise InvalidInput(f"{where}: every version must have the id {task_id}.")
        if versions and task.version <= versions[-1].version:
            raise InvalidInput(f"{where}: versions must increase, oldest first.")
        versions.append(task)
    return versions, named


def _find_cycle(edges: dict[str, list[str]], starts: Iterable[str]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 visiting, 2 done
    for start in starts:
        if state.get(start):
            continue
        path: list[str] = []
        stack: list[tuple[str, Iterator[str]]] = [(start, iter(edges.get(start, [])))]
        state[start] = 1
        path.append(start)
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
                path.pop()
                continue
            mark = state.get(nxt)
            if mark == 1:
                return path[path.index(nxt) :] + [nxt]
            if mark is None:
                state[nxt] = 1
                path.append(nxt)
                stack.append((nxt, iter(edges.get(nxt, []))))
    return None


def import_tasks(
    ledger: Ledger,
    lines: Iterable[str],
    *,
    actor: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ImportReport:
    """Create or update many tasks from JSONL (one task a line, as ``task show --json``).

    Every line is validated before anything is written, so bad input changes nothing. A line
    without ``id`` creates a task. A line whose task is new writes its ``history`` and then the
    record itself, keeping every version's content. A line for a task that exists writes the
    versions after the current one when its history contains the current version unchanged, and
    otherwise one new version carrying what the line changed since the version it was read at
    (its ``version``, when this task's history has it; else the line's whole content). A line
    that changes nothing writes nothing. Gates are not re-judged (they judged each version when
    it was made); what is checked: the record validates, parents and dependencies exist and make
    no cycle.

    All of it happens under one hold of the writer lock: objects go into one pack file, then each
    ref moves by compare-and-swap, then the index takes the records it was handed.
    """

    started = time.perf_counter()
    report = ImportReport()
    at = now_iso()
    stamp = HybridClock.tick([])
    author = ledger.author(actor)
    parsed: list[tuple[list[Task], bool]] = []
    seen: set[str] = set()
    for lineno, text in enumerate(lines, 1):
        if not text.strip():
            continue
        versions, named = _parse_line(text, lineno, at, author[0], stamp)
        if versions[-1].id in seen:
            raise InvalidInput(f"line {lineno}: task {versions[-1].id} appears twice.")
        seen.add(versions[-1].id)
        parsed.append((versions, named))
    total = len(parsed)
    idx = index_for(ledger)
    store = ledger.store
    with store.lock():
        idx.refresh()
        current = {t.id: t for t in idx.tasks_by_id([v[-1].id for v, _ in parsed])}
        tips = ref_tips(ledger.path, TASKS_DIR)
        graph = idx.graph_rows()
        parents: dict[str, list[str]] = {k: [v[2]] if v[2] else [] for k, v in graph.items()}
        needs: dict[str, list[str]] = {k: list(v[3]) for k, v in graph.items()}
        for versions, _named in parsed:
            task = versions[-1]
            parents[task.id] = [task.parent] if task.parent else []
            needs[task.id] = list(task.dependencies)
        known_ids = set(graph) | seen
        for versions, _named in parsed:
            task = versions[-1]
            for other in [*(v.parent for v in versions if v.parent), *task.dependencies]:
                if other not in known_ids:
                    raise TaskNotFound(
                        f"Task {task.id} refers to {other}, which is neither in the ledger nor "
                        f"in the file; import that task too, or remove the reference."
                    )
        for kind, edges in (("parents", parents), ("dependencies", needs)):
            cycle = _find_cycle(edges, seen)
            if cycle:
                raise GateRefused(
                    f"The imported {kind} make a cycle: {' → '.join(c[:6] for c in cycle)}; "
                    f"fix the file and import again."
                )
        writer = BulkWriter(store)
        new_refs: set[str] = set()
        known: dict[str, tuple[Task, bytes]] = {}
        try:
            for done, (versions, _named) in enumerate(parsed, 1):
                task_id = versions[-1].id
                ref = task_ref(task_id)
                existing = current.get(task_id)
                if existing is None:
                    todo, parent_tip, base = versions, None, None
                else:
                    parent_tip = tips.get(ref)
                    base = existing
                    same = [v for v in versions if v == existing]
                    if versions[-1] == existing:
                        report.unchanged += 1
                        todo = []
                    elif same:
                        todo = versions[versions.index(same[-1]) + 1 :]
                    else:
                        read_at = _version_read(ledger, existing, versions[-1])
                        nxt = _next_version(existing, versions[-1], author[0], read_at)
                        bare = nxt.replace(
                            version=existing.version,
                            updated_at=existing.updated_at,
                            actor=existing.actor,
                            clock=existing.clock,
                        )
                        if bare == existing:  # an old line that changes nothing now
                            report.unchanged += 1
                            todo = []
                        else:
                            todo = [nxt]
                tip = parent_tip
                previous = base
                for task in todo:
                    files = ledger.record_files(task)
                    tree = writer.tree({name: writer.blob(data) for name, data in files.items()})
                    changes = None if previous is None else diff_tasks(previous, task)
                    message = commit_message(task, changes)
                    who = ledger.author(task.actor) if task.actor else author
                    tip = writer.commit(
                        tree, [tip] if tip else [], who, _epoch(task.updated_at), message, 0
                    )
                    previous = task
                    report.versions += 1
                    known[tip] = (task, files["task.json"])
                if todo and tip is not None:
                    writer.set_ref(ref, tip, parent_tip)
                    if existing is None:
                        report.created += 1
                        new_refs.add(ref)
                    else:
                        report.updated += 1
                if progress is not None:
                    progress(done, total)
        except BaseException:
            writer.abort()
            raise
        not_moved = writer.finish()
        # A ref that did not move was not imported: count it out, and say why.
        for ref in not_moved:
            if ref in new_refs:
                report.created -= 1
            else:
                report.updated -= 1
        report.locked = [r for r in not_moved if r in writer.locked]
        report.conflicts = [r for r in not_moved if r not in writer.locked]
        idx.absorb(known)
    report.seconds = time.perf_counter() - started
    return report


def _version_read(ledger: Ledger, existing: Task, wanted: Task) -> Task | None:
    """The version of the task a line was read from, when it is an earlier one of this ledger's:
    the line's ``version``, if the task's history has it. None otherwise."""
    if not 1 <= wanted.version < existing.version:
        return None
    try:
        return ledger.show(existing.id, at=wanted.version)
    except LedgerError:
        return None


def _next_version(existing: Task, wanted: Task, actor: str, read_at: Task | None = None) -> Task:
    """``wanted``'s content as the version after ``existing``, its clock stamped where it changed.

    ``read_at``: the earlier version the line was read from. A field the line left as it was
    there keeps its current value, so a line exported before someone claimed the task (or changed
    its status) does not set that back; only what the line changed is applied.
    """
    if read_at is not None:
        kept = {
            name: getattr(existing, name)
            for name in (*SCALAR_FIELDS, *SET_FIELDS)
            if getattr(wanted, name) == getattr(read_at, name)
        }
        wanted = wanted.replace(**kept)
    clock = stamp_clock(existing, wanted, wanted.clock.values())
    # Entries keep their own ids, so re-importing an entry never duplicates it.
    merged: dict[str, Any] = {}
    for name in ENTRY_FIELDS:
        have = {e.id for e in getattr(existing, name)}
        merged[name] = list(getattr(existing, name)) + [
            e for e in getattr(wanted, name) if e.id not in have
        ]
    return wanted.replace(
        **merged,
        version=existing.version + 1,
        created_at=existing.created_at,
        updated_at=now_iso(),
        actor=actor,
        clock=clock,
    )
