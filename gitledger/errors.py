"""The exceptions gitledger raises, in one tree.

Every error a caller can act on is a ``LedgerError``; its ``exit_code`` is what the CLI exits with
and its message names the fix. Errors from pygit2 never escape: ``gitstore.map_git_errors()``
turns them into ``StorageError`` (or a more specific subclass) with ``raise ... from exc``.

    LedgerError (exit 1)
    ├── NoLedger                 no ledger at the place looked up
    │   └── UnsafeLedger         a ledger found by discovery that gitledger will not trust
    ├── NotFound
    │   ├── TaskNotFound         no task with that id or prefix
    │   ├── VersionNotFound      the task has no such version
    │   └── FactNotFound         no remembered fact with that id or prefix
    ├── AmbiguousId              a prefix matches several tasks (lists them)
    ├── InvalidInput (exit 2)    bad value: unknown status, text over its limit, NUL bytes …
    │   └── BudgetTooSmall       a context budget cannot hold the required state (names the least)
    ├── GateRefused              a domain rule refused the change (done gate, cycles, decisions …)
    ├── Conflict (exit 3)
    │   ├── VersionConflict      --expect-version did not match the current version
    │   ├── IdempotencyConflict  the same key was used for a different request
    │   └── ClaimConflict        another claimant already holds the task
    ├── StorageError             Git could not read or write (corruption, permissions, locks)
    │   └── CorruptRecord        a commit that is not a valid task record
    ├── MissingTool              an optional external program is not installed (Graphviz's dot)
    └── RemoteError              a push or fetch failed (the remote refused, vanished, lied)
        └── RemoteMoved (exit 3) the remote has work this ledger lacks: run 'gitledger sync'
"""

from __future__ import annotations

from collections.abc import Sequence


class LedgerError(Exception):
    """Base of every error gitledger raises on purpose."""

    exit_code = 1
    kind = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_dict(self) -> dict[str, object]:
        return {"error": self.kind, "message": self.message}


class NoLedger(LedgerError):
    kind = "no_ledger"


class UnsafeLedger(NoLedger):
    """A ledger found by looking around (not named by the user) that came with a project's files:
    tracked or inside a Git work tree, reached through a symbolic link, or naming programs to run
    in its own config. Refused, never used: a cloned repository must not run code."""

    kind = "unsafe_ledger"


class NotFound(LedgerError):
    kind = "not_found"


class TaskNotFound(NotFound):
    kind = "task_not_found"


class VersionNotFound(NotFound):
    kind = "version_not_found"


class FactNotFound(NotFound):
    kind = "fact_not_found"


class AmbiguousId(LedgerError):
    kind = "ambiguous_id"

    def __init__(self, prefix: str, candidates: Sequence[str]) -> None:
        shown = ", ".join(candidates[:10]) + (" …" if len(candidates) > 10 else "")
        super().__init__(
            f"Task id prefix '{prefix}' is ambiguous: it matches {len(candidates)} tasks "
            f"({shown}). Type more characters of the id."
        )
        self.prefix = prefix
        self.candidates = list(candidates)

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "candidates": self.candidates}


class InvalidInput(LedgerError):
    exit_code = 2
    kind = "invalid_input"


class GateRefused(LedgerError):
    kind = "gate_refused"


class Conflict(LedgerError):
    exit_code = 3
    kind = "conflict"


class VersionConflict(Conflict):
    kind = "version_conflict"

    def __init__(self, task_id: str, expected: int, actual: int) -> None:
        super().__init__(
            f"Task {task_id} is at version {actual}, not {expected}: someone else changed it. "
            f"Read it again ('gitledger task show {task_id}') and retry with "
            f"--expect-version {actual}."
        )
        self.task_id = task_id
        self.expected = expected
        self.actual = actual

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "expected": self.expected, "actual": self.actual}


class IdempotencyConflict(Conflict):
    kind = "idempotency_conflict"


class ClaimConflict(Conflict):
    kind = "claim_conflict"


class StorageError(LedgerError):
    kind = "storage_error"


class CorruptRecord(StorageError):
    kind = "corrupt_record"


class RemoteError(LedgerError):
    kind = "remote_error"


class RemoteMoved(RemoteError):
    """A remote ref moved since it was listed, or holds commits not here (sync fetches again)."""

    exit_code = 3
    kind = "remote_moved"


class BudgetTooSmall(InvalidInput):
    """A handoff budget too small for the required state; ``minimum`` is the least that fits."""

    kind = "budget_too_small"

    def __init__(self, what: str, budget: int, unit: str, minimum: int) -> None:
        super().__init__(
            f"A budget of {budget:,} {unit} cannot hold the required state of {what}; the "
            f"smallest budget that fits is {minimum:,} {unit}. Pass --budget {minimum} or more."
        )
        self.budget = budget
        self.unit = unit
        self.minimum = minimum

    def to_dict(self) -> dict[str, object]:
        return {
            **super().to_dict(),
            "budget": self.budget,
            "unit": self.unit,
            "minimum": self.minimum,
        }


class MissingTool(LedgerError):
    kind = "missing_tool"


__all__ = [
    "AmbiguousId",
    "BudgetTooSmall",
    "ClaimConflict",
    "Conflict",
    "CorruptRecord",
    "GateRefused",
    "FactNotFound",
    "IdempotencyConflict",
    "InvalidInput",
    "LedgerError",
    "MissingTool",
    "NoLedger",
    "NotFound",
    "RemoteError",
    "RemoteMoved",
    "StorageError",
    "TaskNotFound",
    "UnsafeLedger",
    "VersionConflict",
    "VersionNotFound",
]
