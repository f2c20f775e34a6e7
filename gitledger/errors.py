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

What was refused travels with the error: ``rule`` (a gate's name, e.g. ``done-needs-evidence``,
see ``gates.py``) and ``field`` (the field it is about), both in ``to_dict()``. A message that
names an edit as its fix holds it as a ``Fix``, not as text, and each interface words it in its
own terms (``worded("cli")`` says ``--decision TEXT``, ``worded("mcp")`` says
``"decisions": [...]``; ``message`` is the Python wording, ``decisions=[...]``): see
``edits.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

from .edits import Interface, word, word_command
from .structs import struct


@struct(frozen=True)
class Fix:
    """An edit that would let a refused change through, kept as data so that each interface can
    word it: ``Fix("decisions")`` is ``--decision TEXT`` on the CLI. ``value`` None stands for
    the caller's own value; a value is shown as given (``Fix("blocker", "")``)."""

    edit: str
    value: str | int | None = None


@struct(frozen=True)
class Step:
    """A command named as the next step, kept as data so that each interface can word it:
    ``Step("task list")`` is ``'gitledger task list'`` on the CLI, the ``task_list`` tool over
    MCP, ``Ledger.list_tasks()`` in Python (``edits.COMMANDS``). ``value``: the path a step takes
    (``Step("init at", path)``), None where it takes none or the caller's own."""

    command: str
    value: str | None = None


class LedgerError(Exception):
    """Base of every error gitledger raises on purpose.

    ``parts``: the message, as text, ``Fix`` and ``Step`` pieces in reading order.
    """

    exit_code = 1
    kind = "error"

    def __init__(
        self, *parts: str | Fix | Step, rule: str | None = None, field: str | None = None
    ) -> None:
        self.parts = parts
        self.rule = rule
        self.field = field
        self.message = self.worded("python")
        super().__init__(self.message)

    @property
    def fixes(self) -> tuple[Fix, ...]:
        return tuple(p for p in self.parts if isinstance(p, Fix))

    def worded(self, interface: Interface) -> str:
        """The message, its fixes spelled as ``interface`` (python, cli or mcp) spells them."""
        return "".join(
            p
            if isinstance(p, str)
            else word_command(p.command, interface, p.value)
            if isinstance(p, Step)
            else word(p.edit, interface, p.value)
            for p in self.parts
        )

    def to_dict(self, interface: Interface = "python") -> dict[str, object]:
        out: dict[str, object] = {"error": self.kind, "message": self.worded(interface)}
        if self.rule is not None:
            out["rule"] = self.rule
        if self.field is not None:
            out["field"] = self.field
        return out


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

    def to_dict(self, interface: Interface = "python") -> dict[str, object]:
        return {**super().to_dict(interface), "candidates": self.candidates}


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
            f"Read it again and retry with ",
            Fix("expect_version", actual),
            ".",
            field="version",
        )
        self.task_id = task_id
        self.expected = expected
        self.actual = actual

    def to_dict(self, interface: Interface = "python") -> dict[str, object]:
        return {**super().to_dict(interface), "expected": self.expected, "actual": self.actual}


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
            f"smallest budget that fits is {minimum:,} {unit}. Pass ",
            Fix("budget", minimum),
            " or more.",
            field="budget",
        )
        self.budget = budget
        self.unit = unit
        self.minimum = minimum

    def to_dict(self, interface: Interface = "python") -> dict[str, object]:
        return {
            **super().to_dict(interface),
            "budget": self.budget,
            "unit": self.unit,
            "minimum": self.minimum,
        }


class MissingTool(LedgerError):
    kind = "missing_tool"


__all__ = [
    "AmbiguousId",
    "Fix",
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
    "Step",
    "StorageError",
    "TaskNotFound",
    "UnsafeLedger",
    "VersionConflict",
    "VersionNotFound",
]
