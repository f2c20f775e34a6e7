"""The task index's schema: its tables, and how one task version becomes rows in them.

``index.py`` keeps the index current and answers the queries; this module says what the tables
are (``SCHEMA``, at ``SCHEMA_VERSION``: an index of another version is built again) and is the one
place that writes or reads a task's rows:

``tasks``
    one row per readable task: the columns the queries filter and sort on, ``waiting`` (how many
    dependencies are not done), ``held_at`` (a claim's last write by its holder) and the record
    itself, zlib-compressed (``decode_rows`` reads it back). Partial indexes hold the ready queue
    in its order (``tasks_ready``, ``tasks_active``).
``deps``, ``labels``
    a task's dependencies and labels, one row each, so a filter or a recount is a join.
``problems``
    task refs that could not be read, with the reason, so listings can say what they skipped.
``fts``
    the FTS5 table over the task's text (``FTS_COLUMNS``, with their BM25 weights), its rowid the
    task row's.
``meta``
    the schema version and the refs' fingerprint (``derived.py``).

``insert_tasks``, ``remove_tasks`` and ``recount_waiting`` run inside the caller's transaction.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Iterable

from .model import Task, decode_record
from .refs import TASKS_PREFIX

# 2: rollback journal instead of WAL; 3: records zlib-compressed; 4: (id, tip) covering index;
# 5: held_at (a claim's last write by its holder), so the ready queue finds lapsed claims;
# 6: active tasks indexed in ready order (tasks_active), not by held_at
SCHEMA_VERSION = 6

# FTS columns in order, with their BM25 weights: a word in the goal counts ten times one in a note.
FTS_COLUMNS: tuple[tuple[str, float], ...] = (
    ("goal", 10.0),
    ("criteria", 4.0),
    ("next", 3.0),
    ("blocker", 2.0),
    ("decisions", 2.0),
    ("evidence", 1.5),
    ("notes", 1.0),
    ("owner", 3.0),
    ("labels", 5.0),
)

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tasks(
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    tip TEXT NOT NULL,
    version INTEGER NOT NULL,
    status TEXT NOT NULL,
    priority INTEGER NOT NULL,
    owner TEXT,
    parent TEXT,
    blocked_by_text INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    goal TEXT NOT NULL,
    waiting INTEGER NOT NULL DEFAULT 0,
    held_at TEXT,
    record BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_tip ON tasks(id, tip);
CREATE INDEX IF NOT EXISTS tasks_updated ON tasks(updated_at, id);
CREATE INDEX IF NOT EXISTS tasks_status_updated ON tasks(status, updated_at, id);
CREATE INDEX IF NOT EXISTS tasks_parent ON tasks(parent, created_at, id);
CREATE INDEX IF NOT EXISTS tasks_owner ON tasks(owner);
CREATE INDEX IF NOT EXISTS tasks_ready ON tasks(priority, created_at, id)
    WHERE status = 'open' AND blocked_by_text = 0 AND waiting = 0;
CREATE INDEX IF NOT EXISTS tasks_active ON tasks(priority, created_at, id) WHERE status = 'active';
CREATE TABLE IF NOT EXISTS deps(
    task_id TEXT NOT NULL, dep_id TEXT NOT NULL, PRIMARY KEY(task_id, dep_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS deps_dep ON deps(dep_id);
CREATE TABLE IF NOT EXISTS labels(
    label TEXT NOT NULL, task_id TEXT NOT NULL, PRIMARY KEY(label, task_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS labels_task ON labels(task_id);
CREATE TABLE IF NOT EXISTS problems(ref TEXT PRIMARY KEY, tip TEXT NOT NULL, message TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    {", ".join(name for name, _ in FTS_COLUMNS)},
    tokenize = "unicode61 remove_diacritics 2",
    prefix = '2 3'
);
"""


def fts_row(task: Task) -> tuple[str, ...]:
    """A task's text, one value per ``FTS_COLUMNS`` column."""
    return (
        task.goal,
        task.criteria,
        task.next or "",
        task.blocker or "",
        "\n".join(e.text for e in task.decisions),
        "\n".join(e.text for e in task.evidence),
        "\n".join(e.text for e in task.notes),
        task.owner or "",
        " ".join(task.labels),
    )


def decode_row(task_id: str, record: bytes) -> Task:
    """The task of one row of the ``tasks`` table, from its id and ``record``."""
    return decode_record(zlib.decompress(record), where=TASKS_PREFIX + task_id)


def decode_rows(rows: Iterable[tuple[str, bytes]]) -> list[Task]:
    """The tasks of ``(id, record)`` rows of the ``tasks`` table."""
    return [decode_row(task_id, record) for task_id, record in rows]


def temp_ids(conn: sqlite3.Connection, table: str, ids: Iterable[str]) -> None:
    """``ids`` as the rows of the temporary table ``table`` (one column, ``id``): no limit on how
    many a statement may then join against, as there is on bound parameters."""
    conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS {table}(id TEXT PRIMARY KEY)")
    conn.execute(f"DELETE FROM temp.{table}")
    conn.executemany(f"INSERT OR IGNORE INTO temp.{table}(id) VALUES (?)", [(i,) for i in ids])


def remove_tasks(conn: sqlite3.Connection, ids: set[str]) -> None:
    """Every row of the tasks ``ids``, in every table but ``problems``."""
    if not ids:
        return
    temp_ids(conn, "gone", ids)
    conn.execute(
        "DELETE FROM fts WHERE rowid IN (SELECT t.rowid FROM tasks t JOIN temp.gone g "
        "ON t.id = g.id)"
    )
    conn.execute("DELETE FROM tasks WHERE id IN (SELECT id FROM temp.gone)")
    conn.execute("DELETE FROM deps WHERE task_id IN (SELECT id FROM temp.gone)")
    conn.execute("DELETE FROM labels WHERE task_id IN (SELECT id FROM temp.gone)")


def insert_tasks(conn: sqlite3.Connection, rows: list[tuple[str, str, Task, bytes]]) -> None:
    """Rows for each ``(id, tip, task, record bytes)`` (removed first: ``remove_tasks``);
    ``waiting`` starts at 0 until ``recount_waiting``."""
    if not rows:
        return
    start = (conn.execute("SELECT max(rowid) FROM tasks").fetchone()[0] or 0) + 1
    conn.executemany(
        "INSERT INTO tasks(rowid, id, tip, version, status, priority, owner, parent, "
        "blocked_by_text, created_at, updated_at, goal, waiting, held_at, record) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)",
        [
            (
                start + n,
                task_id,
                tip,
                t.version,
                t.status,
                t.priority,
                t.owner,
                t.parent,
                1 if t.blocker else 0,
                t.created_at,
                t.updated_at,
                t.goal,
                t.held_at,
                zlib.compress(raw, 6),
            )
            for n, (task_id, tip, t, raw) in enumerate(rows)
        ],
    )
    conn.executemany(
        f"INSERT INTO fts(rowid, {', '.join(n for n, _ in FTS_COLUMNS)}) "
        f"VALUES (?{', ?' * len(FTS_COLUMNS)})",
        [(start + n, *fts_row(t)) for n, (_i, _tip, t, _raw) in enumerate(rows)],
    )
    conn.executemany(
        "INSERT OR IGNORE INTO deps(task_id, dep_id) VALUES (?, ?)",
        [(task_id, d) for task_id, _tip, t, _raw in rows for d in t.dependencies],
    )
    conn.executemany(
        "INSERT OR IGNORE INTO labels(label, task_id) VALUES (?, ?)",
        [(label, task_id) for task_id, _tip, t, _raw in rows for label in t.labels],
    )


def recount_waiting(conn: sqlite3.Connection, changed: set[str], *, everything: bool) -> None:
    """Recount ``waiting`` for the changed tasks and for every task that depends on one (or, with
    ``everything``, for every task: cheaper past a few thousand changed)."""
    count = (
        "(SELECT count(*) FROM deps d LEFT JOIN tasks t2 ON t2.id = d.dep_id "
        "WHERE d.task_id = tasks.id AND (t2.status IS NULL OR t2.status != 'done'))"
    )
    if everything:
        conn.execute(f"UPDATE tasks SET waiting = {count}")
        return
    if not changed:
        return
    temp_ids(conn, "touched", changed)
    conn.execute(
        "INSERT OR IGNORE INTO temp.touched(id) SELECT task_id FROM deps "
        "WHERE dep_id IN (SELECT id FROM temp.touched)"
    )
    conn.execute(f"UPDATE tasks SET waiting = {count} WHERE id IN (SELECT id FROM temp.touched)")


__all__ = [
    "FTS_COLUMNS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "decode_row",
    "decode_rows",
    "fts_row",
    "insert_tasks",
    "recount_waiting",
    "remove_tasks",
    "temp_ids",
]
