"""One spelling of each edit, and how each interface words it.

An edit has one name: the Python keyword of ``Ledger.create``/``Ledger.update`` and the argument
of the MCP tools ``task_create``/``task_update`` are the same word (``add_labels``,
``decisions``), and the CLI's flag is that word as a flag (``--add-label``, ``--decision``: the
singular where the flag repeats). ``tests/test_edits.py`` checks the three against this table.

An error that names an edit as its fix (``errors.Fix``) is worded here for the interface that
shows it: ``--decision TEXT`` on the command line, ``decisions=[...]`` in Python,
``"decisions": [...]`` to an MCP client. A command named as the next step (``errors.Step``, and
the lines of output that offer one: the digest's ``use:`` line, the restore's ``More:`` line) is
worded here too, from ``COMMANDS``: ``'gitledger task list'``, the ``task_list`` tool,
``Ledger.list_tasks()``.
"""

from __future__ import annotations

import json

from .structs import struct

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from collections.abc import Sequence
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


# What an error or an output names as the next step: its name -> (the CLI's words after
# 'gitledger', or the option; the MCP tool, None where there is none and an MCP client runs the
# command in a shell; the Python call). A placeholder in braces ("{PATH}", "{ID}", "{N}") stands
# for the step's values in order; where a value is not given, its name is shown (PATH). The MCP
# tool may be followed by its arguments, which an output shows (``word_commands``).
COMMANDS: dict[str, tuple[str, str | None, str]] = {
    "task list": ("task list", "task_list", "Ledger.list_tasks()"),
    "task ready": ("task ready", "task_ready", "Ledger.ready()"),
    "task show json": ("task show --json", "task_show", "Task.to_json_dict()"),
    "task context": ("task context {ID}", "task_context", "context.task_context(ledger, {ID})"),
    "task show": ("task show {ID}", "task_show", "Ledger.show({ID})"),
    "task claim": ("task claim {ID}", "task_claim", "Ledger.claim({ID})"),
    "task update": (
        "task update {ID} --next TEXT --note TEXT",
        "task_update",
        "Ledger.update({ID}, next=..., notes=[...])",
    ),
    "task create": (
        "task create GOAL --criteria TEXT",
        "task_create",
        "Ledger.create(GOAL, criteria=...)",
    ),
    "config help": ("config --help", None, "settings.SETTINGS"),
    "verify": ("verify", "verify", "Ledger.verify()"),
    "repair": ("repair", None, "Ledger.repair()"),
    "init": ("init", None, "Ledger.init()"),
    "init at": ("init --ledger {PATH}", None, "Ledger.open({PATH}, create=True)"),
    "name the ledger": ("--ledger {PATH}", None, "Ledger.open({PATH})"),
    "sync": ("sync", "sync", "sync.sync(ledger)"),
    "restore": ("restore {PATH}", "restore", "sync.restore(ledger, {PATH})"),
    "restore remote": ("restore REMOTE", "restore", "sync.restore(ledger, REMOTE)"),
    "remote setup": ("remote setup {PATH} URL", None, "sync.setup_remote(ledger, {PATH}, URL)"),
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
    "fuse restore": (
        "fuse restore --session {ID}",
        'fuse_restore {"session": {ID}}',
        "fuse.restore_text(ledger, {ID})",
    ),
    "fuse restore budget": (
        "fuse restore --session {ID} --budget {N}",
        'fuse_restore {"session": {ID}, "budget": {N}}',
        "fuse.restore_text(ledger, {ID}, {N})",
    ),
    "mcp setup": ("mcp setup", None, "agents.install.mcp_change(agent, project)"),
    "memory list": ("memory list", "memory_list", "Memory.list_facts()"),
}


def _filled(template: str, interface: Interface, values: tuple[str | int | None, ...]) -> str:
    """``template`` with its placeholders replaced by ``values`` in order (a name where none is
    given): a string quoted as Python (``repr``) or JSON (MCP) spells one, bare on the CLI."""
    given = iter(values)
    out, rest = [], template
    while "{" in rest:  # not ``re``: a hook's modules do not load it (tests/test_judge_fast.py)
        head, _, tail = rest.partition("{")
        name, closed, after = tail.partition("}")
        out.append(head)
        if not (closed and name.isalpha() and name.isupper()):
            out.append("{")
            rest = tail
            continue
        v = next(given, None)
        if v is None:
            out.append(name)
        elif isinstance(v, int) or interface == "cli":
            out.append(str(v))
        else:
            out.append(repr(v) if interface == "python" else json.dumps(v, ensure_ascii=False))
        rest = after
    return "".join(out) + rest


def word_command(command: str, interface: Interface, *values: str | int | None) -> str:
    """A command named as a next step in a sentence, as ``interface`` offers it: ``'gitledger
    task list'``, the ``task_list`` tool, ``Ledger.list_tasks()``; an option as the CLI's
    ``--ledger PATH`` and the MCP server's command line. ``values`` (a path) where the step takes
    them, quoted as a Python string in the Python call."""
    words, tool, call = COMMANDS[command]
    if interface == "python":
        return _filled(call, interface, values)
    shell = _filled(words, "cli", values)
    option = words.startswith("--")
    if interface == "cli":
        return shell if option else f"'gitledger {shell}'"
    if option:
        return f"{shell} in the MCP server's command"
    return f"the {tool.split()[0]} tool" if tool else f"the shell command 'gitledger {shell}'"


def word_commands(
    commands: Sequence[tuple[str, str]], interface: Interface, *values: str | int | None
) -> str:
    """Commands an output offers, unquoted, each with a note after it (``(command, note)``,
    ``values`` filling every one): ``gitledger task show ID | task ready`` on the CLI (the
    program named once), ``task_show | task_ready`` over MCP (a tool with its arguments where
    ``COMMANDS`` gives them), ``Ledger.show(ID) | Ledger.ready()`` in Python."""
    named: list[str] = []
    for command, note in commands:
        words, tool, call = COMMANDS[command]
        if interface == "python":
            said = _filled(call, interface, values)
        elif interface == "mcp" and tool is not None:
            said = _filled(tool, interface, values)
        else:  # a step no tool takes is, over MCP, the shell command
            said = ("" if named and interface == "cli" else "gitledger ") + _filled(
                words, "cli", values
            )
        named.append(f"{said} {note}" if note else said)
    return " | ".join(named)


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
    "word_commands",
]
