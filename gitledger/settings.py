"""A ledger's settings: what ``gitledger config`` shows and changes, and their defaults.

Settings live in the ledger's own Git config under ``gitledger.`` (so ``claim.lease`` is
``gitledger.claim.lease``), which also reads the user's global Git config: a person can set a
default for every ledger once. Each setting has an environment override for one process (tests,
a hook). They are local to the machine: sync does not carry them.

- ``claim.lease`` (default ``2h``; ``GITLEDGER_CLAIM_LEASE``): how long a claim lives without a
  write by its holder. A claim whose holder wrote nothing for longer has lapsed, and the next
  claimant takes it (with a note naming the old holder). Durations: ``90s``, ``30m``, ``2h``,
  ``1d`` or plain seconds.
- ``sync.fuse`` (default ``true``; ``GITLEDGER_SYNC_FUSE``): whether sync carries fuse snapshots
  (``refs/gitledger/fuse/*``) and memory (``refs/gitledger/memory/*``). ``false`` keeps both on
  this machine; tasks still travel.
- ``tasklist.mirror`` (default ``true``; ``GITLEDGER_TASKLIST_MIRROR``): whether ``gitledger hook
  tasklist`` mirrors the agent's own task list (TaskCreate/TaskUpdate/TodoWrite) into subtasks.

Not a setting but kept beside them: ``gitledger.lastsync``, when this ledger last synced and with
which remote (``last_sync``), written by every completed sync and said by ``prime``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import InvalidInput, Step

if TYPE_CHECKING:
    from .gitstore import GitStore


@dataclass(frozen=True)
class Setting:
    name: str
    default: str
    env: str
    help: str


SETTINGS: dict[str, Setting] = {
    s.name: s
    for s in (
        Setting(
            "claim.lease",
            "2h",
            "GITLEDGER_CLAIM_LEASE",
            "how long a claim lives without a write by its holder (90s, 30m, 2h, 1d)",
        ),
        Setting(
            "sync.fuse",
            "true",
            "GITLEDGER_SYNC_FUSE",
            "whether sync carries fuse snapshots and memory (true/false)",
        ),
        Setting(
            "tasklist.mirror",
            "true",
            "GITLEDGER_TASKLIST_MIRROR",
            "whether the agent's own task list is mirrored into subtasks (true/false)",
        ),
    )
}

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str, name: str = "claim.lease") -> float:
    """Seconds from ``90s``, ``30m``, ``2h``, ``1d`` or plain seconds; InvalidInput otherwise."""
    match = _DURATION.match(text)
    if not match or float(match.group(1)) <= 0:
        raise InvalidInput(
            f"{name} is a duration like 90s, 30m, 2h or 1d (more than zero), not {text!r}."
        )
    return float(match.group(1)) * _UNITS[match.group(2)]


def parse_bool(text: str, name: str) -> bool:
    value = text.strip().lower()
    if value in ("true", "yes", "on", "1"):
        return True
    if value in ("false", "no", "off", "0"):
        return False
    raise InvalidInput(f"{name} is true or false, not {text!r}.")


def _check(name: str, value: str) -> None:
    if name not in SETTINGS:
        raise InvalidInput(
            f"No setting '{name}'. Settings: {', '.join(sorted(SETTINGS))} (see ",
            Step("config help"),
            ").",
        )
    if name == "claim.lease":
        parse_duration(value, name)
    elif name in ("sync.fuse", "tasklist.mirror"):
        parse_bool(value, name)


def get(store: GitStore, name: str) -> str:
    """A setting's value: its environment override, else the Git config, else its default."""
    setting = SETTINGS[name]
    env = os.environ.get(setting.env)
    if env:
        return env
    return store.setting(f"gitledger.{name}") or setting.default


def values(store: GitStore) -> dict[str, str]:
    return {name: get(store, name) for name in sorted(SETTINGS)}


def apply(store: GitStore, changes: dict[str, str]) -> dict[str, str]:
    """Check every ``name=value`` first, then write them all (an empty value resets to the
    default); returns every setting's value after."""
    for name, value in changes.items():
        if value != "" or name not in SETTINGS:
            _check(name, value)
    for name, value in changes.items():
        store.set_setting(f"gitledger.{name}", value or None)
    return values(store)


def claim_lease(store: GitStore) -> float:
    return parse_duration(get(store, "claim.lease"), "claim.lease")


def sync_fuse(store: GitStore) -> bool:
    return parse_bool(get(store, "sync.fuse"), "sync.fuse")


def tasklist_mirror(store: GitStore) -> bool:
    return parse_bool(get(store, "tasklist.mirror"), "tasklist.mirror")


__all__ = [
    "LAST_SYNC",
    "SETTINGS",
    "Setting",
    "ago",
    "apply",
    "claim_lease",
    "get",
    "last_sync",
    "parse_bool",
    "parse_duration",
    "record_last_sync",
    "sync_fuse",
    "tasklist_mirror",
    "values",
]


LAST_SYNC = "gitledger.lastsync"


def record_last_sync(store: GitStore, when: int, remote: str) -> None:
    store.set_setting(LAST_SYNC, f"{when} {remote}")


def last_sync(store: GitStore) -> tuple[int, str] | None:
    """(unix time, remote) of this ledger's last completed sync, or None."""
    value = store.setting(LAST_SYNC)
    if not value:
        return None
    stamp, _, remote = value.partition(" ")
    return (int(stamp), remote) if stamp.isdigit() else None


def ago(seconds: float) -> str:
    """A duration as a person says it: ``just now``, ``5 min ago``, ``3 h ago``, ``2 days ago``."""
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400 * 2:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} days ago"
