"""backup, restore, sync and remote setup: moving the ledger through any Git remote."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ._common import errors, json_option, open_ledger, print_json

if TYPE_CHECKING:
    from ..sync import Progress, SyncReport


@contextlib.contextmanager
def _progress(enabled: bool) -> Iterator[Progress | None]:
    """A rich progress bar on stderr when it is a terminal; nothing otherwise."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    tasks: dict[str, Any] = {}

    def update(phase: str, done: int, total: int) -> None:
        label = "Receiving objects" if phase == "fetch" else "Sending objects"
        if phase not in tasks:
            tasks[phase] = bar.add_task(label, total=total or None)
        bar.update(tasks[phase], completed=done, total=total or None)

    with bar:
        yield update


def _render(report: SyncReport, verb: str) -> None:
    parts = []
    for label, items in (
        ("new", report.created),
        ("fast-forwarded", report.fast_forwarded),
        ("merged", report.merged),
        ("kept (local ahead)", report.kept),
        ("pushed", report.pushed),
        ("not pushed (the remote has newer work on them)", report.remote_ahead),
    ):
        if items:
            parts.append(f"{len(items)} {label}")
    summary = ", ".join(parts) if parts else "nothing to do, already in step"
    if report.remote_ahead:
        # One outcome per run: a backup that left refs behind says so on its own line too, so
        # "Backed up" is never followed by the error that it was not.
        verb = "Backed up only part of the ledger to"
    click.echo(f"{verb} {report.remote}: {summary} ({report.seconds:.2f} s).")
    for task_id, fields in sorted(report.conflicts.items()):
        rules = report.conflict_rules.get(task_id, {})
        said = ", ".join(f"{f} ({rules.get(f, 'the later write won')})" for f in fields)
        click.echo(f"  conflict on {task_id[:8]}: {said}; see 'gitledger task show {task_id[:8]}'")
    for ref, rules in sorted(report.ref_rules.items()):
        said = ", ".join(f"{key} ({rule})" for key, rule in rules.items())
        click.echo(f"  merged {ref}: {said}")
    for ref in report.unmerged:
        click.echo(f"  diverged, kept local and not pushed: {ref}")
    for line in report.problems:
        click.echo(f"  verify: {line}")


def _finish(report: SyncReport, as_json: bool, verb: str) -> None:
    from ..errors import CorruptRecord, RemoteMoved

    if as_json:
        print_json(report.to_dict())
    else:
        _render(report, verb)
    with errors(as_json):
        if report.left_out:
            raise CorruptRecord(
                f"{len(report.left_out)} ref(s) name no commit and were left out (first: "
                f"{report.left_out[0]}); everything else was backed up. Run 'gitledger verify': "
                f"it names the commit that restores each."
            )
        if report.remote_ahead:
            raise RemoteMoved(
                f"{len(report.remote_ahead)} ref(s) have newer or different work on the remote "
                f"(first: {report.remote_ahead[0]}) and were not pushed. Run 'gitledger sync' to "
                f"merge them, then back up again."
            )
        if report.problems:
            raise CorruptRecord(
                "'verify' found damaged records (listed above); restore those from another backup."
            )
        if report.unmerged:
            raise RemoteMoved(
                f"{len(report.unmerged)} ref(s) diverged and gitledger cannot merge their kind "
                f"(first: {report.unmerged[0]}): kept here, not pushed, nothing lost. Keep one "
                f"side (git --git-dir LEDGER update-ref REF TIP, LEDGER from 'gitledger where') "
                f"and sync again."
            )


@click.command("backup")
@click.argument("remote", required=False)
@click.option(
    "--bundle",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write a Git bundle file instead of pushing (an offline copy).",
)
@json_option
@click.pass_context
def backup_cmd(ctx: click.Context, remote: str | None, bundle: Path | None, as_json: bool) -> None:
    """Push every ledger ref to REMOTE (default origin): a remote name, a URL or a path.

    Only refs whose remote tip differs are sent, never forced and without running pre-push
    hooks; a bare repository is created at a path that does not exist yet. Ends by checking the
    remote (or bundle) holds exactly the tips pushed.
    """
    from .. import sync

    if remote and bundle:
        raise click.UsageError("Give a REMOTE or --bundle FILE, not both.")
    with errors(as_json):
        ledger = open_ledger(ctx)
        with _progress(not as_json) as progress:
            report = sync.backup(ledger, remote, bundle=bundle, progress=progress)
    _finish(report, as_json, "Backed up to")


@click.command("restore")
@click.argument("source")
@json_option
@click.pass_context
def restore_cmd(ctx: click.Context, source: str, as_json: bool) -> None:
    """Bring the ledger refs of SOURCE (a remote name, URL, path or bundle file) into this ledger.

    Creates the ledger if there is none; tasks that exist here too are merged as sync does, so
    local work is never overwritten. Ends with 'verify'.
    """
    from .. import sync

    with errors(as_json):
        ledger = open_ledger(ctx, create=True)
        with _progress(not as_json) as progress:
            report = sync.restore(ledger, source, progress=progress)
    _finish(report, as_json, "Restored from")


@click.command("sync")
@click.argument("remote", required=False)
@click.option(
    "--hook",
    is_flag=True,
    help="As an agent's hook: read the payload on stdin, give up after --timeout, never fail.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(1, 600),
    default=10,
    show_default=True,
    help="Seconds a --hook sync may take.",
)
@json_option
@click.pass_context
def sync_cmd(
    ctx: click.Context, remote: str | None, hook: bool, timeout: float, as_json: bool
) -> None:
    """Fetch REMOTE's ledger (default origin), merge diverged tasks, push the result.

    Per task: new, fast-forward, keep (local ahead) or merge both histories (notes, decisions and
    evidence from both sides survive; a scalar both sides changed goes to the later write and the
    conflict is recorded on the task). Retries when someone pushed in between.
    """
    from .. import sync

    if hook:
        from ..hooks import enter_project, never_fail, note, read_payload, run_bounded

        with never_fail("sync", "nothing synced"):
            enter_project(read_payload())
            obj = ctx.find_root().obj or {}
            pinned = ["--ledger", str(obj["ledger_path"])] if obj.get("ledger_path") else []
            ok, said = run_bounded(
                [*pinned, "sync", *([remote] if remote else [])], timeout=timeout
            )
            if not ok:
                note("sync", f"{said or 'failed'} (the agent goes on)")
        return

    with errors(as_json):
        ledger = open_ledger(ctx)
        with _progress(not as_json) as progress:
            report = sync.sync(ledger, remote, progress=progress)
    _finish(report, as_json, "Synced with")


@click.group("remote")
def remote_group() -> None:
    """Configure remotes for the ledger."""


@remote_group.command("setup")
@click.argument("name")
@click.argument("url", required=False)
@json_option
@click.pass_context
def setup_cmd(ctx: click.Context, name: str, url: str | None, as_json: bool) -> None:
    """Make plain 'git fetch NAME' / 'git push NAME' in the ledger carry the ledger refs.

    URL defaults to the project's remote NAME. The refspecs go into the ledger's own repository
    (a push refspec in the project's config would change what 'git push' sends for the code).
    Prints exactly what changed.
    """
    from .. import sync

    with errors(as_json):
        ledger = open_ledger(ctx)
        changed = sync.setup_remote(ledger, name, url)
    if as_json:
        print_json({"remote": name, "changed": changed, "ledger": str(ledger.path)})
        return
    if not changed:
        click.echo(f"Remote {name} of the ledger is already set up; nothing changed.")
        return
    click.echo(f"Changed in the ledger's config ({ledger.path / 'config'}):")
    for line in changed:
        click.echo(f"  {line}")
    click.echo(f'Now: git --git-dir "$(gitledger where)" fetch {name}   (and push {name})')


__all__ = [
    "backup_cmd",
    "remote_group",
    "restore_cmd",
    "setup_cmd",
    "sync_cmd",
]
