"""Idempotency keys of ``task create``: one ref per key (``refs/gitledger/keys/<sha256>``)
naming the task it made and a hash of the request, written before the task so that a create
killed between the two is finished by its retry (``Ledger.create``).
"""

from __future__ import annotations

import hashlib
import json

from .gitstore import GitStore
from .model import (
    Task,
    read_record,
)
from .refs import KEYS_PREFIX, task_ref


def key_ref(key: str) -> str:
    """The ref of an idempotency key (its SHA-256, so any text is a valid key)."""
    return KEYS_PREFIX + hashlib.sha256(key.encode("utf-8")).hexdigest()


def keyed(store: GitStore, key: str) -> tuple[str, str | None] | None:
    """The task id (and request hash) an idempotency key names, if the key was used."""
    tip = store.tip(key_ref(key))
    if tip is None:
        return None
    data = store.read_files(tip, ("key.json",))["key.json"]
    if data is None:
        return None
    raw = json.loads(data)
    return str(raw["task_id"]), raw.get("request_hash")


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
    body = json.dumps({"task_id": task_id, "request_hash": request_hash}).encode() + b"\n"
    store.write(
        key_ref(key),
        {"key.json": body},
        f"idempotency key for {task_id}\n",
        author,
        [],
        None,
    )


__all__ = [
    "key_ref",
    "keyed",
    "keyed_task",
    "record_key",
]
