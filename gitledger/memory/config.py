"""Memory's settings: one JSON document (``config.json``) on ``refs/gitledger/config/memory``,
read and written through ``gitstore/documents.py`` like every small document on a ref. A damaged
or missing document reads as the defaults."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..gitstore import read_document, write_document
from ..refs import MEMORY_CONFIG_REF

if TYPE_CHECKING:
    from ..gitstore import GitStore

CONFIG_REF = MEMORY_CONFIG_REF
CONFIG_FILE = "config.json"
DEFAULT_CAPACITY = 2000


def read_config(store: GitStore) -> dict[str, Any]:
    """The settings, defaults filled in."""
    return {"capacity": DEFAULT_CAPACITY, **read_document(store, CONFIG_REF, CONFIG_FILE).data}


def write_config(
    store: GitStore, changes: dict[str, Any], message: str, author: tuple[str, str]
) -> dict[str, Any]:
    """Write the settings with ``changes`` applied and return them. Call it holding
    ``store.lock()`` (the caller evicts under the same hold)."""
    before = read_document(store, CONFIG_REF, CONFIG_FILE)
    data = {"capacity": DEFAULT_CAPACITY, **before.data, **changes}
    write_document(store, CONFIG_REF, CONFIG_FILE, data, message, author, expected_tip=before.tip)
    return data


__all__ = ["CONFIG_FILE", "CONFIG_REF", "DEFAULT_CAPACITY", "read_config", "write_config"]
