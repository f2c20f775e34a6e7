"""``gitledger mcp`` (the MCP server and its setup) and ``gitledger agents-md``.

Setup writes other programs' configuration files, so it follows three rules: show what it would
write before writing (``--write`` writes), change only gitledger's own entry (every other server,
key and comment stays as it was), and running it twice changes nothing the second time.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import click

from .. import agents
from ..agents.agents_md import AGENTS_BLOCK, BEGIN, END, add_block, remove_block
from ..agents.install import server_command
from ..agents.settings import SERVER_KEY, dump_json, merge_mcp_json, merge_mcp_toml, parse_json
from ._common import actor_of, agent_option, errors, json_option, print_json, write_option

AGENTS = tuple(agents.AGENTS)  # the --agent names of mcp setup and setup: the registry's

__all__ = [
    "AGENTS_BLOCK",
    "BEGIN",
    "END",
    "SERVER_KEY",
    "add_block",
    "merge_json_config",
    "merge_toml_config",
    "remove_block",
    "server_command",
]


# --- the server -----------------------------------------------------------------------------


@click.group("mcp", invoke_without_command=True)
@click.option(
    "--transcripts",
    "transcript_dirs",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="A folder whose transcripts fuse_save may read, besides the agents' own (repeatable; "
    "env GITLEDGER_TRANSCRIPTS).",
)
@click.pass_context
def mcp_group(ctx: click.Context, transcript_dirs: tuple[Path, ...]) -> None:
    """Run the MCP server on stdin/stdout (with no subcommand), or set agents up to use it.

    Agents start it themselves once it is in their configuration: see 'gitledger mcp setup'.
    fuse_save reads only transcripts in the agents' transcript folders (~/.claude/projects,
    CODEX_HOME/sessions, ~/.gemini/tmp) and those given with --transcripts.
    """
    if ctx.invoked_subcommand is not None:
        return
    from ..mcp_server import run

    obj = ctx.find_root().obj or {}
    path = obj.get("ledger_path")
    run(
        Path(path) if path else None,
        actor=actor_of(ctx),
        agent=obj.get("agent"),
        transcript_dirs=list(transcript_dirs),
    )


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


def merge_json_config(before: str | None, where: Path, entry: dict[str, Any]) -> str:
    """``before`` with ``mcpServers.gitledger`` set to ``entry``; every other key kept, and the
    text kept byte for byte when it already has that entry."""
    data = parse_json(where, before or "")
    merged = merge_mcp_json(data, where, entry)
    if merged == data and before is not None:
        return before
    return dump_json(merged, before or "")


def merge_toml_config(before: str | None, where: Path, tables: str) -> str:
    """``before`` with gitledger's ``[mcp_servers.gitledger…]`` tables set as ``tables`` says
    (TOML text of those tables), edited with tomlkit so the rest stays as written."""
    import tomlkit

    wanted = tomlkit.parse(tables).unwrap().get("mcp_servers", {}).get(SERVER_KEY, {})
    entry = {"command": wanted.get("command", ""), "args": wanted.get("args", [])}
    tools = [name for name, t in wanted.get("tools", {}).items() if isinstance(t, dict)]
    return merge_mcp_toml(before or "", where, entry, tools)


@mcp_group.command("setup")
@agent_option(AGENTS, "Which agent's configuration to change.")
@click.option(
    "--project",
    is_flag=True,
    help="Write the project's file (.mcp.json, .codex/config.toml, .cursor/mcp.json) instead "
    "of your user configuration.",
)
@write_option
@json_option
@click.pass_context
def setup_cmd(ctx: click.Context, agent: str, project: bool, write: bool, as_json: bool) -> None:
    """Add the gitledger MCP server to an agent's configuration: preview, then --write.

    Idempotent, and only gitledger's own entry is touched. For Codex the read-only tools are
    pre-approved and writes are left to your approval settings. 'gitledger --ledger PATH mcp
    setup' pins the server to that ledger (a team ledger); otherwise the server uses the ledger
    of the folder the agent starts it in.
    """
    from ..agents.install import mcp_change

    with errors(as_json):
        root = project_root() if project else None
        change = mcp_change(agent, root, ledger=explicit_ledger(ctx))
        if write and change.changed:
            change.write()
    if as_json:
        print_json(
            {
                "agent": agent,
                "path": str(change.path),
                "exists": change.before_bytes is not None,
                "changed": change.changed,
                "entry": change.after,
                "diff": change.diff(),
                "written": write and change.changed,
            }
        )
        return
    if not change.changed:
        click.echo(f"{change.path} already has the gitledger server; nothing to do.")
        return
    verb = "Added to" if write else "Would add to"
    kept = " (everything else in it stays as it is)" if change.before_bytes is not None else ""
    click.echo(f"{verb} {change.path}{kept}:\n")
    click.echo(change.diff().rstrip("\n"))
    if not write:
        click.echo("\nRun again with --write to apply it.")
    else:
        click.echo(f"\nRestart {agent} (or reload its MCP servers) to pick it up.")


# --- agents-md ------------------------------------------------------------------------------


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
@write_option
@json_option
def agents_md_cmd(file_name: str, remove: bool, write: bool, as_json: bool) -> None:
    """Add a short marked block to AGENTS.md or CLAUDE.md pointing agents at 'gitledger prime'.

    Shows the change first; --write writes it. Running it again changes nothing, --remove takes
    the block out, and the rest of the file is left as it was.
    """
    from ..agents.agents_md import block_change

    root = project_root()
    path = root / file_name
    with errors(as_json):
        change = block_change(path, root=root, remove=remove)
        after, changed = change.after, change.changed
        if write and changed:
            change.write()
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
