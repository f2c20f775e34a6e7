"""Disposable SQLite caches of refs: what the task index (``index.py``) and memory's index
(``memory/recall.py``) share, written once.

A derived cache is never the truth: a file that is missing, damaged or of another schema is
deleted and built again (``open_derived_db``, ``is_corrupt``); ``None`` as its file keeps it in
this process's memory. It is kept current without a daemon by a fingerprint of the ref
directories (``gitstore.refs_stamp``): ``stamp_current`` says whether the stored one still holds
and was not taken in the racy window (``racy``: two changes in one tick of the file system's
clock leave one mtime), ``save_stamp`` stores it, ``refs_changed`` says which refs to read again
after it moved, ``refresh_stale`` is the refresh around them, and ``run_current`` runs a query
on a cache brought current first, rebuilding a damaged one once and wording a full disk or a
read-only ledger. ``write_transaction`` is ``BEGIN IMMEDIATE`` ... ``COMMIT``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from .errors import (
    Step,
    StorageError,
)
from .gitstore import RefsStamp, disk_trouble

_T = TypeVar("_T")
# How long after a ref directory changed its fingerprint cannot be trusted: a second change within
# one tick of the file system's clock leaves the mtime as it was. Jiffy-grained file systems
# (ext4, xfs, btrfs, tmpfs) tick in at most 10 ms; ones that keep whole seconds (FAT, HFS+, some
# network mounts) show it as an mtime with no fraction, and get two seconds.
RACY_FINE_NS = 50_000_000
RACY_COARSE_NS = 2_000_000_000

_CORRUPT_HINTS = ("not a database", "malformed", "no such table", "no such column", "corrupt")


class Corrupt(Exception):
    pass


def open_derived_db(
    file: Path | None, schema: str, version: int, *, wal: bool = False, threads: bool = False
) -> sqlite3.Connection:
    """A connection to a disposable SQLite cache of refs, created with ``schema`` if missing;
    ``file`` None is a cache in this process's memory (same schema, same code).

    A file that is not a database, is damaged, or has another schema version is deleted (with its
    journal files) and made again, once; anything else (a lock held too long) is raised.
    """
    for attempt in range(2):
        conn = sqlite3.connect(
            ":memory:" if file is None else file,
            timeout=60,
            isolation_level=None,
            check_same_thread=not threads,
        )
        try:
            if wal and file is not None:
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA temp_store=MEMORY")
            row = None
            try:
                row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            except sqlite3.OperationalError as exc:
                if "no such table" not in str(exc):
                    raise
            if row is None:
                with write_transaction(conn):
                    # Another process may have created it while this one waited for the lock.
                    if not conn.execute(
                        "SELECT 1 FROM sqlite_master WHERE name = 'meta'"
                    ).fetchone():
                        for statement in schema.split(";\n"):
                            if statement.strip():
                                conn.execute(statement)
                    conn.execute(
                        "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema', ?)",
                        (str(version),),
                    )
            elif str(row[0]) != str(version):
                raise Corrupt(f"schema {row[0]}")
            return conn
        except (sqlite3.DatabaseError, Corrupt, ValueError) as exc:
            conn.close()
            if isinstance(exc, sqlite3.DatabaseError) and not is_corrupt(exc):
                raise
            if attempt or file is None:
                raise
            delete_derived_db(file)
    raise AssertionError("unreachable")  # pragma: no cover


def delete_derived_db(file: Path | None) -> None:
    if file is None:
        return  # in memory: closing the connection was the deletion
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{file}{suffix}").unlink(missing_ok=True)


def is_corrupt(exc: sqlite3.DatabaseError) -> bool:
    """Whether an SQLite error means the file is damaged (rebuild it), not busy or locked."""
    if not isinstance(exc, sqlite3.OperationalError):
        return True  # DatabaseError proper: "file is not a database", "malformed" …
    text = str(exc).lower()
    return any(hint in text for hint in _CORRUPT_HINTS)


@contextlib.contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back on any exception (shared with memory's index)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def stamp_current(conn: sqlite3.Connection, encoded: str) -> bool:
    """Whether the fingerprint stored in ``meta`` is ``encoded`` and was taken outside the racy
    window (so no change in the same file-system tick can hide behind it)."""
    rows = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('stamp', 'racy')"))
    return rows.get("stamp") == encoded and rows.get("racy") == "0"


def refresh_stale(
    conn: sqlite3.Connection, stamp: RefsStamp, sync: Callable[[sqlite3.Connection], _T]
) -> _T | None:
    """Bring a cache current with the refs ``stamp`` fingerprints: nothing (None) while the stored
    fingerprint holds, checked again once the write lock is held (another process may have
    caught up meanwhile); else ``sync`` reads again what moved and the fingerprint is saved, in
    one transaction. The one refresh loop of the task index and memory's; returns what ``sync``
    returned."""
    encoded = stamp.encode()
    if stamp_current(conn, encoded):
        return None
    with write_transaction(conn):
        if stamp_current(conn, encoded):
            return None
        out = sync(conn)
        save_stamp(conn, stamp)
    return out


def run_current(
    action: Callable[[sqlite3.Connection], _T],
    *,
    connect: Callable[[], sqlite3.Connection],
    refresh: Callable[[sqlite3.Connection], object],
    reset: Callable[[], None],
    failed: Callable[[sqlite3.DatabaseError], tuple[str | Step, ...]],
    file: Path | None = None,
) -> _T:
    """Run ``action`` on a derived cache brought current first (``refresh``); a damaged file
    is deleted (``reset``) and rebuilt once, any other failure is a ``StorageError`` (``failed``
    gives its message parts, a next step as an ``errors.Step``). Both caches, the task index and
    memory's, run their queries through this."""
    for attempt in range(2):
        try:
            conn = connect()
            refresh(conn)
            return action(conn)
        except sqlite3.DatabaseError as exc:
            if "unable to open database" in str(exc):  # SQLite's words for a read-only folder
                exc = sqlite3.OperationalError(f"{exc}: permission denied or read-only")
            elif "disk i/o error" in str(exc).lower() and file is not None and _full(file):
                exc = sqlite3.OperationalError(f"{exc}: disk is full")
            trouble = disk_trouble(exc, "the ledger's cache")
            if trouble is not None:  # a full disk or a read-only ledger: nothing to delete
                first, *rest = trouble
                head = str(first)
                raise StorageError(head[:1].upper() + head[1:], *rest, ".") from exc
            if attempt or not is_corrupt(exc):
                raise StorageError(*failed(exc)) from exc
            reset()
    raise AssertionError("unreachable")  # pragma: no cover


def _full(file: Path) -> bool:
    """Whether the disk holding ``file`` has next to nothing left (SQLite says "disk I/O
    error" when a write of its journal finds no room)."""
    try:
        st = os.statvfs(file.parent)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < 256 * 1024


def save_stamp(conn: sqlite3.Connection, stamp: RefsStamp) -> None:
    """Store the fingerprint the cache is now current with, and whether it was taken inside the
    racy window (then the next read rescans: see ``stamp_current``)."""
    in_window = racy(stamp.newest_ns())
    conn.executemany(
        "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
        [("stamp", stamp.encode()), ("racy", "1" if in_window else "0")],
    )


def refs_changed(
    tips: dict[str, str], indexed: dict[str, str], problems: dict[str, str]
) -> tuple[list[str], list[str]]:
    """Which refs a cache must read again (``moved``: new or at another tip than the cache has,
    as a row or as a problem) and which it must drop (``gone``)."""
    moved = [n for n, t in tips.items() if indexed.get(n) != t and problems.get(n) != t]
    gone = [n for n in {*indexed, *problems} if n not in tips]
    return moved, gone


def racy(newest_ns: int) -> bool:
    """Whether a fingerprint whose newest mtime is ``newest_ns`` was taken too soon after it to
    be trusted (a change in the same file-system tick would not show)."""
    window = RACY_COARSE_NS if newest_ns % 1_000_000_000 == 0 else RACY_FINE_NS
    return time.time_ns() - newest_ns < window


__all__ = [
    "Corrupt",
    "RACY_COARSE_NS",
    "RACY_FINE_NS",
    "delete_derived_db",
    "is_corrupt",
    "open_derived_db",
    "racy",
    "refs_changed",
    "run_current",
    "save_stamp",
    "stamp_current",
    "write_transaction",
]
