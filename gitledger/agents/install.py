"""``gitledger setup``: everything an agent needs, as a list of file changes to preview or write.

One plan per agent and scope (the user's files, or the project's with ``project``):

- **hooks** in the agent's settings: the fuse (save before compacting, restore after), a
  session-start hook for every source that primes the session, and with ``sync`` a sync after
  compaction and at session end. The session-start hook syncs first (bounded in time) so a
  fresh session on another machine sees what was pushed from this one;
- the **MCP server** entry in the agent's MCP file;
- the marked **instructions block** in the project's AGENTS.md / CLAUDE.md / GEMINI.md (project
  scope only: it is the project's file).

Each change follows the rules of ``settings``: only our entries, a diff first, a backup, and
running it twice changes nothing. ``uninstall`` removes exactly what setup adds.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import get
from .settings import (
    KNOWN_COMMANDS,
    FileChange,
    HookSpec,
    decode,
    dump_json,
    gitledger_command,
    hook_command,
    merge_hooks,
    merge_mcp_json,
    merge_mcp_toml,
    parse_json,
    program,
    read_config,
)

SYNC_TIMEOUT = 10  # seconds a hook's sync may take; the agent's hook timeout is a bit more


def server_command(ledger: Path | None = None) -> tuple[str, list[str]]:
    """How an agent starts the MCP server: this interpreter, absolute, ``-m gitledger mcp``.

    With ``ledger`` (setup was run with ``--ledger PATH``: a team ledger) the server is pinned to
    it; otherwise it uses the ledger of the folder the agent starts it in.
    """
    pinned = ["--ledger", str(ledger.absolute())] if ledger is not None else []
    command, *args = program()
    return command, [*args, *pinned, "mcp"]


def wanted_hooks(agent_name: str, *, sync: str | None = None) -> list[HookSpec]:
    """The hooks ``gitledger setup`` installs for one agent."""
    agent = get(agent_name)
    specs = [
        HookSpec("save", hook_command("save"), 60),
        HookSpec("summary", hook_command("summary"), 30),
        HookSpec("restore", hook_command("restore"), 30),
    ]
    # The agent's own task list (TodoWrite, TaskCreate, TaskUpdate) mirrored into subtasks.
    specs.append(HookSpec("todo", gitledger_command("hook", "tasklist"), 30))
    prime = ["prime", "--hook"] + (["--sync", sync] if sync else [])
    specs.append(HookSpec("prime", gitledger_command(*prime), 30 + (SYNC_TIMEOUT if sync else 0)))
    if sync:
        push = gitledger_command("sync", "--hook", "--timeout", str(SYNC_TIMEOUT), sync)
        if "summary" in agent.hooks:
            specs.append(HookSpec("summary", push, SYNC_TIMEOUT + 5))
        specs.append(HookSpec("end", push, SYNC_TIMEOUT + 5))
    return [s for s in specs if s.role in agent.hooks]


def _hooks_data(
    data: dict[str, Any], agent: str, sync: str | None, uninstall: bool, notes: list[str]
) -> dict[str, Any]:
    wanted = [] if uninstall else wanted_hooks(agent, sync=sync)
    return merge_hooks(data, agent, wanted, managed=KNOWN_COMMANDS, notes=notes)


def _mcp_entry(agent: str, ledger: Path | None) -> dict[str, Any]:
    command, args = server_command(ledger)
    return get(agent).mcp_entry(command, args)


@dataclass
class Plan:
    """What ``gitledger setup`` would change, file by file."""

    agent: str
    project: Path | None
    changes: list[FileChange] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(c.changed for c in self.changes)

    def diff(self) -> str:
        return "".join(c.diff() for c in self.changes if c.changed)

    def notes(self) -> list[str]:
        return [n for c in self.changes for n in c.notes]

    def write(self) -> list[tuple[Path, Path | None]]:
        """Write every change; (file, its backup) for each file written."""
        written = []
        for change in self.changes:
            if change.changed:
                written.append((change.path, change.write()))
        return written

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "project": str(self.project) if self.project else None,
            "changed": self.changed,
            "files": [
                {
                    "path": str(c.path),
                    "parts": c.label.split("+") if c.label else [],
                    "changed": c.changed,
                    "diff": c.diff(),
                    "notes": c.notes,
                }
                for c in self.changes
            ],
        }


def _json_change(
    path: Path, root: Path | None, parts: list[tuple[str, Any]], agent: str, label: str
) -> FileChange:
    raw = read_config(path, root=root)
    before = decode(path, raw)
    data = parse_json(path, before)
    notes: list[str] = []
    merged = data
    for part, arg in parts:
        if part == "hooks":
            sync, uninstall = arg
            merged = _hooks_data(merged, agent, sync, uninstall, notes)
        else:
            merged = merge_mcp_json(merged, path, arg)
    after = dump_json(merged, before) if merged != data else before
    return FileChange(path, raw, after, notes, label)


def mcp_change(
    agent_name: str,
    project: Path | None,
    *,
    ledger: Path | None = None,
    uninstall: bool = False,
) -> FileChange:
    """The change to the agent's MCP file alone (``gitledger mcp setup``)."""
    agent = get(agent_name)
    path = agent.mcp_path(project)
    entry = None if uninstall else _mcp_entry(agent_name, ledger)
    if agent.mcp_format == "toml":
        from ..mcp_server import read_only_tool_names

        raw = read_config(path, root=project)
        before = decode(path, raw)
        after = merge_mcp_toml(before, path, entry, [] if entry is None else read_only_tool_names())
        return FileChange(path, raw, after, label="mcp")
    return _json_change(path, project, [("mcp", entry)], agent_name, "mcp")


def plan(
    agent_name: str,
    *,
    project: Path | None = None,
    sync: str | None = None,
    uninstall: bool = False,
    ledger: Path | None = None,
    instructions: bool = True,
) -> Plan:
    """Every file ``gitledger setup`` would change for ``agent_name``, nothing written."""
    from .agents_md import block_change

    agent = get(agent_name)
    result = Plan(agent_name, project)
    hooks_path = agent.settings_path(project) if agent.hooks else None
    mcp_path = agent.mcp_path(project)
    entry = None if uninstall else _mcp_entry(agent_name, ledger)
    if hooks_path is not None and hooks_path == mcp_path and agent.mcp_format == "json":
        # One file holds both (Gemini CLI's settings.json): one change, one backup.
        result.changes.append(
            _json_change(
                hooks_path,
                project,
                [("hooks", (sync, uninstall)), ("mcp", entry)],
                agent_name,
                "hooks+mcp",
            )
        )
    else:
        if hooks_path is not None:
            result.changes.append(
                _json_change(
                    hooks_path, project, [("hooks", (sync, uninstall))], agent_name, "hooks"
                )
            )
        result.changes.append(mcp_change(agent_name, project, ledger=ledger, uninstall=uninstall))
    if instructions and project is not None:
        result.changes.append(
            block_change(project / agent.instructions_file, root=project, remove=uninstall)
        )
    return result


def describe(command: str) -> str:
    """A hook command as a person reads it: ``gitledger fuse save --hook``."""
    words = shlex.split(command)
    if len(words) >= 3 and words[1:3] == ["-m", "gitledger"]:
        words = ["gitledger", *words[3:]]
    return shlex.join(words)


__all__ = [
    "Plan",
    "SYNC_TIMEOUT",
    "describe",
    "mcp_change",
    "plan",
    "server_command",
    "wanted_hooks",
]
