"""``gitledger remember``, ``recall`` and ``memory …``: per-fact memory, offered as hints."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import click

from ..text import one_line
from ._common import actor_of, errors, json_option, open_ledger, print_json

MAX_MEMORY_LINE_BYTES = 64 * 1024

if TYPE_CHECKING:
    from ..memory import Fact, Memory

KINDS = ("decision", "pitfall", "constraint", "preference", "todo", "accomplishment")


def _memory(ctx: click.Context) -> Memory:
    from ..memory import Memory

    return Memory(open_ledger(ctx))


def _fact_line(fact: Fact, extra: str = "") -> str:
    state = "" if fact.active else " [forgotten]"
    tags = f" #{' #'.join(fact.tags)}" if fact.tags else ""
    return f"{fact.id[:8]}  {fact.kind:<14} i{fact.importance} u{fact.uses}{extra}  {one_line(fact.text, 70)}{tags}{state}"


@click.command("remember")
@click.argument("text")
@click.option(
    "--kind",
    type=click.Choice(KINDS),
    default="decision",
    show_default=True,
    help="What sort of fact.",
)
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option(
    "--importance", type=click.IntRange(1, 5), default=3, show_default=True, help="1 low … 5 high."
)
@click.option("--task", help="The task this fact came from.")
@click.option("--session", help="The agent session this fact came from.")
@json_option
@click.pass_context
def remember_cmd(
    ctx: click.Context,
    text: str,
    kind: str,
    tags: tuple[str, ...],
    importance: int,
    task: str | None,
    session: str | None,
    as_json: bool,
) -> None:
    """Remember TEXT as a fact; the same fact again reinforces the one already there."""
    with errors(as_json):
        fact, new = _memory(ctx).remember(
            text,
            kind=kind,
            tags=tags,
            importance=importance,
            task=task,
            session=session,
            actor=actor_of(ctx),
        )
    if as_json:
        print_json({**fact.to_dict(), "new": new})
    else:
        click.echo(("Remembered " if new else "Reinforced ") + _fact_line(fact))


@click.command("recall")
@click.argument("query", nargs=-1, required=True)
@click.option(
    "-k", "k", type=click.IntRange(min=1), default=5, show_default=True, help="How many facts."
)
@click.option("--kind", type=click.Choice(KINDS), help="Only facts of this kind.")
@click.option("--no-reinforce", is_flag=True, help="Look only: do not count this as a use.")
@json_option
@click.pass_context
def recall_cmd(
    ctx: click.Context,
    query: tuple[str, ...],
    k: int,
    kind: str | None,
    no_reinforce: bool,
    as_json: bool,
) -> None:
    """The facts most worth reading for QUERY: relevance weighted by strength. Hints, not truth."""
    with errors(as_json):
        hits = _memory(ctx).recall(
            " ".join(query), k, kind=kind, reinforce=not no_reinforce, actor=actor_of(ctx)
        )
    if as_json:
        print_json([h.to_dict() for h in hits])
    elif not hits:
        click.echo("Nothing remembered matches.")
    else:
        click.echo("hints from memory (check them against the task before relying on them):")
        for hit in hits:
            click.echo(_fact_line(hit.fact, f" s{hit.strength:.2f}"))


@click.group("memory")
def memory_group() -> None:
    """Per-fact memory: decisions, pitfalls, constraints, preferences, todos, accomplishments.

    Facts are hints for an agent, kept in Git beside the tasks; the ledger stays the authority.
    """


@memory_group.command("list")
@click.option("--kind", type=click.Choice(KINDS), help="Only facts of this kind.")
@click.option("--forgotten", is_flag=True, help="List forgotten facts instead of active ones.")
@click.option("--all", "show_all", is_flag=True, help="List active and forgotten facts.")
@click.option(
    "--limit", type=click.IntRange(min=0), default=50, show_default=True, help="At most this many."
)
@json_option
@click.pass_context
def list_cmd(
    ctx: click.Context, kind: str | None, forgotten: bool, show_all: bool, limit: int, as_json: bool
) -> None:
    """Facts, strongest first."""
    active: bool | None = None if show_all else not forgotten
    with errors(as_json):
        memory = _memory(ctx)
        facts = memory.list_facts(active=active, kind=kind, limit=limit)
        now = memory.clock()
    if as_json:
        print_json([f.to_dict(now) for f in facts])
    else:
        click.echo(
            "\n".join(_fact_line(f, f" s{f.strength(now):.2f}") for f in facts) or "No facts."
        )


@memory_group.command("stats")
@json_option
@click.pass_context
def stats_cmd(ctx: click.Context, as_json: bool) -> None:
    """How many facts are active and forgotten, by kind, against the capacity."""
    with errors(as_json):
        stats = _memory(ctx).stats()
    if as_json:
        print_json(stats)
        return
    click.echo(
        f"{stats['active']} active of capacity {stats['capacity']}, {stats['forgotten']} forgotten"
    )
    for kind, count in stats["by_kind"].items():
        click.echo(f"  {kind:<15}{count}")
    if stats["unreadable"]:
        click.echo(f"warning: {stats['unreadable']} unreadable fact ref(s)", err=True)


def _fact_command(name: str) -> Callable[[Callable[..., None]], click.Command]:
    """``memory NAME FACT_ID [--json]``: what show, forget and restore take."""

    def decorate(func: Callable[..., None]) -> click.Command:
        command = click.argument("fact_id")(json_option(click.pass_context(func)))
        return memory_group.command(name)(command)

    return decorate


@_fact_command("show")
def show_cmd(ctx: click.Context, fact_id: str, as_json: bool) -> None:
    """One fact, with its source and strength."""
    with errors(as_json):
        memory = _memory(ctx)
        fact = memory.get(fact_id)
        now = memory.clock()
    if as_json:
        print_json(fact.to_dict(now))
    else:
        click.echo(_fact_line(fact, f" s{fact.strength(now):.2f}"))
        for name in (
            "source_task",
            "source_session",
            "created_at",
            "last_used_at",
            "forgotten_reason",
        ):
            value = getattr(fact, name)
            if value:
                click.echo(f"  {name}: {one_line(str(value), 100)}")


def _set_active(ctx: click.Context, fact_id: str, as_json: bool, restore: bool) -> None:
    with errors(as_json):
        memory = _memory(ctx)
        fact = (memory.restore if restore else memory.forget)(fact_id, actor=actor_of(ctx))
    if as_json:
        print_json(fact.to_dict())
    else:
        click.echo(("Restored " if restore else "Forgot ") + _fact_line(fact))


@_fact_command("forget")
def forget_cmd(ctx: click.Context, fact_id: str, as_json: bool) -> None:
    """Take a fact out of the active set (it stays in Git history; 'memory restore' undoes it)."""
    _set_active(ctx, fact_id, as_json, restore=False)


@_fact_command("restore")
def restore_cmd(ctx: click.Context, fact_id: str, as_json: bool) -> None:
    """Bring a forgotten or evicted fact back into the active set."""
    _set_active(ctx, fact_id, as_json, restore=True)


@memory_group.command("import")
@click.argument("file", type=click.File("r", encoding="utf-8"))
@json_option
@click.pass_context
def import_cmd(ctx: click.Context, file: Any, as_json: bool) -> None:
    """Remember one fact per line of FILE (JSON: text, kind, tags, importance; '-' is stdin).

    Every line is checked first: one bad line changes nothing.
    """
    from ..errors import InvalidInput
    from ..transfer import read_lines

    def rows() -> Iterator[Any]:
        # One line at a time, each bounded: a fact is at most 4 KiB of text, so a line of 64 KiB
        # is already far more than one fact; nothing is held but the facts checked so far.
        for n, line in enumerate(
            read_lines(file, MAX_MEMORY_LINE_BYTES, ("each line must be one fact",)), 1
        ):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"Line {n} is not JSON ({exc.msg}).") from exc
            except RecursionError as exc:  # json.loads past the recursion limit
                raise InvalidInput(f"Line {n} nests JSON too deeply to read.") from exc

    with errors(as_json):
        result = _memory(ctx).import_facts(rows(), actor=actor_of(ctx))
    if as_json:
        print_json(result)
    else:
        click.echo(f"Imported {result['created']} fact(s), {result['duplicates']} already known.")


@memory_group.command("export")
@json_option
@click.pass_context
def export_cmd(ctx: click.Context, as_json: bool) -> None:
    """Every fact, active and forgotten, one JSON object a line (--json: one JSON array).

    The lines are what 'gitledger memory import' reads back.
    """
    with errors(as_json):
        rows = _memory(ctx).export()
        if as_json:
            print_json(list(rows))
            return
        for row in rows:
            sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")


@memory_group.command("config")
@click.option("--capacity", type=click.IntRange(min=1), help="How many active facts to keep.")
@json_option
@click.pass_context
def config_cmd(ctx: click.Context, capacity: int | None, as_json: bool) -> None:
    """Show the memory settings, or set the capacity (the weakest facts beyond it are forgotten)."""
    with errors(as_json):
        memory = _memory(ctx)
        result = memory.set_capacity(capacity, actor=actor_of(ctx)) if capacity else memory.config()
    if as_json:
        print_json(result)
    else:
        click.echo(f"capacity: {result['capacity']}")
        if result.get("evicted"):
            click.echo(f"forgot {len(result['evicted'])} weakest fact(s) beyond it")


__all__ = [
    "KINDS",
    "MAX_MEMORY_LINE_BYTES",
    "config_cmd",
    "export_cmd",
    "forget_cmd",
    "import_cmd",
    "list_cmd",
    "memory_group",
    "recall_cmd",
    "remember_cmd",
    "restore_cmd",
    "show_cmd",
    "stats_cmd",
]
