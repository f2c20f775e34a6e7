"""``gitledger task …``: create, update, read and review tasks."""

from __future__ import annotations

from typing import Any

import click

from . import LazyGroup
from ._common import F, actor_of, errors, json_option, open_ledger, print_json
from .render import task_dict, task_lines, task_text, version_text

STATUS_CHOICE = click.Choice(["open", "active", "blocked", "done", "cancelled"])

# Commands of other groups that a ContextSpindle user reaches under `task` (verbatim compatibility).
TASK_ALIASES = {
    "verify": "gitledger.cli.core:verify_cmd",
    "context": "gitledger.cli.context:context_cmd",
    "backup": "gitledger.cli.sync:backup_cmd",
    "restore": "gitledger.cli.sync:restore_cmd",
    "import": "gitledger.cli.index:import_cmd",
    "export": "gitledger.cli.index:export_cmd",
}


@click.group("task", cls=LazyGroup, lazy=TASK_ALIASES)
def task_group() -> None:
    """Create, update and review tasks."""


def _emit_task(ctx: click.Context, task, as_json: bool) -> None:  # type: ignore[no-untyped-def]
    ledger = ctx.meta["ledger"]
    if as_json:
        print_json(task_dict(task, ledger.short_id(task.id)))
    else:
        click.echo(task_text(ledger, task))


def _emit_list(ctx: click.Context, tasks, as_json: bool, empty: str, ready: bool = False) -> None:  # type: ignore[no-untyped-def]
    ledger = ctx.meta["ledger"]
    if as_json:
        shorts = ledger.short_ids(t.id for t in tasks) if tasks else {}
        print_json([task_dict(t, shorts[t.id], ready=ready) for t in tasks])
    else:
        lines = task_lines(ledger, tasks, ready=ready)
        click.echo("\n".join(lines) if lines else empty)
    _warn_skipped(ledger)


def _warn_skipped(ledger) -> None:  # type: ignore[no-untyped-def]
    for problem in getattr(ledger, "skipped", [])[:5]:
        click.echo(f"warning: skipped {problem.ref}: {problem.message}", err=True)
    if getattr(ledger, "skipped", []):
        click.echo("warning: run 'gitledger verify' for details.", err=True)


def _ledger(ctx: click.Context):  # type: ignore[no-untyped-def]
    ledger = open_ledger(ctx)
    ctx.meta["ledger"] = ledger
    return ledger


@task_group.command("create")
@click.argument("goal")
@click.option("--criteria", default="", help="How we will know it is done.")
@click.option("--parent", help="Id of the parent task.")
@click.option("--owner", help="Who owns it.")
@click.option(
    "--priority",
    type=click.IntRange(0, 4),
    default=2,
    show_default=True,
    help="0 highest … 4 lowest.",
)
@click.option("--label", "labels", multiple=True, help="A label (repeatable).")
@click.option("--next", "next_action", help="The next action.")
@click.option(
    "--dependency",
    "dependencies",
    multiple=True,
    help="Id of a task this one needs done first (repeatable).",
)
@click.option("--idempotency-key", help="Repeat-safe key: the same request returns the same task.")
@json_option
@click.pass_context
def create_cmd(
    ctx: click.Context,
    goal: str,
    criteria: str,
    parent: str | None,
    owner: str | None,
    priority: int,
    labels: tuple[str, ...],
    next_action: str | None,
    dependencies: tuple[str, ...],
    idempotency_key: str | None,
    as_json: bool,
) -> None:
    """Create a task with GOAL and print it."""
    with errors(as_json):
        ledger = _ledger(ctx)
        task = ledger.create(
            goal,
            criteria=criteria,
            parent=parent,
            owner=owner,
            priority=priority,
            labels=labels,
            next=next_action,
            dependencies=dependencies,
            idempotency_key=idempotency_key,
            actor=actor_of(ctx),
        )
        _emit_task(ctx, task, as_json)


@task_group.command("update")
@click.argument("task_id")
@click.option("--goal", help="New goal (needs --decision).")
@click.option("--criteria", help="New completion criteria (needs --decision).")
@click.option("--status", type=STATUS_CHOICE, help="New status.")
@click.option("--next", "next", help="The next action ('' clears it).")
@click.option("--blocker", help="What it waits on ('' clears it).")
@click.option("--owner", help="Who owns it ('' clears it).")
@click.option("--priority", type=click.IntRange(0, 4), help="0 highest … 4 lowest.")
@click.option("--parent", help="Id of the parent task ('' clears it).")
@click.option(
    "--add-label", "--label", "add_labels", multiple=True, help="Add a label (repeatable)."
)
@click.option("--remove-label", "remove_labels", multiple=True, help="Remove a label (repeatable).")
@click.option("--note", "notes", multiple=True, help="Add a note (repeatable).")
@click.option(
    "--decision", "decisions", multiple=True, help="Record a decision and why (repeatable)."
)
@click.option("--evidence", multiple=True, help="Evidence the criteria are met (repeatable).")
@click.option(
    "--add-dependency",
    "--dependency",
    "add_dependencies",
    multiple=True,
    help="Add a dependency (repeatable).",
)
@click.option(
    "--remove-dependency",
    "remove_dependencies",
    multiple=True,
    help="Remove a dependency (repeatable).",
)
@click.option(
    "--expect-version", type=int, help="Refuse (exit 3) unless the task is at this version."
)
@json_option
@click.pass_context
def update_cmd(
    ctx: click.Context, /, task_id: str, expect_version: int | None, as_json: bool, **edits: Any
) -> None:
    """Write a new version of TASK_ID with every change given, or nothing if a gate refuses.

    Each option is the edit of the same name in the Python API and the MCP tool task_update
    (--add-label is add_labels); --label and --dependency are the older spellings.
    """
    with errors(as_json):
        ledger = _ledger(ctx)
        task = ledger.update(task_id, **edits, expect_version=expect_version, actor=actor_of(ctx))
        _emit_task(ctx, task, as_json)


@task_group.command("claim")
@click.argument("task_id")
@click.option(
    "--push",
    "remote",
    is_flag=False,
    flag_value="origin",
    default=None,
    metavar="[REMOTE]",
    help="Count the claim only once REMOTE accepted it; a bare --push means origin.",
)
@click.option("--steal", is_flag=True, help="Take a live claim from its holder (needs --decision).")
@click.option("--decision", help="Why you take it (with --steal).")
@json_option
@click.pass_context
def claim_cmd(
    ctx: click.Context,
    task_id: str,
    remote: str | None,
    steal: bool,
    decision: str | None,
    as_json: bool,
) -> None:
    """Take TASK_ID for yourself (--actor) and your agent (--agent): the first claim wins, exit 3
    if another person or agent holds it. Re-claiming your own claim changes nothing and says so;
    a claim whose holder wrote nothing for the lease ('gitledger config claim.lease') lapses."""
    with errors(as_json):
        ledger = _ledger(ctx)
        if remote:
            from ..sync import claim as remote_claim

            task = remote_claim(
                ledger, task_id, remote, actor=actor_of(ctx), steal=steal, decision=decision
            )
        else:
            task = ledger.claim(task_id, actor=actor_of(ctx), steal=steal, decision=decision)
        _emit_claim(ctx, task, as_json)


def _emit_claim(ctx: click.Context, task, as_json: bool) -> None:  # type: ignore[no-untyped-def]
    ledger = ctx.meta["ledger"]
    if as_json:
        print_json({**task_dict(task, ledger.short_id(task.id)), "claim": ledger.last_claim})
        return
    from ..claims import holder_text

    short = ledger.short_id(task.id)
    said = {
        "already yours": f"Already yours: {short} is held by {holder_text(task)}; nothing changed.",
        "renewed": f"Renewed your lapsed claim on {short}.",
        "released": f"Released {short}; it is {task.status} and unclaimed.",
        "not claimed": f"{short} is not claimed; nothing to release.",
    }.get(ledger.last_claim, f"{ledger.last_claim.capitalize()}: {short} for {holder_text(task)}.")
    click.echo(said)
    click.echo(task_text(ledger, task))


@task_group.command("release")
@click.argument("task_id")
@json_option
@click.pass_context
def release_cmd(ctx: click.Context, task_id: str, as_json: bool) -> None:
    """Hand back your claim on TASK_ID: owner and agent cleared, an active task open again.

    Only the holder (the same --actor and --agent) releases a live claim. Run 'gitledger sync'
    after, so other machines see it."""
    with errors(as_json):
        ledger = _ledger(ctx)
        task = ledger.release(task_id, actor=actor_of(ctx))
        _emit_claim(ctx, task, as_json)


@task_group.command("show")
@click.argument("task_id")
@click.option("--at", "at", type=int, help="Show the task as it was at this version.")
@json_option
@click.pass_context
def show_cmd(ctx: click.Context, task_id: str, at: int | None, as_json: bool) -> None:
    """Print TASK_ID (any unique prefix of its id)."""
    with errors(as_json):
        ledger = _ledger(ctx)
        _emit_task(ctx, ledger.show(task_id, at=at), as_json)


def _filter_options(func: F) -> F:
    """The filters ``task list`` and ``task search`` share, in the order help shows them."""
    for option in reversed(
        (
            click.option(
                "--status",
                "statuses",
                type=STATUS_CHOICE,
                multiple=True,
                help="Only this status (repeatable).",
            ),
            click.option("--owner", help="Only tasks owned by this owner."),
            click.option("--label", help="Only tasks with this label."),
            click.option("--parent", help="Only children of this task."),
        )
    ):
        func = option(func)
    return func


# LIMIT of ``task inbox`` and ``task ready``.
_limit_argument = click.argument("limit", type=click.IntRange(min=0), default=10, required=False)


@task_group.command("list")
@_filter_options
@click.option(
    "--limit", type=click.IntRange(min=0), default=50, show_default=True, help="At most this many."
)
@click.option("--offset", type=click.IntRange(min=0), default=0, help="Skip this many first.")
@json_option
@click.pass_context
def list_cmd(
    ctx: click.Context,
    statuses: tuple[str, ...],
    owner: str | None,
    label: str | None,
    parent: str | None,
    limit: int,
    offset: int,
    as_json: bool,
) -> None:
    """List tasks, most recently updated first."""
    with errors(as_json):
        ledger = _ledger(ctx)
        tasks = ledger.list_tasks(
            status=statuses or None,
            owner=owner,
            label=label,
            parent=parent,
            limit=limit,
            offset=offset,
        )
        _emit_list(ctx, tasks, as_json, "No tasks.")


@task_group.command("inbox")
@_limit_argument
@json_option
@click.pass_context
def inbox_cmd(ctx: click.Context, limit: int, as_json: bool) -> None:
    """What needs attention: active, then blocked, then open tasks (LIMIT, default 10)."""
    with errors(as_json):
        ledger = _ledger(ctx)
        _emit_list(ctx, ledger.inbox(limit), as_json, "Inbox is empty.")


@task_group.command("ready")
@_limit_argument
@json_option
@click.pass_context
def ready_cmd(ctx: click.Context, limit: int, as_json: bool) -> None:
    """Tasks that can start now: open ones with no blocker, every dependency done and every
    child finished, and active ones whose claim lapsed (marked; 'task claim' takes them over)."""
    with errors(as_json):
        ledger = _ledger(ctx)
        _emit_list(ctx, ledger.ready(limit), as_json, "Nothing is ready.", ready=True)


@task_group.command("search")
@click.argument("query", nargs=-1, required=True)
@click.option(
    "--limit", type=click.IntRange(min=0), default=20, show_default=True, help="At most this many."
)
@_filter_options
@json_option
@click.pass_context
def search_cmd(
    ctx: click.Context,
    query: tuple[str, ...],
    limit: int,
    statuses: tuple[str, ...],
    owner: str | None,
    label: str | None,
    parent: str | None,
    as_json: bool,
) -> None:
    """Find tasks matching QUERY, best match first, with the words that matched in [brackets].

    Searches goal, criteria, next, blocker, decisions, evidence, notes, owner and labels; a goal
    match ranks above a note match. Plain words must all appear; 'pars*' matches by prefix,
    '"exact phrase"' as a phrase, and OR, NOT and 'goal:word' work as in SQLite FTS5. A query
    that is not valid FTS5 is searched as plain words.
    """
    from ..text import one_line

    with errors(as_json):
        ledger = _ledger(ctx)
        hits = ledger.search_hits(
            " ".join(query),
            limit,
            statuses=statuses,
            owner=owner,
            label=label,
            parent=parent,
        )
    tasks = [h.task for h in hits]
    if as_json:
        shorts = ledger.short_ids(t.id for t in tasks) if tasks else {}
        print_json(
            [
                {**task_dict(h.task, shorts[h.task.id]), "score": h.score, "snippet": h.snippet}
                for h in hits
            ]
        )
    elif not hits:
        click.echo("No matches.")
    else:
        for line, hit in zip(task_lines(ledger, tasks), hits, strict=True):
            click.echo(line)
            if hit.snippet:
                click.echo(f"         {one_line(hit.snippet, 100)}")
    _warn_skipped(ledger)


@task_group.command("children")
@click.argument("task_id")
@json_option
@click.pass_context
def children_cmd(ctx: click.Context, task_id: str, as_json: bool) -> None:
    """List the tasks whose parent is TASK_ID."""
    with errors(as_json):
        ledger = _ledger(ctx)
        _emit_list(ctx, ledger.children(task_id), as_json, "No children.")


@task_group.command("history")
@click.argument("task_id")
@click.option(
    "--limit", type=click.IntRange(min=0), default=None, help="At most this many versions."
)
@click.option("--offset", type=click.IntRange(min=0), default=0, help="Skip the newest N versions.")
@json_option
@click.pass_context
def history_cmd(
    ctx: click.Context, task_id: str, limit: int | None, offset: int, as_json: bool
) -> None:
    """Every version of TASK_ID, newest first, with what changed in each."""
    with errors(as_json):
        ledger = _ledger(ctx)
        versions = ledger.history(task_id, limit=limit, offset=offset)
    if as_json:
        print_json([v.to_dict() for v in versions])
    else:
        click.echo("\n".join(version_text(v) for v in versions) or "No versions.")


@task_group.command("diff")
@click.argument("task_id")
@click.argument("v1", type=int)
@click.argument("v2", type=int)
@json_option
@click.pass_context
def diff_cmd(ctx: click.Context, task_id: str, v1: int, v2: int, as_json: bool) -> None:
    """What changed in TASK_ID from version V1 to version V2."""
    with errors(as_json):
        changes = _ledger(ctx).diff(task_id, v1, v2)
    if as_json:
        print_json([c.to_dict() for c in changes])
    else:
        click.echo("\n".join(c.describe() for c in changes) or "No changes.")


__all__ = [
    "STATUS_CHOICE",
    "TASK_ALIASES",
    "children_cmd",
    "claim_cmd",
    "create_cmd",
    "diff_cmd",
    "history_cmd",
    "inbox_cmd",
    "list_cmd",
    "ready_cmd",
    "release_cmd",
    "search_cmd",
    "show_cmd",
    "task_group",
    "update_cmd",
]
