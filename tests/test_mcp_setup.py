"""``gitledger mcp setup`` and ``gitledger agents-md``: preview first, idempotent, the rest kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gitledger.cli import cli
from gitledger.mcp_server import read_only_tool_names

tomllib = pytest.importorskip("tomllib")  # Python 3.11+: the checks below read TOML


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    monkeypatch.chdir(root / "src")  # setup finds the work tree's root from a subfolder
    return root


def invoke(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result


def test_claude_project_file_preview_then_write_then_nothing(project: Path) -> None:
    target = project / ".mcp.json"
    preview = invoke("mcp", "setup", "--project")
    assert preview.exit_code == 0, preview.output
    assert "Would add to" in preview.output and "--write" in preview.output
    assert '"gitledger"' in preview.output
    assert not target.exists()

    written = invoke("mcp", "setup", "--project", "--write")
    assert written.exit_code == 0, written.output
    data = json.loads(target.read_text())
    entry = data["mcpServers"]["gitledger"]
    assert entry["type"] == "stdio" and entry["args"][-1] == "mcp"

    before = target.read_bytes()
    again = invoke("mcp", "setup", "--project", "--write")
    assert again.exit_code == 0 and "nothing to do" in again.output
    assert target.read_bytes() == before


def test_claude_user_config_keeps_everything_else(project: Path) -> None:
    config = Path.home() / ".claude.json"
    original = {
        "numStartups": 12,
        "projects": {"/x": {"allowedTools": ["Bash"]}},
        "mcpServers": {"other": {"command": "other-server", "args": []}},
    }
    config.write_text(json.dumps(original, indent=2))
    result = invoke("mcp", "setup", "--agent", "claude", "--write", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["written"] is True and report["path"] == str(config)
    data = json.loads(config.read_text())
    assert data["numStartups"] == 12 and data["projects"] == original["projects"]
    assert data["mcpServers"]["other"] == original["mcpServers"]["other"]
    assert "gitledger" in data["mcpServers"]


def test_cursor_user_and_project(project: Path) -> None:
    assert invoke("mcp", "setup", "--agent", "cursor", "--write").exit_code == 0
    user = json.loads((Path.home() / ".cursor" / "mcp.json").read_text())
    assert user["mcpServers"]["gitledger"]["args"][-1] == "mcp"
    assert "type" not in user["mcpServers"]["gitledger"]
    assert invoke("mcp", "setup", "--agent", "cursor", "--project", "--write").exit_code == 0
    assert (project / ".cursor" / "mcp.json").exists()


def test_codex_toml_keeps_comments_and_other_tables_and_preapproves_reads(project: Path) -> None:
    config = Path.home() / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    original = (
        '# my settings\nmodel = "gpt-5"\n\n[mcp_servers.docs]\ncommand = "docs"  # keep me\n'
        'args = ["serve"]\n\n[profiles.fast]\nmodel = "small"\n'
    )
    config.write_text(original)
    preview = invoke("mcp", "setup", "--agent", "codex")
    assert preview.exit_code == 0 and config.read_text() == original

    assert invoke("mcp", "setup", "--agent", "codex", "--write").exit_code == 0
    text = config.read_text()
    assert text.startswith(original)  # everything that was there, byte for byte
    data = tomllib.loads(text)
    ours = data["mcp_servers"]["gitledger"]
    assert ours["args"][-1] == "mcp"
    approved = {name for name, t in ours["tools"].items() if t["approval_mode"] == "approve"}
    assert approved == set(read_only_tool_names())
    assert "task_update" not in approved and "task_show" in approved
    assert data["mcp_servers"]["docs"]["command"] == "docs"
    assert data["profiles"]["fast"]["model"] == "small"

    again = invoke("mcp", "setup", "--agent", "codex", "--write")
    assert "nothing to do" in again.output and config.read_text() == text


def test_codex_replaces_a_stale_entry_in_place(project: Path) -> None:
    config = Path.home() / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        '[mcp_servers.gitledger]\ncommand = "old-gitledger"\nargs = ["serve"]\n\n'
        '[mcp_servers.gitledger.tools.old_tool]\napproval_mode = "approve"\n\n'
        '[mcp_servers.after]\ncommand = "after"\n'
    )
    assert invoke("mcp", "setup", "--agent", "codex", "--write").exit_code == 0
    data = tomllib.loads(config.read_text())
    assert data["mcp_servers"]["gitledger"]["command"] != "old-gitledger"
    assert "old_tool" not in data["mcp_servers"]["gitledger"]["tools"]
    assert data["mcp_servers"]["after"]["command"] == "after"


@pytest.mark.parametrize(
    ("agent", "relative", "content"),
    [
        ("claude", ".claude.json", "{not json"),
        ("cursor", ".cursor/mcp.json", '["a list"]'),
        ("codex", ".codex/config.toml", "[broken\n"),
    ],
)
def test_a_broken_config_is_refused_and_left_alone(
    project: Path, agent: str, relative: str, content: str
) -> None:
    config = Path.home() / relative
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(content)
    result = CliRunner().invoke(cli, ["mcp", "setup", "--agent", agent, "--write"])
    assert result.exit_code == 2, result.output
    assert "fix it by hand" in result.output
    assert config.read_text() == content


def test_setup_rejects_an_unknown_agent(project: Path) -> None:
    result = CliRunner().invoke(cli, ["mcp", "setup", "--agent", "vim"])
    assert result.exit_code == 2


def test_mcp_tools_lists_what_the_server_offers() -> None:
    result = invoke("mcp", "tools", "--json")
    assert result.exit_code == 0
    data = json.loads(result.output)
    names = [t["name"] for t in data["tools"]]
    assert "task_update" in names and "task_show" in names


# --- agents-md ------------------------------------------------------------------------------


def test_agents_md_preview_write_idempotent_remove(project: Path) -> None:
    target = project / "AGENTS.md"
    original = "# Project rules\n\nUse tabs.\n"
    target.write_text(original)

    preview = invoke("agents-md")
    assert preview.exit_code == 0 and "Would add" in preview.output
    assert "gitledger prime" in preview.output
    assert target.read_text() == original

    assert invoke("agents-md", "--write").exit_code == 0
    text = target.read_text()
    assert text.startswith(original) and "gitledger prime" in text
    assert text.count("<!-- gitledger:begin -->") == 1

    again = invoke("agents-md", "--write")
    assert "already has" in again.output and target.read_text() == text

    preview_remove = invoke("agents-md", "--remove")
    assert "Would remove" in preview_remove.output and target.read_text() == text
    assert invoke("agents-md", "--remove", "--write").exit_code == 0
    assert target.read_text() == original


def test_agents_md_block_in_the_middle_is_replaced_in_place(project: Path) -> None:
    target = project / "CLAUDE.md"
    target.write_text(
        "top\n\n<!-- gitledger:begin -->\nold words\n<!-- gitledger:end -->\n\nbottom\n"
    )
    assert invoke("agents-md", "--file", "CLAUDE.md", "--write").exit_code == 0
    text = target.read_text()
    assert text.startswith("top\n\n<!-- gitledger:begin -->") and text.endswith("\n\nbottom\n")
    assert "old words" not in text and "gitledger prime" in text
    assert invoke("agents-md", "--file", "CLAUDE.md", "--remove", "--write").exit_code == 0
    assert target.read_text() == "top\n\n\nbottom\n"


def test_agents_md_creates_and_removes_a_file_of_its_own(project: Path) -> None:
    target = project / "AGENTS.md"
    assert invoke("agents-md", "--write").exit_code == 0
    assert target.exists()
    assert invoke("agents-md", "--remove", "--write").exit_code == 0
    assert not target.exists()


def test_agents_md_refuses_a_half_block(project: Path) -> None:
    target = project / "AGENTS.md"
    target.write_text("x\n<!-- gitledger:begin -->\nno end\n")
    result = CliRunner().invoke(cli, ["agents-md", "--write"])
    assert result.exit_code == 2 and "fix the block by hand" in result.output
    assert target.read_text() == "x\n<!-- gitledger:begin -->\nno end\n"


def test_agents_md_json(project: Path) -> None:
    result = invoke("agents-md", "--json")
    data = json.loads(result.output)
    assert data["changed"] is True and data["written"] is False
    assert data["path"] == str(project / "AGENTS.md")


def test_the_entry_point_runs_the_server_process() -> None:
    # `gitledger mcp` with a closed stdin exits cleanly rather than hanging.
    proc = subprocess.run(
        [sys.executable, "-m", "gitledger", "mcp"],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""


def test_setup_pins_an_explicit_ledger_but_not_the_environment_one(
    project: Path, tmp_path: Path
) -> None:
    team = tmp_path / "team-ledger"
    assert invoke("--ledger", str(team), "mcp", "setup", "--project", "--write").exit_code == 0
    entry = json.loads((project / ".mcp.json").read_text())["mcpServers"]["gitledger"]
    assert entry["args"][-3:] == ["--ledger", str(team), "mcp"]
    # GITLEDGER_DIR (set for every test) is this shell's choice, not the agent's: not pinned.
    assert os.environ.get("GITLEDGER_DIR")
    assert invoke("mcp", "setup", "--agent", "cursor", "--write").exit_code == 0
    cursor = json.loads((Path.home() / ".cursor" / "mcp.json").read_text())
    assert "--ledger" not in cursor["mcpServers"]["gitledger"]["args"]
