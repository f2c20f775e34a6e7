"""Idempotency keys of ``task create``: one ref per key (``refs/gitledger/keys/<sha256>``)
naming the task it made and a hash of the request, written before the task so that a create
killed between the two is finished by its retry (``Ledger.create``).
"""

from __future__ import annotations

import hashlib

from .errors import CorruptRecord
from .gitstore import GitStore, read_document, write_document
from .model import (
    ID_PATTERN,
    Task,
    read_record,
)
from .refs import KEYS_PREFIX, task_ref

KEY_FILE = "key.json"


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
    "key_ref",
    "keyed",
    "keyed_task",
    "record_key",
]
