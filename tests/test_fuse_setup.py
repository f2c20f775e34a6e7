"""``gitledger fuse setup``: merge the hooks into agent settings, idempotently, keeping the rest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gitledger import fuse
from gitledger.cli import cli
from gitledger.errors import InvalidInput

OTHER = {
    "model": "opus",
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "PreCompact": [{"matcher": "", "hooks": [{"type": "command", "command": "notify-send x"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
    },
}


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, ["fuse", "setup", *args], catch_exceptions=False)


def user_settings(isolated: Path) -> Path:
    return isolated / "home" / ".claude" / "settings.json"


def ours(settings: dict[str, Any], event: str) -> list[dict[str, Any]]:
    return [g for g in settings["hooks"].get(event, []) if fuse.HOOK_MARK in json.dumps(g)]


def test_without_write_it_shows_a_diff_and_writes_nothing(isolated: Path) -> None:
    result = run()
    assert result.exit_code == 0
    assert "PreCompact" in result.output and "+" in result.output
    assert "--write" in result.output
    assert not user_settings(isolated).exists()


def test_write_merges_and_keeps_every_other_setting(isolated: Path) -> None:
    path = user_settings(isolated)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(OTHER, indent=2))
    result = run("--write")
    assert result.exit_code == 0, result.output
    merged = json.loads(path.read_text())
    assert merged["model"] == "opus" and merged["permissions"] == OTHER["permissions"]
    assert merged["hooks"]["Stop"] == OTHER["hooks"]["Stop"]
    assert merged["hooks"]["PreCompact"][0] == OTHER["hooks"]["PreCompact"][0]
    assert "fuse save --hook" in json.dumps(ours(merged, "PreCompact"))
    (start,) = ours(merged, "SessionStart")
    assert start["matcher"] == "compact|resume" and "fuse restore --hook" in json.dumps(start)
    assert json.loads(path.with_name("settings.json.bak").read_text()) == OTHER


def test_setup_is_idempotent(isolated: Path) -> None:
    run("--write")
    path = user_settings(isolated)
    first = path.read_text()
    again = run("--write")
    assert again.exit_code == 0 and "Nothing to change" in again.output
    assert path.read_text() == first
    merged = json.loads(first)
    assert len(ours(merged, "PreCompact")) == 1 and len(ours(merged, "SessionStart")) == 1


def test_uninstall_removes_only_its_own_entries(isolated: Path) -> None:
    path = user_settings(isolated)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(OTHER))
    run("--write")
    result = run("--uninstall", "--write")
    assert result.exit_code == 0
    assert json.loads(path.read_text()) == OTHER
    assert "Nothing to change" in run("--uninstall", "--write").output


def test_a_malformed_settings_file_is_refused_with_line_and_column(isolated: Path) -> None:
    path = user_settings(isolated)
    path.parent.mkdir(parents=True)
    broken = '{\n  "model": "opus",\n  "hooks": {,}\n}\n'
    path.write_text(broken)
    result = run("--write")
    assert result.exit_code == 2
    assert "line 3, column 13" in result.output and "nothing was written" in result.output
    assert path.read_text() == broken and not path.with_name("settings.json.bak").exists()


@pytest.mark.parametrize("content", ["[1, 2]", '{"hooks": []}'])
def test_settings_of_the_wrong_shape_are_refused(isolated: Path, content: str) -> None:
    path = user_settings(isolated)
    path.parent.mkdir(parents=True)
    path.write_text(content)
    assert run("--write").exit_code == 2
    assert path.read_text() == content


def test_project_settings(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = isolated / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    data = json.loads(run("--project", "--write", "--json").output)
    assert data["written"] and data["path"] == str(project / ".claude" / "settings.json")
    assert (project / ".claude" / "settings.json").is_file()
    assert not user_settings(isolated).exists()


def test_codex_and_gemini(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_HOME", str(isolated / "codex-home"))
    run("--agent", "codex", "--write")
    codex = json.loads((isolated / "codex-home" / "hooks.json").read_text())
    assert set(codex["hooks"]) == {"PreCompact", "SessionStart"}
    run("--agent", "gemini", "--write")
    gemini = json.loads((isolated / "home" / ".gemini" / "settings.json").read_text())
    assert set(gemini["hooks"]) == {"PreCompress", "SessionStart"}
    assert gemini["hooks"]["PreCompress"][0]["hooks"][0]["name"] == "gitledger-fuse-save"
    assert "Nothing to change" in run("--agent", "gemini", "--write").output


def test_merge_settings_is_a_pure_function() -> None:
    merged = fuse.merge_settings(OTHER, "claude")
    assert merged != OTHER and "fuse" not in json.dumps(OTHER)
    assert fuse.merge_settings(merged, "claude") == merged
    assert fuse.merge_settings(merged, "claude", uninstall=True) == OTHER
    with pytest.raises(InvalidInput):
        fuse.settings_path("vim", None)
