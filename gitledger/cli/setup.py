"""``gitledger setup``: wire an agent to gitledger in one command (hooks, MCP server, AGENTS.md).

The plan is built by ``gitledger.agents.install``; this command shows it as a diff, writes it with
``--write`` and says where the backups are. ``fuse setup``, ``mcp setup`` and ``agents-md`` are
its parts, kept as commands of their own.
"""

from __future__ import annotations

from pathlib import Path

import click

from .. import agents
from ._common import agent_option, errors, json_option, print_json, write_option


@click.command("setup")
@agent_option(list(agents.AGENTS), "The agent to wire up.")
@click.option(
    "--project",
    is_flag=True,
    help="This project's files (.claude/settings.json, .mcp.json, CLAUDE.md …) instead of "
    "your user settings; also adds the block to the project's instructions file.",
)
@click.option(
    "--sync",
    "remote",
    metavar="REMOTE",
    help="Also sync with REMOTE from the hooks: fetch at session start, push after a "
    "compaction and at session end, each bounded in time.",
)
@write_option
@click.option("--uninstall", is_flag=True, help="Remove what setup adds, and nothing else.")
@json_option
@click.pass_context
def setup_cmd(
    ctx: click.Context,
    agent: str,
    project: bool,
    remote: str | None,
    write: bool,
    uninstall: bool,
    as_json: bool,
) -> None:
    """Wire an agent to gitledger: fuse hooks, a session-start hook that primes every session,
    the MCP server and the AGENTS.md/CLAUDE.md block.

    Shows the change as a diff and writes nothing without --write. Only gitledger's own entries
    change; running it twice changes nothing; each file written is backed up as <file>.bak.
    The commands written run this Python (absolute path), so they work from the agent whatever
    its PATH. --uninstall takes it all out again.
    """
    from ..agents.install import plan
    from .mcp import explicit_ledger, project_root

    with errors(as_json):
        root: Path | None = project_root() if project else None
        the_plan = plan(
            agent,
            project=root,
            sync=remote,
            uninstall=uninstall,
            ledger=explicit_ledger(ctx),
        )
        written = the_plan.write() if write else []
    if as_json:
        print_json(
            {
                **the_plan.to_dict(),
                "written": [{"path": str(p), "backup": str(b) if b else None} for p, b in written],
            }
        )
        return
    for note in the_plan.notes():
        click.echo(f"Note: {note}", err=True)
    if not the_plan.changed:
        state = "not installed" if uninstall else "already set up"
        files = ", ".join(str(c.path) for c in the_plan.changes)
        click.echo(f"Nothing to change: gitledger is {state} for {agent} ({files}).")
        return
    click.echo(the_plan.diff(), nl=False)
    if not write:
        click.echo("Nothing written. Run again with --write to apply this change.")
        return
    for path, backup in written:
        click.echo(f"Wrote {path}" + (f" (the old file is {backup})." if backup else "."))
    click.echo(f"Restart {agent} (or start a new session) to pick it up.")


__all__ = [
    "setup_cmd",
]
