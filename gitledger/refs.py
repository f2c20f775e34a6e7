"""The ref layout of a ledger: every name under ``refs/gitledger/``, written down once.

A ledger is a bare Git repository; all its state is refs below ``refs/gitledger/`` (so one
refspec moves it all, see ``sync``):

``refs/gitledger/tasks/<id>``
    one task, each version a commit (``task.json``, ``task.md``, ``FORMAT``).
``refs/gitledger/keys/<hash>``
    an idempotency key of a create and the task it made.
``refs/gitledger/memory/<id>``
    one remembered fact; ``refs/gitledger/config/memory`` holds memory's settings.
``refs/gitledger/fuse/<session>``
    the compaction fuse's snapshot of one agent session.
``refs/gitledger/judge/<session>``
    the boundary judge's state of one session; ``refs/gitledger/config/judge`` its settings.

``refs/gitledger-staging/<remote>/`` lies outside the namespace on purpose: what a fetch brought
in waits there until it is merged, and no listing of the ledger sees it.
"""

from __future__ import annotations

LEDGER_PREFIX = "refs/gitledger/"
TASKS_DIR = "refs/gitledger/tasks"
TASKS_PREFIX = TASKS_DIR + "/"
KEYS_PREFIX = "refs/gitledger/keys/"
MEMORY_DIR = "refs/gitledger/memory"
MEMORY_PREFIX = MEMORY_DIR + "/"
MEMORY_CONFIG_REF = "refs/gitledger/config/memory"
FUSE_PREFIX = "refs/gitledger/fuse/"
JUDGE_PREFIX = "refs/gitledger/judge/"
JUDGE_CONFIG_REF = "refs/gitledger/config/judge"
STAGING_ROOT = "refs/gitledger-staging/"
LEDGER_REFSPEC = "refs/gitledger/*:refs/gitledger/*"


def task_ref(task_id: str) -> str:
    """The ref of one task."""
    return TASKS_PREFIX + task_id


__all__ = [
    "FUSE_PREFIX",
    "JUDGE_CONFIG_REF",
    "JUDGE_PREFIX",
    "KEYS_PREFIX",
    "LEDGER_PREFIX",
    "LEDGER_REFSPEC",
    "MEMORY_CONFIG_REF",
    "MEMORY_DIR",
    "MEMORY_PREFIX",
    "STAGING_ROOT",
    "TASKS_DIR",
    "TASKS_PREFIX",
    "task_ref",
]
