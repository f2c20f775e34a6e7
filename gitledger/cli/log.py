"""``gitledger log ID [-p]``: a task's versions as Git log entries, for review."""

from __future__ import annotations

import click

from ._common import errors, json_option, open_ledger, print_json


@click.command("log")
@click.argument("task_id")
@click.option(
    "-p",
    "--patch",
    is_flag=True,
    help="Show what each version changed in the task's Markdown view (task.md).",
)
@click.option(
    "-n",
    "--max-count",
    "limit",
    type=click.IntRange(min=1),
    default=None,
    help="Show at most N versions.",
)
@json_option
@click.pass_context
def log_cmd(
    ctx: click.Context, task_id: str, patch: bool, limit: int | None, as_json: bool
) -> None:
    """The Git history of TASK_ID (any unique prefix of its id), newest first.

    Each version is a commit on the task's ref; -p adds the diff of the Markdown view, not of
    task.json (its per-field clock stamps would drown the change). A merge shows, for each
    parent, what the other side brought to it.
    """
    from ..changelog import render_log, task_log

    with errors(as_json):
        entries = task_log(open_ledger(ctx), task_id, patch=patch, limit=limit)
    if as_json:
        print_json([e.to_dict() for e in entries])
    else:
        click.echo(render_log(entries), nl=False)


__all__ = [
    "log_cmd",
]
