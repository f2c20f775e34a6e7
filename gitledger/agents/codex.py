"""Codex CLI: hooks in CODEX_HOME/hooks.json (Claude Code's schema and payloads, no matchers),
MCP servers as TOML tables in config.toml, rollout JSONL transcripts in CODEX_HOME/sessions."""

from __future__ import annotations

from pathlib import Path

from .base import Agent, HookEvent, Tools, env_dir, home


def _codex_home() -> Path:
    return env_dir("CODEX_HOME", home() / ".codex")


AGENT = Agent(
    name="codex",
    title="Codex CLI",
    user_settings=lambda: _codex_home() / "hooks.json",
    project_settings=".codex/hooks.json",
    hooks={
        "save": HookEvent("PreCompact"),
        "restore": HookEvent("SessionStart"),
        "prime": HookEvent("SessionStart"),
        "end": HookEvent("Stop"),
    },
    user_mcp=lambda: _codex_home() / "config.toml",
    project_mcp=".codex/config.toml",
    mcp_format="toml",
    instructions_file="AGENTS.md",
    transcript_format="codex",
    transcript_dirs=lambda: [_codex_home() / "sessions"],
    tools=Tools(
        edit=frozenset({"apply_patch"}),
        read=frozenset({"view_image", "web_search"}),
        shell=frozenset({"shell", "exec_command", "local_shell", "container.exec"}),
        todo=frozenset({"update_plan"}),
        ask=frozenset({"request_user_input"}),
    ),
)

__all__ = [
    "AGENT",
]
