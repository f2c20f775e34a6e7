"""The agent's task list feeds the ledger: the real Claude Code runs ``gitledger hook tasklist``.

Checked with Claude Code 2.1.332 (tests/e2e/package.json): a scripted session's TaskCreate items
appear as subtasks of the session's task, and a TaskUpdate to completed there marks the subtask
done here; running the same calls again changes nothing.
"""

from __future__ import annotations

import json
import subprocess

import e2e_fixtures
import pytest
from claude_harness import ClaudeSession, gitledger, gitledger_shim
from standin import Reply, text, tool_use

pytestmark = pytest.mark.e2e

claude_bin = e2e_fixtures.claude_bin
standin = e2e_fixtures.standin
session = e2e_fixtures.session

LOAD = tool_use("ToolSearch", {"query": "select:TaskCreate,TaskUpdate", "max_results": 2})


def tasks(session: ClaudeSession) -> list[dict[str, object]]:
    out = gitledger(session, "task", "list", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def test_task_create_and_update_in_claude_code_reach_the_ledger(session: ClaudeSession) -> None:
    subprocess.run(["git", "init", "-q"], cwd=session.project, check=True)
    assert gitledger(session, "init").returncode == 0
    shim = gitledger_shim(session.bin)
    hook = {"type": "command", "command": f"{shim} hook tasklist", "timeout": 30}
    session.settings(
        {
            "hooks": {
                "PostToolUse": [{"matcher": "TodoWrite|TaskCreate|TaskUpdate", "hooks": [hook]}]
            }
        }
    )
    session.standin.script(
        Reply([LOAD]),
        Reply(
            [
                tool_use("TaskCreate", {"subject": "Write the parser", "description": "d1",
                                        "activeForm": "Writing the parser"}),
                tool_use("TaskCreate", {"subject": "Test the parser", "description": "d2",
                                        "activeForm": "Testing the parser"}),
            ]
        ),
        Reply([tool_use("TaskUpdate", {"taskId": "1", "status": "in_progress"})]),
        Reply([text("Planned, and started on the parser.")]),
    )  # fmt: skip
    session.run("Plan the parser work.")
    listed = {t["goal"]: t for t in tasks(session)}
    parent = next(t for t in listed.values() if "agent-session" in t["labels"])  # type: ignore[operator]
    assert session.session_id and session.session_id[:8] in str(parent["goal"])
    write, test = listed["Write the parser"], listed["Test the parser"]
    assert write["parent"] == test["parent"] == parent["id"]
    assert write["status"] == "active" and test["status"] == "open"

    # Completing one there completes it here.
    session.standin.script(
        Reply([LOAD]),
        Reply([tool_use("TaskUpdate", {"taskId": "1", "status": "completed"})]),
        Reply([text("The parser is written.")]),
    )
    session.run("Finish the parser.")
    listed = {t["goal"]: t for t in tasks(session)}
    assert listed["Write the parser"]["status"] == "done"
    assert listed["Test the parser"]["status"] == "open"
    assert len(listed) == 3  # nothing made twice
    out = gitledger(session, "task", "ready", "--json")
    assert "Test the parser" in out.stdout
