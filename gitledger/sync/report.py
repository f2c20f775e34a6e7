"""What a sync, restore or backup did: ``SyncReport``, ref by ref, and what moved over the wire;
``Progress``, the callback that hears how far a fetch or push has come.

Every step of a sync writes into the one report it is handed (integration files each ref under
what happened to it, a merge adds its conflicts and the rule that decided each, the push adds
what it sent), and the interfaces render it: the CLI as a summary line (``cli/sync.py``), MCP
and ``--json`` as ``to_dict()``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

# phase ("fetch", "push"), done, total
Progress = Callable[[str, int, int], None]


@dataclass
class SyncReport:
    """What a sync, restore or backup did, ref by ref, and what moved over the wire."""

    remote: str
    created: list[str] = field(default_factory=list)
    fast_forwarded: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    conflicts: dict[str, list[str]] = field(default_factory=dict)  # task id -> fields
    # task id -> field -> the rule that decided it ("the earlier claim won", ...)
    conflict_rules: dict[str, dict[str, str]] = field(default_factory=dict)
    unmerged: list[str] = field(default_factory=list)  # diverged non-task refs, kept local
    # a merged judge-state or settings ref -> what decided it (per key, for settings)
    ref_rules: dict[str, dict[str, str]] = field(default_factory=dict)
    pushed: list[str] = field(default_factory=list)
    remote_ahead: list[str] = field(default_factory=list)  # backup only: needs a sync first
    fetched_objects: int = 0
    pushed_objects: int = 0
    attempts: int = 0
    seconds: float = 0.0
    verified: bool | None = None
    problems: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # backup: refs whose file names no commit

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def quiet(self) -> bool:
        """Nothing changed on either side."""
        return not (self.created or self.fast_forwarded or self.merged or self.pushed)


__all__ = ["Progress", "SyncReport"]
