"""``Memory``: per-fact memory in a ledger, one ref per fact (the package docstring says how).

Every write takes the ledger's writer lock, commits one version of a fact on its ref by
compare-and-swap and tells the index (``recall.MemoryIndex.wrote``), so the next read needs no
rescan. Reads go through the index; a fact's own ref is read where its newest version matters.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..errors import AmbiguousId, FactNotFound, InvalidInput, LedgerError, Step
from ..gitstore import RefMoved, refs_stamp
from ..model import check_text
from ..redact import redact
from ..refs import MEMORY_DIR, MEMORY_PREFIX
from . import config as _config
from . import intake
from .facts import (
    FACT_FILES,
    FACT_KINDS,
    MAX_FACT_BYTES,
    Clock,
    Fact,
    Hit,
    check_kind,
    clean_tags,
    decode_fact,
    fact_files,
    fingerprint,
    from_row,
    iso,
    new_fact,
    short,
)
from .recall import MemoryIndex, rank

if TYPE_CHECKING:
    from ..ledger import Ledger


class Memory:
    """Per-fact memory in a ledger. ``clock`` (seconds since the epoch) is injectable for tests."""

    def __init__(self, ledger: Ledger, *, clock: Clock | None = None) -> None:
        self.ledger = ledger
        self.store = ledger.store
        self.clock: Clock = clock or time.time
        self.index = MemoryIndex(ledger)

    # --- settings ---------------------------------------------------------------------------

    def config(self) -> dict[str, Any]:
        return _config.read_config(self.store)

    def set_capacity(self, capacity: int, *, actor: str | None = None) -> dict[str, Any]:
        if capacity < 1:
            raise InvalidInput("Capacity is the number of active facts to keep: 1 or more.")
        with self.store.lock():
            data = _config.write_config(
                self.store,
                {"capacity": capacity},
                f"memory config: capacity {capacity}\n",
                self.ledger.author(actor),
            )
            evicted = self.evict(actor)
        return {**data, "evicted": [f.id for f in evicted]}

    # --- reading ----------------------------------------------------------------------------

    def _facts(self, sql: str, args: tuple[Any, ...] = ()) -> list[Fact]:
        rows = self.index.run(lambda conn: conn.execute(sql, args).fetchall())
        return [from_row(r[0]) for r in rows]

    def resolve(self, prefix: str) -> str:
        wanted = prefix.strip().lower()
        if not wanted or not re.fullmatch(r"[0-9a-z]{1,20}", wanted):
            raise FactNotFound(
                f"'{prefix[:40]}' is not a fact id. List facts with ", Step("memory list"), "."
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
                f"No fact id starts with '{wanted}'. List facts with ", Step("memory list"), "."
            )
        if len(ids) > 1:
            raise AmbiguousId(wanted, ids)
        return str(ids[0])

    def get(self, fact_id: str) -> Fact:
        full = self.resolve(fact_id)
        tip = self.store.tip(MEMORY_PREFIX + full)
        if tip is None:
            raise FactNotFound(f"No fact {full}.")
        return decode_fact(
            self.store.read_files(tip, FACT_FILES)["fact.json"], MEMORY_PREFIX + full
        )

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
            check_kind(kind)
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
            check_kind(kind)
        hits = rank(self.index, query, k, kind=kind, now=self.clock())
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
        check_kind(kind)
        check_text(text, "fact text", limit=MAX_FACT_BYTES)
        text = redact(text)  # facts travel with sync: no key or token is ever committed
        if not text.strip():
            raise InvalidInput("A fact needs some text.")
        if not 1 <= importance <= 5:
            raise InvalidInput(f"Importance is 1 (low) to 5 (high), not {importance}.")
        tags_clean = clean_tags(tags)
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
                    tags=old.tags + [t for t in tags_clean if t not in old.tags],
                    importance=max(old.importance, importance),
                    uses=old.uses + 1,
                    last_used_at=iso(now),
                    active=True,
                    forgotten_reason=None,
                    actor=name,
                )
                self._write(merged, tip, f"remember again: {short(text)}\n", actor)
                return merged, False
            fact = new_fact(
                kind,
                text,
                tags=tags_clean,
                importance=importance,
                now=now,
                actor=name,
                task=task_id,
                session=session,
                commit=commit,
            )
            self._write(fact, None, f"remember {kind}: {short(text)}\n", actor)
            self.evict(actor, keep={fact.id})
            return fact, True

    def _use(self, facts: list[Fact], actor: str | None) -> dict[str, Fact]:
        out: dict[str, Fact] = {}
        with self.store.lock():
            now = iso(self.clock())
            for fact in facts:
                tip = self.store.tip(MEMORY_PREFIX + fact.id)
                if tip is None:
                    continue
                current = decode_fact(
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
            current = decode_fact(self.store.read_files(tip, FACT_FILES)["fact.json"], full)
            if current.active == active:
                return current
            update: dict[str, Any] = {
                "version": current.version + 1,
                "active": active,
                "forgotten_reason": reason,
            }
            if active:
                update["last_used_at"] = iso(self.clock())
            changed = current.replace(**update)
            verb = "restore" if active else "forget"
            self._write(changed, tip, f"{verb}: {short(current.text)}\n", actor)
            if active:
                self.evict(actor, keep={full})
            return changed

    def forget(self, fact_id: str, *, actor: str | None = None) -> Fact:
        """Take a fact out of the active set; it stays in history and can be restored."""
        return self._set_active(fact_id, False, "forgotten by hand", actor)

    def restore(self, fact_id: str, *, actor: str | None = None) -> Fact:
        return self._set_active(fact_id, True, None, actor)

    def evict(self, actor: str | None, keep: set[str] | None = None) -> list[Fact]:
        """Forget the weakest active facts beyond capacity. Call it holding the writer lock."""
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
                evicted.append(self._write(gone, tip, f"evict: {short(fact.text)}\n", actor))
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
        return intake.import_facts(self, rows, actor=actor)

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
        """Remember (kind, text) pairs split out of a fuse snapshot (new facts only)."""
        return intake.absorb(self, facts, session=session, task=task, actor=actor)


__all__ = ["Memory"]
