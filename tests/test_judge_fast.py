"""``gitledger judge step`` run without click (``gitledger.cli.fast``): the same answers as the
click command, click's for anything the fast parser does not take, and no click imported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import run_cli

from gitledger.cli import cli
from gitledger.cli.fast import parse_step

FIXTURES = Path(__file__).parent / "fixtures" / "judge"


def answer(text: str, as_json: bool) -> object:
    """The output without the judge's own time, which differs from run to run."""
    if not as_json:
        return text
    data = json.loads(text)
    data.pop("elapsed_ms", None)
    return data


def clicked(*args: str, input: str | None = None) -> tuple[int, str]:
    """The click command in process (the fast parser never runs there)."""
    result = CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)
    return result.exit_code, result.output


@pytest.mark.parametrize(
    "args",
    [
        ("--transcript", str(FIXTURES / "boundary.jsonl")),
        ("--transcript", str(FIXTURES / "boundary.jsonl"), "--json"),
        ("--transcript", str(FIXTURES / "boundary.jsonl"), "--floor", "0", "--json"),
        ("--transcript", str(FIXTURES / "boundary.jsonl"), "--floor=50", "--json"),
        ("--transcript", str(FIXTURES / "mid_piece.jsonl"), "--json", "--prompt"),
        ("--transcript", str(FIXTURES / "mid_piece.jsonl"), "--window", "1000000", "--json"),
    ],
)
def test_the_fast_path_answers_as_the_click_command(args: tuple[str, ...]) -> None:
    fast = run_cli("judge", "step", *args)
    assert fast.returncode == 0, fast.stderr
    code, output = clicked("judge", "step", *args)
    assert code == 0
    assert answer(fast.stdout, "--json" in args) == answer(output, "--json" in args)


def test_the_fast_path_reads_a_hook_payload_as_the_click_command() -> None:
    payload = json.dumps(
        {
            "transcript_path": str(FIXTURES / "mid_piece.jsonl"),
            "step": {"text": "Issue 2 passes. Now issue 3.", "calls": [{"name": "Bash"}]},
        }
    )
    fast = run_cli("judge", "step", "--json", "--floor", "0", input=payload)
    assert fast.returncode == 0, fast.stderr
    _, output = clicked("judge", "step", "--json", "--floor", "0", input=payload)
    assert answer(fast.stdout, True) == answer(output, True)
    assert json.loads(fast.stdout)["decision"] == "NEXT"


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        (("--transcript", "/nonexistent/t.jsonl"), None),
        (("--transcript", "/nonexistent/t.jsonl", "--json"), None),
        ((), "not json"),
        (("--json",), '{"step": "text"}'),
    ],
)
def test_errors_are_worded_and_coded_as_clicks(args: tuple[str, ...], stdin: str | None) -> None:
    fast = run_cli("judge", "step", *args, input=stdin)
    result = CliRunner().invoke(cli, ["judge", "step", *args], input=stdin)
    assert fast.returncode == result.exit_code == 2
    assert fast.stdout == ""
    assert fast.stderr == result.output  # click's runner mixes stderr into output


def test_as_a_hook_an_error_is_one_line_and_exit_0() -> None:
    fast = run_cli("judge", "step", "--hook", input="not json")
    assert fast.returncode == 0 and fast.stdout == ""
    assert fast.stderr.startswith("gitledger judge step: The hook payload on stdin is not JSON")
    assert fast.stderr.rstrip().endswith("(judged SAME; the agent goes on)")
    assert fast.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "args",
    [
        ["judge", "step", "--help"],
        ["judge", "step", "--floor", "200"],
        ["judge", "step", "--floor", "nan"],
        ["judge", "step", "--window", "10"],
        ["judge", "step", "--transcript"],
        ["judge", "step", "--unknown"],
        ["judge", "step", "extra"],
        ["judge", "--ledger", "x", "step"],
        ["judge", "turn"],
        ["--version"],
        ["task", "list"],
    ],
)
def test_what_the_fast_parser_does_not_take_goes_to_click(args: list[str]) -> None:
    assert parse_step(args) is None


def test_click_answers_what_the_fast_parser_leaves() -> None:
    result = run_cli("judge", "step", "--floor", "200")
    assert result.returncode == 2 and "200" in result.stderr  # click's own usage error
    result = run_cli("judge", "step", "--help")
    assert result.returncode == 0 and "--transcript" in result.stdout


def test_global_options_before_and_after_the_command(tmp_path: Path) -> None:
    options = parse_step(["--ledger", "a", "judge", "step", "--ledger=b", "--actor", "me"])
    assert options is not None
    assert options["ledger_path"] == "b" and options["actor"] == "me"
    assert parse_step(["judge", "step", "--ledger", str(FIXTURES / "boundary.jsonl")]) is None


def test_the_fast_path_imports_no_click() -> None:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "gitledger", "judge", "step", "--json"]
        + ["--transcript", str(FIXTURES / "boundary.jsonl"), "--floor", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0
    assert json.loads(result.stdout)["decision"] == "NEXT"
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()}
    assert "gitledger.judge.step" in imported
    assert not {name for name in imported if name.split(".")[0] == "click"}


# What a hook's step must not load: each costs the process more than judging the step (pygit2
# and its cffi, click, the task model and index, SQLite, tiktoken, the MCP SDK, rich), or is
# start-up machinery the step's modules are written without (dataclasses, typing, inspect).
NOT_ON_THE_STEP = (
    "pygit2",
    "cffi",
    "click",
    "rich",
    "tiktoken",
    "mcp",
    "sqlite3",
    "hashlib",
    "dataclasses",
    "typing",
    "inspect",
    "gitledger.ledger",
    "gitledger.index",
    "gitledger.model",
    "gitledger.gitstore.store",
    "gitledger.fuse",
)


def loaded(*args: str, stdin: str, cwd: Path) -> tuple[set[str], str]:
    """The modules a ``gitledger judge step`` process loaded when it ends, and its output.
    What the interpreter had loaded before gitledger's first import is left out: a ``.pth`` file
    of the Python it runs on (an editable install's finder, a site's own start-up code) may load
    ``typing`` at start-up, which no hook of ours can avoid."""
    probe = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import atexit, json\n"
        "atexit.register(lambda: sys.stderr.write("
        "'\\nMODULES ' + json.dumps(sorted(set(sys.modules) - before))))\n"
        "sys.argv = ['gitledger', *sys.argv[1:]]\n"
        "from gitledger.cli import main\n"
        "main()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )
    assert result.returncode == 0, result.stderr
    head, _, names = result.stderr.rpartition("MODULES ")
    assert head.strip() == "", head
    return set(json.loads(names)), result.stdout


def test_a_hooks_step_loads_none_of_the_heavy_modules(ledger: object, tmp_path: Path) -> None:
    """The step as the PostToolUse hook runs it: the payload on stdin, a ledger (no settings
    written), the first step of a session (a whole read) and the next (from the read cache)."""
    transcript = tmp_path / "session.jsonl"
    lines = (FIXTURES / "mid_piece.jsonl").read_text(encoding="utf-8").splitlines(True)
    payload = json.dumps(
        {
            "session_id": "s1",
            "transcript_path": str(transcript),
            "cwd": str(tmp_path),
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "pytest -q"},
            "tool_response": {"stdout": "3 passed", "stderr": "", "interrupted": False},
        }
    )
    for end in (len(lines) - 2, len(lines)):  # the transcript grows between two steps
        transcript.write_text("".join(lines[:end]), encoding="utf-8")
        modules, out = loaded(
            "judge", "step", "--hook", "--checkpoint", "--floor", "0", stdin=payload, cwd=tmp_path
        )
        assert out.startswith(("SAME", "NEXT")), out
        assert "gitledger.judge.step" in modules
        heavy = {m for m in modules if m in NOT_ON_THE_STEP or m.split(".")[0] in NOT_ON_THE_STEP}
        assert heavy == set(), end
    assert list((tmp_path / "ledger" / "gitledger-judge").glob("*.json"))
