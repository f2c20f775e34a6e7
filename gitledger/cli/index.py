"""``gitledger index …``, ``gitledger graph`` and ``gitledger task import|export``."""

from __future__ import annotations

import json
import sys
from typing import IO, TYPE_CHECKING

import click

from ..text import plural
from ._common import actor_of, errors, json_option, open_ledger, print_json

if TYPE_CHECKING:
    from ..transfer import ImportReport


@click.group("index")
def index_group() -> None:
    """The derived search index (SQLite in the ledger; disposable, never authoritative)."""


@index_group.command("rebuild")
@json_option
@click.pass_context
def rebuild_cmd(ctx: click.Context, as_json: bool) -> None:
    """Throw the index away and build it again from the refs."""
    with errors(as_json):
        idx = open_ledger(ctx).require_index()
        stats = idx.rebuild()
        status = idx.status()
    if as_json:
        print_json({**status.to_dict(), "seconds": round(stats.seconds, 3)})
    else:
        click.echo(
            f"Indexed {plural(status.tasks, 'task')} in {stats.seconds:.2f} s "
            f"({status.size_bytes / 1e6:.1f} MB at {status.path})."
        )
        if status.problems:
            click.echo(
                f"warning: {plural(status.problems, 'ref')} could not be read; run 'gitledger verify'.",
                err=True,
            )


@index_group.command("status")
@json_option
@click.pass_context
def status_cmd(ctx: click.Context, as_json: bool) -> None:
    """Where the index is, how big, how many tasks; brings it up to date first."""
    with errors(as_json):
        idx = open_ledger(ctx).require_index()
        status = idx.status()
        last = idx.last_refresh
    if as_json:
        print_json(
            {
                **status.to_dict(),
                "refresh": {
                    "checked_refs": last.checked,
                    "changed": last.changed,
                    "removed": last.removed,
                    "seconds": round(last.seconds, 4),
                },
            }
        )
    else:
        click.echo(f"index:    {status.path}")
        click.echo(f"schema:   {status.schema}")
        click.echo(f"tasks:    {status.tasks}")
        click.echo(f"size:     {status.size_bytes / 1e6:.2f} MB")
        click.echo(
            f"refresh:  {'read the refs' if last.checked else 'nothing moved'}, "
            f"{last.changed} changed, {last.removed} removed, {last.seconds * 1000:.1f} ms"
        )
        if status.problems:
            click.echo(f"problems: {status.problems} unreadable refs (run 'gitledger verify')")


@click.command("graph")
@click.argument("task_id", required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["mermaid", "dot", "svg", "tree"]),
    default="mermaid",
    show_default=True,
    help="Mermaid text, Graphviz dot, SVG drawn by Graphviz, or a tree for the terminal (with "
    "status and owner).",
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=300, show_default=True, help="At most N tasks."
)
@click.option(
    "-o", "--output", type=click.File("w", encoding="utf-8"), help="Write to FILE, not stdout."
)
@json_option
@click.pass_context
def graph_cmd(
    ctx: click.Context,
    task_id: str | None,
    fmt: str,
    limit: int,
    output: IO[str] | None,
    as_json: bool,
) -> None:
    """Draw the parent tree and dependencies of TASK_ID, or of all unfinished work.

    Solid arrows go from parent to child, dashed ones from a task to what it needs. Paste
    mermaid output into any Markdown that renders Mermaid; pipe dot into Graphviz.
    """
    from ..graph import render_graph, task_graph

    with errors(as_json):
        graph = task_graph(open_ledger(ctx), task_id, limit=limit)
        if as_json:
            print_json(graph.to_dict())
            return
        text = render_graph(graph, fmt)
    (output or sys.stdout).write(text)
    if graph.truncated:
        click.echo(f"warning: drew only the first {limit} tasks; pass --limit N.", err=True)


@click.command("import")
@click.argument("file", type=click.File("r", encoding="utf-8"))
@click.option(
    "--partial",
    is_flag=True,
    help="Skip the lines that fail (and the lines that refer to them), import the rest, and "
    "name each skipped line with its reason.",
)
@click.option(
    "--from",
    "source",
    type=click.Choice(["beads", "taskwarrior", "github"]),
    help="FILE is another tracker's export: beads' JSONL ('bd export'), Taskwarrior's 'task "
    "export', or 'gh issue list --json number,title,body,state,labels,assignees,comments'.",
)
@click.option("--quiet", is_flag=True, help="No progress bar.")
@json_option
@click.pass_context
def import_cmd(
    ctx: click.Context,
    file: IO[str],
    partial: bool,
    source: str | None,
    quiet: bool,
    as_json: bool,
) -> None:
    """Create or update tasks from FILE, JSON Lines, one task a line ('-' reads stdin).

    A line is as little as {"goal": "..."}: notes, decisions and evidence may be strings;
    "parent" and "dependencies" may name another line (its "ref", or an "id" that is not a task
    id) or a task of the ledger. 'task export' lines (with their "history") restore every
    version exactly. Every line is checked before anything is written; errors name the line
    and the field (for a JSON array, the item's position).

    With --from, each item keeps its source id as a label (beads:ID, taskwarrior:UUID,
    github:NUMBER) and imports as the same task every time: a second import updates, and
    changes nothing when nothing changed.
    """
    from ..trackers import import_from
    from ..transfer import import_tasks, read_lines

    with errors(as_json):
        ledger = open_ledger(ctx)
        if source is not None:
            report = import_from(ledger, source, file, actor=actor_of(ctx), partial=partial)
            _report_import(ctx, report, as_json)
            return
        lines = read_lines(file)
        show_bar = not quiet and not as_json and sys.stderr.isatty()
        if show_bar:
            from rich.progress import Progress

            with Progress(transient=True) as bar:
                job = bar.add_task("importing", total=None)

                def progress(done: int, total: int) -> None:
                    if done % 200 == 0 or done == total:
                        bar.update(job, completed=done, total=total)

                report = import_tasks(
                    ledger, lines, actor=actor_of(ctx), progress=progress, partial=partial
                )
        else:
            report = import_tasks(ledger, lines, actor=actor_of(ctx), partial=partial)
    _report_import(ctx, report, as_json)


def _report_import(ctx: click.Context, report: ImportReport, as_json: bool) -> None:
    if as_json:
        print_json(report.to_dict())
    else:
        click.echo(
            f"Imported {report.created} new, {report.updated} updated, {report.unchanged} "
            f"unchanged ({plural(report.versions, 'version')} written) in {report.seconds:.2f} s "
            f"({report.tasks_per_second:,.0f} tasks/s)."
        )
        for ref in report.conflicts:
            click.echo(f"warning: {ref} moved during the import and was left as it is.", err=True)
        for _lineno, why in report.skipped:
            click.echo(f"skipped: {why}", err=True)
    if report.locked:
        click.echo(
            f"Error: {len(report.locked)} task(s) were not imported because a Git lock file holds "
            f"their ref (first: {report.locked[0]}). If no other gitledger process is running, "
            f"run 'gitledger repair' and import again.",
            err=True,
        )
        ctx.exit(1)


@click.command("export")
@click.option(
    "-o", "--output", type=click.File("w", encoding="utf-8"), help="Write to FILE, not stdout."
)
@click.option("--current-only", is_flag=True, help="Only each task's current version, no history.")
@click.option(
    "--to",
    "target",
    type=click.Choice(["beads", "taskwarrior"]),
    help="Write another tracker's import format instead: beads' JSONL ('bd import') or "
    "Taskwarrior's JSON ('task import').",
)
@json_option
@click.pass_context
def export_cmd(
    ctx: click.Context,
    output: IO[str] | None,
    current_only: bool,
    target: str | None,
    as_json: bool,
) -> None:
    """Write every task as JSON Lines, with its earlier versions (for 'task import').

    The output is JSON already; every line is one task as 'task show --json' prints it, plus a
    'history' list of its earlier versions, oldest first.
    """
    from ..transfer import MAX_LINE_BYTES, ExportStats, export_tasks

    out = output or sys.stdout
    if target is not None:
        from ..trackers import export_to

        with errors(as_json):
            count = export_to(open_ledger(ctx), target, out)
        if output is not None:
            click.echo(f"Exported {count} tasks for {target}.", err=True)
        return
    stats = ExportStats()
    too_long: list[str] = []
    with errors(as_json):  # the output is JSON Lines either way
        ledger = open_ledger(ctx)
        exported = export_tasks(ledger, history=not current_only, stats=stats, interface="cli")
        for data in exported:
            line = json.dumps(data, ensure_ascii=False, sort_keys=True)
            if len(line) * 4 >= MAX_LINE_BYTES and len(line.encode()) >= MAX_LINE_BYTES:
                too_long.append(data["id"])
            out.write(line + "\n")
    for task_id in too_long[:5]:
        click.echo(
            f"warning: task {task_id} with its history is a line over {MAX_LINE_BYTES:,} "
            f"bytes, more than 'task import' reads; export it with --current-only.",
            err=True,
        )
    for ref, message in stats.problems[:5]:
        click.echo(f"warning: skipped {ref}: {message}", err=True)
    if output is not None:
        click.echo(
            f"Exported {plural(stats.tasks, 'task')} ({plural(stats.versions, 'version')}).",
            err=True,
        )
    if stats.problems:
        click.echo(
            f"Error: {plural(len(stats.problems), 'task')} left out of the export (listed above); "
            f"run 'gitledger verify' for how to restore each.",
            err=True,
        )
        ctx.exit(1)


__all__ = [
    "export_cmd",
    "graph_cmd",
    "import_cmd",
    "index_group",
    "rebuild_cmd",
    "status_cmd",
]
