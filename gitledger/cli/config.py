"""``gitledger config``: show or change the ledger's settings (``gitledger.settings``)."""

from __future__ import annotations

import click

from ._common import errors, json_option, open_ledger, print_json


@click.command("config")
@click.argument("settings", nargs=-1)
@json_option
@click.pass_context
def config_cmd(ctx: click.Context, settings: tuple[str, ...], as_json: bool) -> None:
    """Show the ledger's settings, or change them: gitledger config claim.lease=30m.

    \b
    claim.lease  how long a claim lives without a write by its holder (default 2h)
    sync.fuse    whether sync carries fuse snapshots and memory (default true)

    NAME= (empty) resets a setting to its default. Settings stay on this machine.
    """
    from ..errors import InvalidInput
    from ..settings import apply, values

    with errors(as_json):
        changes: dict[str, str] = {}
        for item in settings:
            name, sep, value = item.partition("=")
            if not sep:
                raise InvalidInput(
                    f"Give settings as NAME=VALUE, e.g. claim.lease=30m, not {item!r}."
                )
            changes[name.strip()] = value.strip()
        ledger = open_ledger(ctx)
        result = apply(ledger.store, changes) if changes else values(ledger.store)
    if as_json:
        print_json(result)
    else:
        for name, value in result.items():
            click.echo(f"{name} = {value}")


__all__ = [
    "config_cmd",
]
