"""Global options work where users type them, and help shows options as they are used."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from conftest import run_cli

from gitledger.cli import cli
from gitledger.ledger import Ledger


def test_actor_after_the_subcommand_is_the_actor(ledger: Ledger) -> None:
    task = ledger.create("Ship it", criteria="shipped")
    out = run_cli("task", "claim", task.id[:8], "--actor", "ann", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["owner"] == "ann"
    # Before the command, as before; after it, it wins over the one before.
    out = run_cli("--actor", "bob", "task", "update", task.id[:8], "--note", "hi", "--actor", "cy")
    assert out.returncode == 0, out.stderr
    assert ledger.history(task.id)[0].actor == "cy"


def test_ledger_after_the_subcommand_is_the_ledger(tmp_path: Path) -> None:
    other = tmp_path / "other-ledger"
    assert run_cli("init", "--ledger", str(other)).returncode == 0
    out = run_cli("task", "create", "In the other ledger", "--ledger", str(other), "--json")
    assert out.returncode == 0, out.stderr
    listed = run_cli("--ledger", str(other), "task", "list", "--json")
    assert [t["goal"] for t in json.loads(listed.stdout)] == ["In the other ledger"]
    # the default ledger (GITLEDGER_DIR of the test) did not get it
    assert run_cli("task", "list", "--json").stdout.strip() in ("", "[]")


def leaf_commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    ctx = click.Context(cli)
    out: list[tuple[str, ...]] = []
    for name in group.list_commands(ctx):
        sub = group.get_command(ctx, name)
        if isinstance(sub, click.Group):
            out += leaf_commands(sub, (*path, name))
            if not sub.invoke_without_command:
                continue
        out.append((*path, name))
    return out


def test_every_command_help_says_where_the_global_options_go() -> None:
    runner = CliRunner()
    commands = leaf_commands(cli)
    assert ("task", "claim") in commands and ("mcp",) in commands
    for path in commands:
        result = runner.invoke(cli, [*path, "--help"])
        assert result.exit_code == 0, result.output
        text = " ".join(result.output.split())
        assert "--actor TEXT" in text and "--ledger DIRECTORY" in text, path
        assert "Also accepted before the command." in text, path


def test_claim_help_shows_push_as_a_flag_with_an_optional_remote() -> None:
    result = CliRunner().invoke(cli, ["task", "claim", "--help"])
    assert "--push [REMOTE]" in result.output
    assert "--push TEXT" not in result.output


# --- one rule for a missing ledger: exit 1, the message names the place and the right fix -------


def test_where_exits_1_without_a_ledger_inside_git_and_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITLEDGER_DIR")
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    inside = run_cli("where", cwd=repo)
    assert inside.returncode == 1, inside.stdout
    assert inside.stdout == ""
    assert "No ledger at" in inside.stderr and "Run 'gitledger init' to create it" in inside.stderr
    outside = tmp_path / "plain"
    outside.mkdir()
    out = run_cli("where", cwd=outside)
    assert out.returncode == 1 and out.stdout == ""
    assert "No ledger here" in out.stderr
    assert run_cli("init", cwd=repo).returncode == 0
    found = run_cli("where", cwd=repo)
    assert found.returncode == 0 and found.stdout.strip().endswith("gitledger")
    assert json.loads(run_cli("where", "--json", cwd=repo).stdout)["exists"] is True


def test_a_missing_ledger_path_is_not_told_to_pass_ledger(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-ledger"
    for args in (
        ("--ledger", str(missing), "task", "list"),
        ("task", "list", "--ledger", str(missing)),
        ("--ledger", str(missing), "where"),
    ):
        out = run_cli(*args)
        assert out.returncode == 1, args
        assert f"No ledger at {missing}" in out.stderr, args
        assert "pass --ledger" not in out.stderr, args
        assert f"gitledger init --ledger {missing}" in out.stderr, args
    assert not missing.exists()
    # and the command it names works as given
    assert run_cli("init", "--ledger", str(missing)).returncode == 0
    assert run_cli("--ledger", str(missing), "where").returncode == 0


def test_counts_agree_with_their_nouns(ledger: Ledger) -> None:
    ledger.create("only one")
    out = run_cli("verify")
    assert out.returncode == 0 and out.stdout.strip() == "Checked 1 task, 1 version: ok."


def test_every_command_but_the_mcp_server_and_hooks_takes_json() -> None:
    # The server speaks MCP on stdio; a hook's stdout is what the agent's hook protocol reads.
    without = [path for path in leaf_commands(cli) if "--json" not in _options(path)]
    assert [p for p in without if p[0] != "hook"] == [("mcp",)]


def _options(path: tuple[str, ...]) -> set[str]:
    ctx = click.Context(cli)
    command: click.Command | None = cli
    for name in path:
        assert isinstance(command, click.Group)
        command = command.get_command(ctx, name)
    assert command is not None
    return {opt for p in command.params for opt in p.opts}
