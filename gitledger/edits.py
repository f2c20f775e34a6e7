"""One spelling of each edit, and how each interface words it.

An edit has one name: the Python keyword of ``Ledger.create``/``Ledger.update`` and the argument
of the MCP tools ``task_create``/``task_update`` are the same word (``add_labels``,
``decisions``), and the CLI's flag is that word as a flag (``--add-label``, ``--decision``: the
singular where the flag repeats). ``tests/test_edits.py`` checks the three against this table.

An error that names an edit as its fix (``errors.Fix``) is worded here for the interface that
shows it: ``--decision TEXT`` on the command line, ``decisions=[...]`` in Python,
``"decisions": [...]`` to an MCP client.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

Interface = Literal["python", "cli", "mcp"]
INTERFACES: tuple[Interface, ...] = ("python", "cli", "mcp")


@dataclass(frozen=True)
class Edit:
    name: str  # the Python keyword and the MCP argument
    flag: str  # the CLI option
    metavar: str = "TEXT"  # what the CLI option takes; "N" for a number, "" for a switch
    many: bool = False  # a list in Python and MCP, a repeatable option on the CLI


_ALL = (
    Edit("goal", "--goal"),
    Edit("criteria", "--criteria"),
    Edit("status", "--status", "STATUS"),
    Edit("next", "--next"),
    Edit("blocker", "--blocker"),
    Edit("owner", "--owner"),
    Edit("priority", "--priority", "N"),
    Edit("parent", "--parent", "ID"),
    Edit("labels", "--label", many=True),
    Edit("dependencies", "--dependency", "ID", many=True),
    Edit("add_labels", "--add-label", many=True),
    Edit("remove_labels", "--remove-label", many=True),
    Edit("notes", "--note", many=True),
    Edit("decisions", "--decision", many=True),
    Edit("decision", "--decision"),  # task_claim's, with steal
    Edit("steal", "--steal", ""),  # task_claim's: a switch
    Edit("evidence", "--evidence", many=True),
    Edit("add_dependencies", "--add-dependency", "ID", many=True),
    Edit("remove_dependencies", "--remove-dependency", "ID", many=True),
    Edit("expect_version", "--expect-version", "N"),
    Edit("idempotency_key", "--idempotency-key", "KEY"),
    Edit("budget", "--budget", "N"),
    Edit("unit", "--unit", "UNIT"),
    Edit("bundle", "--bundle", "FILE"),  # backup's
    Edit("format", "--format", "FORMAT"),  # graph's
)
EDITS: dict[str, Edit] = {e.name: e for e in _ALL}

# The edits of one update, in the order Ledger.update takes them.
UPDATE_EDITS = (
    "goal",
    "criteria",
    "status",
    "next",
    "blocker",
    "owner",
    "priority",
    "parent",
    "add_labels",
    "remove_labels",
    "notes",
    "decisions",
    "evidence",
    "add_dependencies",
    "remove_dependencies",
)


# What an error names as the next step, as each interface offers it: the CLI's command, the MCP
# client's tool (a command with no tool is one the client runs in a shell), the Python call.
# "{}" stands for the step's value (a path), "PATH" where it has none.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "task list": ("'gitledger task list'", "the task_list tool", "Ledger.list_tasks()"),
    "task ready": ("'gitledger task ready'", "the task_ready tool", "Ledger.ready()"),
    "task show json": ("'gitledger task show --json'", "the task_show tool", "Task.to_json_dict()"),
    "config help": (
        "'gitledger config --help'",
        "the shell command 'gitledger config --help'",
        "settings.SETTINGS",
    ),
    "verify": ("'gitledger verify'", "the verify tool", "Ledger.verify()"),
    "repair": ("'gitledger repair'", "the shell command 'gitledger repair'", "Ledger.repair()"),
    "init": ("'gitledger init'", "the shell command 'gitledger init'", "Ledger.init()"),
    "init at": (
        "'gitledger init --ledger {}'",
        "the shell command 'gitledger init --ledger {}'",
        "Ledger.open({}, create=True)",
    ),
    "name the ledger": (
        "--ledger {}",
        "--ledger {} in the MCP server's command",
        "Ledger.open({})",
    ),
    "sync": ("'gitledger sync'", "the sync tool", "sync.sync(ledger)"),
    "where": ("'gitledger where'", "the shell command 'gitledger where'", "Ledger.path"),
    "fuse save": (
        "'gitledger fuse save --transcript PATH --session ID'",
        "the fuse_save tool",
        "fuse.save(ledger, ID, transcript)",
    ),
    "fuse status": (
        "'gitledger fuse status'",
        "the shell command 'gitledger fuse status'",
        "fuse.sessions(ledger)",
    ),
    "mcp setup": (
        "'gitledger mcp setup'",
        "the shell command 'gitledger mcp setup'",
        "agents.install.mcp_change(agent, project)",
    ),
}


def word_command(command: str, interface: Interface, value: str | None = None) -> str:
    """A command named as a next step, as ``interface`` offers it: ``'gitledger task list'``,
    the ``task_list`` tool, ``Ledger.list_tasks()``; ``value`` (a path) where the step takes one,
    quoted as a Python string in the Python call."""
    cli, mcp, python = COMMANDS[command]
    template = {"cli": cli, "mcp": mcp, "python": python}[interface]
    if value is None:
        return template.replace("{}", "PATH")
    return template.replace("{}", repr(value) if interface == "python" else value)


def word(name: str, interface: Interface, value: str | int | None = None) -> str:
    """Edit ``name`` as ``interface`` spells it; ``value`` None stands for the caller's own."""
    edit = EDITS[name]
    if edit.metavar == "":  # a switch: on, as each interface turns it on
        return {"cli": edit.flag, "python": f"{name}=True", "mcp": f'"{name}": true'}[interface]
    if interface == "cli":
        shown = edit.metavar if value is None else ("''" if value == "" else str(value))
        return f"{edit.flag} {shown}"
    if value is None:
        one = "N" if edit.metavar == "N" else '"..."'
        shown = "[...]" if edit.many else one
    else:
        shown = json.dumps([value] if edit.many else value, ensure_ascii=False)
    if interface == "python":
        return f"{name}={shown}"
    return f'"{name}": {shown}'


__all__ = [
    "COMMANDS",
    "EDITS",
    "INTERFACES",
    "UPDATE_EDITS",
    "Edit",
    "Interface",
    "word",
    "word_command",
]
