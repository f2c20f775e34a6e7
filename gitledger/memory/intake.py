"""Facts arriving in bulk: ``memory import`` (one pack, every line checked first) and the facts
a fuse snapshot carries (``absorb``: only facts not yet known are written)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput, LedgerError
from ..gitstore import BulkWriter, refs_stamp
from ..model import check_text
from ..redact import redact
from ..refs import MEMORY_DIR, MEMORY_PREFIX
from .facts import (
    FACT_KINDS,
    MAX_FACT_BYTES,
    Fact,
    clean_tags,
    fact_files,
    fingerprint,
    new_fact,
    short,
)

if TYPE_CHECKING:
    from .store import Memory


def import_facts(
    memory: Memory, rows: Iterable[dict[str, Any]], *, actor: str | None = None
) -> dict[str, int]:
    """Remember many facts in one pack (one line each: text, kind, tags, importance).

    Every row is checked before anything is written: one bad row refuses the whole import.
    """
    name, email = memory.ledger.author(actor)
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
            clean = clean_tags(tags)
        except InvalidInput as exc:
            raise InvalidInput(f"Line {n}: {exc.message}") from exc
        if not row["text"].strip():
            raise InvalidInput(f"Line {n}: a fact needs some text.")
        prepared.append((redact(row["text"]), kind, clean, importance))
    created = duplicates = 0
    with memory.store.lock():
        seen = {
            r[0]
            for r in memory.index.run(
                lambda conn: conn.execute("SELECT fingerprint FROM facts").fetchall()
            )
        }
        before = refs_stamp(memory.index.git_dir, MEMORY_DIR).encode()
        written: list[tuple[Fact, str]] = []
        writer = BulkWriter(memory.store)
        try:
            now = memory.clock()
            when = int(now)
            for text, kind, tags, importance in prepared:
                fp = fingerprint(kind, text)
                if fp in seen:
                    duplicates += 1
                    continue
                seen.add(fp)
                fact = new_fact(kind, text, tags=tags, importance=importance, now=now, actor=name)
                tree = writer.tree({k: writer.blob(v) for k, v in fact_files(fact).items()})
                commit = writer.commit(
                    tree, [], (name, email), when, f"remember {kind}: {short(text)}\n"
                )
                writer.set_ref(MEMORY_PREFIX + fact.id, commit, None)
                written.append((fact, commit))
                created += 1
            moved = set(writer.finish())  # refs that could not be moved
            created -= len(moved)
        except BaseException:
            writer.abort()
            raise
        memory.index.wrote(
            [(f, tip) for f, tip in written if MEMORY_PREFIX + f.id not in moved], before
        )
        memory.evict(actor)
    return {"created": created, "duplicates": duplicates}


def absorb(
    memory: Memory,
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
        for r in memory.index.run(
            lambda conn: conn.execute(
                f"SELECT fingerprint FROM facts WHERE fingerprint IN ({marks})", list(fresh)
            ).fetchall()
        )
    }
    task_id = None
    if task:
        try:
            task_id = memory.ledger.resolve(task)
        except LedgerError:
            task_id = None
    created = 0
    for fp, (kind, text) in fresh.items():
        if fp not in known:
            memory.remember(text, kind=kind, session=session, task=task_id, actor=actor)
            created += 1
    return {"created": created, "known": len(fresh) - created}


__all__ = ["absorb", "import_facts"]
