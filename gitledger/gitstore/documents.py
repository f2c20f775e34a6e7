"""A small JSON document on a ref: read it, or replace it under the ledger's writer lock.

Fuse sessions (snapshot, delta, link), judge state, memory configuration and idempotency keys are
each one JSON object in a commit's tree, the ref pointing at its newest version. This is the one
reader and writer of such documents: a document that does not parse (a ``delta.json`` that is not
JSON, a record nested 100,000 deep that arrived by ``sync``) reads as damaged and empty, never as
a traceback, so the next save starts fresh; a write moves the ref by compare-and-swap from the
version that was read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .store import GitStore


@dataclass(frozen=True)
class Document:
    """One JSON object read from ``name`` in the tree of ``refname``'s tip."""

    tip: str | None  # the version read; None when the ref does not exist
    data: dict[str, Any] = field(default_factory=dict)  # {} when absent or damaged
    damaged: bool = False  # the file was there but is not a JSON object


def encode(data: Mapping[str, Any]) -> bytes:
    """The stored form: UTF-8 JSON, keys sorted, one-space indent, a final newline."""
    return (json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n").encode()


def decode(raw: bytes | None) -> tuple[dict[str, Any], bool]:
    """``(data, damaged)`` for a stored file (``None``: absent, not damaged)."""
    if raw is None:
        return {}, False
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, bad UTF-8, or nested past Python's stack
        return {}, True
    if not isinstance(data, dict):
        return {}, True
    return data, False


def read_document(store: GitStore, refname: str, name: str) -> Document:
    """The document ``name`` at ``refname`` (empty, ``tip=None``, when the ref does not exist)."""
    tip = store.tip(refname)
    if tip is None:
        return Document(None)
    data, damaged = decode(store.read_files(tip, (name,))[name])
    return Document(tip, data, damaged)


def write_document(
    store: GitStore,
    refname: str,
    name: str,
    data: Mapping[str, Any],
    message: str,
    author: tuple[str, str],
    *,
    expected_tip: str | None,
    history: bool = True,
    extra: Mapping[str, bytes] | None = None,
) -> str:
    """Write ``data`` as ``name`` (with ``extra`` files beside it) and move ``refname`` to it, only
    if the ref is still at ``expected_tip`` (``None``: it must not exist yet); ``errors.RefMoved``
    otherwise. ``history=False`` writes a version without parents (a key written once).
    Call it holding ``store.lock()``. Returns the new commit."""
    files = {**(extra or {}), name: encode(data)}
    parents = [expected_tip] if history and expected_tip else []
    return store.write(refname, files, message, author, parents, expected_tip)


def update_document(
    store: GitStore,
    refname: str,
    name: str,
    change: Callable[[Document], Mapping[str, Any] | None],
    message: str,
    author: tuple[str, str],
    *,
    extra: Mapping[str, bytes] | None = None,
) -> Document:
    """Read, change and write one document under the writer lock, so no other gitledger writer
    can slip a version in between. ``change`` gets what was read and returns the new data, or
    ``None`` to write nothing. Returns the document as it is afterwards."""
    with store.lock():
        before = read_document(store, refname, name)
        after = change(before)
        if after is None:
            return before
        tip = write_document(
            store, refname, name, after, message, author, expected_tip=before.tip, extra=extra
        )
        return Document(tip, dict(after))


__all__ = [
    "Document",
    "decode",
    "encode",
    "read_document",
    "update_document",
    "write_document",
]
