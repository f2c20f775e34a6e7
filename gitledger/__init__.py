"""gitledger: a task ledger for AI coding agents, kept in Git.

The public API is what ``__all__`` lists. Names are imported on first use (PEP 562), so
``import gitledger`` stays cheap for hooks and the CLI pays only for what a command touches::

    from gitledger import Ledger

    ledger = Ledger.init()                       # or Ledger.open()
    task = ledger.create("Ship the release", criteria="Tests pass")
    ledger.update(task.id, status="active", next="Run final tests", expect_version=1)
"""

from __future__ import annotations

from .lazy import lazy_exports

__version__ = "0.1.0"

# Every error class is public (callers catch them by name), and so is the core below. Each name
# is imported on first use; this block is the one list of them, for type checkers and for
# ``lazy_exports`` alike (gitledger/lazy.py).
TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from .changes import Change as Change
    from .errors import *  # noqa: F403
    from .ledger import Ledger as Ledger
    from .ledger import VerifyReport as VerifyReport
    from .ledger import Version as Version
    from .model import STATUSES as STATUSES
    from .model import Entry as Entry
    from .model import Evidence as Evidence
    from .model import Task as Task
    from .model import criteria_hash as criteria_hash

__getattr__, __dir__ = lazy_exports(globals(), also=["__version__"])
