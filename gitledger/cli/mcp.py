"""``gitledger mcp`` (the MCP server and its setup) and ``gitledger agents-md``.

Setup writes other programs' configuration files, so it follows three rules: show what it would
write before writing (``--write`` writes), change only gitledger's own entry (every other server,
key and comment stays as it was), and running it twice changes nothing the second time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from ..errors import InvalidInput
from ._common import actor_of, errors, json_option, print_json

AGENTS = ("claude", "codex", "cursor")
SERVER_KEY = "gitledger"
BEGIN = "<!-- gitledger:begin -->"
END = "<!-- gitledger:end -->"

AGENTS_BLOCK = f"""{BEGIN}
## Task ledger (gitledger)

This project keeps its task line in gitledger, so it survives compaction and restarts.

- Start: run `gitledger prime` (or the MCP tool `prime`), then `gitledger task claim ID`.
- As you work: `gitledger task update ID --next "..."`, `--decision "... because ..."`,
  `--evidence "commit:SHA" / test output`.
- Stop: `--status done --evidence "..."` when the criteria are met, or
  `--status blocked --blocker "..."`.
- Protocol: docs/AGENT-PROTOCOL.md in the gitledger repository; `gitledger --help` for the rest.
{END}
"""


# --- the server -----------------------------------------------------------------------------


@click.group("mcp", invoke_without_command=True)
@click.pass_context
def mcp_group(ctx: click.Context) -> None:
    """Run the MCP server on stdin/stdout (with no subcommand), or set agents up to use it.

    Agents start it themselves once it is in their configuration: see 'gitledger mcp setup'.
    """
    if ctx.invoked_subcommand is not None:
        return
    from ..mcp_server import run

    obj = ctx.find_root().obj or {}
    path = obj.get("ledger_path")
    run(Path(path) if path else None, actor=actor_of(ctx))


@mcp_group.command("tools")
@json_option
def tools_cmd(as_json: bool) -> None:
    """List the tools the server offers (and those left out because a module is missing)."""
    from ..mcp_server import available_tools, missing_tools

    tools = available_tools()
    if as_json:
        print_json(
            {
                "tools": [
                    {"name": t.name, "read_only": t.read_only, "description": t.description}
                    for t in tools
                ],
                "missing": missing_tools(),
            }
        )
        return
    for tool in tools:
        mark = "read " if tool.read_only else "write"
        click.echo(f"{tool.name:<14} {mark}  {tool.description}")
    missing = missing_tools()
    if missing:
        click.echo(f"(not available in this install: {', '.join(missing)})")


# --- setup ----------------------------------------------------------------------------------


@dataclass
class Plan:
    """One configuration file: what is there, what setup would make of it."""

    agent: str
    path: Path
    before: str | None
    after: str
    entry: str  # gitledger's own part, as it will read in the file

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "path": str(self.path),
            "exists": self.before is not None,
            "changed": self.changed,
            "entry": self.entry,
        }


def server_command(ledger: Path | None = None) -> tuple[str, list[str]]:
    """How an agent should start the server: the ``gitledger`` on PATH, else this Python.

    With ``ledger`` (setup was run with ``--ledger PATH``: a team ledger), the server is pinned to
    it; otherwise it finds the ledger of the folder the agent starts it in.
    """
    pinned = ["--ledger", str(ledger.absolute())] if ledger is not None else []
    if shutil.which("gitledger"):
        return "gitledger", [*pinned, "mcp"]
    return sys.executable, ["-m", "gitledger", *pinned, "mcp"]


def explicit_ledger(ctx: click.Context) -> Path | None:
    """The ledger given as ``--ledger`` on this command line (not one from GITLEDGER_DIR)."""
    from click.core import ParameterSource

    root = ctx.find_root()
    if root.get_parameter_source("ledger_path") is not ParameterSource.COMMANDLINE:
        return None
    value = (root.obj or {}).get("ledger_path")
    return Path(value) if value else None


def project_root(start: Path | None = None) -> Path:
    """The Git work tree containing ``start`` (default: here), else ``start`` itself."""
    here = (start or Path.cwd()).absolute()
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return here
    return Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else here


def config_path(agent: str, project: bool, root: Path) -> Path:
    home = Path.home()
    if agent == "claude":
        # User scope: ~/.claude.json's top-level mcpServers; project scope: .mcp.json at the root.
        return root / ".mcp.json" if project else home / ".claude.json"
    if agent == "codex":
        codex_home = Path(os.environ.get("CODEX_HOME") or home / ".codex")
        return root / ".codex" / "config.toml" if project else codex_home / "config.toml"
    if agent == "cursor":
        return root / ".cursor" / "mcp.json" if project else home / ".cursor" / "mcp.json"
    raise InvalidInput(f"Unknown agent '{agent}'. Use one of: {', '.join(AGENTS)}.")


def merge_json_config(before: str | None, where: Path, entry: dict[str, Any]) -> str:
    """``before`` with ``mcpServers.gitledger`` set to ``entry``; every other key kept."""
    data: dict[str, Any] = {}
    if before is not None and before.strip():
        try:
            data = json.loads(before)
        except json.JSONDecodeError as exc:
            raise InvalidInput(
                f"{where} is not valid JSON ({exc.msg} at line {exc.lineno}); fix it by hand "
                f"first, then run setup again."
            ) from exc
        except RecursionError as exc:
            raise InvalidInput(
                f"{where} nests JSON too deeply to read; fix it by hand first."
            ) from exc
        if not isinstance(data, dict):
            raise InvalidInput(f"{where} does not hold a JSON object; fix it by hand first.")
    servers = data.get("mcpServers")
    if servers is None:
        servers = data["mcpServers"] = {}
    if not isinstance(servers, dict):
        raise InvalidInput(f"{where}: 'mcpServers' is not an object; fix it by hand first.")
    if servers.get(SERVER_KEY) == entry and before is not None:
        return before  # already set up: leave the file byte for byte
    servers[SERVER_KEY] = entry
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def codex_tables(command: str, args: list[str], read_only: list[str]) -> str:
    """gitledger's tables for Codex: the server, and read-only tools pre-approved.

    Writes stay at Codex's default (the user is asked), so an agent cannot change the ledger
    unseen unless the user chooses that.
    """
    lines = [
        f"[mcp_servers.{SERVER_KEY}]",
        f"command = {_toml_string(command)}",
        f"args = [{', '.join(_toml_string(a) for a in args)}]",
    ]
    for name in read_only:
        lines += ["", f"[mcp_servers.{SERVER_KEY}.tools.{name}]", 'approval_mode = "approve"']
    return "\n".join(lines) + "\n"


def _is_ours(header: str) -> bool:
    name = header.strip().strip("[]").strip()
    prefix = f"mcp_servers.{SERVER_KEY}"
    return name == prefix or name.startswith(prefix + ".")


def _toml_parser() -> Any:
    """``tomllib`` (Python 3.11+), else ``tomli`` if installed, else None (no check possible)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef,unused-ignore]
        except ModuleNotFoundError:
            return None
    return tomllib


def merge_toml_config(before: str | None, where: Path, tables: str) -> str:
    """``before`` with gitledger's ``[mcp_servers.gitledger…]`` tables replaced by ``tables``.

    Python reads TOML but does not write it, so this edits text: our tables (from their header
    to the next header) are cut out and the new ones put where the first of them was, or at the
    end. Other tables, comments and formatting stay as they were.
    """
    parser = _toml_parser()
    text = before or ""
    if parser is not None and text:  # not text.strip(): a lone '\r' is invalid TOML
        try:
            parser.loads(text)
        except parser.TOMLDecodeError as exc:
            raise InvalidInput(f"{where} is not valid TOML ({exc}); fix it by hand first.") from exc
        except RecursionError as exc:
            raise InvalidInput(
                f"{where} nests TOML too deeply to read; fix it by hand first."
            ) from exc
    kept: list[str] = []
    insert_at: int | None = None
    skipping = False
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith("[") and not stripped.startswith("[["):
            skipping = _is_ours(stripped)
            if skipping and insert_at is None:
                insert_at = len(kept)
        elif stripped.startswith("[["):
            skipping = False
        if not skipping:
            kept.append(line)
    if insert_at is None:
        prefix = "".join(kept)
        if prefix and not prefix.endswith("\n"):
            prefix += "\n"
        after = prefix + ("\n" if prefix.strip() else "") + tables
    else:
        head, tail = "".join(kept[:insert_at]), "".join(kept[insert_at:])
        after = head + tables + ("\n" + tail if tail.strip() else "")
    if before is not None and parser is not None and parser.loads(after) == parser.loads(before):
        return before  # already set up: leave the file byte for byte
    if parser is not None:
        parser.loads(after)  # never write a file Codex could not read
    return after


def plan_setup(agent: str, project: bool, root: Path, ledger: Path | None = None) -> Plan:
    from ..mcp_server import read_only_tool_names

    path = config_path(agent, project, root)
    try:
        before = path.read_text(encoding="utf-8") if path.exists() else None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"Cannot read {path} ({exc}); fix it by hand first.") from exc
    command, args = server_command(ledger)
    if agent == "codex":
        tables = codex_tables(command, args, read_only_tool_names())
        return Plan(agent, path, before, merge_toml_config(before, path, tables), tables)
    entry: dict[str, Any] = {"command": command, "args": args}
    if agent == "claude":
        entry = {"type": "stdio", **entry}
    shown = json.dumps({"mcpServers": {SERVER_KEY: entry}}, indent=2) + "\n"
    return Plan(agent, path, before, merge_json_config(before, path, entry), shown)


def write_plan(plan: Plan) -> None:
    from ..agents.settings import replace_settings_file

    # Atomic, mode kept, a symlinked file written through, a read-only one refused.
    replace_settings_file(plan.path, plan.after)


@mcp_group.command("setup")
@click.option(
    "--agent",
    type=click.Choice(AGENTS),
    default="claude",
    show_default=True,
    help="Which agent's configuration to change.",
)
@click.option(
    "--project",
    is_flag=True,
    help="Write the project's file (.mcp.json, .codex/config.toml, .cursor/mcp.json) instead "
    "of your user configuration.",
)
@click.option("--write", is_flag=True, help="Write the change (without it, only show it).")
@json_option
@click.pass_context
def setup_cmd(ctx: click.Context, agent: str, project: bool, write: bool, as_json: bool) -> None:
    """Add the gitledger MCP server to an agent's configuration: preview, then --write.

    Idempotent, and only gitledger's own entry is touched. For Codex the read-only tools are
    pre-approved and writes are left to your approval settings. 'gitledger --ledger PATH mcp
    setup' pins the server to that ledger (a team ledger); otherwise the server uses the ledger
    of the folder the agent starts it in.
    """
    with errors(as_json):
        plan = plan_setup(agent, project, project_root(), explicit_ledger(ctx))
        if write and plan.changed:
            write_plan(plan)
    if as_json:
        print_json({**plan.to_dict(), "written": write and plan.changed})
        return
    if not plan.changed:
        click.echo(f"{plan.path} already has the gitledger server; nothing to do.")
        return
    verb = "Added to" if write else "Would add to"
    kept = " (everything else in it stays as it is)" if plan.before is not None else ""
    click.echo(f"{verb} {plan.path}{kept}:\n")
    click.echo(plan.entry.rstrip("\n"))
    if not write:
        click.echo("\nRun again with --write to apply it.")
    else:
        click.echo(f"\nRestart {agent} (or reload its MCP servers) to pick it up.")


# --- agents-md ------------------------------------------------------------------------------


def remove_block(text: str) -> str:
    """``text`` without gitledger's marked block (and the blank line that set it apart)."""
    start = text.find(BEGIN)
    if start < 0:
        return text
    end = text.find(END, start)
    if end < 0:
        raise InvalidInput(
            f"The file has '{BEGIN}' but no '{END}'; fix the block by hand, then run again."
        )
    end += len(END)
    if text[end : end + 1] == "\n":
        end += 1
    head, tail = text[:start], text[end:]
    if head.endswith("\n\n") and not tail:
        head = head[:-1]
    return head + tail


def add_block(text: str) -> str:
    """``text`` with gitledger's block: replaced where it is, else appended after a blank line."""
    if BEGIN in text:
        start = text.find(BEGIN)
        end = text.find(END, start)
        if end < 0:
            raise InvalidInput(
                f"The file has '{BEGIN}' but no '{END}'; fix the block by hand, then run again."
            )
        end += len(END)
        if text[end : end + 1] == "\n":
            end += 1
        return text[:start] + AGENTS_BLOCK + text[end:]
    if not text:
        return AGENTS_BLOCK
    # One blank line before the block; remove_block takes exactly that line away again.
    return text + ("\n" if text.endswith("\n") else "\n\n") + AGENTS_BLOCK


@click.command("agents-md")
@click.option(
    "--file",
    "file_name",
    type=click.Choice(["AGENTS.md", "CLAUDE.md"]),
    default="AGENTS.md",
    show_default=True,
    help="The instructions file, at the project root.",
)
@click.option("--remove", is_flag=True, help="Take gitledger's block out instead.")
@click.option("--write", is_flag=True, help="Write the change (without it, only show it).")
@json_option
def agents_md_cmd(file_name: str, remove: bool, write: bool, as_json: bool) -> None:
    """Add a short marked block to AGENTS.md or CLAUDE.md pointing agents at 'gitledger prime'.

    Shows the change first; --write writes it. Running it again changes nothing, --remove takes
    the block out, and the rest of the file is left as it was.
    """
    path = project_root() / file_name
    with errors(as_json):
        before = path.read_text(encoding="utf-8") if path.exists() else None
        after = remove_block(before or "") if remove else add_block(before or "")
        if remove and before is None:
            after = ""
        changed = after != (before or "")
        if write and changed:
            if remove and not after.strip():
                path.unlink()
            else:
                path.write_text(after, encoding="utf-8")
    if as_json:
        print_json(
            {"path": str(path), "changed": changed, "written": write and changed, "content": after}
        )
        return
    if not changed:
        state = "has no gitledger block" if remove else "already has the gitledger block"
        click.echo(f"{path} {state}; nothing to do.")
        return
    if remove:
        click.echo(f"{'Removed' if write else 'Would remove'} the gitledger block from {path}.")
        if write and not after.strip():
            click.echo("(The file held nothing else, so it was deleted.)")
    else:
        click.echo(f"{'Added' if write else 'Would add'} to {path}:\n")
        click.echo(AGENTS_BLOCK.rstrip("\n"))
    if not write:
        click.echo("\nRun again with --write to apply it.")
