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
    ``capacity`` active facts (default 2,000, ``gitledger memory config --capacity N``). Past it, the
    weakest active facts are forgotten (a version saying so, kept in history).

Deduplication
    A fact's fingerprint is its kind plus its text with case, punctuation and spacing folded.
    Remembering the same fact again reinforces the one there instead of adding a copy.

The derived index (``gitledger-memory.sqlite`` in the ledger's Git directory) is disposable and
kept current like the task index: a fingerprint of the ref directory, re-reading only facts whose
tip moved.

The package, one concept a module:

- ``facts``: the fact record, its strength, fingerprint, stored form and three-way merge.
- ``recall``: the SQLite index of the memory refs and the ranking recall reads from it.
- ``store``: ``Memory``, every read and write of facts in a ledger.
- ``intake``: facts arriving in bulk (``memory import``) and from fuse snapshots (``absorb``).
- ``config``: memory's settings, a JSON document on a ref (``gitstore/documents.py``).
"""

from __future__ import annotations

from ..refs import MEMORY_PREFIX
from .config import CONFIG_REF, DEFAULT_CAPACITY
from .facts import (
    DAY,
    FACT_KINDS,
    MAX_FACT_BYTES,
    Fact,
    FactKind,
    Hit,
    fact_files,
    fingerprint,
    merge_facts,
    read_fact,
    strength,
    strength_curve,
)
from .recall import INDEX_FILE, SCHEMA_VERSION, MemoryIndex
from .store import Memory

__all__ = [
    "CONFIG_REF",
    "DAY",
    "DEFAULT_CAPACITY",
    "FACT_KINDS",
    "INDEX_FILE",
    "MAX_FACT_BYTES",
    "MEMORY_PREFIX",
    "SCHEMA_VERSION",
    "Fact",
    "FactKind",
    "Hit",
    "Memory",
    "MemoryIndex",
    "fact_files",
    "fingerprint",
    "merge_facts",
    "read_fact",
    "strength",
    "strength_curve",
]
