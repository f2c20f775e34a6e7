"""Memory of individual facts: hints that help an agent, never the authority on a task.

The ledger says what a task *is*; memory keeps small facts learnt on the way (a decision and its
reason, a pitfall, a constraint, a preference, a todo, an accomplishment) so that an agent does not
repeat a mistake or re-derive a decision. Facts are offered as hints, labelled as hints, and a
missing or damaged memory never hides a task or fails a context call.

Storage
    One ref per fact, ``refs/gitledger/memory/<id>``; every change (remembered again, used,
    forgotten, restored) is a commit whose tree holds ``FORMAT`` (``gitledger-fact 1``) and
    ``fact.json``. History, backup and sync work as for tasks, and a forgotten fact is a version,
    never a deletion, so ``memory restore ID`` brings it back.

Strength (a spacing curve in the spirit of Ebbinghaus)
    A fact's retention halves every ``stability`` days since it was last useful; each use doubles
    the stability (up to 2^12), and importance (1 … 5) scales it. ``strength = retention × (0.5 +
    importance / 10)``. Recall ranks by text relevance (SQLite FTS5, BM25) weighted by strength;
    a recalled fact is used, so recalling it makes it stronger.

Bounded
    ``capacity`` active facts (default 2,000, ``gitledger memory config capacity N``). Past it, the
    weakest active facts are forgotten (a version saying so, kept in history).

Deduplication
    A fact's fingerprint is its kind plus its text with case, punctuation and spacing folded.
    Remembering the same fact again reinforces the one there instead of adding a copy.

The derived index (``gitledger-memory.sqlite`` in the ledger's Git directory) is disposable and
kept current like the task index: a fingerprint of the ref directory, re-reading only facts whose
tip moved.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from .errors import (
    AmbiguousId,
    CorruptRecord,
    FactNotFound,
    InvalidInput,
    LedgerError,
)
from .gitstore import BulkWriter, RefMoved, ref_tips, refs_stamp
from .model import ID_PATTERN, FieldCheck, check_text, new_id, record_from_dict
from .redact import redact
from .refs import MEMORY_CONFIG_REF, MEMORY_DIR, MEMORY_PREFIX
from .text import one_line

if TYPE_CHECKING:
    from .ledger import Ledger

FACT_KINDS = ("decision", "pitfall", "constraint", "preference", "todo", "accomplishment")
FactKind = Literal["decision", "pitfall", "constraint", "preference", "todo", "accomplishment"]
CONFIG_REF = MEMORY_CONFIG_REF
_T = TypeVar("_T")
FORMAT_LINE = "gitledger-fact 1\n"
FACT_FILES = ("FORMAT", "fact.json")
INDEX_FILE = "gitledger-memory.sqlite"
# 4: the full-text index stems words (porter), so "deploy" finds "Deploys". An index file of an
# older schema is deleted and rebuilt from the refs when opened (``index.open_derived_db``).
SCHEMA_VERSION = 4
MAX_FACT_BYTES = 4096
DEFAULT_CAPACITY = 2000
BASE_STABILITY_DAYS = 3.0
DAY = 86400.0

Clock = Callable[[], float]


def _iso(ts: float) -> str:
    return (
        datetime.fromtimestamp(ts, timezone.utc)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def _ts(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def strength(importance: int, uses: int, last_used: float, now: float) -> float:
    """Retention on a spacing curve, scaled by importance (see the module docstring)."""
    stability = BASE_STABILITY_DAYS * (2 ** min(uses, 12)) * (importance / 3)
    idle_days = max(0.0, (now - last_used) / DAY)
    return float(0.5 ** (idle_days / stability) * (0.5 + importance / 10))


def fingerprint(kind: str, text: str) -> str:
    folded = " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())
    return hashlib.sha256(f"{kind}\n{folded}".encode()).hexdigest()[:32]


@dataclass(kw_only=True, slots=True)
class Fact:
    """One remembered fact, one version of it (a commit on ``refs/gitledger/memory/<id>``).

    Checked on construction like the task records (``model.FieldCheck``): strict JSON types.
    """

    id: str
    version: int
    kind: FactKind
    text: str
    tags: list[str] = field(default_factory=list)
    importance: int = 3
    source_task: str | None = None
    source_session: str | None = None
    source_commit: str | None = None
    created_at: str
    last_used_at: str
    uses: int = 0
    active: bool = True
    forgotten_reason: str | None = None
    fingerprint: str
    actor: str

    def __post_init__(self) -> None:
        check = FieldCheck()
        check.text("id", self.id, limit=256)
        check.integer("version", self.version, 1)
        if self.kind not in FACT_KINDS:
            check.fail("kind", f"{self.kind!r} is not one of {', '.join(FACT_KINDS)}")
        check.text("text", self.text, limit=MAX_FACT_BYTES)
        self.tags = check.items("tags", self.tags)
        for tag in self.tags:
            check.text("tags", tag, limit=256)
        check.integer("importance", self.importance, 1, 5)
        for name in ("source_task", "source_session", "source_commit", "forgotten_reason"):
            check.optional_text(name, getattr(self, name))
        for name in ("created_at", "last_used_at", "fingerprint", "actor"):
            check.text(name, getattr(self, name), limit=1024)
        check.integer("uses", self.uses, 0)
        if type(self.active) is not bool:
            check.fail("active", f"expected true or false, got {self.active!r}")

    @classmethod
    def from_dict(cls, raw: object, *, where: str = "") -> Fact:
        return record_from_dict(cls, raw, where)

    def replace(self, **changes: Any) -> Fact:
        """A copy with ``changes`` applied, checked like a new fact."""
        return dataclasses.replace(self, **changes)

    def to_json_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        out["tags"] = list(self.tags)
        return out

    def strength(self, now: float) -> float:
        return strength(self.importance, self.uses, _ts(self.last_used_at), now)

    def to_dict(self, now: float | None = None) -> dict[str, Any]:
        data = self.to_json_dict()
        if now is not None:
            data["strength"] = round(self.strength(now), 4)
        return data


@dataclass(frozen=True)
class Hit:
    fact: Fact
    score: float
    relevance: float
    strength: float

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.fact.to_dict(),
            "score": round(self.score, 4),
            "relevance": round(self.relevance, 4),
            "strength": round(self.strength, 4),
        }


def _encode(fact: Fact) -> bytes:
    return (json.dumps(fact.to_json_dict(), sort_keys=True, ensure_ascii=False) + "\n").encode()


def _to_row(fact: Fact) -> str:
    """A fact as the memory index stores it (compact JSON)."""
    return json.dumps(fact.to_json_dict(), ensure_ascii=False, separators=(",", ":"))


def _from_row(text: str) -> Fact:
    return Fact.from_dict(json.loads(text))


def _decode(data: bytes | None, where: str) -> Fact:
    if data is None:
        raise CorruptRecord(f"{where}: no fact.json")
    try:
        return Fact.from_dict(json.loads(data))
    except InvalidInput as exc:
        raise CorruptRecord(f"{where}: fact.json does not validate ({exc.message})") from exc
    except (ValueError, RecursionError) as exc:
        raise CorruptRecord(f"{where}: fact.json is not valid JSON ({exc})") from exc


def _clean_tags(tags: Iterable[str]) -> list[str]:
    out: list[str] = []
    for tag in tags:
        check_text(tag, "tag", limit=128)
        tag = tag.strip().lower()
        if not tag or any(ch.isspace() for ch in tag) or "," in tag:
            raise InvalidInput(f"A tag is one word without commas, not {tag!r}.")
        if tag not in out:
            out.append(tag)
    return out


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
            from .index import open_derived_db

            self._conn = open_derived_db(self.file, _SCHEMA, SCHEMA_VERSION, wal=True)
        return self._conn

    def delete(self) -> None:
        from .index import delete_derived_db

        if self._conn is not None:
            self._conn.close()
            self._conn = None
        delete_derived_db(self.file)

    def run(self, action: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``action`` on a current index; a damaged file is rebuilt once, silently."""
        from .index import run_current

        return run_current(
            action,
            connect=self._connect,
            refresh=self._refresh,
            reset=self.delete,
            failed=lambda exc: (
                f"The memory index at {self.file} failed ({exc}); delete it and retry."
            ),
            file=self.file,
        )

    def _refresh(self, conn: sqlite3.Connection) -> None:
        from .index import refs_changed, save_stamp, stamp_current, write_transaction

        stamp = refs_stamp(self.git_dir, MEMORY_DIR)
        encoded = stamp.encode()
        if stamp_current(conn, encoded):
            return
        with write_transaction(conn):
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
                    self.add(conn, _decode(files["fact.json"], name), tips[name])
                except LedgerError as exc:
                    conn.execute(
                        "INSERT OR REPLACE INTO problems VALUES (?, ?, ?)",
                        (name, tips[name], exc.message),
                    )
            save_stamp(conn, stamp)

    def wrote(self, written: list[tuple[Fact, str]], stamp_before: str) -> None:
        """Record writes (fact, new tip) this process just made under the writer lock.

        If the index was current before the write, the write is the only change since, so the
        row is updated in place and the new fingerprint stored: no rescan of the ref directory
        (0.3 s at 100,000 facts). Every gitledger writer does the same under the lock, so a
        second write within one file-system tick is recorded by its own writer. Otherwise the
        next read rescans as usual.
        """
        from .index import stamp_current, write_transaction

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
        old = _from_row(row[1])
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
                _ts(fact.last_used_at),
                _to_row(fact),
            ),
        )
        # Only active facts are searchable: recall then needs no join to filter, and FTS5 can
        # stop at the best-ranked rows (ORDER BY rank LIMIT) instead of ranking every match.
        if fact.active:
            conn.execute(
                "INSERT INTO fts(rowid, text, tags, kind) VALUES (?, ?, ?, ?)",
                (cur.lastrowid, fact.text, " ".join(fact.tags), fact.kind),
            )


class Memory:
    """Per-fact memory in a ledger. ``clock`` (seconds since the epoch) is injectable for tests."""

    def __init__(self, ledger: Ledger, *, clock: Clock | None = None) -> None:
        self.ledger = ledger
        self.store = ledger.store
        self.clock: Clock = clock or time.time
        self.index = MemoryIndex(ledger)

    # --- settings ---------------------------------------------------------------------------

    def config(self) -> dict[str, Any]:
        tip = self.store.tip(CONFIG_REF)
        data: dict[str, Any] = {"capacity": DEFAULT_CAPACITY}
        if tip is not None:
            raw = self.store.read_files(tip, ("config.json",))["config.json"]
            if raw:
                try:
                    data.update(json.loads(raw))
                except ValueError:
                    pass
        return data

    def set_capacity(self, capacity: int, *, actor: str | None = None) -> dict[str, Any]:
        if capacity < 1:
            raise InvalidInput("Capacity is the number of active facts to keep: 1 or more.")
        with self.store.lock():
            tip = self.store.tip(CONFIG_REF)
            data = {**self.config(), "capacity": capacity}
            body = (json.dumps(data, sort_keys=True) + "\n").encode()
            self.store.write(
                CONFIG_REF,
                {"config.json": body},
                f"memory config: capacity {capacity}\n",
                self.ledger.author(actor),
                [tip] if tip else [],
                tip,
            )
            evicted = self._evict(actor)
        return {**data, "evicted": [f.id for f in evicted]}

    # --- reading ----------------------------------------------------------------------------

    def _facts(self, sql: str, args: tuple[Any, ...] = ()) -> list[Fact]:
        rows = self.index.run(lambda conn: conn.execute(sql, args).fetchall())
        return [_from_row(r[0]) for r in rows]

    def resolve(self, prefix: str) -> str:
        wanted = prefix.strip().lower()
        if not wanted or not re.fullmatch(r"[0-9a-z]{1,20}", wanted):
            raise FactNotFound(
                f"'{prefix[:40]}' is not a fact id. List facts: gitledger memory list."
            )
        ids = [
            r[0]
            for r in self.index.run(
                lambda conn: conn.execute(
                    "SELECT id FROM facts WHERE id >= ? AND id < ? LIMIT 11",
                    (wanted, wanted + "\x7f"),
                ).fetchall()
            )
        ]
        if not ids:
            raise FactNotFound(
                f"No fact id starts with '{wanted}'. List facts: gitledger memory list."
            )
        if len(ids) > 1:
            raise AmbiguousId(wanted, ids)
        return str(ids[0])

    def get(self, fact_id: str) -> Fact:
        full = self.resolve(fact_id)
        tip = self.store.tip(MEMORY_PREFIX + full)
        if tip is None:
            raise FactNotFound(f"No fact {full}.")
        return _decode(self.store.read_files(tip, FACT_FILES)["fact.json"], MEMORY_PREFIX + full)

    def list_facts(
        self,
        *,
        active: bool | None = True,
        kind: str | None = None,
        limit: int | None = 50,
        offset: int = 0,
    ) -> list[Fact]:
        clauses: list[str] = []
        args: list[Any] = []
        if active is not None:
            clauses.append("active = ?")
            args.append(int(active))
        if kind is not None:
            _check_kind(kind)
            clauses.append("kind = ?")
            args.append(kind)
        where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
        facts = self._facts(f"SELECT record FROM facts {where}", tuple(args))
        now = self.clock()
        facts.sort(key=lambda f: (-f.strength(now), f.id))
        end = None if limit is None else offset + limit
        return facts[offset:end]

    def stats(self) -> dict[str, Any]:
        def run(conn: sqlite3.Connection) -> dict[str, Any]:
            by_kind = dict(
                conn.execute("SELECT kind, count(*) FROM facts WHERE active=1 GROUP BY kind")
            )
            active, total = conn.execute("SELECT sum(active), count(*) FROM facts").fetchone()
            problems = conn.execute("SELECT count(*) FROM problems").fetchone()[0]
            return {
                "active": active or 0,
                "forgotten": (total or 0) - (active or 0),
                "by_kind": {k: by_kind.get(k, 0) for k in FACT_KINDS},
                "unreadable": problems,
            }

        out: dict[str, Any] = self.index.run(run)
        out["capacity"] = self.config()["capacity"]
        return out

    def recall(
        self,
        query: str,
        k: int = 5,
        *,
        reinforce: bool = True,
        kind: str | None = None,
        actor: str | None = None,
    ) -> list[Hit]:
        """The ``k`` facts most worth reading for ``query``: relevance weighted by strength."""
        if k < 1:
            raise InvalidInput("Recall at least one fact (-k 1 or more).")
        if kind is not None:
            _check_kind(kind)
        from .index import plain_query

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

        rows = self.index.run(run)
        if not rows:
            return []
        now = self.clock()
        best = -min(r[4] for r in rows) or 1.0
        scored = []
        for rowid, importance, uses, last_used, rank in rows:
            relevance = (-rank) / best
            power = strength(importance, uses, last_used, now)
            scored.append((relevance * (0.4 + power), relevance, power, rowid))
        scored.sort(key=lambda item: (-item[0], item[3]))
        top = scored[:k]
        records = dict(
            self.index.run(
                lambda conn: conn.execute(
                    f"SELECT rowid, record FROM facts WHERE rowid IN ({','.join('?' * len(top))})",
                    [t[3] for t in top],
                ).fetchall()
            )
        )
        hits = [Hit(_from_row(records[t[3]]), t[0], t[1], t[2]) for t in top]
        if reinforce:
            used = self._use([h.fact for h in hits], actor)
            hits = [
                Hit(used.get(h.fact.id, h.fact), h.score, h.relevance, h.strength) for h in hits
            ]
        return hits

    def hints(self, query: str, k: int = 3) -> list[Fact]:
        """Facts to offer beside a task as hints; never raises (memory is optional)."""
        if (
            not (self.index.git_dir / MEMORY_DIR).is_dir()
            and not (self.index.git_dir / "packed-refs").exists()
        ):
            return []  # nothing was ever remembered here: no index to open or create
        try:
            return [h.fact for h in self.recall(query, k, reinforce=False)]
        except (LedgerError, sqlite3.Error, OSError, ValueError):
            return []

    # --- writing ----------------------------------------------------------------------------

    def _write(self, fact: Fact, expected_tip: str | None, message: str, actor: str | None) -> Fact:
        """Commit one version of a fact (under the writer lock) and tell the index about it."""
        ref = MEMORY_PREFIX + fact.id
        files = fact_files(fact)
        parents = [expected_tip] if expected_tip else []
        before = refs_stamp(self.index.git_dir, MEMORY_DIR).encode()
        tip = self.store.write(
            ref, files, message, self.ledger.author(actor), parents, expected_tip
        )
        self.index.wrote([(fact, tip)], before)
        return fact

    def remember(
        self,
        text: str,
        *,
        kind: str = "decision",
        tags: Iterable[str] = (),
        importance: int = 3,
        task: str | None = None,
        session: str | None = None,
        commit: str | None = None,
        actor: str | None = None,
    ) -> tuple[Fact, bool]:
        """Remember a fact; returns it and whether it is new (False: an existing one reinforced)."""
        _check_kind(kind)
        check_text(text, "fact text", limit=MAX_FACT_BYTES)
        text = redact(text)  # facts travel with sync: no key or token is ever committed
        if not text.strip():
            raise InvalidInput("A fact needs some text.")
        if not 1 <= importance <= 5:
            raise InvalidInput(f"Importance is 1 (low) to 5 (high), not {importance}.")
        clean_tags = _clean_tags(tags)
        task_id = self.ledger.resolve(task) if task else None
        for value, name in ((session, "session"), (commit, "commit")):
            if value is not None:
                check_text(value, name, limit=256)
        name, _ = self.ledger.author(actor)
        fp = fingerprint(kind, text)
        with self.store.lock():
            existing = self._facts("SELECT record FROM facts WHERE fingerprint = ?", (fp,))
            now = self.clock()
            if existing:
                old = existing[0]
                tip = self.store.tip(MEMORY_PREFIX + old.id)
                merged = old.replace(
                    version=old.version + 1,
                    tags=old.tags + [t for t in clean_tags if t not in old.tags],
                    importance=max(old.importance, importance),
                    uses=old.uses + 1,
                    last_used_at=_iso(now),
                    active=True,
                    forgotten_reason=None,
                    actor=name,
                )
                self._write(merged, tip, f"remember again: {_short(text)}\n", actor)
                return merged, False
            fact = Fact(
                id=new_id(),
                version=1,
                kind=kind,  # type: ignore[arg-type]
                text=text,
                tags=clean_tags,
                importance=importance,
                source_task=task_id,
                source_session=session,
                source_commit=commit,
                created_at=_iso(now),
                last_used_at=_iso(now),
                fingerprint=fp,
                actor=name,
            )
            self._write(fact, None, f"remember {kind}: {_short(text)}\n", actor)
            self._evict(actor, keep={fact.id})
            return fact, True

    def _use(self, facts: list[Fact], actor: str | None) -> dict[str, Fact]:
        out: dict[str, Fact] = {}
        with self.store.lock():
            now = _iso(self.clock())
            for fact in facts:
                tip = self.store.tip(MEMORY_PREFIX + fact.id)
                if tip is None:
                    continue
                current = _decode(
                    self.store.read_files(tip, FACT_FILES)["fact.json"], MEMORY_PREFIX + fact.id
                )
                used = current.replace(
                    version=current.version + 1, uses=current.uses + 1, last_used_at=now
                )
                try:
                    out[fact.id] = self._write(used, tip, "recalled\n", actor)
                except RefMoved:
                    continue  # someone else touched it; a missed reinforcement is harmless
        return out

    def _set_active(
        self, fact_id: str, active: bool, reason: str | None, actor: str | None
    ) -> Fact:
        full = self.resolve(fact_id)
        with self.store.lock():
            tip = self.store.tip(MEMORY_PREFIX + full)
            if tip is None:
                raise FactNotFound(f"No fact {full}.")
            current = _decode(self.store.read_files(tip, FACT_FILES)["fact.json"], full)
            if current.active == active:
                return current
            update: dict[str, Any] = {
                "version": current.version + 1,
                "active": active,
                "forgotten_reason": reason,
            }
            if active:
                update["last_used_at"] = _iso(self.clock())
            changed = current.replace(**update)
            verb = "restore" if active else "forget"
            self._write(changed, tip, f"{verb}: {_short(current.text)}\n", actor)
            if active:
                self._evict(actor, keep={full})
            return changed

    def forget(self, fact_id: str, *, actor: str | None = None) -> Fact:
        """Take a fact out of the active set; it stays in history and can be restored."""
        return self._set_active(fact_id, False, "forgotten by hand", actor)

    def restore(self, fact_id: str, *, actor: str | None = None) -> Fact:
        return self._set_active(fact_id, True, None, actor)

    def _evict(self, actor: str | None, keep: set[str] | None = None) -> list[Fact]:
        """Forget the weakest active facts beyond capacity (called under the writer lock)."""
        capacity = int(self.config()["capacity"])
        active = self._facts("SELECT record FROM facts WHERE active = 1")
        excess = len(active) - capacity
        if excess <= 0:
            return []
        now = self.clock()
        candidates = sorted(
            (f for f in active if f.id not in (keep or set())),
            key=lambda f: (f.strength(now), f.last_used_at, f.id),
        )[:excess]
        evicted = []
        for fact in candidates:
            tip = self.store.tip(MEMORY_PREFIX + fact.id)
            gone = fact.replace(
                version=fact.version + 1,
                active=False,
                forgotten_reason=(
                    f"evicted at capacity {capacity} (strength {fact.strength(now):.3f})"
                ),
            )
            try:
                evicted.append(self._write(gone, tip, f"evict: {_short(fact.text)}\n", actor))
            except RefMoved:
                continue
        return evicted

    # --- bulk -------------------------------------------------------------------------------

    def import_facts(
        self, rows: Iterable[dict[str, Any]], *, actor: str | None = None
    ) -> dict[str, int]:
        """Remember many facts in one pack (one line each: text, kind, tags, importance).

        Every row is checked before anything is written: one bad row refuses the whole import.
        """
        name, email = self.ledger.author(actor)
        prepared: list[tuple[str, str, list[str], int]] = []
        for n, row in enumerate(rows, 1):
            if not isinstance(row, dict) or not isinstance(row.get("text"), str):
                raise InvalidInput(f"Line {n}: each line is a JSON object with a 'text' string.")
            kind = row.get("kind", "decision")
            importance = row.get("importance", 3)
            tags = row.get("tags", [])
            if not isinstance(kind, str) or kind not in FACT_KINDS:
                raise InvalidInput(f"Line {n}: kind is one of {', '.join(FACT_KINDS)}.")
            if not isinstance(importance, int) or not 1 <= importance <= 5:
                raise InvalidInput(f"Line {n}: importance is an integer from 1 to 5.")
            if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
                raise InvalidInput(f"Line {n}: tags is a list of strings.")
            try:
                check_text(row["text"], "fact text", limit=MAX_FACT_BYTES)
                clean = _clean_tags(tags)
            except InvalidInput as exc:
                raise InvalidInput(f"Line {n}: {exc.message}") from exc
            if not row["text"].strip():
                raise InvalidInput(f"Line {n}: a fact needs some text.")
            prepared.append((redact(row["text"]), kind, clean, importance))
        created = duplicates = 0
        with self.store.lock():
            seen = {
                r[0]
                for r in self.index.run(
                    lambda conn: conn.execute("SELECT fingerprint FROM facts").fetchall()
                )
            }
            before = refs_stamp(self.index.git_dir, MEMORY_DIR).encode()
            written: list[tuple[Fact, str]] = []
            writer = BulkWriter(self.store)
            try:
                now = self.clock()
                when = int(now)
                for text, kind, tags, importance in prepared:
                    fp = fingerprint(kind, text)
                    if fp in seen:
                        duplicates += 1
                        continue
                    seen.add(fp)
                    fact = Fact(
                        id=new_id(),
                        version=1,
                        kind=kind,  # type: ignore[arg-type]
                        text=text,
                        tags=tags,
                        importance=importance,
                        created_at=_iso(now),
                        last_used_at=_iso(now),
                        fingerprint=fp,
                        actor=name,
                    )
                    tree = writer.tree(
                        {
                            "FORMAT": writer.blob(FORMAT_LINE.encode()),
                            "fact.json": writer.blob(_encode(fact)),
                        }
                    )
                    commit = writer.commit(
                        tree, [], (name, email), when, f"remember {kind}: {_short(text)}\n"
                    )
                    writer.set_ref(MEMORY_PREFIX + fact.id, commit, None)
                    written.append((fact, commit))
                    created += 1
                moved = set(writer.finish())  # refs that could not be moved
                created -= len(moved)
            except BaseException:
                writer.abort()
                raise
            self.index.wrote(
                [(f, tip) for f, tip in written if MEMORY_PREFIX + f.id not in moved], before
            )
            self._evict(actor)
        return {"created": created, "duplicates": duplicates}

    def export(self) -> Iterator[dict[str, Any]]:
        for fact in self._facts("SELECT record FROM facts ORDER BY id"):
            yield fact.to_dict()

    # --- from fuse snapshots ----------------------------------------------------------------

    def absorb(
        self,
        facts: Iterable[tuple[str, str]],
        *,
        session: str | None = None,
        task: str | None = None,
        actor: str | None = None,
    ) -> dict[str, int]:
        """Remember (kind, text) pairs split out of a fuse snapshot.

        Only facts not yet known are written: a snapshot carries its predecessor's facts forward,
        and counting those again as uses would make every repeated compaction look like recall.
        """
        fresh: dict[str, tuple[str, str]] = {}
        for kind, text in facts:
            text = " ".join(text.split())[:MAX_FACT_BYTES]
            if text and kind in FACT_KINDS:
                fresh.setdefault(fingerprint(kind, text), (kind, text))
        if not fresh:
            return {"created": 0, "known": 0}
        marks = ",".join("?" * len(fresh))
        known = {
            r[0]
            for r in self.index.run(
                lambda conn: conn.execute(
                    f"SELECT fingerprint FROM facts WHERE fingerprint IN ({marks})", list(fresh)
                ).fetchall()
            )
        }
        task_id = None
        if task:
            try:
                task_id = self.ledger.resolve(task)
            except LedgerError:
                task_id = None
        created = 0
        for fp, (kind, text) in fresh.items():
            if fp not in known:
                self.remember(text, kind=kind, session=session, task=task_id, actor=actor)
                created += 1
        return {"created": created, "known": len(fresh) - created}


# Words too common to say what a fact is about; dropped from recall queries.
_STOPWORDS = frozenset(
    "a an and are as at be but by for from has have how i in into is it its of on or that the "
    "this to was we were what when where which who why will with you".split()
)


def fact_files(fact: Fact) -> dict[str, bytes]:
    """The tree of one fact version."""
    return {"FORMAT": FORMAT_LINE.encode(), "fact.json": _encode(fact)}


def read_fact(store: Any, commit: str, where: str) -> Fact:
    files = store.read_files(commit, FACT_FILES)
    if files["FORMAT"] != FORMAT_LINE.encode():
        raise CorruptRecord(f"{where}: unknown fact format")
    return _decode(files["fact.json"], where)


def merge_facts(base: Fact | None, ours: Fact, theirs: Fact) -> Fact:
    """One fact changed on two machines: keep every use and tag, never lose a restore.

    Uses add up (each side's uses since the common version), the latest use and the highest
    importance win, tags are a union; if one side forgot or restored the fact, that change wins,
    and if both changed it differently, the fact stays active (forgetting is the cheap one to redo).
    """
    base_uses = base.uses if base else 0
    uses = base_uses + max(0, ours.uses - base_uses) + max(0, theirs.uses - base_uses)
    active = ours.active
    if base is not None and ours.active == base.active:
        active = theirs.active
    elif base is not None and theirs.active != base.active and theirs.active != ours.active:
        active = True
    elif base is None and ours.active != theirs.active:
        active = True
    reason = None if active else (ours.forgotten_reason or theirs.forgotten_reason)
    return ours.replace(
        version=max(ours.version, theirs.version) + 1,
        uses=uses,
        last_used_at=max(ours.last_used_at, theirs.last_used_at),
        created_at=min(ours.created_at, theirs.created_at),
        importance=max(ours.importance, theirs.importance),
        tags=ours.tags + [t for t in theirs.tags if t not in ours.tags],
        active=active,
        forgotten_reason=reason,
        source_task=ours.source_task or theirs.source_task,
        source_session=ours.source_session or theirs.source_session,
    )


def _check_kind(kind: str) -> None:
    if kind not in FACT_KINDS:
        raise InvalidInput(f"Unknown kind '{kind[:30]}'. Use one of: {', '.join(FACT_KINDS)}.")


def _short(text: str, width: int = 60) -> str:
    return one_line(text, width)


def strength_curve(importance: int, uses: int, days: Iterable[float]) -> list[float]:
    """Strength after ``days`` idle, for docs and tests of the curve's shape."""
    return [strength(importance, uses, 0.0, d * DAY) for d in days]


__all__ = ["FACT_KINDS", "Fact", "Hit", "Memory", "fingerprint"]
