"""Claude Code: settings.json hooks (PreCompact, PostCompact, SessionStart, SessionEnd,
PostToolUse), MCP servers in ~/.claude.json or the project's .mcp.json, JSONL transcripts in
~/.claude/projects/<folder>/<session>.jsonl."""

from __future__ import annotations

from .base import Agent, HookEvent, Tools, env_dir, home

AGENT = Agent(
    name="claude",
    title="Claude Code",
    user_settings=lambda: env_dir("CLAUDE_CONFIG_DIR", home() / ".claude") / "settings.json",
    project_settings=".claude/settings.json",
    hooks={
        "save": HookEvent("PreCompact", ""),
        "summary": HookEvent("PostCompact", ""),
        "restore": HookEvent("SessionStart", "compact|resume"),
        "prime": HookEvent("SessionStart", "startup|resume|clear|compact"),
        "end": HookEvent("SessionEnd", ""),
        "todo": HookEvent("PostToolUse", "TodoWrite|TaskCreate|TaskUpdate"),
    },
    user_mcp=lambda: home() / ".claude.json",
    project_mcp=".mcp.json",
    mcp_entry_type="stdio",
    instructions_file="CLAUDE.md",
    # Its Bash tool's commands have it since 2.1.132, stdio MCP servers since 2.1.154 (checked on
    # 2.1.332: tests/e2e/test_e2e_setup.py claims over MCP and from Bash as the session).
    session_env="CLAUDE_CODE_SESSION_ID",
    transcript_format="claude_code",
    transcript_dirs=lambda: [env_dir("CLAUDE_CONFIG_DIR", home() / ".claude") / "projects"],
    tools=Tools(
        edit=frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"}),
        read=frozenset(
            {
                "Read",
                "Grep",
                "Glob",
                "LS",
                "WebFetch",
                "WebSearch",
                "ToolSearch",
                "NotebookRead",
                "TodoRead",
                "BashOutput",
                "TaskList",
                "TaskGet",
                "ListMcpResourcesTool",
                "ReadMcpResourceTool",
            }
        ),
        shell=frozenset({"Bash"}),
        todo=frozenset({"TodoWrite", "TaskCreate", "TaskUpdate"}),
        ask=frozenset({"AskUserQuestion", "ExitPlanMode"}),
    ),
)

__all__ = [
    "AGENT",
]
