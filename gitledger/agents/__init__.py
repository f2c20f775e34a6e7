"""The agents gitledger works with, one small module each, in one registry.

    from gitledger import agents
    agents.get("codex").settings_path(None)    # where its hooks go
    agents.tool_names("shell")                 # every agent's shell tools

``AGENTS`` maps the ``--agent`` names to ``Agent`` records (``base.py``): settings and MCP files,
hook events per role, the transcript format and folders, and tool names by kind. Nothing else in
gitledger spells an agent's tool or file names.
"""

from __future__ import annotations

from collections.abc import Mapping

from . import claude_code, codex, cursor, gemini
from .base import ROLES, TOOL_KINDS, Agent, HookEvent, Tools

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from typing import Any

AGENTS: dict[str, Agent] = {
    a.name: a for a in (claude_code.AGENT, codex.AGENT, gemini.AGENT, cursor.AGENT)
}
DEFAULT = claude_code.AGENT.name  # the agent setup wires unless told another


def get(name: str) -> Agent:
    """The agent called ``name`` (as --agent takes it); InvalidInput for any other."""
    from ..errors import InvalidInput

    agent = AGENTS.get(name)
    if agent is None:
        raise InvalidInput(f"Unknown agent {name!r}: use one of {', '.join(AGENTS)}.")
    return agent


def with_hooks() -> tuple[str, ...]:
    """The agents gitledger can install hooks for."""
    return tuple(name for name, agent in AGENTS.items() if agent.hooks)


def session_from_env(environ: Mapping[str, str] | None = None) -> str | None:
    """The agent session this process runs inside, as the agent puts it in the environment of
    the commands and MCP servers it starts (Claude Code's CLAUDE_CODE_SESSION_ID), or None."""
    import os

    values = os.environ if environ is None else environ
    for agent in AGENTS.values():
        found = values.get(agent.session_env, "").strip() if agent.session_env else ""
        if found:
            return found
    return None


def tool_names(kind: str) -> frozenset[str]:
    """Every known agent's tools of one kind (edit, read, shell, todo, ask): a transcript's
    tool calls are read the same whichever agent wrote it."""
    names: set[str] = set()
    for agent in AGENTS.values():
        names |= agent.tools.of(kind)
    return frozenset(names)


def shell_command(data: Mapping[str, Any]) -> str:
    """The command line of a shell tool call, whichever agent made it: Claude Code's
    ``{"command": "…"}``, Codex's ``{"command": ["bash", "-lc", "…"]}`` or ``{"cmd": …}``."""
    command = data.get("command")
    if command is None:
        command = data.get("cmd")
    if isinstance(command, list):
        words = [str(c) for c in command]
        if len(words) >= 3 and words[0].rsplit("/", 1)[-1] in {"bash", "sh", "zsh"}:
            if words[1] in {"-c", "-lc"}:
                return " ".join(words[2:])
        return " ".join(words)
    return command if isinstance(command, str) else ""


def transcript_dirs() -> list[str]:
    """The folders agents keep their transcripts in (for tools that may read only those)."""
    return [str(d) for agent in AGENTS.values() for d in agent.transcript_dirs()]


__all__ = [
    "AGENTS",
    "DEFAULT",
    "ROLES",
    "TOOL_KINDS",
    "Agent",
    "HookEvent",
    "Tools",
    "get",
    "session_from_env",
    "shell_command",
    "tool_names",
    "transcript_dirs",
    "with_hooks",
]
