"""The derived index: SQLite beside the refs, so listing, search and the ready queue stay fast.

The refs are the truth; this file is a cache of them that any command may throw away. It lives in
the ledger's Git directory (``gitledger-index.sqlite``), so it travels with nothing and is never
pushed. Each indexed task row carries the tip commit it was read from.

Keeping it current without a daemon
    Every query first calls ``refresh()``. Its fast path is three ``stat`` calls: Git moves a loose
    ref by renaming a lock file into the ref's directory, which changes the directory's mtime, and
    rewriting ``packed-refs`` changes that file. When both fingerprints equal the ones stored with
    the index, no task ref moved and nothing is read. When one differs (a write from another
    process, a plain ``git fetch``, a ``git pack-refs``), one pass reads the ref files directly
    (``gitstore.ref_tips``), compares each tip with the stored one, and re-reads only the tasks
    whose tip moved. Timestamps are coarse, so a fingerprint taken less than two seconds after
    the directory last changed is treated as untrustworthy ("racy", as Git calls the same problem
    in its own index) and the next command checks the tips again.

Blocked-ness, incrementally
    ``waiting`` counts a task's dependencies that are not done (a missing one counts as not done).
    When tasks change, only they and the tasks that depend on them are recounted, so marking the
    bottom of a long chain done touches one row above it, not the chain.

Search
    An FTS5 table over goal, criteria, next, blocker, decisions, evidence, notes, owner and
    labels, ranked by BM25 with the goal weighted highest. What matches: a task holding every
    word of the query as a whole word (``unicode61``: letters and digits, case and diacritics
    folded; ``pars`` does not find "parser", ``pars*`` does). The query is FTS5 syntax (``word*``
    prefixes, ``"a phrase"``, ``OR``, ``NOT``, ``goal:word``); a query FTS5 cannot parse is searched
    again as plain words, each one a phrase, never reported as a syntax error.

Disposable
    A missing file is built; a file that is not a database, is damaged or has another schema
    version is deleted and built again, silently. ``gitledger index rebuild`` does the same on
    demand. If the ledger's directory cannot be written (or ``GITLEDGER_NO_INDEX=1``), the same
    index is built in memory from the refs for the process (``open_index``): every query has
    this one implementation, with or without the file.

The tables, and how a task version becomes rows in them and is read back, are
``index_schema.py``'s; this module keeps them current and answers the queries. Import and export
live in ``transfer.py``, graphs in ``graph.py``; both read through this index.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .derived import (
    Corrupt,
    delete_derived_db,
    is_corrupt,
    open_derived_db,
    refresh_stale,
    refs_changed,
    run_current,
    stamp_current,
    write_transaction,
)
from .errors import (
    InvalidInput,
    LedgerError,
    Step,
    StorageError,
)
from .gitstore import ref_tips, refs_stamp
from .index_schema import (
    FTS_COLUMNS,
    SCHEMA,
    SCHEMA_VERSION,
    decode_row,
    decode_rows,
    insert_tasks,
    recount_waiting,
    remove_tasks,
    temp_ids,
)
from .model import ID_PATTERN, Task, read_record
from .refs import TASKS_DIR, TASKS_PREFIX

if TYPE_CHECKING:
    from .gitstore import GitStore

INDEX_FILE = "gitledger-index.sqlite"
_T = TypeVar("_T")
OPEN_STATUSES = ("open", "active", "blocked")


@dataclass(frozen=True)
class SearchHit:
    task: Task
    score: float | None
    snippet: str


@dataclass
class RefreshStats:
    checked: bool = False  # False: the fingerprint said nothing moved
    changed: int = 0
    removed: int = 0
    seconds: float = 0.0


@dataclass
class IndexStatus:
    path: str
    exists: bool
    schema: int
    size_bytes: int
    tasks: int
    problems: int
    current: bool

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class Index:
    """The derived index of one ledger. Cheap to construct; opens its file on first use.

    ``in_memory`` keeps it in this process's memory instead of ``gitledger-index.sqlite``: the
    same tables and the same queries, built from the refs on first use. A ledger whose directory
    cannot be written uses one (``open_index``), so every query has one implementation.
    """

    def __init__(self, store: GitStore, *, in_memory: bool = False) -> None:
        # The index needs only the store and its path. The Ledger holds its Index (see
        # Ledger.index()); nothing here points back at the ledger, so no registry or weak
        # reference is needed to let both go (one used to keep every Ledger alive: ~130 KB each).
        self.store = store
        self.git_dir = Path(store.path)
        self.file = self.git_dir / INDEX_FILE
        self.in_memory = in_memory
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.RLock()
        self.last_refresh = RefreshStats()

    # --- the file -----------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            # One connection per Index, shared by threads (the MCP server calls from worker
            # threads) under self._lock. A rollback journal, not WAL: most commands only read an
            # index that is already current, and opening a WAL database creates and removes two
            # files every time (13 ms measured here, against 0.2 ms).
            self._conn = open_derived_db(
                None if self.in_memory else self.file, SCHEMA, SCHEMA_VERSION, threads=True
            )
        return self._conn

    def _delete_files(self) -> None:
        if not self.in_memory:
            delete_derived_db(self.file)

    def close(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _guarded(self, action: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``action`` on a current index; a damaged file is deleted and rebuilt once."""
        with self._lock:
            return self._guarded_unlocked(action)

    def _guarded_unlocked(self, action: Callable[[sqlite3.Connection], _T]) -> _T:
        return run_current(
            action,
            connect=self._connect,
            refresh=self._refresh,
            reset=self._reset,
            failed=lambda exc: (
                f"The search index at {self.file} failed ({exc}). Rebuild it with ",
                Step("index rebuild"),
                ".",
            ),
            file=None if self.in_memory else self.file,
        )

    def _reset(self) -> None:
        self.close()
        self._delete_files()

    # --- keeping current ----------------------------------------------------------------------

    def refresh(self) -> RefreshStats:
        """Bring the index up to date with the refs (a few stat calls when nothing moved)."""
        return self._guarded(lambda conn: self.last_refresh)

    def _refresh(
        self, conn: sqlite3.Connection, known: dict[str, tuple[Task, bytes]] | None = None
    ) -> RefreshStats:
        started = time.perf_counter()
        stamp = refs_stamp(self.git_dir, TASKS_DIR)
        stats = refresh_stale(conn, stamp, lambda c: self._sync(c, known or {}))
        self.last_refresh = stats or RefreshStats()
        self.last_refresh.seconds = time.perf_counter() - started
        return self.last_refresh

    def ids_if_current(self, prefix: str, limit: int = -1) -> list[str] | None:
        """Ids starting with ``prefix`` if the index is known current without reading any ref;
        None otherwise (then listing the ref directory is cheaper than a refresh)."""
        with self._lock:
            return self._ids_if_current(prefix, limit)

    def _ids_if_current(self, prefix: str, limit: int) -> list[str] | None:
        try:
            conn = self._connect()
            if not self._stamp_ok(conn, refs_stamp(self.git_dir, TASKS_DIR).encode()):
                return None
            # Unreadable task refs count too, so a prefix naming one is ambiguous, not missing.
            sql = (
                "SELECT id FROM tasks WHERE id >= ?1 AND id < ?2 UNION "
                "SELECT substr(ref, ?3) FROM problems WHERE ref >= ?4 AND ref < ?5 "
                "ORDER BY 1 LIMIT ?6"
            )
            args = (
                prefix,
                prefix + "\x7f",
                len(TASKS_PREFIX) + 1,
                TASKS_PREFIX + prefix,
                TASKS_PREFIX + prefix + "\x7f",
                limit,
            )
            return [r[0] for r in conn.execute(sql, args) if ID_PATTERN.match(r[0])]
        except (sqlite3.Error, Corrupt, ValueError):
            return None

    @staticmethod
    def _stamp_ok(conn: sqlite3.Connection, encoded: str) -> bool:
        return stamp_current(conn, encoded)

    def _sync(self, conn: sqlite3.Connection, known: dict[str, tuple[Task, bytes]]) -> RefreshStats:
        stats = RefreshStats(checked=True)
        tips = ref_tips(self.git_dir, TASKS_DIR)
        indexed: dict[str, str] = {
            TASKS_PREFIX + task_id: tip
            for task_id, tip in conn.execute("SELECT id, tip FROM tasks")
        }
        problems: dict[str, str] = dict(conn.execute("SELECT ref, tip FROM problems"))
        moved, gone = refs_changed(tips, indexed, problems)
        if not moved and not gone:
            return stats
        rows: list[tuple[str, str, Task, bytes]] = []
        new_problems: list[tuple[str, str, str]] = []
        for name in moved:
            tip = tips[name]
            leaf = name[len(TASKS_PREFIX) :]
            if not ID_PATTERN.match(leaf):
                new_problems.append((name, tip, "not a gitledger task id"))
                continue
            try:
                if tip in known:
                    task, raw = known[tip]
                else:
                    task, raw = read_record(self.store, tip, name)
            except LedgerError as exc:
                new_problems.append((name, tip, exc.message))
                continue
            if task.id != leaf:
                new_problems.append((name, tip, f"record says id {task.id}"))
                continue
            rows.append((leaf, tip, task, raw))
        touched = {n[len(TASKS_PREFIX) :] for n in (*moved, *gone)}
        remove_tasks(conn, touched)
        conn.executemany("DELETE FROM problems WHERE ref = ?", [(n,) for n in (*moved, *gone)])
        conn.executemany("INSERT INTO problems(ref, tip, message) VALUES (?, ?, ?)", new_problems)
        insert_tasks(conn, rows)
        recount_waiting(conn, touched, everything=len(touched) > 5000)
        stats.changed = len(moved)
        stats.removed = len(gone)
        return stats

    def rebuild(self) -> RefreshStats:
        """Throw the index away and build it from the refs."""
        with self._lock:
            self.close()
            self._delete_files()
            return self._guarded(lambda conn: self.last_refresh)

    def wrote(self, task: Task, raw: bytes, tip: str, stamp_before: str) -> None:
        """Record a task version this process just wrote under the ledger's writer lock.

        If the index was current (and not racy) just before the write, the write is the only
        change since: its row is replaced and the new fingerprint stored, so the next list or
        search does not re-read every task ref (seconds at 100,000 tasks). Every gitledger writer
        does this under the same lock, so a second write within one file-system tick records
        itself too; only a foreign ref move (a plain ``git fetch``) in that same tick would wait
        for the next change to be seen. Otherwise nothing is done and the next read refreshes.
        """
        self.wrote_many([(task, raw, tip)], stamp_before)

    def wrote_many(self, written: Sequence[tuple[Task, bytes, str]], stamp_before: str) -> None:
        """``wrote`` for many tasks moved under one hold of the writer lock (sync, restore):
        the next command then costs what the change did, not a pass over every ref."""
        latest = {task.id: (task, raw, tip) for task, raw, tip in written}  # the last write wins
        if not latest:
            return
        ids = set(latest)
        with self._lock:
            try:
                conn = self._connect()
                with write_transaction(conn):
                    if not self._stamp_ok(conn, stamp_before):
                        return
                    remove_tasks(conn, ids)
                    conn.executemany(
                        "DELETE FROM problems WHERE ref = ?", [(TASKS_PREFIX + i,) for i in ids]
                    )
                    insert_tasks(conn, [(t.id, tip, t, raw) for t, raw, tip in latest.values()])
                    recount_waiting(conn, ids, everything=len(ids) > 5000)
                    after = refs_stamp(self.git_dir, TASKS_DIR).encode()
                    conn.executemany(
                        "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                        [("stamp", after), ("racy", "0")],
                    )
            except (sqlite3.Error, Corrupt, OSError, ValueError):
                return  # derived data: the next read refreshes or rebuilds it

    def absorb(self, known: dict[str, tuple[Task, bytes]]) -> RefreshStats:
        """Refresh, taking the records of tips in ``known`` as given (bulk import wrote them)."""
        with self._lock:
            return self._absorb_unlocked(known)

    def _absorb_unlocked(self, known: dict[str, tuple[Task, bytes]]) -> RefreshStats:
        def run(conn: sqlite3.Connection) -> RefreshStats:
            return self._refresh(conn, known)

        for attempt in range(2):
            try:
                conn = self._connect()
                # Force the full comparison: the fingerprint may not have moved yet this tick.
                conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('racy', '1')")
                return run(conn)
            except sqlite3.DatabaseError as exc:
                if not is_corrupt(exc) or attempt:
                    raise StorageError(f"The search index at {self.file} failed ({exc}).") from exc
                self.close()
                self._delete_files()
        raise AssertionError("unreachable")  # pragma: no cover

    def status(self) -> IndexStatus:
        exists = not self.in_memory and self.file.exists()

        def run(conn: sqlite3.Connection) -> IndexStatus:
            tasks = conn.execute("SELECT count(*) FROM tasks").fetchone()[0]
            problems = conn.execute("SELECT count(*) FROM problems").fetchone()[0]
            size = sum(
                Path(f"{self.file}{s}").stat().st_size
                for s in ("", "-wal")
                if exists and Path(f"{self.file}{s}").exists()
            )
            return IndexStatus(
                path=":memory:" if self.in_memory else str(self.file),
                exists=exists,
                schema=SCHEMA_VERSION,
                size_bytes=size,
                tasks=tasks,
                problems=problems,
                current=True,
            )

        return self._guarded(run)

    # --- queries ------------------------------------------------------------------------------

    def problems(self) -> list[tuple[str, str]]:
        return self._guarded(
            lambda conn: list(conn.execute("SELECT ref, message FROM problems ORDER BY ref"))
        )

    def all_tasks(self) -> list[Task]:
        return self._guarded(
            lambda conn: decode_rows(conn.execute("SELECT id, record FROM tasks ORDER BY id"))
        )

    def list_tasks(
        self,
        *,
        statuses: set[str] | None = None,
        owner: str | None = None,
        label: str | None = None,
        parent: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Task]:
        where, args = _filters(statuses, owner, label, parent)
        sql = (
            f"SELECT t.id, t.record FROM tasks t {where} "
            f"ORDER BY t.updated_at DESC, t.id DESC LIMIT ? OFFSET ?"
        )
        args += [-1 if limit is None else limit, offset]
        return self._guarded(lambda conn: decode_rows(conn.execute(sql, args)))

    def inbox(self, limit: int | None) -> list[Task]:
        def run(conn: sqlite3.Connection) -> list[Task]:
            out: list[tuple[str, bytes]] = []
            for status in ("active", "blocked", "open"):
                room = -1 if limit is None else limit - len(out)
                if room == 0:
                    break
                out += conn.execute(
                    "SELECT id, record FROM tasks WHERE status = ? "
                    "ORDER BY updated_at DESC, id DESC LIMIT ?",
                    (status, room),
                ).fetchall()
            return decode_rows(out)

        return self._guarded(run)

    def ready(self, limit: int | None, *, lapsed_before: str | None = None) -> list[Task]:
        """Open tasks with nothing in the way, and with ``lapsed_before`` (a ``held_at`` stamp)
        active ones whose claim's last write by its holder is older: highest priority first."""
        # a parent waits for its children (ledger.ready says the same without the index)
        childless = (
            "AND NOT EXISTS (SELECT 1 FROM tasks c WHERE c.parent = tasks.id "
            "AND c.status NOT IN ('done', 'cancelled')) "
        )
        sql = (
            "SELECT id, record FROM tasks INDEXED BY tasks_ready "
            "WHERE status = 'open' AND blocked_by_text = 0 AND waiting = 0 "
            f"{childless}ORDER BY priority, created_at, id LIMIT ?"
        )
        # An active task whose claim lapsed goes into the queue only ahead of the last open task
        # found: tasks_active is in queue order, so the scan stops at that bound (or at the
        # limit) however many active tasks there are. Ordering by held_at instead meant sorting
        # every lapsed claim: 50 ms at 100,000 tasks with 5,000 of them (benchmarks/index_scale.py).
        lapsed_sql = (
            "SELECT id, record FROM tasks INDEXED BY tasks_active "
            "WHERE status = 'active' AND held_at < ? AND blocked_by_text = 0 AND waiting = 0 "
            f"{childless}"
        )
        lim = -1 if limit is None else limit

        def run(conn: sqlite3.Connection) -> list[Task]:
            found = decode_rows(conn.execute(sql, (lim,)))
            if lapsed_before is None:
                return found
            args: list[Any] = [lapsed_before]
            where = lapsed_sql
            if limit is not None and len(found) >= limit and found:
                last = found[-1]
                where += "AND (priority, created_at, id) < (?, ?, ?) "
                args += [last.priority, last.created_at, last.id]
            found += decode_rows(
                conn.execute(where + "ORDER BY priority, created_at, id LIMIT ?", (*args, lim))
            )
            found.sort(key=lambda t: (t.priority, t.created_at, t.id))
            return found if limit is None else found[:limit]

        return self._guarded(run)

    def children(self, parent: str) -> list[Task]:
        sql = "SELECT id, record FROM tasks WHERE parent = ? ORDER BY created_at, id"
        return self._guarded(lambda conn: decode_rows(conn.execute(sql, (parent,))))

    def dependents(self, task_id: str) -> list[Task]:
        """The tasks that list ``task_id`` among their dependencies, oldest first."""
        sql = (
            "SELECT t.id, t.record FROM deps d JOIN tasks t ON t.id = d.task_id "
            "WHERE d.dep_id = ? ORDER BY t.created_at, t.id"
        )
        return self._guarded(lambda conn: decode_rows(conn.execute(sql, (task_id,))))

    def search(
        self,
        query: str,
        limit: int | None = 20,
        *,
        statuses: set[str] | None = None,
        owner: str | None = None,
        label: str | None = None,
        parent: str | None = None,
    ) -> list[SearchHit]:
        """Ranked hits for ``query`` (FTS5 syntax; anything it cannot parse is taken as words)."""
        if not query.strip():
            raise InvalidInput("Search for at least one word.")
        where, args = _filters(statuses, owner, label, parent)
        weights = ", ".join(str(w) for _, w in FTS_COLUMNS)
        # Two steps: rank every match cheaply (rowid and score only), then make snippets and read
        # records for the page alone. One query would build a snippet for every match.
        join = "JOIN tasks t ON t.rowid = fts.rowid " if where else ""
        rank_sql = (
            f"SELECT fts.rowid, bm25(fts, {weights}) AS score FROM fts {join}"
            f"{where + ' AND' if where else 'WHERE'} fts MATCH ? ORDER BY score, fts.rowid LIMIT ?"
        )
        lim = -1 if limit is None else limit

        def rank(conn: sqlite3.Connection, match: str) -> list[tuple[int, float]]:
            return conn.execute(rank_sql, [*args, match, lim]).fetchall()

        def run(conn: sqlite3.Connection) -> list[SearchHit]:
            match = query
            try:
                ranked = rank(conn, match)
            except sqlite3.OperationalError as exc:
                text = str(exc).lower()
                if "malformed" in text or "not a database" in text:
                    raise
                # An FTS5 syntax error ("nothing-here" reads as column "here"): take plain words.
                plain = plain_query(query)
                if plain is None:
                    return []
                match = plain
                ranked = rank(conn, match)
            if not ranked:
                return []
            # The page's rowids as one JSON parameter: no limit on how many a query may bind.
            page = json.dumps([r for r, _ in ranked])
            snippets = dict(
                conn.execute(
                    "SELECT rowid, snippet(fts, -1, '[', ']', '…', 12) FROM fts "
                    "WHERE fts MATCH ? AND rowid IN (SELECT value FROM json_each(?))",
                    (match, page),
                )
            )
            records = {
                rowid: (task_id, raw)
                for rowid, task_id, raw in conn.execute(
                    "SELECT rowid, id, record FROM tasks "
                    "WHERE rowid IN (SELECT value FROM json_each(?))",
                    (page,),
                )
            }
            return [
                SearchHit(
                    decode_row(*records[r]),
                    float(score),
                    " ".join(str(snippets.get(r, "")).split()),
                )
                for r, score in ranked
            ]

        return self._guarded(run)

    def tasks_by_id(self, ids: Sequence[str]) -> list[Task]:
        """The indexed tasks among ``ids`` (any number of them), in no particular order."""

        def run(conn: sqlite3.Connection) -> list[Task]:
            temp_ids(conn, "wanted", ids)
            return decode_rows(
                conn.execute("SELECT t.id, t.record FROM tasks t JOIN temp.wanted w ON t.id = w.id")
            )

        return self._guarded(run)

    def graph_rows(self) -> dict[str, tuple[str, str, str | None, list[str]]]:
        """Every task as (status, goal, parent, dependencies), for drawing."""

        def run(conn: sqlite3.Connection) -> dict[str, tuple[str, str, str | None, list[str]]]:
            deps: dict[str, list[str]] = {}
            for task_id, dep in conn.execute("SELECT task_id, dep_id FROM deps"):
                deps.setdefault(task_id, []).append(dep)
            return {
                task_id: (status, goal, parent, deps.get(task_id, []))
                for task_id, status, goal, parent in conn.execute(
                    "SELECT id, status, goal, parent FROM tasks"
                )
            }

        return self._guarded(run)


def _filters(
    statuses: set[str] | None, owner: str | None, label: str | None, parent: str | None
) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    args: list[Any] = []
    if statuses:
        clauses.append(f"t.status IN ({', '.join('?' * len(statuses))})")
        args += sorted(statuses)
    if owner is not None:
        clauses.append("t.owner = ?")
        args.append(owner)
    if label is not None:
        clauses.append("t.id IN (SELECT task_id FROM labels WHERE label = ?)")
        args.append(label)
    if parent is not None:
        clauses.append("t.parent = ?")
        args.append(parent)
    return ("WHERE " + " AND ".join(clauses) if clauses else ""), args


_WORDS = re.compile(r"\w+", re.UNICODE)


def plain_query(query: str) -> str | None:
    """``query`` as plain words, all required; a piece's trailing * still asks for a prefix.

    A bare AND, OR, NOT or NEAR was an operator the query failed to use, not a word to find."""
    parts = []
    for piece in query.split():
        if piece in ("AND", "OR", "NOT", "NEAR"):
            continue
        words = _WORDS.findall(piece)
        parts += [f'"{w}"' for w in words]
        if words and piece.endswith("*"):
            parts[-1] += "*"
    return " ".join(parts) or None


# --- opening ---------------------------------------------------------------------------------


def open_index(store: GitStore) -> Index:
    """The index of the ledger in ``store``: its file, or one in memory built from the refs
    when the file cannot be kept (a directory or file that cannot be written, or
    ``GITLEDGER_NO_INDEX=1``)."""
    if os.environ.get("GITLEDGER_NO_INDEX") == "1":
        return Index(store, in_memory=True)
    found = Index(store)
    try:
        if not os.access(found.git_dir, os.W_OK) or (
            found.file.exists() and not os.access(found.file, os.W_OK)
        ):
            return Index(store, in_memory=True)
        found._connect()
    except (sqlite3.Error, OSError):
        return Index(store, in_memory=True)
    return found


__all__ = [
    "FTS_COLUMNS",
    "INDEX_FILE",
    "Index",
    "IndexStatus",
    "OPEN_STATUSES",
    "RefreshStats",
    "SCHEMA_VERSION",
    "SearchHit",
    "open_index",
    "plain_query",
]
