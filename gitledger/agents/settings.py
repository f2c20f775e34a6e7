"""Editing other programs' settings files without losing anything of the user's.

``gitledger setup``, ``fuse setup`` and ``mcp setup`` write agents' settings (Claude Code's
settings.json and .claude.json, Codex's hooks.json and config.toml, Gemini CLI's settings.json,
Cursor's mcp.json). Those files belong to the user, so every change follows these rules, each
kept in one place (reading and writing the file itself in ``agents/settings_files.py``):

- **Read only what is a settings file** (``read_config``): a regular file of at most
  ``MAX_SETTINGS_BYTES``, in UTF-8. A FIFO, a device (``/dev/zero``), a directory or a symlink
  loop is refused with a message, and so is, for the project's files, a path that resolves
  outside the project (a committed ``.claude -> ~`` link).
- **Change only our entries.** A hook entry is ours when its command is exactly one gitledger
  installs (``is_our_command``): a user's ``notify-send "gitledger fuse saved"`` beside it stays,
  and so does a group, an event or a value of a shape we do not know (``"PreCompact":
  "disabled"``), which is reported in the plan's notes instead of replaced.
- **Write back what was read.** Numbers keep their text (``1e400`` is not rewritten as
  ``Infinity``, which Claude Code's JSON.parse refuses), a CRLF file stays CRLF, and TOML is edited
  with tomlkit, which keeps comments, order, inline tables and multi-line strings. A lone surrogate
  in a JSON string is refused before anything is written.
- **Write atomically, never through a planted link**: a temporary file with a random name in the
  same folder, created ``O_EXCL|O_NOFOLLOW``, then renamed over the target; the backup
  (``<name>.bak``, the old bytes exactly) is written the same way, so a symlink planted at the
  backup's name is replaced, not followed. A read-only file is refused: its mode says "do not
  edit". A symlinked settings file (a dotfiles repository) is written through to its target.
"""

from __future__ import annotations

import copy
import difflib
import os
import shlex
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidInput, Step
from . import DEFAULT, get
from .settings_files import (
    MAX_SETTINGS_BYTES,
    RawNumber,
    check_inside,
    check_settings_writable,
    decode,
    dump_json,
    parse_json,
    read_config,
    replace_settings_file,
    write_atomic,
)

HOOK_MARK = "gitledger fuse"  # what every fuse hook command contains (tests look for it)

# The commands gitledger installs as hooks, as (words after "gitledger", the role's name).
FUSE_COMMANDS = {
    "save": ("fuse", "save"),
    "summary": ("fuse", "summary"),
    "restore": ("fuse", "restore"),
}
KNOWN_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("fuse", "save"),
    ("fuse", "restore"),
    ("fuse", "summary"),
    ("prime",),
    ("sync",),
    ("judge", "step"),
    ("judge", "turn"),
    ("hook", "tasklist"),
)
_GLOBAL_OPTIONS = ("--ledger", "--actor")


# --- the command a hook or an MCP entry runs ----------------------------------------------------


def program() -> list[str]:
    """How an agent starts gitledger: this interpreter's absolute path and ``-m gitledger``.

    It works from the agent's environment whatever its PATH (an agent started outside the
    virtualenv finds no ``gitledger`` on PATH), and it is the install setup was run from.
    """
    return [os.path.abspath(sys.executable), "-m", "gitledger"]


def hook_command(action: str, *extra: str) -> str:
    """The command of the fuse hook ``action`` (save, restore), as a shell command line."""
    return shlex.join([*program(), "fuse", action, "--hook", *extra])


def gitledger_command(*words: str) -> str:
    """``gitledger WORDS…`` as a shell command line that works from any environment."""
    return shlex.join([*program(), *words])


def command_words(command: object) -> tuple[str, ...] | None:
    """The gitledger words of a hook command we install (("fuse", "save", "--hook"), …), or None
    for any other command. Exactly ours: one program that is gitledger (``gitledger``,
    ``git-ledger`` or ``PYTHON -m gitledger``), gitledger's global options, a command gitledger
    has, and ``--hook``. A shell line doing anything else (``notify-send "gitledger fuse saved"``,
    ``x; gitledger fuse save --hook``) is not ours and is never touched."""
    if not isinstance(command, str) or not command.strip():
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if any(w in {";", "&&", "||", "|", "&"} or "`" in w or "$(" in w for w in words):
        return None
    if len(words) >= 3 and words[1:3] == ["-m", "gitledger"]:
        rest = words[3:]
    elif words and os.path.basename(words[0]) in {"gitledger", "git-ledger"}:
        rest = words[1:]
    else:
        return None
    while len(rest) >= 2 and rest[0] in _GLOBAL_OPTIONS:
        rest = rest[2:]
    if "--hook" not in rest and rest[:1] != ["hook"]:  # 'gitledger hook …' is a hook by name
        return None
    for known in KNOWN_COMMANDS:
        if tuple(rest[: len(known)]) == known:
            return tuple(rest)
    return None


def is_our_command(command: object, managed: Iterable[tuple[str, ...]] = KNOWN_COMMANDS) -> bool:
    words = command_words(command)
    return words is not None and any(words[: len(m)] == tuple(m) for m in managed)


# --- hook entries -------------------------------------------------------------------------------


@dataclass
class HookSpec:
    """One hook gitledger wants: which role, its command, the timeout in seconds."""

    role: str
    command: str
    timeout: int = 30


def fuse_hooks() -> list[HookSpec]:
    """The fuse's hooks; an agent without a role's event (PostCompact) gets none for it."""
    return [
        HookSpec("save", hook_command("save"), 60),
        HookSpec("summary", hook_command("summary"), 30),
        HookSpec("restore", hook_command("restore"), 30),
    ]


def merge_hooks(
    settings: Mapping[str, Any],
    agent_name: str,
    wanted: list[HookSpec],
    *,
    managed: Iterable[tuple[str, ...]],
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """``settings`` with exactly the ``wanted`` hooks among the commands in ``managed``.

    An entry of ours already in place stays where it is (running setup twice changes nothing);
    one we no longer want is removed; a group or event is dropped only when we emptied it.
    Nothing else moves. Values of a shape we do not know are left, with a note.
    """
    agent = get(agent_name)
    managed = [tuple(m) for m in managed]
    merged: dict[str, Any] = copy.deepcopy(dict(settings))
    hooks = merged.get("hooks")
    if hooks is None:
        hooks = {}
    if not isinstance(hooks, dict):
        raise InvalidInput(
            "'hooks' in the settings is not an object; fix it by hand; nothing was written."
        )
    desired: list[tuple[str, str | None, dict[str, Any]]] = []
    for spec in wanted:
        where = agent.hooks.get(spec.role)
        if where is None:
            continue
        desired.append(
            (where.event, where.matcher, agent.hook_entry(spec.role, spec.command, spec.timeout))
        )
    satisfied: set[int] = set()
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        removed_any = False
        for group in groups:
            entries = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(entries, list):
                kept_groups.append(group)
                continue
            kept = []
            for entry in entries:
                command = entry.get("command") if isinstance(entry, dict) else None
                if not is_our_command(command, managed):
                    kept.append(entry)
                    continue
                match = next(
                    (
                        i
                        for i, (ev, matcher, want) in enumerate(desired)
                        if i not in satisfied
                        and ev == event
                        and group.get("matcher") == matcher
                        and entry == want
                    ),
                    None,
                )
                if match is None:
                    removed_any = True
                    continue
                satisfied.add(match)
                kept.append(entry)
            if kept:
                kept_groups.append({**group, "hooks": kept} if kept != entries else group)
            else:
                removed_any = True
        if kept_groups or not removed_any:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    additions: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
    for i, (event, matcher, want) in enumerate(desired):
        if i in satisfied:
            continue
        current = hooks.get(event)
        if event in hooks and not isinstance(current, list):  # null too: not ours to replace
            if notes is not None:
                notes.append(
                    f"'{event}' is set to {' '.join(dump_json(current).split())[:40]}, "
                    "not a list of hook groups; "
                    f"left as it is, so gitledger's {event} hook is not installed."
                )
            continue
        additions.setdefault((event, matcher), []).append(want)
    for (event, matcher), entries in additions.items():
        new_group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        new_group["hooks"] = entries
        hooks.setdefault(event, []).append(new_group)
    if hooks:
        merged["hooks"] = hooks
    else:
        merged.pop("hooks", None)
    return merged


def merge_settings(settings: dict[str, Any], agent: str, uninstall: bool = False) -> dict[str, Any]:
    """``settings`` with the fuse's hooks added (or removed); every other entry kept as is."""
    return merge_hooks(
        settings,
        agent,
        [] if uninstall else fuse_hooks(),
        managed=FUSE_COMMANDS.values(),
    )


# --- MCP server entries -------------------------------------------------------------------------

SERVER_KEY = "gitledger"


def merge_mcp_json(
    data: Mapping[str, Any], where: Path, entry: dict[str, Any] | None
) -> dict[str, Any]:
    """``data`` with ``mcpServers.gitledger`` set to ``entry`` (removed for None)."""
    merged: dict[str, Any] = copy.deepcopy(dict(data))
    servers = merged.get("mcpServers")
    if servers is None:
        if entry is None:
            return merged
        servers = merged["mcpServers"] = {}
    if not isinstance(servers, dict):
        raise InvalidInput(f"{where}: 'mcpServers' is not an object; fix it by hand first.")
    if entry is None:
        servers.pop(SERVER_KEY, None)
    else:
        servers[SERVER_KEY] = entry
    return merged


def merge_mcp_toml(
    text: str, where: Path, entry: dict[str, Any] | None, read_only: list[str]
) -> str:
    """Codex's config.toml with ``[mcp_servers.gitledger]`` (and read-only tools pre-approved)
    set, or removed for None; edited with tomlkit, so the rest stays as written."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as exc:
        if "nested more than" in str(exc):
            raise InvalidInput(
                f"{where} nests TOML too deeply to read; fix it by hand first."
            ) from exc
        raise InvalidInput(f"{where} is not valid TOML ({exc}); fix it by hand first.") from exc
    except RecursionError as exc:
        raise InvalidInput(f"{where} nests TOML too deeply to read; fix it by hand first.") from exc
    servers: Any = doc.get("mcp_servers")
    if servers is not None and not isinstance(servers, dict):
        raise InvalidInput(f"{where}: 'mcp_servers' is not a table; fix it by hand first.")
    if entry is None:
        if servers is None or SERVER_KEY not in servers:
            return text
        del servers[SERVER_KEY]
        if not servers:
            del doc["mcp_servers"]
        left = tomlkit.dumps(doc)
        return left.rstrip("\n") + "\n" if left.strip() else ""
    wanted: dict[str, Any] = {"command": entry["command"], "args": list(entry["args"])}
    if read_only:
        wanted["tools"] = {name: {"approval_mode": "approve"} for name in read_only}
    current = servers.get(SERVER_KEY) if servers is not None else None
    if current is not None and _plain(current) == wanted:
        return text  # already set up: the file stays byte for byte
    if servers is not None and current is not None:
        del servers[SERVER_KEY]  # a table, an inline table or dotted keys alike
    rest = tomlkit.dumps(doc)
    ours = tomlkit.document()
    ours.add("mcp_servers", {SERVER_KEY: wanted})
    tables = tomlkit.dumps(ours)
    # Our tables go at the end, so everything that was there stays byte for byte before them.
    candidates = [
        rest
        + ("\n" if rest.strip() and not rest.endswith("\n") else "")
        + ("\n" if rest.strip() else "")
        + tables
    ]
    if servers is not None:
        servers[SERVER_KEY] = wanted  # an inline mcp_servers = {…} takes it in place
        candidates.append(tomlkit.dumps(doc))
    for after in candidates:
        try:
            merged = tomlkit.parse(after).unwrap()
        except (TOMLKitError, RecursionError):
            continue
        if merged.get("mcp_servers", {}).get(SERVER_KEY) == wanted:
            return after  # never write a file Codex could not read, or without our entry
    raise InvalidInput(f"Could not merge gitledger's entry into {where}; add it by hand.")


def _plain(value: Any) -> Any:
    unwrap = getattr(value, "unwrap", None)
    return unwrap() if callable(unwrap) else value


# --- a change to one file -----------------------------------------------------------------------


@dataclass
class FileChange:
    """One file setup would change: its bytes now, its text after, and what it said."""

    path: Path
    before_bytes: bytes | None
    after: str
    notes: list[str] = field(default_factory=list)
    label: str = ""
    delete_when_empty: bool = False  # a file of ours alone (an AGENTS.md setup created)
    keep_backup: bool = True  # not for a project's AGENTS.md: its block is marked, Git has the rest

    @property
    def before(self) -> str:
        return self.before_bytes.decode("utf-8") if self.before_bytes is not None else ""

    @property
    def changed(self) -> bool:
        return self.after != self.before or (self.before_bytes is None and self.after != "")

    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                fromfile=str(self.path),
                tofile=str(self.path) + " (merged)",
            )
        )

    def write(self) -> Path | None:
        """Write the change (a backup of the old bytes first); the backup's path, if any."""
        if not self.changed:
            return None
        if self.delete_when_empty and not self.after.strip():
            check_settings_writable(self.path)
            self.path.unlink()
            return None
        backup = self.before_bytes if self.keep_backup else None
        return replace_settings_file(self.path, self.after, backup=backup)


# --- the fuse's own setup (fuse setup) ------------------------------------------------------


@dataclass
class SetupPlan:
    agent: str
    path: Path
    before: str  # the file as it is ("" when absent)
    after: str  # the file as it would be
    changed: bool
    before_bytes: bytes | None = None
    notes: list[str] = field(default_factory=list)

    def diff(self) -> str:
        return FileChange(self.path, self.before_bytes, self.after).diff()

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "path": str(self.path),
            "changed": self.changed,
            "diff": self.diff(),
            "notes": self.notes,
        }


def settings_path(agent: str, project: Path | None) -> Path:
    """Where ``agent`` keeps its hooks (the project's file with ``project``)."""
    found = get(agent)
    if not found.hooks:
        raise InvalidInput(
            f"gitledger installs no hooks for {found.title}; use ", Step("mcp setup"), "."
        )
    return found.settings_path(project)


def plan_hooks(
    agent: str,
    wanted: list[HookSpec],
    *,
    managed: Iterable[tuple[str, ...]],
    project: Path | None = None,
    path: Path | None = None,
) -> SetupPlan:
    target = path or settings_path(agent, project)
    raw = read_config(target, root=project if path is None else None)
    before = decode(target, raw)
    settings = parse_json(target, before)
    notes: list[str] = []
    merged = merge_hooks(settings, agent, wanted, managed=managed, notes=notes)
    changed = merged != settings
    after = dump_json(merged, before) if changed else before
    return SetupPlan(agent, target, before, after, changed, raw, notes)


def setup_plan(
    agent: str = DEFAULT,
    *,
    project: Path | None = None,
    uninstall: bool = False,
    path: Path | None = None,
) -> SetupPlan:
    """What ``fuse setup`` would write, without writing."""
    return plan_hooks(
        agent,
        [] if uninstall else fuse_hooks(),
        managed=FUSE_COMMANDS.values(),
        project=project,
        path=path,
    )


def apply_setup(plan: SetupPlan) -> Path | None:
    """Write a plan: the old file is kept as ``<name>.bak``; returns the backup path, if any."""
    if not plan.changed:
        return None
    return replace_settings_file(plan.path, plan.after, backup=plan.before_bytes)


__all__ = [
    "FUSE_COMMANDS",
    "FileChange",
    "HOOK_MARK",
    "HookSpec",
    "KNOWN_COMMANDS",
    "MAX_SETTINGS_BYTES",
    "RawNumber",
    "SERVER_KEY",
    "SetupPlan",
    "apply_setup",
    "check_inside",
    "check_settings_writable",
    "command_words",
    "decode",
    "dump_json",
    "fuse_hooks",
    "gitledger_command",
    "hook_command",
    "is_our_command",
    "merge_hooks",
    "merge_mcp_json",
    "merge_mcp_toml",
    "merge_settings",
    "parse_json",
    "plan_hooks",
    "program",
    "read_config",
    "replace_settings_file",
    "settings_path",
    "setup_plan",
    "write_atomic",
]
