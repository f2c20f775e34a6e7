"""Ledger-wide commands: init, where, verify, repair."""

from __future__ import annotations

from pathlib import Path

import click

from ..text import plural
from ._common import errors, json_option, open_ledger, print_json


@click.command("init")
@click.argument("path", required=False, type=click.Path(file_okay=False, path_type=Path))
@json_option
@click.pass_context
def init_cmd(ctx: click.Context, path: Path | None, as_json: bool) -> None:
    """Create the ledger for PATH (default: here).

    Inside a Git work tree the ledger is gitledger/ in the repository's common Git directory
    (never tracked, shared by linked worktrees); elsewhere it is .gitledger/ in PATH. Running it
    again changes nothing.
    """
    from ..ledger import Ledger

    with errors(as_json):
        explicit = (ctx.find_root().obj or {}).get("ledger_path")
        if explicit:
            ledger = Ledger.open(Path(explicit), create=True)
        else:
            ledger = Ledger.init(path)
    # In a fresh clone, origin may hold ledger refs that a plain clone did not bring.
    from ..sync import init_warning

    warning = init_warning(ledger, interface="cli")
    if as_json:
        print_json({"path": str(ledger.path), "kind": ledger.kind, "warning": warning})
    else:
        click.echo(f"Ledger ready at {ledger.path}")
        if warning:
            click.echo(f"warning: {warning}", err=True)
        click.echo("Next: gitledger task create 'GOAL' --criteria 'how we know it is done'")


@click.command("where")
@json_option
@click.pass_context
def where_cmd(ctx: click.Context, as_json: bool) -> None:
    """Print the path of the ledger this folder uses.

    Exits 1, as every command does, when there is no ledger there yet (the message names where
    'gitledger init' would make it). Read a task's history: gitledger log ID -p.
    """
    from .. import paths
    from ..errors import NoLedger

    explicit = (ctx.find_root().obj or {}).get("ledger_path")
    with errors(as_json):
        if explicit:
            location = paths.Location(Path(explicit).absolute(), "explicit", None)
        else:
            found = paths.discover()
            if found is None:
                raise NoLedger(*paths.missing_ledger(None))
            location = found
        if not (location.path / "HEAD").exists():
            raise NoLedger(*paths.missing_ledger(location))
    if as_json:
        print_json({"path": str(location.path), "kind": location.kind, "exists": True})
        return
    click.echo(str(location.path))


@click.command("verify")
@json_option
@click.pass_context
def verify_cmd(ctx: click.Context, as_json: bool) -> None:
    """Check every task: objects match their hashes, records validate, versions chain.

    Exits 1 and names each damaged or foreign ref if anything is wrong.
    """
    from .. import fuse

    with errors(as_json):
        report = fuse.verify(open_ledger(ctx))
    if as_json:
        print_json(report.to_dict())
    else:
        for problem in report.problems:
            click.echo(f"BAD  {problem.ref}: {problem.message}")
        for problem in report.unverified:
            click.echo(f"UNVERIFIED  {problem.ref}: {problem.message}")
        verdict = "ok" if report.ok else plural(len(report.problems), "problem")
        click.echo(
            f"Checked {plural(report.tasks, 'task')}, {plural(report.versions, 'version')}: "
            f"{verdict}."
        )
    if not report.ok:
        ctx.exit(1)


@click.command("repair")
@click.option(
    "--older-than",
    default=60.0,
    show_default=True,
    help="Only remove lock files older than this many seconds.",
)
@json_option
@click.pass_context
def repair_cmd(ctx: click.Context, older_than: float, as_json: bool) -> None:
    """Remove stale Git lock files that a killed writer left behind."""
    with errors(as_json):
        removed = open_ledger(ctx).repair(older_than)
    if as_json:
        print_json({"removed": removed})
    else:
        click.echo(f"Removed {len(removed)} stale lock file(s).")
        for name in removed:
            click.echo(f"  {name}")


__all__ = [
    "init_cmd",
    "repair_cmd",
    "verify_cmd",
    "where_cmd",
]
