"""Cursor: MCP servers in ~/.cursor/mcp.json or the project's .cursor/mcp.json. gitledger installs
no hooks for Cursor (its hooks have no compaction event); its transcripts are not files."""

from __future__ import annotations

from .base import Agent, Tools, home

AGENT = Agent(
    name="cursor",
    title="Cursor",
    user_settings=lambda: home() / ".cursor" / "hooks.json",
    project_settings=".cursor/hooks.json",
    hooks={},
    user_mcp=lambda: home() / ".cursor" / "mcp.json",
    project_mcp=".cursor/mcp.json",
    instructions_file="AGENTS.md",
    tools=Tools(
        edit=frozenset({"edit_file", "search_replace"}),
        read=frozenset({"read_file", "codebase_search", "grep_search", "file_search", "list_dir"}),
        shell=frozenset({"run_terminal_cmd"}),
        todo=frozenset({"todo_write"}),
    ),
)

__all__ = [
    "AGENT",
]
