"""What ``gitledger mcp setup`` writes, read by the real agents (pinned in tests/e2e/node_modules).

Claude Code starts the server and reports it connected; Codex loads the configuration, including
the per-tool approvals (it rejects an unknown approval mode, so a typo there would fail here).
Skipped with the reason when the agents are not installed (scripts/install-test-deps).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gitledger.cli import cli
from gitledger.mcp_server import read_only_tool_names

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / "tests" / "e2e" / "node_modules" / ".bin"


def agent(name: str) -> Path:
    path = BIN / name
    if not path.exists():
        pytest.skip(
            f"{name} is not installed in tests/e2e/node_modules (scripts/install-test-deps)"
        )
    return path


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    monkeypatch.chdir(root)
    monkeypatch.delenv("GITLEDGER_DIR")  # the server finds the project's ledger from its folder
    # This checkout first on the path, however (or whether) the package is installed.
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    return root


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=180, env=dict(os.environ)
    )


def test_claude_code_connects_to_the_server_setup_wrote(project: Path) -> None:
    claude = agent("claude")
    result = CliRunner().invoke(cli, ["mcp", "setup", "--agent", "claude", "--write"])
    assert result.exit_code == 0, result.output
    listed = run([str(claude), "mcp", "list"], project)
    assert listed.returncode == 0, listed.stderr
    line = next(x for x in listed.stdout.splitlines() if x.startswith("gitledger:"))
    assert "Connected" in line, listed.stdout


def test_claude_code_reads_the_project_file(project: Path) -> None:
    claude = agent("claude")
    assert CliRunner().invoke(cli, ["mcp", "setup", "--project", "--write"]).exit_code == 0
    shown = run([str(claude), "mcp", "get", "gitledger"], project)
    assert shown.returncode == 0, shown.stderr
    # A project's servers wait for the user's approval on first use: Claude Code's rule.
    assert "Project config" in shown.stdout and "stdio" in shown.stdout


def test_codex_loads_the_config_with_tool_approvals(project: Path) -> None:
    codex = agent("codex")
    assert CliRunner().invoke(cli, ["mcp", "setup", "--agent", "codex", "--write"]).exit_code == 0
    config = Path.home() / ".codex" / "config.toml"
    assert config.read_text().count('approval_mode = "approve"') == len(read_only_tool_names())
    got = run([str(codex), "mcp", "get", "gitledger", "--json"], project)
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert data["enabled"] is True
    assert data["transport"]["args"][-1] == "mcp"


@pytest.mark.e2e
def test_claude_code_calls_the_tools_against_a_scripted_model(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real Claude Code, a stand-in Messages API scripted to call two gitledger tools: the
    task lands in the ledger, the tool results reach the model, and the tool list it was offered
    is ours."""
    claude = agent("claude")
    monkeypatch.syspath_prepend(str(REPO / "tests" / "e2e"))
    from claude_harness import ClaudeSession
    from standin import StandIn, text, tool_use

    with StandIn() as standin:
        session = ClaudeSession(claude=claude, standin=standin, root=project.parent / "cc")
        setup = subprocess.run(
            [sys.executable, "-m", "gitledger", "mcp", "setup", "--write"],
            cwd=project,
            env=session.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert setup.returncode == 0, setup.stderr
        # Claude Code connects MCP servers in the background; the model waits for them with a
        # tool of Claude Code's own. Tool search off, so our tools are offered in full.
        env = {**session.env, "ENABLE_TOOL_SEARCH": "false"}
        standin.script(
            [tool_use("WaitForMcpServers", {"servers": ["gitledger"]})],
            [tool_use("mcp__gitledger__task_create", {"goal": "Ship it", "criteria": "CI green"})],
            [tool_use("mcp__gitledger__task_update", {"id": "zzzzzzzz", "next": "x"})],
            [text("Recorded.")],
        )
        done = subprocess.run(
            [str(claude), "-p", "--output-format", "json", "--allowedTools", "mcp__gitledger",
             "--", "Record the task"],
            cwd=project, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

        main = standin.of_kind("main")
        offered = {t["name"] for t in main[-1].body["tools"]}
        assert {f"mcp__gitledger__{n}" for n in ("task_create", "task_update", "prime")} <= offered
        # What came back to the model from each call: the created task, then the error kind.
        results = [
            block
            for request in main[1:]
            for message in request.body["messages"]
            if message.get("role") == "user" and isinstance(message.get("content"), list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        ]
        seen = json.dumps(results)
        assert "Ship it" in seen
        assert "task_not_found" in seen

    from gitledger.ledger import Ledger

    tasks = Ledger.open(cwd=project).list_tasks()
    assert [(t.goal, t.criteria) for t in tasks] == [("Ship it", "CI green")]
