"""``gitledger fuse``: save a session's task line before compaction and restore it after.

As hooks (``--hook``, or ``save`` with no ``--transcript``) the commands read the agent's JSON
payload on stdin and never break the agent: whatever goes wrong, they exit 0 and say so in one
line on stderr.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from .. import agents
from ..text import one_line, plural
from ._common import (
    actor_of,
    agent_option,
    errors,
    json_option,
    open_ledger,
    print_json,
    write_option,
)
from .fuse_hooks import restore_hook, save_hook, summary_hook

AGENTS = agents.with_hooks()  # the --agent names of fuse setup: the registry's


# --hook of fuse save, fuse summary and fuse restore: one wording for the three hooks.
_hook_option = click.option(
    "--hook", is_flag=True, help="Read the hook payload on stdin and never fail the agent."
)


def _payload(use_stdin: bool, wait: float = 5.0) -> dict[str, Any]:
    """The hook payload on stdin (bounded in size and time: see gitledger.hooks)."""
    from ..hooks import read_payload

    return read_payload(wait=wait) if use_stdin else {}


def _who(ctx: click.Context) -> dict[str, str | None]:
    """The global options a hook's ledger is opened with: --ledger, --actor, --agent."""
    obj = ctx.find_root().obj or {}
    return {
        "ledger_path": str(obj["ledger_path"]) if obj.get("ledger_path") else None,
        "actor": actor_of(ctx),
        "agent": str(obj["agent"]) if obj.get("agent") else None,
    }


@click.group("fuse")
def fuse_group() -> None:
    """Keep a session's task line across compaction (Claude Code, Codex, Gemini CLI).

    Before the agent compacts, 'fuse save' commits a snapshot of the transcript's task line (goal,
    open items, constraints, decisions, pitfalls, sub-agent results, recent requests, where it
    left off, files) to refs/gitledger/fuse/<session>; after, 'fuse restore' puts it back under a
    byte budget. 'fuse setup --write' installs both as hooks.
    """


@fuse_group.command("save")
@click.option(
    "--transcript", type=click.Path(dir_okay=False, path_type=Path), help="Transcript file (JSONL)."
)
@click.option(
    "--session", help="Session id (default: the hook payload's session_id, or the file name)."
)
@click.option(
    "--trigger", help="Why it was saved: auto, manual … (default: the payload's, else manual)."
)
@_hook_option
@json_option
@click.pass_context
def save_cmd(
    ctx: click.Context,
    transcript: Path | None,
    session: str | None,
    trigger: str | None,
    hook: bool,
    as_json: bool,
) -> None:
    """Snapshot a transcript's task line and commit it (the PreCompact hook).

    By hand: gitledger fuse save --transcript PATH --session ID. As a hook it reads
    {session_id, transcript_path, cwd, trigger} on stdin.
    """
    from .. import fuse
    from ..errors import NotFound
    from ..hooks import never_fail

    hook = hook or transcript is None
    if hook:
        with never_fail("fuse save", "nothing saved"):
            save_hook(_who(ctx), transcript, session, trigger, as_json)
        return
    assert transcript is not None
    path = transcript
    session = session or path.stem
    trigger = trigger or "manual"
    with errors(as_json):
        assert path is not None
        try:
            found = path.is_file()
        except (OSError, ValueError):  # e.g. a name too long for the file system
            found = False
        if not found:
            raise NotFound(f"Transcript {path} not found. Pass the JSONL file of the session.")
        ledger = open_ledger(ctx, create=True)
        saved = fuse.save(ledger, str(session), path, trigger=str(trigger), actor=actor_of(ctx))
    if as_json:
        print_json(saved.to_dict())
        return
    snap = saved.snapshot
    click.echo(
        f"Saved {saved.commit[:12]} on refs/gitledger/fuse/{saved.session}: "
        f"{plural(len(snap.open_items), 'open item')}, {plural(len(snap.constraints), 'constraint')}, "
        f"{plural(len(snap.decisions), 'decision')}, {plural(len(snap.files_edited), 'file')} "
        f"({plural(snap.stats.get('events', 0), 'event')}, "
        f"{plural(snap.stats.get('skipped', 0), 'line')} skipped)."
    )
    click.echo(f"Restore it: gitledger fuse restore --session {saved.session} --plain")


@fuse_group.command("summary")
@click.option("--session", help="Session id (default: the hook payload's session_id).")
@click.option(
    "--summary-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The summary the agent wrote (default: the payload's compact_summary).",
)
@_hook_option
@json_option
@click.pass_context
def summary_cmd(
    ctx: click.Context,
    session: str | None,
    summary_file: Path | None,
    hook: bool,
    as_json: bool,
) -> None:
    """Record the summary the agent wrote at a compaction (the PostCompact hook).

    The summary is committed beside the snapshot saved before the compaction, and the next
    restore puts back only what it does not already say. As a hook it reads {session_id,
    compact_summary, trigger} on stdin; by hand: --session ID --summary-file PATH.
    """
    from .. import fuse
    from ..errors import InvalidInput, NotFound
    from ..hooks import never_fail

    if hook or summary_file is None:
        with never_fail("fuse summary", "nothing recorded"):
            summary_hook(_who(ctx), session)
        return
    with errors(as_json):
        if not session:
            raise InvalidInput("Name the session: --session ID.")
        fuse.check_session(session)
        try:
            summary = summary_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"Cannot read {summary_file} ({exc}); nothing recorded.") from exc
        ledger = open_ledger(ctx)
        saved = fuse.record_summary(ledger, session, summary, actor=actor_of(ctx))
        if saved is None:
            raise NotFound(
                f"No fuse snapshot for session {session} (or an empty summary); nothing recorded."
            )
    if as_json:
        print_json({"session": session, "commit": saved.commit, "bytes": len(summary.encode())})
    else:
        click.echo(f"Recorded the summary on {saved.commit[:12]} (refs/gitledger/fuse/{session}).")


@fuse_group.command("restore")
@click.option("--session", help="Session id (default: the hook payload's, else the newest saved).")
@click.option("--task", "task_id", help="Restore the newest session linked to this task.")
@click.option(
    "--budget",
    type=int,
    default=None,
    help="Bytes of text, 300 to 9,500 (default 6,000, or 9,500 beside a recorded summary that "
    "lost the session; Claude Code caps hook context at 10,000).",
)
@click.option("--plain", is_flag=True, help="Print the text instead of the hook's JSON.")
@_hook_option
@json_option
@click.pass_context
def restore_cmd(
    ctx: click.Context,
    session: str | None,
    task_id: str | None,
    budget: int | None,
    plain: bool,
    hook: bool,
    as_json: bool,
) -> None:
    """Print a saved task line (the SessionStart hook, source compact or resume).

    Prints {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": …}};
    --plain prints the text alone.
    """
    from .. import fuse

    payload: dict[str, Any] = {}
    if session and task_id:
        raise click.UsageError("Give --session or --task, not both.")
    if hook or (session is None and task_id is None):
        # Run by a hook without --hook (the plugin does): a payload on stdin makes it a hook run.
        payload = _payload(True, wait=5.0 if hook else 1.0)
        hook = hook or bool(payload.get("session_id"))
    if hook:
        from ..hooks import never_fail

        with never_fail("fuse restore", "nothing restored"):
            restore_hook(_who(ctx), payload, session, budget, plain)
        return
    with errors(as_json):
        if budget is not None:
            fuse.check_budget(budget)
        if session is not None:
            fuse.check_session(session)
        ledger = open_ledger(ctx)
        if task_id is not None:
            from ..errors import NotFound
            from ..handoff import latest_session_for

            full = ledger.resolve(task_id)
            session = latest_session_for(ledger, full)
            if session is None:
                raise NotFound(
                    f"No fuse snapshot is linked to task {full[:8]}. Link one with 'gitledger "
                    f"fuse link {full[:8]} --session ID', or list sessions with 'fuse status'."
                )
        text, saved = fuse.restore_text(ledger, session, budget, interface="cli")
    if as_json:
        print_json(
            {
                "session": saved.session,
                "commit": saved.commit,
                "budget": budget or fuse.default_budget(saved.snapshot, saved.summary),
                "bytes": len(text.encode()),
                "text": text,
            }
        )
    elif plain:
        click.echo(text)
    else:
        click.echo(fuse.session_start_output(text))


@fuse_group.command("setup")
@agent_option(AGENTS, "Whose settings to change.")
@click.option(
    "--project", is_flag=True, help="This project's settings instead of your user settings."
)
@write_option
@click.option("--uninstall", is_flag=True, help="Remove the fuse's hooks, and nothing else.")
@click.option(
    "--settings",
    "settings_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The settings file to change (default: the agent's own).",
)
@json_option
def setup_cmd(
    agent: str,
    project: bool,
    write: bool,
    uninstall: bool,
    settings_file: Path | None,
    as_json: bool,
) -> None:
    """Install the fuse as hooks: PreCompact saves, SessionStart (compact, resume) restores.

    Shows the merged settings as a diff and writes nothing without --write. Every other hook and
    setting is kept; running it twice changes nothing; the old file is kept as <file>.bak.
    """
    from ..agents import settings

    with errors(as_json):
        plan = settings.setup_plan(
            agent, project=Path.cwd() if project else None, uninstall=uninstall, path=settings_file
        )
        backup = settings.apply_setup(plan) if write else None
    if as_json:
        print_json(
            {
                **plan.to_dict(),
                "written": bool(write and plan.changed),
                "backup": str(backup) if backup else None,
            }
        )
        return
    if not plan.changed:
        state = "not installed" if uninstall else "already installed"
        click.echo(f"Nothing to change: the fuse hooks are {state} in {plan.path}.")
        return
    click.echo(plan.diff(), nl=False)
    if write:
        click.echo(f"Wrote {plan.path}" + (f" (the old file is {backup})." if backup else "."))
    else:
        click.echo("Nothing written. Run again with --write to apply this change.")


@fuse_group.command("status")
@click.option("--session", help="One session's saves (default: every session, newest first).")
@click.option("--limit", type=int, default=20, show_default=True, help="Rows to show.")
@json_option
@click.pass_context
def status_cmd(ctx: click.Context, session: str | None, limit: int, as_json: bool) -> None:
    """List saved snapshots and their sizes."""
    from .. import fuse
    from ..errors import CorruptRecord

    with errors(as_json):
        ledger = open_ledger(ctx)
        if session:
            saves = fuse.history(ledger, session, limit=limit)
            rows: list[dict[str, Any]] = [
                {
                    "session": s.session,
                    "commit": s.commit,
                    "trigger": s.trigger,
                    "time": s.time,
                    "bytes": s.bytes,
                    "restore_bytes": len(s.text.encode()),
                    "goal": s.snapshot.goal,
                    "task": s.snapshot.task_id,
                }
                for s in saves
            ]
        else:
            rows = []
            for name, _tip in fuse.sessions(ledger)[:limit]:
                try:
                    saved = fuse.load(ledger, name)
                except CorruptRecord as exc:  # one bad record (from a sync) hides no other
                    from ..hooks import note

                    note("fuse status", f"{exc} Skipped; its next save starts afresh.")
                    continue
                if saved is None:
                    continue
                rows.append(
                    {
                        "session": name,
                        "commit": saved.commit,
                        "trigger": saved.trigger,
                        "time": saved.time,
                        "bytes": saved.bytes,
                        "restore_bytes": len(saved.text.encode()),
                        "goal": saved.snapshot.goal,
                        "task": saved.snapshot.task_id,
                    }
                )
    if as_json:
        print_json(rows)
        return
    if not rows:
        click.echo("No fuse snapshots yet. Install the hooks with 'gitledger fuse setup --write'.")
        return
    for row in rows:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(row["time"]))
        task = (row["task"] or "-")[:8]  # which ledger task the session works on (fuse link)
        click.echo(
            f"{row['commit'][:10]}  {when}  {one_line(row['session'], 36):36}  {task:8}  "
            f"{row['trigger'] or '-':7} {row['bytes']:>7} B  {one_line(row['goal'], 50)}"
        )


@fuse_group.command("link")
@click.argument("task")
@click.option(
    "--session",
    envvar="GITLEDGER_SESSION",
    required=True,
    help="The session to tie (env GITLEDGER_SESSION).",
)
@json_option
@click.pass_context
def link_cmd(ctx: click.Context, task: str, session: str, as_json: bool) -> None:
    """Tie a session to a ledger task: its restores include the task's required state."""
    from .. import fuse

    with errors(as_json):
        fuse.check_session(session)
        ledger = open_ledger(ctx)
        saved = fuse.link(ledger, session, task, actor=actor_of(ctx))
    if as_json:
        print_json({"session": session, "task": saved.link, "commit": saved.commit})
    else:
        click.echo(f"Session {session} now works on task {saved.link}.")


@fuse_group.command("demo")
@click.option(
    "--keep", type=click.Path(file_okay=False, path_type=Path), help="Keep the files here."
)
@json_option
def demo_cmd(keep: Path | None, as_json: bool) -> None:
    """Reproduce the fuse offline on a generated session with 14 probe facts.

    Writes a synthetic Claude Code session (~185 KB, ~95 messages) in which each probe fact appears
    once, saves it into a throwaway ledger, restores it at 600 to 9,500 bytes and counts the probe
    facts each restore still carries.
    """
    import tempfile

    from ..fuse import run_demo

    with errors(as_json):
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            result = run_demo(keep)
        else:
            with tempfile.TemporaryDirectory(prefix="gitledger-fuse-demo-") as tmp:
                result = run_demo(Path(tmp))
    if as_json:
        print_json(result)
        return
    click.echo(
        f"Synthetic session: {result['transcript_bytes'] / 1000:.0f} KB, {result['messages']} "
        f"messages, {result['probes']} probe facts. Save: {result['save_ms']:.0f} ms."
    )
    click.echo(f"{'budget':>7}  {'bytes':>6}  {'probes kept':>11}  {'render ms':>9}  missing")
    for row in result["budgets"]:
        click.echo(
            f"{row['budget']:>7}  {row['bytes']:>6}  {row['kept']:>8}/{result['probes']}  "
            f"{row['render_ms']:>9.1f}  {', '.join(row['missing']) or '-'}"
        )
    if keep is not None:
        click.echo(f"Files kept in {keep}")


__all__ = [
    "AGENTS",
    "demo_cmd",
    "fuse_group",
    "link_cmd",
    "restore_cmd",
    "save_cmd",
    "setup_cmd",
    "status_cmd",
    "summary_cmd",
]
