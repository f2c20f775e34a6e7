"""``gitledger hook …``: commands an agent runs as hooks (they never fail the agent)."""

from __future__ import annotations

import click

from ._common import actor_of


@click.group("hook")
def hook_group() -> None:
    """Commands an agent runs as hooks: they read its JSON payload on stdin and exit 0."""


@hook_group.command("tasklist")
@click.pass_context
def tasklist_cmd(ctx: click.Context) -> None:
    """Mirror the agent's own task list into subtasks (a PostToolUse hook on TaskCreate,
    TaskUpdate and TodoWrite).

    Each item becomes a subtask of the task the session works on (its linked task, else one
    made for the session), created once and set open, active, done or cancelled as the list
    says. Prints nothing and exits 0 (1 only when gitledger cannot start, e.g. a --ledger that
    is a file). Off: 'gitledger config tasklist.mirror=false'.
    """
    from ..hooks import hook_ledger, never_fail, read_payload
    from ..tasklist import mirror

    with never_fail("hook tasklist", "the task list was not mirrored"):
        payload = read_payload()
        if not payload:
            return
        obj = ctx.find_root().obj or {}
        ledger = hook_ledger(
            obj.get("ledger_path"),
            payload.get("cwd"),
            actor=actor_of(ctx),
            agent=obj.get("agent"),
            session=payload.get("session_id"),
        )
        report = mirror(ledger, payload, actor=actor_of(ctx))
        for refusal in report.refused:
            click.echo(f"gitledger hook tasklist: {refusal}", err=True)


__all__ = [
    "hook_group",
    "tasklist_cmd",
]
