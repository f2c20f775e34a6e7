"""Gemini CLI: hooks and MCP servers both in settings.json (PreCompress before it compresses the
history, SessionStart, SessionEnd; hook entries are named), JSON session files under
~/.gemini/tmp/<project>/chats."""

from __future__ import annotations

from .base import Agent, HookEvent, Tools, home

AGENT = Agent(
    name="gemini",
    title="Gemini CLI",
    user_settings=lambda: home() / ".gemini" / "settings.json",
    project_settings=".gemini/settings.json",
    hooks={
        "save": HookEvent("PreCompress"),
        "restore": HookEvent("SessionStart", "resume"),
        "prime": HookEvent("SessionStart", "startup|resume|clear"),
        "end": HookEvent("SessionEnd"),
    },
    user_mcp=lambda: home() / ".gemini" / "settings.json",
    project_mcp=".gemini/settings.json",
    instructions_file="GEMINI.md",
    transcript_format="gemini",
    transcript_dirs=lambda: [home() / ".gemini" / "tmp"],
    tools=Tools(
        edit=frozenset({"write_file", "replace"}),
        read=frozenset(
            {
                "read_file",
                "read_many_files",
                "glob",
                "search_file_content",
                "list_directory",
                "web_fetch",
                "google_web_search",
            }
        ),
        shell=frozenset({"run_shell_command"}),
        todo=frozenset({"write_todos"}),
    ),
    named_hooks=True,
    timeout_key=None,
)

__all__ = [
    "AGENT",
]
