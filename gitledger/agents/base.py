"""What gitledger knows about one coding agent, as data: ``Agent``.

Each agent is one small module (``claude_code``, ``codex``, ``gemini``, ``cursor``) holding one
``Agent``; ``gitledger.agents.AGENTS`` maps names to them, as llm maps model ids to the plugin that
serves them. The fuse, the judge, the transcript readers and ``gitledger setup`` read agents only
through it, so an agent's tool names, settings files and hook events are written down once.

A hook is named by its *role*, not its event: ``save`` (before the agent compacts), ``summary``
(after it compacted, with the summary it wrote), ``restore`` (a session resumes after a
compaction), ``prime`` (every session start), ``end`` (the session ends), ``todo`` (the agent
wrote its task list). Each agent says which of its events serve which role.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from ..structs import field, struct

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from typing import Any

ROLES = ("save", "summary", "restore", "prime", "end", "todo")
TOOL_KINDS = ("edit", "read", "shell", "todo", "ask")
# Named hook entries (Gemini CLI) carry these names; the fuse's keep the names they always had.
ROLE_NAMES = {"save": "fuse-save", "restore": "fuse-restore", "summary": "fuse-summary"}


@struct(frozen=True)
class Tools:
    """The agent's tool names by kind: what edits files, only reads, runs a shell command,
    writes the agent's task list, or asks the person."""

    edit: frozenset[str] = frozenset()
    read: frozenset[str] = frozenset()
    shell: frozenset[str] = frozenset()
    todo: frozenset[str] = frozenset()
    ask: frozenset[str] = frozenset()

    def of(self, kind: str) -> frozenset[str]:
        if kind not in TOOL_KINDS:
            raise ValueError(f"unknown tool kind {kind!r}; expected one of {TOOL_KINDS}")
        value: frozenset[str] = getattr(self, kind)
        return value


@struct(frozen=True)
class HookEvent:
    """Where one role's hook goes in the agent's settings: the event, and the matcher if the
    agent's schema has one (``None``: the group carries no matcher key)."""

    event: str
    matcher: str | None = None


@struct(frozen=True)
class Agent:
    name: str  # as given to --agent
    title: str
    # Settings that hold hooks: the user's file, and the project's (relative to its root).
    user_settings: Callable[[], Path]
    project_settings: str
    hooks: Mapping[str, HookEvent]  # role -> event
    # MCP server entry: the user's file and the project's; "json" (mcpServers) or "toml".
    user_mcp: Callable[[], Path]
    project_mcp: str
    mcp_format: str = "json"
    mcp_entry_type: str | None = None  # Claude Code wants {"type": "stdio", …}
    instructions_file: str = "AGENTS.md"
    transcript_format: str = "plain"
    transcript_dirs: Callable[[], list[Path]] = field(default=lambda: [])
    tools: Tools = field(default_factory=Tools)
    # Hook entries get a name (Gemini CLI shows it) and a timeout key in the agent's unit.
    named_hooks: bool = False
    timeout_key: str | None = "timeout"
    # The variable the agent sets, in the environment of the tools and servers it starts, to the
    # session they run in (the session_id its hooks get), if it sets one.
    session_env: str | None = None

    def settings_path(self, project: Path | None) -> Path:
        return project / self.project_settings if project else self.user_settings()

    def mcp_path(self, project: Path | None) -> Path:
        return project / self.project_mcp if project else self.user_mcp()

    def hook_entry(self, role: str, command: str, timeout: int) -> dict[str, Any]:
        entry: dict[str, Any] = {}
        if self.named_hooks:
            entry["name"] = f"gitledger-{ROLE_NAMES.get(role, role)}"
        entry.update({"type": "command", "command": command})
        if self.timeout_key:
            entry[self.timeout_key] = timeout
        return entry

    def mcp_entry(self, command: str, args: list[str]) -> dict[str, Any]:
        entry: dict[str, Any] = {"command": command, "args": args}
        return {"type": self.mcp_entry_type, **entry} if self.mcp_entry_type else entry


def home() -> Path:
    return Path.home()


def env_dir(variable: str, default: Path) -> Path:
    value = os.environ.get(variable)
    return Path(value) if value else default


__all__ = [
    "Agent",
    "HookEvent",
    "ROLES",
    "ROLE_NAMES",
    "TOOL_KINDS",
    "Tools",
    "env_dir",
    "home",
]
