"""What a query takes, checked once for every interface: the statuses it filters on, the text it
looks up, its limit and offset.

``Ledger``'s queries (``list_tasks``, ``search_hits``, ``inbox``, ``ready``) check their
arguments here before they ask the index (``index.py``, the one query path), so the CLI, the MCP
server and Python callers meet the same refusals: an unknown status, a filter or search text
that is not text (a lone surrogate: argv bytes that are not UTF-8), a negative limit or offset.
A limit past SQLite's integer range (``SQL_MAX``) means no limit, and such an offset is clamped:
both mean "all".
"""

from __future__ import annotations

from collections.abc import Sequence

from .errors import InvalidInput
from .model import STATUSES

SQL_MAX = 2**63 - 1  # SQLite's largest integer


def check_statuses(status: str | Sequence[str] | None) -> set[str] | None:
    """The statuses to filter on (one or several), each a known one; None: any status."""
    if status is None:
        return None
    wanted = {status} if isinstance(status, str) else set(status)
    unknown = wanted - set(STATUSES)
    if unknown:
        raise InvalidInput(
            f"Unknown status '{sorted(unknown)[0]}'. Use one of: {', '.join(STATUSES)}."
        )
    return wanted


def check_bounds(limit: int | None, offset: int = 0) -> tuple[int | None, int]:
    """A query's limit and offset: negative is refused; past SQLite's integer range a limit
    means no limit and an offset is clamped (both mean "all")."""
    if limit is not None and limit < 0:
        raise InvalidInput("A limit cannot be negative.")
    if offset < 0:
        raise InvalidInput("An offset cannot be negative.")
    return (None if limit is not None and limit > SQL_MAX else limit), min(offset, SQL_MAX)


def check_lookup(value: str | None, what: str) -> str | None:
    """A search or filter text that can be looked up: refused when it is not text (a lone
    surrogate: argv bytes that are not UTF-8)."""
    if value is None:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"The {what} is not valid UTF-8 text (byte {exc.start + 1} is no character); give "
            f"it as UTF-8."
        ) from None
    return value


__all__ = ["SQL_MAX", "check_bounds", "check_lookup", "check_statuses"]
