"""gitledger: a task ledger for AI coding agents, kept in Git.

The public API is what ``__all__`` lists. Names are imported on first use (PEP 562), so
``import gitledger`` stays cheap for hooks and the CLI pays only for what a command touches::

    from gitledger import Ledger

    ledger = Ledger.init()                       # or Ledger.open()
    task = ledger.create("Ship the release", criteria="Tests pass")
    ledger.update(task.id, status="active", next="Run final tests", expect_version=1)
"""

from __future__ import annotations

from . import errors as _errors  # no dependencies: cheap to import eagerly
from .lazy import lazy_exports

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # core
    "Ledger": "gitledger.ledger",
    "Version": "gitledger.ledger",
    "Change": "gitledger.changes",
    "VerifyReport": "gitledger.ledger",
    "Task": "gitledger.model",
    "Entry": "gitledger.model",
    "Evidence": "gitledger.model",
    "STATUSES": "gitledger.model",
    "criteria_hash": "gitledger.model",
}

# Every error class is public: callers catch them by name.
_EXPORTS.update({name: "gitledger.errors" for name in _errors.__all__})

__all__ = sorted([*_EXPORTS, "__version__"])


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:  # for type checkers: the names above, statically
    from .changes import Change  # noqa: F401
    from .errors import (  # noqa: F401
        AmbiguousId,
        BudgetTooSmall,
        ClaimConflict,
        Conflict,
        CorruptRecord,
        FactNotFound,
        Fix,
        GateRefused,
        IdempotencyConflict,
        InvalidInput,
        LedgerError,
        MissingTool,
        NoLedger,
        NotFound,
        RemoteError,
        RemoteMoved,
        Step,
        StorageError,
        TaskNotFound,
        UnsafeLedger,
        VersionConflict,
        VersionNotFound,
    )
    from .ledger import Ledger, VerifyReport, Version  # noqa: F401
    from .model import STATUSES, Entry, Evidence, Task, criteria_hash  # noqa: F401
