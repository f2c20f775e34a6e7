"""``gitledger task context`` and ``gitledger prime``: budgeted handoffs on the command line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from ._common import errors, json_option, open_ledger, print_json

F = TypeVar("F", bound=Callable[..., Any])

# What prime says outside a ledger (a SessionStart hook shows it to the agent): a command to run.
NO_LEDGER_LINE = (
    "gitledger: no task ledger here yet; run 'gitledger init' to keep this project's tasks in Git."
)


def budget_options(default: int, extra: str = "") -> Callable[[F], F]:
    """``--budget N`` and ``--unit bytes|tokens``, as every budgeted command spells them."""

    def decorate(fn: F) -> F:
        fn = click.option(
            "--unit",
            type=click.Choice(["bytes", "tokens"]),
            default="bytes",
            show_default=True,
            help="Count UTF-8 bytes, or cl100k_base tokens.",
        )(fn)
        return click.option(
            "--budget",
            type=int,
            default=None,
            help=f"At most this many bytes or tokens (default {default:,}).{extra}",
        )(fn)

    return decorate


@click.command("context")
@click.argument("task_id")
@click.argument("budget_arg", metavar="[BUDGET]", type=int, required=False)
@budget_options(2048, " Same as the BUDGET argument.")
@json_option
@click.pass_context
def context_cmd(
    ctx: click.Context,
    task_id: str,
    budget_arg: int | None,
    budget: int | None,
    unit: str,
    as_json: bool,
) -> None:
    """Print TASK_ID's handoff for the next agent, within BUDGET bytes (or --unit tokens).

    Required state (id, version, status, goal, criteria, next action, blocker, owner, parent and
    dependencies) always fits or the command fails naming the smallest budget that does. Then
    decisions, evidence, related tasks and notes, by priority; the last line lists what was
    omitted. 'gitledger task context ID 2048' and '--budget 2048' are the same.
    """
    from ..context import DEFAULT_BUDGET, task_context

    if budget_arg is not None and budget is not None and budget_arg != budget:
        raise click.UsageError(
            f"Two budgets given ({budget_arg} and --budget {budget}); pass just one."
        )
    chosen = budget if budget is not None else budget_arg
    with errors(as_json):
        handoff = task_context(
            open_ledger(ctx),
            task_id,
            budget=DEFAULT_BUDGET if chosen is None else chosen,
            unit=unit,
        )
    if as_json:
        print_json(handoff.to_dict())
    else:
        click.echo(handoff.text, nl=False)


@click.command("prime")
@budget_options(2000)
@click.option(
    "--hook",
    is_flag=True,
    help="As a SessionStart hook: read the payload on stdin, print the digest as the hook's "
    "JSON, never fail the session.",
)
@click.option(
    "--sync",
    "remote",
    metavar="REMOTE",
    help="With --hook: sync with REMOTE first (bounded in time), so work pushed from another "
    "machine is in the digest.",
)
@json_option
@click.pass_context
def prime_cmd(
    ctx: click.Context,
    budget: int | None,
    unit: str,
    hook: bool,
    remote: str | None,
    as_json: bool,
) -> None:
    """Print the session-start digest: active and claimed tasks, the top of the ready queue,
    recent decisions, and how to call the ledger.

    Made for a SessionStart hook: with no ledger here it prints one line saying how to start one
    and exits 0. 'gitledger setup' installs it as 'prime --hook' for every session source; for a
    new session (source startup) --hook prints the handoff from other machines instead: what is
    in hand (who holds it, where, when) and the task you most likely resume, with its latest fuse
    snapshot, within 9,500 characters.
    """
    from ..errors import NoLedger
    from ..handoff import prime

    if hook:
        from ..hooks import (
            emit,
            enter_project,
            never_fail,
            note,
            read_payload,
            run_bounded,
            session_start_output,
        )

        with never_fail("prime", "no digest"):
            payload = read_payload()
            enter_project(payload)
            obj = ctx.find_root().obj or {}
            if remote:
                pinned = ["--ledger", str(obj["ledger_path"])] if obj.get("ledger_path") else []
                ok, said = run_bounded([*pinned, "sync", remote])
                if not ok:
                    note("prime", f"sync with {remote}: {said or 'failed'}; primed from local")
            try:
                ledger = open_ledger(ctx)
            except NoLedger:
                emit(session_start_output(NO_LEDGER_LINE), "prime")
                return
            if payload.get("source") in (None, "startup", "clear"):
                # a new session: what is in hand, and the task it most plausibly resumes with
                # its latest fuse snapshot (a compact/resume gets the fuse's own restore)
                from ..handoff import session_start

                emit(session_start_output(session_start(ledger, interface="cli")), "prime")
                return
            digest = prime(ledger, budget, unit, interface="cli")
            emit(session_start_output(digest.text), "prime")
        return

    with errors(as_json):
        try:
            ledger = open_ledger(ctx)
        except NoLedger:
            if as_json:
                print_json({"ledger": None, "text": NO_LEDGER_LINE + "\n"})
            else:
                click.echo(NO_LEDGER_LINE)
            return
        digest = prime(ledger, budget, unit, interface="cli")
    if as_json:
        print_json({"ledger": str(ledger.path), **digest.to_dict()})
    else:
        click.echo(digest.text, nl=False)


__all__ = [
    "F",
    "budget_options",
    "context_cmd",
    "prime_cmd",
]
