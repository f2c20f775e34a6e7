"""The CLI as users run it: CliRunner for breadth, real subprocesses for races and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from conftest import run_cli

from gitledger.cli import cli


def invoke(*args: str, input: str | None = None) -> click.testing.Result:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def created(*args: str) -> dict:
    result = invoke("task", "create", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.fixture(autouse=True)
def initialised(isolated: Path) -> None:
    assert invoke("init").exit_code == 0


def test_contextspindle_commands_work_verbatim() -> None:
    result = invoke(
        "task",
        "create",
        "Ship the release",
        "--criteria",
        "Tests pass and release is published",
        "--idempotency-key",
        "ship-release",
    )
    assert result.exit_code == 0 and "Ship the release" in result.output
    task_id = result.output.split()[0]
    steps = [
        (
            "task",
            "update",
            task_id,
            "--status",
            "active",
            "--next",
            "Run final tests",
            "--expect-version",
            "1",
        ),
        ("task", "inbox", "10"),
        ("task", "list"),
        ("task", "show", task_id),
        ("task", "history", task_id),
        ("task", "children", task_id),
        ("task", "search", "release"),
        ("task", "verify"),
    ]
    for step in steps:
        out = invoke(*step)
        assert out.exit_code == 0, (step, out.output)
    assert "Run final tests" in invoke("task", "show", task_id).output


def test_every_command_has_json() -> None:
    parent = created("parent", "--criteria", "c")
    child = created("child", "--parent", parent["id"], "--label", "x", "--priority", "1")
    assert {"id", "version", "goal", "criteria", "status", "next", "notes", "short_id"} <= set(
        child
    )
    assert child["parent"] == parent["id"] and child["labels"] == ["x"]
    updated = json.loads(
        invoke("task", "update", child["short_id"], "--note", "a", "--note", "b", "--json").output
    )
    assert [n["text"] for n in updated["notes"]] == ["a", "b"] and updated["version"] == 2
    for args in (
        ("task", "list"),
        ("task", "inbox"),
        ("task", "ready"),
        ("task", "search", "child"),
        ("task", "children", parent["id"]),
        ("task", "history", child["id"]),
    ):
        out = invoke(*args, "--json")
        assert out.exit_code == 0, out.output
        assert isinstance(json.loads(out.output), list)
    diff = json.loads(invoke("task", "diff", child["id"], "1", "2", "--json").output)
    assert [c["field"] for c in diff] == ["notes", "notes"]
    shown = json.loads(invoke("task", "show", child["id"], "--at", "1", "--json").output)
    assert shown["version"] == 1 and shown["notes"] == []
    report = json.loads(invoke("verify", "--json").output)
    assert report["ok"] and report["tasks"] == 2
    where = json.loads(invoke("where", "--json").output)
    assert where["exists"] is True


def test_gates_through_the_cli() -> None:
    task = created("goal", "--criteria", "old")
    tid = task["id"]
    result = invoke("task", "update", tid, "--status", "done")
    assert result.exit_code == 1 and "evidence" in result.output
    assert invoke("task", "update", tid, "--evidence", "proof").exit_code == 0
    result = invoke("task", "update", tid, "--criteria", "new")
    assert result.exit_code == 1 and "--decision" in result.output
    assert invoke("task", "update", tid, "--criteria", "new", "--decision", "why").exit_code == 0
    result = invoke("task", "update", tid, "--status", "done")
    assert result.exit_code == 1 and "earlier criteria" in result.output
    result = invoke("task", "update", tid, "--status", "done", "--evidence", "new proof")
    assert result.exit_code == 0


@pytest.mark.parametrize(
    "args, code, message",
    [
        (("task", "show", "zzzzzz"), 1, "No task id starts with"),
        (("task", "update", "{id}", "--status", "finished"), 2, "finished"),
        (("task", "update", "{id}", "--next", "x", "--expect-version", "7"), 3, "version 1, not 7"),
        (("task", "create", ""), 2, "goal"),
        (("task", "create", "x", "--priority", "9"), 2, "9"),
        (("task", "create", "x", "--parent", "0000000000000000zzzz"), 1, "No task"),
        (("task", "update", "{id}"), 2, "Nothing to update"),
        (("task", "show", "{id}", "--at", "5"), 1, "no version 5"),
    ],
)
def test_bad_input_exit_codes(args: tuple[str, ...], code: int, message: str) -> None:
    task = created("goal")
    before = invoke("task", "history", task["id"], "--json").output
    argv = [a.format(id=task["id"]) for a in args]
    result = invoke(*argv)
    assert result.exit_code == code, result.output
    assert message in result.output
    assert invoke("task", "history", task["id"], "--json").output == before


def test_ambiguous_prefix_lists_candidates() -> None:
    ids = [created(f"t{i}")["id"] for i in range(40)]
    first = max({i[0] for i in ids}, key=[i[0] for i in ids].count)
    result = invoke("task", "show", first)
    assert result.exit_code == 1 and "ambiguous" in result.output
    assert sum(1 for i in ids if i.startswith(first) and i in result.output) >= 2


def test_json_errors_are_json() -> None:
    result = invoke("task", "show", "zzzzzz", "--json")
    assert result.exit_code == 1
    payload = json.loads(result.stderr if hasattr(result, "stderr") else result.output)
    assert payload["error"] == "task_not_found"


def test_no_ledger_message_names_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITLEDGER_DIR")
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    result = invoke("task", "list")
    assert result.exit_code == 1
    assert "gitledger init" in result.output and "--ledger" in result.output


def test_every_command_has_help_text() -> None:
    def walk(command: click.Command, path: list[str]) -> list[tuple[str, click.Command]]:
        out = [(" ".join(path), command)]
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                out += walk(sub, [*path, name])
        return out

    for name, command in walk(cli, ["gitledger"]):
        assert command.help or command.short_help, f"{name} has no help text"
        for param in command.params:
            if isinstance(param, click.Option) and param.name not in ("help", "version"):
                assert param.help, f"{name} {param.opts} has no help text"


# --- real processes ---------------------------------------------------------------------------


def test_subprocess_and_git_ledger_alias(tmp_path: Path) -> None:
    result = run_cli("task", "create", "from a subprocess", "--json")
    assert result.returncode == 0, result.stderr
    task = json.loads(result.stdout)
    result = run_cli("task", "show", task["short_id"])
    assert result.returncode == 0 and "from a subprocess" in result.stdout
    # `git ledger` finds the git-ledger entry point on PATH
    script_dir = Path(sys.executable).parent
    env = dict(os.environ, PATH=f"{script_dir}{os.pathsep}{os.environ['PATH']}")
    git = subprocess.run(
        ["git", "ledger", "task", "show", task["id"]], capture_output=True, text=True, env=env
    )
    if git.returncode != 0 and "is not a git command" in git.stderr:
        pytest.skip("git-ledger entry point is not installed (pip install -e .)")
    assert git.returncode == 0, git.stderr
    assert "from a subprocess" in git.stdout


def test_sixteen_processes_lose_no_update() -> None:
    task = created("shared task")
    per_process = 5

    def worker(n: int) -> int:
        codes = 0
        for i in range(per_process):
            codes |= run_cli("task", "update", task["id"], "--note", f"p{n}-{i}").returncode
        return codes

    with ThreadPoolExecutor(16) as pool:
        assert not any(pool.map(worker, range(16)))
    final = json.loads(run_cli("task", "show", task["id"], "--json").stdout)
    notes = {n["text"] for n in final["notes"]}
    assert notes == {f"p{n}-{i}" for n in range(16) for i in range(per_process)}
    assert final["version"] == 1 + 16 * per_process
    assert run_cli("verify").returncode == 0


def test_racing_expect_version_writers_exactly_one_wins() -> None:
    task = created("contested")

    def writer(n: int) -> int:
        return run_cli(
            "task", "update", task["id"], "--next", f"writer {n}", "--expect-version", "1"
        ).returncode

    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(writer, range(8)))
    assert sorted(codes) == [0] + [3] * 7
    final = json.loads(run_cli("task", "show", task["id"], "--json").stdout)
    assert final["version"] == 2


def test_a_hook_never_exits_2_even_on_a_usage_error() -> None:
    # exit 2 from a PreCompact hook blocks Claude Code's compaction
    hooked = run_cli("fuse", "save", "--hook", "--no-such-option", input="")
    assert hooked.returncode == 1 and "no-such-option" in hooked.stderr
    plain = run_cli("task", "show", "--no-such-option")
    assert plain.returncode == 2
