"""Idempotency keys of ``task create``: one ref per key (``refs/gitledger/keys/<sha256>``)
naming the task it made and a hash of the request, written before the task so that a create
killed between the two is finished by its retry (``Ledger.create``).

Under the writer lock, ``Ledger.create`` asks ``earlier_create`` what a create under the same key
left: the task it made (the same request: returned as it is now), its id alone (that create died
after writing the key: this one finishes it under that id), or nothing (a new key: the create
writes it with ``record_key`` before the task). The same key with another request
(``request_hash``) is ``IdempotencyConflict``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .errors import CorruptRecord, IdempotencyConflict, InvalidInput
from .gitstore import GitStore, read_document, write_document
from .model import (
    ID_PATTERN,
    Task,
    check_text,
    read_record,
)
from .refs import KEYS_PREFIX, task_ref
from .text import one_line

KEY_FILE = "key.json"


def check_key(key: str) -> None:
    """An idempotency key is text of at most 512 bytes, not blank."""
    check_text(key, "idempotency key", limit=512)
    if not key.strip():
        raise InvalidInput("An idempotency key cannot be blank.")


def request_hash(request: dict[str, Any]) -> str:
    """The SHA-256 of a create's request (its fields as given, ids resolved, lists sorted)."""
    return hashlib.sha256(
        json.dumps(request, sort_keys=True, ensure_ascii=False).encode()
    ).hexdigest()


def key_ref(key: str) -> str:
    """The ref of an idempotency key (its SHA-256, so any text is a valid key)."""
    return KEYS_PREFIX + hashlib.sha256(key.encode("utf-8")).hexdigest()


def keyed(store: GitStore, key: str) -> tuple[str, str | None] | None:
    """The task id (and request hash) an idempotency key names, if the key was used; a key ref
    whose ``key.json`` names no task is ``CorruptRecord`` (a create must not guess)."""
    ref = key_ref(key)
    doc = read_document(store, ref, KEY_FILE)
    if doc.tip is None or (not doc.data and not doc.damaged):
        return None
    task_id, request_hash = doc.data.get("task_id"), doc.data.get("request_hash")
    if not isinstance(task_id, str) or not ID_PATTERN.match(task_id):
        raise CorruptRecord(
            f"The idempotency key ref {ref} does not name a task (its {KEY_FILE} is damaged); "
            f"delete the ref to use the key again, or use another key."
        )
    return task_id, request_hash if isinstance(request_hash, str) else None


def keyed_task(store: GitStore, task_id: str) -> Task | None:
    """The task an idempotency key named, as it is now, with its first version's request hash."""
    task_tip = store.tip(task_ref(task_id))
    if task_tip is None:
        return None
    first = list(store.first_parent_chain(task_tip))[-1]
    original = read_record(store, first.oid, task_ref(task_id))[0]
    current = read_record(store, task_tip, task_ref(task_id))[0]
    # The request hash lives in the first version; the caller gets the task as it is now.
    return current.replace(request_hash=original.request_hash)


def earlier_create(store: GitStore, key: str, hashed: str | None) -> tuple[Task | None, str | None]:
    """What a create under ``key`` left, asked under the writer lock: ``(task, id)`` when it made
    its task, ``(None, id)`` when it died after its key (finish it under that id), ``(None,
    None)`` for a new key. ``IdempotencyConflict`` when the key was used for another request."""
    known = keyed(store, key)
    if known is None:
        return None, None
    key_task, key_hash = known
    existing = keyed_task(store, key_task)
    known_hash = key_hash or (existing.request_hash if existing else None)
    if known_hash is not None and known_hash != hashed:
        raise IdempotencyConflict(
            f"Idempotency key '{one_line(key, 40)}' was already used for "
            f"a different request (task {key_task}). Use a new key, or repeat "
            f"the original request exactly."
        )
    return existing, key_task


def record_key(
    store: GitStore, key: str, task_id: str, request_hash: str | None, author: tuple[str, str]
) -> None:
    """Write the key's ref, once (it must not exist yet); call it holding ``store.lock()``."""
    write_document(
        store,
        key_ref(key),
        KEY_FILE,
        {"task_id": task_id, "request_hash": request_hash},
        f"idempotency key for {task_id}\n",
        author,
        expected_tip=None,
        history=False,
    )


__all__ = [
    "KEY_FILE",
    "check_key",
    "earlier_create",
    "key_ref",
    "keyed",
    "keyed_task",
    "record_key",
    "request_hash",
]
