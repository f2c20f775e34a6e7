"""A small JSON document on a ref: read it, or replace it under the ledger's writer lock.

Fuse sessions (snapshot, delta, link), judge state, memory configuration and idempotency keys are
each one JSON object in a commit's tree, the ref pointing at its newest version. This is the one
reader and writer of such documents: a document that does not parse (a ``delta.json`` that is not
JSON, a record nested 100,000 deep that arrived by ``sync``) reads as damaged and empty, never as
a traceback, so the next save starts fresh; a write moves the ref by compare-and-swap from the
version that was read. Documents of several files (a fuse snapshot: its JSON, the rendered
restore, the trigger) are written with ``write_version`` and read with ``load_json``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import CorruptRecord
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


def load_json(raw: bytes, what: str, *, max_depth: int | None = None) -> Any:
    """A stored JSON value, or ``CorruptRecord`` naming ``what``: not JSON, not UTF-8, nested past
    Python's stack, or deeper than ``max_depth`` (a record arriving by sync may hold anything;
    a reader that knows how deep its records nest says so)."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        reason = "nests too deeply" if isinstance(exc, RecursionError) else f"is not JSON ({exc})"
        raise CorruptRecord(f"{what} {reason}.") from exc
    if max_depth is not None and depth(value, max_depth) > max_depth:
        raise CorruptRecord(f"{what} nests deeper than {max_depth} levels.")
    return value


def depth(value: Any, stop: int | None = None) -> int:
    """How deep ``value`` nests (a scalar is 0), without recursion: a record may nest as deep as
    JSON allows. Counting stops once past ``stop``."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level)
            if stop is not None and deepest > stop:
                return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return deepest


def decode(raw: bytes | None) -> tuple[dict[str, Any], bool]:
    """``(data, damaged)`` for a stored file (``None``: absent, not damaged)."""
    if raw is None:
        return {}, False
    try:
        data = load_json(raw, "document")
    except CorruptRecord:
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


def write_version(
    store: GitStore,
    refname: str,
    files: Mapping[str, bytes],
    message: str,
    author: tuple[str, str],
    *,
    expected_tip: str | None,
    history: bool = True,
    parents: Sequence[str] | None = None,
) -> str:
    """Commit ``files`` as the new version of ``refname`` and move the ref to it, only if the ref
    is still at ``expected_tip`` (``None``: it must not exist yet); ``errors.RefMoved``
    otherwise. The new version's parent is the one it replaces (``history=False``: none, a key
    written once; ``parents``: these, a merge). Call it holding ``store.lock()``. Returns the
    new commit."""
    if parents is None:
        parents = [expected_tip] if history and expected_tip else []
    return store.write(refname, dict(files), message, author, list(parents), expected_tip)


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
    """Write ``data`` as ``name`` (with ``extra`` files beside it) as ``write_version`` does.
    Call it holding ``store.lock()``. Returns the new commit."""
    files = {**(extra or {}), name: encode(data)}
    return write_version(
        store, refname, files, message, author, expected_tip=expected_tip, history=history
    )


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
    "depth",
    "encode",
    "load_json",
    "read_document",
    "update_document",
    "write_document",
    "write_version",
]
