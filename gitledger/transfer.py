"""Import and export: every task as JSON lines, and back.

Export reads the refs, not the index, so a damaged index never shortens a backup. Import writes
thousands of task versions into one pack (``gitstore.BulkWriter``) under one hold of the writer
lock and feeds the index the records it wrote, so no record is read back.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from .changes import commit_message, diff_tasks, stamp_clock
from .edits import Interface, word_command
from .errors import GateRefused, InvalidInput, LedgerError, Step, TaskNotFound
from .gitstore import BulkWriter, ref_tips
from .model import (
    ENTRY_FIELDS,
    ID_PATTERN,
    MIN_SHORT_ID,
    SCALAR_FIELDS,
    SET_FIELDS,
    HybridClock,
    Task,
    criteria_hash,
    new_id,
    now_iso,
    read_record,
    record_files,
    short_ids,
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
    ledger: Ledger,
    *,
    history: bool = True,
    stats: ExportStats | None = None,
    interface: Interface = "python",
) -> Iterator[dict[str, Any]]:
    """Each task as ``task show --json`` prints it, read from the refs (not the index), in id
    order. With ``history``, a ``history`` list carries every earlier version on the task's main
    line (first parents), oldest first, so an import rebuilds the same versions. A task left out
    goes into ``stats.problems`` with why, its next step worded as ``interface`` offers it."""
    stats = stats if stats is not None else ExportStats()
    tips = ref_tips(ledger.path, TASKS_DIR)
    ids = sorted(n[len(TASKS_PREFIX) :] for n in tips if ID_PATTERN.match(n[len(TASKS_PREFIX) :]))
    shorts = short_ids(ids)
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
            stats.problems.append((name, exc.worded(interface)))
            continue
        stats.tasks += 1
        stats.versions += 1
        yield data
    for name, what in sorted(ledger.store.broken_refs(TASKS_PREFIX).items()):
        stats.problems = [p for p in stats.problems if p[0] != name]  # one reason per ref
        stats.problems.append(
            (
                name,
                f"the ref file {what}; {word_command('verify', interface)} says how to restore it",
            )
        )


@dataclass
class ImportReport:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    versions: int = 0
    seconds: float = 0.0
    conflicts: list[str] = field(default_factory=list)
    locked: list[str] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (line, why), with --partial

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
            "skipped": [{"line": n, "error": why} for n, why in self.skipped],
        }


_IGNORED_KEYS = ("short_id",)

# The longest line an import reads, in bytes. A task exported with its whole history is one
# line; 16 MiB holds hundreds of versions of a large task, and bounds what one line can cost to
# parse (30 MB of "[]," parses into about 1.5 GB of Python lists). Export warns about a longer
# line.
MAX_LINE_BYTES = 16 * 1024 * 1024


TASK_LINE_HINT: tuple[str | Step, ...] = (
    "each line must be one task (export a task without its history with ",
    Step("export current"),
    ")",
)


def read_lines(
    stream: IO[str], limit: int = MAX_LINE_BYTES, hint: tuple[str | Step, ...] = TASK_LINE_HINT
) -> Iterator[str]:
    """The lines of ``stream``, one at a time, each at most ``limit`` bytes.

    A longer line (``/dev/zero`` is one endless line) or bytes that are not UTF-8 are refused
    with the line's number, after reading at most ``limit`` bytes of it. A text stream without a
    byte buffer under it (``io.StringIO``) is measured in characters.
    """
    raw = getattr(stream, "buffer", None)
    lineno = 0
    while True:
        if raw is not None:
            data = raw.readline(limit + 1)
            try:
                line = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidInput(
                    f"line {lineno + 1} is not UTF-8 text ({exc.reason} at byte {exc.start}); "
                    f"re-encode the file as UTF-8."
                ) from None
        else:
            line = stream.readline(limit + 1)
            data = line
        if not line:
            return
        lineno += 1
        if len(data) > limit and not line.endswith("\n"):
            raise InvalidInput(f"line {lineno} is longer than {limit:,} bytes; ", *hint, ".")
        yield line


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


def parse_json_line(text: str, lineno: int) -> dict[str, Any]:
    """One line of a JSONL import as an object, or InvalidInput naming the line."""
    where = f"line {lineno}"
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{where} is not JSON ({exc.msg}); each line must be one task as ",
            Step("task show json"),
            " gives it.",
        ) from exc
    except RecursionError as exc:
        raise InvalidInput(f"{where} nests JSON too deeply to read.") from exc
    if not isinstance(raw, dict):
        raise InvalidInput(f"{where} is not a JSON object; each line must be one task.")
    return raw


@dataclass
class _Line:
    """One line of an import, checked alone: its task id, its file-local names, its versions
    (oldest first) with parent and dependencies not yet resolved."""

    lineno: int
    task_id: str
    names: list[str]
    records: list[dict[str, Any]]


def entry_id(task_id: str, kind: str, text: str, seen: int = 0) -> str:
    """A stable id for an entry written without one: importing the same line twice, or the same
    tracker's export again, finds it already there instead of adding it twice."""
    digest = hashlib.sha256(f"{task_id}\0{kind}\0{seen}\0{text}".encode()).hexdigest()
    return digest[:12]


def _fill_entries(record: dict[str, Any], task_id: str, where: str) -> None:
    """Notes, decisions and evidence as plain strings or ``{"text", ...}`` objects, completed to
    the stored form (an entry that is already complete is left exactly as it is)."""
    for kind in ENTRY_FIELDS:
        items = record.get(kind)
        if not isinstance(items, list):
            continue  # absent, or wrong: the record's own check names it
        seen: dict[str, int] = {}
        filled: list[Any] = []
        for item in items:
            if isinstance(item, str):
                item = {"text": item}
            elif isinstance(item, dict):
                if not isinstance(item.get("text"), str):
                    filled.append(item)  # the entry's own check names what is missing
                    continue
                item = dict(item)
            else:
                kind_of = "null" if item is None else type(item).__name__
                raise InvalidInput(
                    f'{where}: {kind}[{len(filled)}]: expected text or an object with "text", '
                    f"got {kind_of}."
                )
            text = item["text"]
            n = seen.get(text, 0)
            seen[text] = n + 1
            item.setdefault("id", entry_id(task_id, kind, text, n))
            item.setdefault("at", record["updated_at"])
            item.setdefault("actor", record["actor"])
            if kind == "evidence":
                item.setdefault("task_id", task_id)
                criteria = record.get("criteria", "")
                item.setdefault(
                    "criteria_hash", criteria_hash(criteria if isinstance(criteria, str) else "")
                )
            filled.append(item)
        record[kind] = filled


def _prepare(raw: dict[str, Any], lineno: int, at: str, actor: str, stamp: str) -> _Line:
    """A line's versions completed from the minimal form a person writes: ``goal`` alone is a
    task. An ``id`` that is not a task id, or a ``ref``, names the line for the file's parents
    and dependencies."""
    where = f"line {lineno}"
    for key in _IGNORED_KEYS:
        raw.pop(key, None)
    names: list[str] = []
    ref = raw.pop("ref", None)
    if ref is not None:
        if not isinstance(ref, str) or not ref.strip():
            raise InvalidInput(f"{where}: ref: expected a name (text), got {ref!r}.")
        names.append(ref)
    given = raw.get("id")
    if given is None:
        task_id = new_id()
    elif isinstance(given, str) and ID_PATTERN.match(given):
        task_id = given
    elif isinstance(given, str) and given.strip():
        names.append(given)  # the file's own name for the task: a new id is made
        task_id = new_id()
    else:
        raise InvalidInput(f"{where}: id: expected a task id or a name, got {given!r}.")
    history = raw.pop("history", None) or []
    if not isinstance(history, list) or not all(isinstance(h, dict) for h in history):
        raise InvalidInput(f"{where}: history must be a list of task records.")
    records: list[dict[str, Any]] = []
    chain = [*history, raw]
    for n, record in enumerate(chain, 1):
        record = dict(record)
        for key in (*_IGNORED_KEYS, "ref"):
            record.pop(key, None)
        if record.get("id", given) not in (given, task_id):
            raise InvalidInput(f"{where}: every version must have the id {given}.")
        record["id"] = task_id
        record.setdefault("version", n)
        record.setdefault("created_at", chain[0].get("created_at", at))
        record.setdefault("updated_at", record["created_at"] if n == 1 else at)
        record.setdefault("actor", actor)
        if "clock" not in record:
            record["clock"] = {f: stamp for f in (*SCALAR_FIELDS, *SET_FIELDS)}
        _fill_entries(record, task_id, where)
        records.append(record)
    return _Line(lineno, task_id, names, records)


def _versions(line: _Line, resolve: Callable[[Any, str], Any]) -> list[Task]:
    """The line's versions as checked records, its parents and dependencies resolved."""
    where = f"line {line.lineno}"
    versions: list[Task] = []
    for record in line.records:
        record = dict(record)
        if isinstance(record.get("parent"), str):
            record["parent"] = resolve(record["parent"], f"{where}: parent")
        deps = record.get("dependencies")
        if isinstance(deps, list):
            record["dependencies"] = [
                resolve(d, f"{where}: dependencies[{i}]") if isinstance(d, str) else d
                for i, d in enumerate(deps)
            ]
        task = _validate(record, where)
        if versions and task.version <= versions[-1].version:
            raise InvalidInput(f"{where}: versions must increase, oldest first.")
        versions.append(task)
    return versions


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
    partial: bool = False,
) -> ImportReport:
    """Create or update many tasks from JSONL (one task a line, as ``task show --json``, or as
    little as ``{"goal": "..."}``); see ``import_records`` for what is checked and written."""

    def rows() -> Iterator[tuple[int, dict[str, Any] | InvalidInput]]:
        for lineno, text in enumerate(lines, 1):
            if not text.strip():
                continue
            try:
                yield lineno, parse_json_line(text, lineno)
            except InvalidInput as exc:
                if not partial:
                    raise
                yield lineno, exc

    return import_records(ledger, rows(), actor=actor, progress=progress, partial=partial)


def import_records(
    ledger: Ledger,
    rows: Iterable[tuple[int, dict[str, Any] | InvalidInput]],
    *,
    actor: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    partial: bool = False,
) -> ImportReport:
    """Create or update many tasks, one JSON object per numbered line.

    A line is the full export form (every field, entry ids, clocks; it round-trips exactly) or any
    part of it a person would write: ``goal`` alone is a task; notes, decisions and evidence may be
    strings or ``{"text": ...}``; ``parent`` and ``dependencies`` may name another line of the file
    (by its ``ref``, or an ``id`` that is not a task id) or a task of the ledger (any unique
    prefix). Errors name the line and the field.

    Every line is checked before anything is written, so bad input changes nothing. With
    ``partial``, a line that fails is skipped instead (and so is every line whose parent or
    dependency is a skipped line), each with its reason in ``report.skipped``; a cycle still
    refuses the whole file. A line without ``id`` creates a task. A line whose task is new
    writes its ``history`` and then the record itself, keeping every version's content. A line
    for a task that exists writes the versions after the current one when its history contains
    the current version unchanged, and otherwise one new version carrying what the line changed
    since the version it was read at (its ``version``, when this task's history has it; else the
    line's whole content). A line that changes nothing writes nothing. Gates are not re-judged
    (they judged each version when it was made); what is checked: the record validates, parents
    and dependencies exist and make no cycle.

    All of it happens under one hold of the writer lock: objects go into one pack file, then each
    ref moves by compare-and-swap, then the index takes the records it was handed.
    """

    started = time.perf_counter()
    report = ImportReport()
    at = now_iso()
    stamp = HybridClock.tick([])
    author = ledger.author(actor)
    skipped: dict[int, str] = {}

    def skip(lineno: int, exc: InvalidInput | TaskNotFound) -> None:
        if not partial:
            raise exc
        skipped[lineno] = exc.message

    prepared: list[_Line] = []
    owner_of: dict[str, int] = {}  # task id -> line
    named: dict[str, tuple[str, int]] = {}  # file-local name -> (task id, line)
    for lineno, row in rows:
        if isinstance(row, InvalidInput):
            skip(lineno, row)
            continue
        try:
            line = _prepare(row, lineno, at, author[0], stamp)
            if line.task_id in owner_of:
                raise InvalidInput(
                    f"line {lineno}: task {line.task_id} appears twice (line "
                    f"{owner_of[line.task_id]} too)."
                )
            for name in line.names:
                if name in named:
                    raise InvalidInput(
                        f"line {lineno}: the name {name!r} is line {named[name][1]}'s too."
                    )
        except InvalidInput as exc:
            skip(lineno, exc)
            continue
        owner_of[line.task_id] = lineno
        for name in line.names:
            named[name] = (line.task_id, lineno)
        prepared.append(line)

    def resolve(value: str, where: str) -> str:
        if value in named:
            return named[value][0]
        if ID_PATTERN.match(value):
            return value  # a task of the file or the ledger; checked below
        try:
            if len(value) < MIN_SHORT_ID:  # "y" is a name mistyped, not a task that starts so
                raise LedgerError("too short")
            return ledger.resolve(value)
        except LedgerError:
            raise InvalidInput(
                f"{where}: {value!r} is neither a ref or id of this file nor a task of the ledger."
            ) from None

    parsed: list[list[Task]] = []
    for line in prepared:
        try:
            parsed.append(_versions(line, resolve))
        except InvalidInput as exc:
            skip(line.lineno, exc)
    idx = ledger.index()
    store = ledger.store
    with store.lock():
        idx.refresh()
        graph = idx.graph_rows()
        # Lines that lean on a skipped line (or on a task in neither place) go too, until none do.
        while True:
            gone = {line.task_id for line in prepared if line.lineno in skipped}
            known_ids = set(graph) | {v[-1].id for v in parsed} - gone
            kept: list[list[Task]] = []
            for versions in parsed:
                task = versions[-1]
                lineno = owner_of[task.id]
                refs = [*(v.parent for v in versions if v.parent), *task.dependencies]
                missing = next((r for r in refs if r not in known_ids), None)
                if missing is None:
                    kept.append(versions)
                    continue
                if missing in gone:
                    reason: InvalidInput | TaskNotFound = InvalidInput(
                        f"line {lineno}: refers to line {owner_of[missing]}, which was skipped."
                    )
                else:
                    reason = TaskNotFound(
                        f"line {lineno}: task {task.id} refers to {missing}, which is neither in "
                        f"the ledger nor in the file; import that task too, or remove the "
                        f"reference."
                    )
                skip(lineno, reason)
            if len(kept) == len(parsed):
                break
            parsed = kept
        report.skipped = sorted(skipped.items())
        total = len(parsed)
        seen = {v[-1].id for v in parsed}
        current = {t.id: t for t in idx.tasks_by_id(sorted(seen))}
        tips = ref_tips(ledger.path, TASKS_DIR)
        parents: dict[str, list[str]] = {k: [v[2]] if v[2] else [] for k, v in graph.items()}
        needs: dict[str, list[str]] = {k: list(v[3]) for k, v in graph.items()}
        for versions in parsed:
            task = versions[-1]
            parents[task.id] = [task.parent] if task.parent else []
            needs[task.id] = list(task.dependencies)
        for kind, edges in (("parents", parents), ("dependencies", needs)):
            cycle = _find_cycle(edges, seen)
            if cycle:
                raise GateRefused(
                    f"The imported {kind} make a cycle: {' → '.join(c[:6] for c in cycle)}; "
                    f"fix the file and import again.",
                    rule="no-parent-cycle" if kind == "parents" else "no-dependency-cycle",
                    field="parent" if kind == "parents" else "dependencies",
                )
        writer = BulkWriter(store)
        new_refs: set[str] = set()
        known: dict[str, tuple[Task, bytes]] = {}
        try:
            for done, versions in enumerate(parsed, 1):
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
                    files = record_files(task)
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
