"""One spelling of each edit (gitledger/edits.py) across the Python API, the CLI and the MCP
tools, and refusals that carry their rule and word the fix in each interface's own terms."""

from __future__ import annotations

import inspect
import itertools
import json
import re
from pathlib import Path
from typing import Any

import click
import pytest
from helpers import invoke

from gitledger import mcp_server
from gitledger.cli import cli
from gitledger.edits import EDITS, UPDATE_EDITS, word, word_command
from gitledger.errors import (
    ClaimConflict,
    Fix,
    GateRefused,
    InvalidInput,
    NoLedger,
    Step,
    VersionConflict,
)
from gitledger.ledger import Ledger

CREATE_EDITS = ("criteria", "parent", "owner", "priority", "labels", "next", "dependencies")


def cli_options(*path: str) -> dict[str, click.Option]:
    """The options of the command ``path`` names (words after a command are its arguments)."""
    command: Any = cli
    for name in path:
        if not isinstance(command, click.Group):
            break
        command = command.get_command(click.Context(command), name)
    return {flag: p for p in command.params if isinstance(p, click.Option) for flag in p.opts}


def mcp_arguments(tool: str) -> set[str]:
    spec = next(s for s in mcp_server.available_tools() if s.name == tool)
    return set(spec.input_schema()["properties"])


@pytest.mark.parametrize(
    ("command", "method", "tool", "names"),
    [
        ("update", Ledger.update, "task_update", UPDATE_EDITS),
        ("create", Ledger.create, "task_create", CREATE_EDITS),
    ],
)
def test_each_edit_has_one_spelling_everywhere(
    command: str, method: Any, tool: str, names: tuple[str, ...]
) -> None:
    keywords = set(inspect.signature(method).parameters)
    options = cli_options("task", command)
    arguments = mcp_arguments(tool)
    for name in names:
        assert name in keywords, name
        assert name in arguments, name
        assert EDITS[name].flag in options, name
        assert options[EDITS[name].flag].multiple == EDITS[name].many, name
    if command == "update":  # its CLI options hand Ledger.update its keywords as they are
        for name in UPDATE_EDITS:
            assert options[EDITS[name].flag].name == name


def test_a_fix_is_worded_per_interface() -> None:
    assert word("decisions", "cli") == "--decision TEXT"
    assert word("decisions", "python") == "decisions=[...]"
    assert word("decisions", "mcp") == '"decisions": [...]'
    assert word("blocker", "cli", "") == "--blocker ''"
    assert word("blocker", "python", "") == 'blocker=""'
    assert word("expect_version", "mcp", "3") == '"expect_version": "3"'
    error = VersionConflict("abc", 7, 3)
    assert error.worded("cli").endswith("retry with --expect-version 3.")
    assert error.message.endswith("retry with expect_version=3.")
    assert error.worded("mcp").endswith('retry with "expect_version": 3.')
    assert error.fixes == (Fix("expect_version", 3),)


def test_gate_refusals_carry_rule_and_field(ledger: Ledger) -> None:
    task = ledger.create("ship it", criteria="tests pass")
    cases = [
        ({"goal": "ship more"}, "decision-for-goal", "goal"),
        ({"status": "cancelled"}, "decision-for-cancel", "status"),
        ({"status": "blocked"}, "blocked-needs-blocker", "blocker"),
        ({"status": "done"}, "done-needs-evidence", "evidence"),
        ({"add_dependencies": [task.id]}, "no-self-dependency", "dependencies"),
        ({"parent": task.id}, "no-self-parent", "parent"),
    ]
    for edits, rule, field in cases:
        with pytest.raises(GateRefused) as refused:
            ledger.update(task.id, **edits)
        assert (refused.value.rule, refused.value.field) == (rule, field)
        assert "--" not in refused.value.message  # Python callers get Python keywords
        assert refused.value.to_dict()["rule"] == rule
    assert ledger.show(task.id).version == 1  # nothing written


def test_the_cli_and_mcp_word_the_same_refusal_in_their_own_terms(ledger: Ledger) -> None:
    task = ledger.create("ship it", criteria="tests pass")
    result = invoke("task", "update", task.id, "--goal", "ship more", "--json")
    assert result.exit_code == 1
    error = json.loads(result.stderr)
    assert error["rule"] == "decision-for-goal" and error["field"] == "goal"
    assert "add --decision TEXT to the same update" in error["message"]

    server = mcp_server.Server(ledger.path)
    out, failed = server.call("task_update", {"id": task.id, "goal": "ship more"})
    assert failed and out["rule"] == "decision-for-goal"
    assert 'add "decisions": [...] to the same update' in out["message"]
    assert "--" not in out["message"]
    assert ledger.show(task.id).version == 1


def test_memory_and_a_damaged_object_name_their_steps_per_interface(ledger: Ledger) -> None:
    from gitledger.errors import CorruptRecord, FactNotFound
    from gitledger.memory import Memory

    with pytest.raises(FactNotFound) as missing:
        Memory(ledger).resolve("zzzzzz")
    assert missing.value.message.endswith("List facts with Memory.list_facts().")
    assert missing.value.worded("mcp").endswith("List facts with the memory_list tool.")
    result = invoke("memory", "show", "zzzzzz")
    assert result.exit_code != 0
    assert "List facts with 'gitledger memory list'." in result.output
    server = mcp_server.Server(ledger.path)
    out, failed = server.call("memory_forget", {"id": "zzzzzz"})
    assert failed and out["message"].endswith("List facts with the memory_list tool.")

    damaged = CorruptRecord(
        "Git object 0 is damaged. Restore the ledger from a backup (",
        Step("restore remote"),
        "); ",
        Step("verify"),
        " lists every task the damage reaches.",
    )
    assert "(sync.restore(ledger, REMOTE)); Ledger.verify() lists" in damaged.message
    assert "('gitledger restore REMOTE'); 'gitledger verify' lists" in damaged.worded("cli")
    assert "(the restore tool); the verify tool lists" in damaged.worded("mcp")


def test_old_keyword_spellings_still_work_with_a_warning(ledger: Ledger) -> None:
    task = ledger.create("ship it")
    dep = ledger.create("first")
    with pytest.warns(DeprecationWarning, match="add_labels"):
        ledger.update(task.id, labels_add=["x"])  # type: ignore[call-arg]
    with pytest.warns(DeprecationWarning, match="add_dependencies"):
        ledger.update(task.id, dependencies_add=[dep.id])  # type: ignore[call-arg]
    shown = ledger.show(task.id)
    assert shown.labels == ["x"] and shown.dependencies == [dep.id]
    with pytest.raises(TypeError, match="colour"):
        ledger.update(task.id, colour=["red"])  # type: ignore[call-arg]
    # The CLI's older flags are the same edits.
    assert invoke("task", "update", task.id, "--label", "y").exit_code == 0
    assert invoke("task", "update", task.id, "--add-label", "z").exit_code == 0
    assert ledger.show(task.id).labels == ["x", "y", "z"]


def test_nothing_to_update_names_the_fix_per_interface(ledger: Ledger) -> None:
    task = ledger.create("ship it")
    with pytest.raises(InvalidInput) as refused:
        ledger.update(task.id)
    assert 'status="active" or notes=[...]' in refused.value.message
    assert "--status active or --note TEXT" in refused.value.worded("cli")


def test_claim_refusals_word_steal_and_decision_per_interface(ledger: Ledger) -> None:
    task = ledger.create("held")
    ledger.claim(task.id, agent="one")
    with pytest.raises(ClaimConflict) as held:
        ledger.claim(task.id, agent="two")
    assert (held.value.rule, held.value.field) == ("claim-held", "owner")
    assert "take it with steal=True and decision=" in held.value.message
    assert "--" not in held.value.message
    assert "--steal and --decision TEXT" in held.value.worded("cli")
    assert '"steal": true and "decision": "..."' in held.value.worded("mcp")
    with pytest.raises(ClaimConflict) as release:
        ledger.release(task.id, agent="two")
    assert release.value.rule == "release-needs-holder" and "--" not in release.value.message
    with pytest.raises(InvalidInput) as lone:
        ledger.claim(task.id, agent="two", decision="mine")
    assert lone.value.field == "decision" and "--" not in lone.value.message
    assert lone.value.worded("cli").startswith("--decision TEXT goes with --steal;")
    assert ledger.show(task.id).agent == "one"  # nothing written


def test_a_switch_is_worded_without_a_value() -> None:
    assert word("steal", "cli") == "--steal"
    assert word("steal", "python") == "steal=True"
    assert word("steal", "mcp") == '"steal": true'


@pytest.mark.parametrize(
    ("edit", "command", "tool"),
    [
        ("steal", ("task", "claim"), "task_claim"),
        ("decision", ("task", "claim"), "task_claim"),
        ("bundle", ("backup",), None),
        ("format", ("graph",), None),
    ],
)
def test_each_fix_a_message_names_is_an_option_there(
    edit: str, command: tuple[str, ...], tool: str | None
) -> None:
    assert EDITS[edit].flag in cli_options(*command)
    if tool is not None:
        assert edit in mcp_arguments(tool)


def test_a_next_step_is_the_command_of_each_interface(ledger: Ledger) -> None:
    from gitledger.edits import COMMANDS
    from gitledger.errors import TaskNotFound

    with pytest.raises(TaskNotFound) as missing:
        ledger.show("zzzzzzzz")
    assert "List tasks with Ledger.list_tasks()." in missing.value.message
    assert "List tasks with 'gitledger task list'." in missing.value.worded("cli")
    assert "List tasks with the task_list tool." in missing.value.worded("mcp")
    from gitledger import context, fuse, settings, sync, transfer
    from gitledger.agents import install
    from gitledger.memory import Memory
    from gitledger.model import Task

    tools = {t.name for t in mcp_server.available_tools()}
    global_flags = {flag for p in cli.params if isinstance(p, click.Option) for flag in p.opts}
    for command in COMMANDS:
        shell = word_command(command, "cli").strip("'")  # the CLI's words
        words = shell.split()[1:] if shell.startswith("gitledger ") else shell.split()
        path = [w for w in itertools.takewhile(lambda w: not w.startswith("-"), words)]
        options = cli_options(*path)  # the command exists
        for flag in (w for w in words if w.startswith("--") and w != "--help"):
            assert flag in options or flag in global_flags, (command, flag)
        over_mcp = word_command(command, "mcp")
        tool = re.fullmatch(r"the (\w+) tool", over_mcp)
        if tool:
            assert tool[1] in tools, command
        else:  # no tool does it: the client runs the command in a shell, or starts the server so
            assert shell in over_mcp, command
        call = word_command(command, "python").split("(")[0]
        owner, attribute = call.rsplit(".", 1)
        namespace = {
            "Ledger": ledger,
            "Task": Task,
            "fuse": fuse,
            "agents.install": install,
            "sync": sync,
            "settings": settings,
            "transfer": transfer,
            "context": context,
            "Memory": Memory,
        }[owner]
        assert hasattr(namespace, attribute), command


def test_a_step_with_a_path_is_worded_with_it() -> None:
    assert word_command("init at", "cli", "/x y") == "'gitledger init --ledger /x y'"
    assert word_command("init at", "python", "/x y") == "Ledger.open('/x y', create=True)"
    assert word_command("init at", "mcp", "/x") == "the shell command 'gitledger init --ledger /x'"
    assert word_command("name the ledger", "cli") == "--ledger PATH"
    assert word_command("name the ledger", "python") == "Ledger.open(PATH)"


def test_no_ledger_names_the_steps_of_each_interface(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITLEDGER_DIR", raising=False)
    missing = tmp_path / "nowhere"
    with pytest.raises(NoLedger) as named:
        Ledger.open(missing)
    assert "(named by Ledger.open(PATH) or GITLEDGER_DIR)" in named.value.message
    assert f"create a ledger there with Ledger.open({str(missing)!r}, create=True)." in (
        named.value.message
    )
    assert "--" not in named.value.message
    assert "(named by --ledger PATH or GITLEDGER_DIR)" in named.value.worded("cli")
    assert f"with 'gitledger init --ledger {missing}'." in named.value.worded("cli")
    assert f"with the shell command 'gitledger init --ledger {missing}'." in (
        named.value.worded("mcp")
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(NoLedger) as nowhere:
        Ledger.open(cwd=empty)
    assert "Run Ledger.init() to make one here, or name one with Ledger.open(PATH)." in (
        nowhere.value.message
    )
    assert "Run 'gitledger init' to make one here, or name one with --ledger PATH." in (
        nowhere.value.worded("cli")
    )


@pytest.mark.parametrize(
    ("text", "step"),
    [
        ("a lock file exists", "repair"),
        ("object is corrupt", "verify"),
    ],
)
def test_a_storage_failure_names_the_step_of_each_interface(text: str, step: str) -> None:
    import pygit2

    from gitledger.gitstore.errors import storage_failure

    error = storage_failure("Writing task x", pygit2.GitError(text))
    assert f"run Ledger.{step}()" in error.message.replace("Run", "run")
    assert f"run 'gitledger {step}'" in error.worded("cli").replace("Run", "run")
    over_mcp = error.worded("mcp")
    assert ("the verify tool" if step == "verify" else "the shell command 'gitledger repair'") in (
        over_mcp
    )


def test_a_full_disk_names_the_folder_of_each_interface() -> None:
    import errno

    from gitledger.gitstore.errors import storage_failure

    error = storage_failure("Writing task x", OSError(errno.ENOSPC, "No space left on device"))
    assert "which Ledger.path names" in error.message
    assert "which 'gitledger where' names" in error.worded("cli")
    assert "which the shell command 'gitledger where' names" in error.worded("mcp")
    read_only = storage_failure("Writing task x", OSError(errno.EROFS, "Read-only file system"))
    assert "or with Ledger.open(PATH) naming a writable copy" in read_only.message
    assert "or with --ledger PATH naming a writable copy" in read_only.worded("cli")


def test_fuse_and_setup_steps_are_worded_in_python(ledger: Ledger) -> None:
    from gitledger import fuse
    from gitledger.agents.settings import settings_path
    from gitledger.errors import NotFound

    with pytest.raises(NotFound) as empty:
        fuse.restore_text(ledger)
    assert "Save one with fuse.save(ledger, ID, transcript)." in empty.value.message
    assert "the fuse_save tool" in empty.value.worded("mcp")
    with pytest.raises(NotFound) as unknown:
        fuse.restore_text(ledger, "never-saved")
    assert "List sessions with fuse.sessions(ledger)." in unknown.value.message
    with pytest.raises(InvalidInput) as cursor:  # the CLI offers only agents with hooks
        settings_path("cursor", None)
    assert "use agents.install.mcp_change(agent, project)." in cursor.value.message
    assert "use 'gitledger mcp setup'." in cursor.value.worded("cli")


def test_import_and_settings_name_their_steps_per_interface(ledger: Ledger, tmp_path: Path) -> None:
    from gitledger import settings
    from gitledger.transfer import import_tasks

    with pytest.raises(InvalidInput) as refused:
        import_tasks(ledger, ["not json\n"])
    assert "each line must be one task as Task.to_json_dict() gives it." in refused.value.message
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    out = invoke("task", "import", str(bad))
    assert "each line must be one task as 'gitledger task show --json' gives it." in out.output
    with pytest.raises(InvalidInput) as unknown:
        settings.apply(ledger.store, {"no.such": "1"})
    assert "(see settings.SETTINGS)." in unknown.value.message
    assert "(see 'gitledger config --help')." in invoke("config", "no.such=1").output


def test_a_folder_that_is_no_ledger_names_init_per_interface(tmp_path: Path) -> None:
    folder = tmp_path / "not-a-ledger"
    folder.mkdir()
    (folder / "HEAD").write_text("garbage\n")
    with pytest.raises(NoLedger) as refused:
        Ledger.open(folder)
    assert "Check the path, or run Ledger.init() to create a ledger." in refused.value.message
    out = invoke("--ledger", str(folder), "task", "list")
    assert out.exit_code == 1
    assert "Check the path, or run 'gitledger init' to create a ledger." in out.output


def test_sync_names_its_next_steps_per_interface(tmp_path: Path) -> None:
    """sync's refusals and the init warning name sync, restore and remote setup as each interface
    offers them, never a CLI command to an MCP client or a Python caller."""
    from gitledger import sync
    from gitledger.errors import InvalidInput

    ledger = Ledger.open(tmp_path / "ledger", create=True)
    with pytest.raises(InvalidInput) as unknown:
        sync.resolve_remote(ledger, "nosuchremote")
    assert "run sync.setup_remote(ledger, 'nosuchremote', URL)." in unknown.value.message
    assert "run 'gitledger remote setup nosuchremote URL'." in unknown.value.worded("cli")
    assert "the shell command 'gitledger remote setup nosuchremote URL'" in (
        unknown.value.worded("mcp")
    )
    with pytest.raises(InvalidInput) as no_url:
        sync.setup_remote(ledger, "nosuchremote")
    assert "give its URL: sync.setup_remote(ledger, 'nosuchremote', URL)." in no_url.value.message
    assert word_command("sync", "mcp") == "the sync tool"
    assert word_command("restore", "python", "origin") == "sync.restore(ledger, 'origin')"
    assert word_command("restore", "mcp", "origin") == "the restore tool"
    assert word_command("restore", "cli", "origin") == "'gitledger restore origin'"


def test_outputs_name_their_next_steps_per_interface(tmp_path: Path) -> None:
    """The digest's use: line and snapshot heading, the restore's More: line, session start's
    ready hint and export's problem lines name commands as the interface that shows them does:
    the CLI's words on the command line (as before), Python calls to a Python caller (the MCP
    tools: tests/test_mcp_server.py)."""
    from helpers import run_cli

    from gitledger import fuse
    from gitledger.handoff import prime, session_start
    from gitledger.transcripts.synthetic import write_demo_session
    from gitledger.transfer import ExportStats, export_tasks

    ledger = Ledger.open(tmp_path / "ledger", create=True)
    transcript = write_demo_session(tmp_path / "session.jsonl")
    fuse.save(ledger, "s1", transcript)
    cli_use = (
        "use: gitledger task context ID (full handoff) | task show ID | task claim ID | "
        "task update ID --next TEXT --note TEXT | task ready | task create GOAL --criteria TEXT"
    )
    digest = prime(ledger).text
    assert (
        "use: context.task_context(ledger, ID) (full handoff) | Ledger.show(ID) | "
        "Ledger.claim(ID) | Ledger.update(ID, next=..., notes=[...]) | Ledger.ready() | "
        "Ledger.create(GOAL, criteria=...)"
    ) in digest
    assert "recent fuse snapshots (fuse.restore_text(ledger, ID)):" in digest
    assert "gitledger task" not in digest and "--session" not in digest
    assert cli_use in prime(ledger, interface="cli").text
    text, _ = fuse.restore_text(ledger, "s1", 2000)  # items shortened: a More: line
    assert text.endswith("More: fuse.restore_text(ledger, 's1', 9500).")
    text, _ = fuse.restore_text(ledger, "s1", 2000, interface="mcp")
    assert text.endswith('More: fuse_restore {"session": "s1", "budget": 9500}.')
    assert "Ledger.ready() lists what can start" in session_start(ledger)
    started = session_start(ledger, interface="cli")
    assert "('gitledger task ready' lists what can start)" in started
    assert cli_use in started

    home = {"GITLEDGER_DIR": str(tmp_path / "ledger")}
    shown = run_cli("prime", env=home)
    assert cli_use in shown.stdout
    assert "recent fuse snapshots (gitledger fuse restore --session ID):" in shown.stdout
    restored = run_cli(
        "fuse", "restore", "--session", "s1", "--plain", "--budget", "2000", env=home
    )
    assert restored.stdout.endswith("More: gitledger fuse restore --session s1 --budget 9500.\n")

    ledger.create("A task to export")
    broken = tmp_path / "ledger" / "refs" / "gitledger" / "tasks" / ("z" * 20)
    broken.write_text("garbage\n")  # names no object
    stats = ExportStats()
    list(export_tasks(ledger, stats=stats))
    assert stats.problems[0][1].endswith("; Ledger.verify() says how to restore it")
    exported = run_cli("task", "export", env=home)
    assert exported.returncode == 1
    assert "'gitledger verify' says how to restore it" in exported.stderr
