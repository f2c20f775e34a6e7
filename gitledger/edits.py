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

from .structs import struct

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from typing import Literal

    Interface = Literal["python", "cli", "mcp"]
else:
    Interface = str  # what the type stands for at run time: one of INTERFACES
INTERFACES: tuple[Interface, ...] = ("python", "cli", "mcp")


@struct(frozen=True)
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


# What an error names as the next step: its name -> (the CLI's words after 'gitledger', or the
# option; the MCP tool, None where there is none and an MCP client runs the command in a shell;
# the Python call). "{}" stands for the step's value (a path), "PATH" where it has none.
COMMANDS: dict[str, tuple[str, str | None, str]] = {
    "task list": ("task list", "task_list", "Ledger.list_tasks()"),
    "task ready": ("task ready", "task_ready", "Ledger.ready()"),
    "task show json": ("task show --json", "task_show", "Task.to_json_dict()"),
    "config help": ("config --help", None, "settings.SETTINGS"),
    "verify": ("verify", "verify", "Ledger.verify()"),
    "repair": ("repair", None, "Ledger.repair()"),
    "init": ("init", None, "Ledger.init()"),
    "init at": ("init --ledger {}", None, "Ledger.open({}, create=True)"),
    "name the ledger": ("--ledger {}", None, "Ledger.open({})"),
    "sync": ("sync", "sync", "sync.sync(ledger)"),
    "restore": ("restore {}", "restore", "sync.restore(ledger, {})"),
    "remote setup": ("remote setup {} URL", None, "sync.setup_remote(ledger, {}, URL)"),
    "where": ("where", None, "Ledger.path"),
    "index rebuild": ("index rebuild", None, "Ledger.index().rebuild()"),
    "export current": (
        "task export --current-only",
        None,
        "transfer.export_tasks(ledger, history=False)",
    ),
    "fuse save": (
        "fuse save --transcript PATH --session ID",
        "fuse_save",
        "fuse.save(ledger, ID, transcript)",
    ),
    "fuse status": ("fuse status", None, "fuse.sessions(ledger)"),
    "mcp setup": ("mcp setup", None, "agents.install.mcp_change(agent, project)"),
}


def word_command(command: str, interface: Interface, value: str | None = None) -> str:
    """A command named as a next step, as ``interface`` offers it: ``'gitledger task list'``,
    the ``task_list`` tool, ``Ledger.list_tasks()``; an option as the CLI's ``--ledger PATH`` and
    the MCP server's command line. ``value`` (a path) where the step takes one, quoted as a
    Python string in the Python call."""
    words, tool, call = COMMANDS[command]
    option = words.startswith("--")
    if interface == "python":
        template = call
    elif interface == "cli":
        template = words if option else f"'gitledger {words}'"
    elif option:
        template = f"{words} in the MCP server's command"
    else:
        template = f"the {tool} tool" if tool else f"the shell command 'gitledger {words}'"
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
