"""Recall: the disposable SQLite index of the memory refs and the ranking that reads it.

The index (``gitledger-memory.sqlite`` in the ledger's Git directory) is kept current like the
task index: a fingerprint of the ref directory, re-reading only facts whose tip moved; a damaged
file is rebuilt from the refs. Only active facts are in the full-text table. Recall ranks by text
relevance (FTS5, BM25) weighted by strength (``facts.strength``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import CorruptRecord, InvalidInput, LedgerError
from ..gitstore import ref_tips, refs_stamp
from ..model import ID_PATTERN
from ..refs import MEMORY_DIR, MEMORY_PREFIX
from .facts import (
    FACT_FILES,
    FORMAT_LINE,
    Fact,
    Hit,
    decode_fact,
    from_row,
    strength,
    timestamp,
    to_row,
)

if TYPE_CHECKING:
    from ..ledger import Ledger

_T = TypeVar("_T")
INDEX_FILE = "gitledger-memory.sqlite"
# 4: the full-text index stems words (porter), so "deploy" finds "Deploys". An index file of an
# older schema is deleted and rebuilt from the refs when opened (``index.open_derived_db``).
SCHEMA_VERSION = 4

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE facts(
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    tip TEXT NOT NULL,
    kind TEXT NOT NULL,
    active INTEGER NOT NULL,
    fingerprint TEXT NOT NULL,
    importance INTEGER NOT NULL,
    uses INTEGER NOT NULL,
    last_used REAL NOT NULL,
    record BLOB NOT NULL
);
CREATE INDEX facts_fp ON facts(fingerprint);
CREATE INDEX facts_active ON facts(active);
CREATE VIRTUAL TABLE fts USING fts5(text, tags, kind, content='', tokenize='porter unicode61');
CREATE TABLE problems(ref TEXT PRIMARY KEY, tip TEXT NOT NULL, message TEXT NOT NULL)
"""


class MemoryIndex:
    """The disposable SQLite view of the memory refs (see the module docstring)."""

    def __init__(self, ledger: Ledger) -> None:
        self.git_dir = Path(ledger.path)
        self.store = ledger.store
        self.file = self.git_dir / INDEX_FILE
        self._conn: sqlite3.Connection | None = None

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            from ..derived import open_derived_db

            self._conn = open_derived_db(self.file, _SCHEMA, SCHEMA_VERSION, wal=True)
        return self._conn

    def delete(self) -> None:
        from ..derived import delete_derived_db

        if self._conn is not None:
            self._conn.close()
            self._conn = None
        delete_derived_db(self.file)

    def run(self, action: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``action`` on a current index; a damaged file is rebuilt once, silently."""
        from ..derived import run_current

        return run_current(
            action,
            connect=self._connect,
            refresh=self._refresh,
            reset=self.delete,
            failed=lambda exc: (
                f"The memory index at {self.file} failed ({exc}); delete it and retry.",
            ),
            file=self.file,
        )

    def _refresh(self, conn: sqlite3.Connection) -> None:
        from ..derived import refresh_stale

        refresh_stale(conn, refs_stamp(self.git_dir, MEMORY_DIR), self._sync)

    def _sync(self, conn: sqlite3.Connection) -> None:
        """Read again the fact refs that moved since the cache was current, inside its write."""
        from ..derived import refs_changed

        tips = ref_tips(self.git_dir, MEMORY_DIR)
        indexed = {MEMORY_PREFIX + i: t for i, t in conn.execute("SELECT id, tip FROM facts")}
        problems = dict(conn.execute("SELECT ref, tip FROM problems"))
        moved, gone = refs_changed(tips, indexed, problems)
        for name in (*moved, *gone):
            self._remove(conn, name[len(MEMORY_PREFIX) :])
            conn.execute("DELETE FROM problems WHERE ref = ?", (name,))
        for name in moved:
            try:
                leaf = name[len(MEMORY_PREFIX) :]
                if not ID_PATTERN.match(leaf):
                    raise CorruptRecord("not a gitledger fact id")
                files = self.store.read_files(tips[name], FACT_FILES)
                if files["FORMAT"] != FORMAT_LINE.encode():
                    raise CorruptRecord("unknown fact format")
                self.add(conn, decode_fact(files["fact.json"], name), tips[name])
            except LedgerError as exc:
                conn.execute(
                    "INSERT OR REPLACE INTO problems VALUES (?, ?, ?)",
                    (name, tips[name], exc.message),
                )

    def wrote(self, written: list[tuple[Fact, str]], stamp_before: str) -> None:
        """Record writes (fact, new tip) this process just made under the writer lock.

        If the index was current before the write, the write is the only change since, so the
        row is updated in place and the new fingerprint stored: no rescan of the ref directory
        (0.3 s at 100,000 facts). Every gitledger writer does the same under the lock, so a
        second write within one file-system tick is recorded by its own writer. Otherwise the
        next read rescans as usual.
        """
        from ..derived import stamp_current, write_transaction

        try:
            conn = self._connect()
            with write_transaction(conn):
                current = stamp_current(conn, stamp_before)
                for fact, tip in written:
                    self.add(conn, fact, tip)
                if current:
                    after = refs_stamp(self.git_dir, MEMORY_DIR).encode()
                    conn.executemany(
                        "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                        [("stamp", after), ("racy", "0")],
                    )
        except sqlite3.DatabaseError:
            self.delete()  # the next read rebuilds it from the refs

    @staticmethod
    def _remove(conn: sqlite3.Connection, fact_id: str) -> None:
        row = conn.execute("SELECT rowid, record FROM facts WHERE id = ?", (fact_id,)).fetchone()
        if row is None:
            return
        old = from_row(row[1])
        if old.active:
            conn.execute(
                "INSERT INTO fts(fts, rowid, text, tags, kind) VALUES ('delete', ?, ?, ?, ?)",
                (row[0], old.text, " ".join(old.tags), old.kind),
            )
        conn.execute("DELETE FROM facts WHERE rowid = ?", (row[0],))

    @staticmethod
    def add(conn: sqlite3.Connection, fact: Fact, tip: str) -> None:
        MemoryIndex._remove(conn, fact.id)
        cur = conn.execute(
            "INSERT INTO facts(id, tip, kind, active, fingerprint, importance, uses, last_used, "
            "record) VALUES (?,?,?,?,?,?,?,?,?)",
            (
                fact.id,
                tip,
                fact.kind,
                int(fact.active),
                fact.fingerprint,
                fact.importance,
                fact.uses,
                timestamp(fact.last_used_at),
                to_row(fact),
            ),
        )
        # Only active facts are searchable: recall then needs no join to filter, and FTS5 can
        # stop at the best-ranked rows (ORDER BY rank LIMIT) instead of ranking every match.
        if fact.active:
            conn.execute(
                "INSERT INTO fts(rowid, text, tags, kind) VALUES (?, ?, ?, ?)",
                (cur.lastrowid, fact.text, " ".join(fact.tags), fact.kind),
            )


# Words too common to say what a fact is about; dropped from recall queries.
_STOPWORDS = frozenset(
    "a an and are as at be but by for from has have how i in into is it its of on or that the "
    "this to was we were what when where which who why will with you".split()
)


def rank(index: MemoryIndex, query: str, k: int, *, kind: str | None, now: float) -> list[Hit]:
    """The ``k`` active facts most worth reading for ``query``: relevance weighted by strength.
    Raises InvalidInput when the query has no word to look for."""
    from ..index import plain_query

    match = plain_query(query)
    words = [w for w in (match or "").split() if w.strip('"').casefold() not in _STOPWORDS]
    if not words:
        raise InvalidInput("Recall needs at least one word to look for.")
    pool = max(50, k * 10)
    sql = (
        "SELECT f.rowid, f.importance, f.uses, f.last_used, m.rank FROM "
        "(SELECT rowid, bm25(fts, 1.0, 0.6, 0.3) AS rank FROM fts WHERE fts MATCH ? "
        "ORDER BY rank LIMIT ?) AS m JOIN facts f ON f.rowid = m.rowid"
    )
    only_kind = f' AND kind:"{kind}"' if kind else ""

    def run(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
        # Every word first: selective, so a few milliseconds at any size. If nothing has them
        # all, every word but one (still selective); only then any word, which ranks every
        # fact sharing a word (150 ms at 100,000 facts) but still finds a useful hint.
        tiers = [[" ".join(words)]]
        if len(words) > 2:
            tiers.append([" ".join(words[:i] + words[i + 1 :]) for i in range(len(words))])
        tiers.append([" OR ".join(words)])
        found: dict[int, tuple[Any, ...]] = {}
        for tier in tiers:
            for terms in tier:
                for row in conn.execute(sql, (f"({terms}){only_kind}", pool)):
                    if row[0] not in found or row[4] < found[row[0]][4]:
                        found[row[0]] = row
                if len(found) >= k:
                    break
            if found:
                break
        return list(found.values())

    rows = index.run(run)
    if not rows:
        return []
    best = -min(r[4] for r in rows) or 1.0
    scored = []
    for rowid, importance, uses, last_used, score in rows:
        relevance = (-score) / best
        power = strength(importance, uses, last_used, now)
        scored.append((relevance * (0.4 + power), relevance, power, rowid))
    scored.sort(key=lambda item: (-item[0], item[3]))
    top = scored[:k]
    records = dict(
        index.run(
            lambda conn: conn.execute(
                f"SELECT rowid, record FROM facts WHERE rowid IN ({','.join('?' * len(top))})",
                [t[3] for t in top],
            ).fetchall()
        )
    )
    return [Hit(from_row(records[t[3]]), t[0], t[1], t[2]) for t in top]


__all__ = ["INDEX_FILE", "SCHEMA_VERSION", "MemoryIndex", "rank"]
