"""``gitledger demo``: a guided tour in a throw-away workspace.

Each step runs the real command (in-process, through click) and prints what a user would type and
what they would see. Parts built later (context, sync, fuse, judge, memory) add their steps when
their modules are present, so the tour always shows everything the installed gitledger can do.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import click


class Tour:
    def __init__(self, workspace: Path, ledger: Path, verbose: bool) -> None:
        self.workspace = workspace
        self.ledger = ledger
        self.verbose = verbose
        self.failures: list[str] = []

    def title(self, text: str) -> None:
        click.echo("")
        click.secho(f"== {text}", bold=True)

    def say(self, text: str) -> None:
        click.echo(text)

    def run(self, *args: str, expect: int = 0, show: bool = True) -> str:
        from click.testing import CliRunner

        from . import cli

        click.secho(f"$ gitledger {shlex.join(args)}", fg="cyan")
        result = CliRunner().invoke(
            cli, ["--ledger", str(self.ledger), *args], catch_exceptions=False
        )
        output = result.output
        if show and output.strip():
            click.echo(output.rstrip())
        if result.exit_code != expect:
            self.failures.append(f"gitledger {shlex.join(args)} exited {result.exit_code}")
            click.secho(f"(unexpected exit code {result.exit_code})", fg="red")
        elif expect:
            click.secho(f"(refused as it should be: exit {result.exit_code})", fg="yellow")
        return output

    def json(self, *args: str) -> dict:  # type: ignore[type-arg]
        out = self.run(*args, "--json", show=False)
        value = json.loads(out[out.index("{") :] if "{" in out else out)
        return value if isinstance(value, dict) else {}


def _core_tour(t: Tour) -> str:
    t.title("A task is a Git ref; every change is a commit")
    create_release = (
        "task",
        "create",
        "Ship the 1.0 release",
        "--criteria",
        "Tests pass and the release is tagged",
        "--next",
        "Write the changelog",
        "--label",
        "release",
        "--idempotency-key",
        "ship-1.0",
    )
    release = t.json(*create_release)
    rid = release["short_id"]
    t.say(f"Created task {rid} (full id {release['id']}).")
    again = t.json(*create_release)  # the same request again
    t.say(
        f"Repeating the request with the same idempotency key returns the same task: {again['short_id']}."
    )
    changelog = t.json(
        "task",
        "create",
        "Write the changelog",
        "--criteria",
        "CHANGELOG.md lists every change",
        "--parent",
        rid,
    )
    tests = t.json(
        "task",
        "create",
        "Make the test suite green",
        "--criteria",
        "CI passes on main",
        "--parent",
        rid,
    )
    t.run(
        "task",
        "update",
        rid,
        "--status",
        "active",
        "--dependency",
        changelog["short_id"],
        "--dependency",
        tests["short_id"],
        "--decision",
        "Release from main, not a branch: nothing else is in flight",
        "--expect-version",
        "1",
    )

    t.title("Gates keep the ledger honest")
    t.say("Done needs finished dependencies and evidence bound to the current criteria:")
    t.run("task", "update", rid, "--status", "done", "--evidence", "tagged v1.0", expect=1)
    t.say("A stale writer gets a version conflict (exit 3) instead of overwriting:")
    t.run("task", "update", rid, "--next", "Tag it", "--expect-version", "1", expect=3)
    for dep, proof in ((changelog, "CHANGELOG.md reviewed"), (tests, "CI run 4211 green")):
        t.run(
            "task", "update", dep["short_id"], "--status", "done", "--evidence", proof, show=False
        )
    t.say(
        "Both dependencies are done now. Evidence logged before the criteria changed does not count:"
    )
    t.run("task", "update", rid, "--evidence", "tests passed", show=False)
    t.run(
        "task",
        "update",
        rid,
        "--criteria",
        "Tests pass, the release is tagged and announced",
        "--decision",
        "The user asked for an announcement too",
        show=False,
    )
    t.run("task", "update", rid, "--status", "done", expect=1)
    t.run("task", "update", rid, "--note", "Announced on the mailing list", show=False)
    t.run(
        "task",
        "update",
        rid,
        "--status",
        "done",
        "--evidence",
        "v1.0 tagged, tests green, announcement sent",
    )

    t.title("History, review and integrity come from Git")
    t.run("task", "history", rid, "--limit", "3")
    t.run("task", "diff", rid, "1", "2")
    t.say(
        'Review it with plain Git:  git --git-dir "$(gitledger where)" log -p '
        f"refs/gitledger/tasks/{release['id']}"
    )
    t.say("Meanwhile, new work arrives; the inbox shows what needs attention:")
    t.run(
        "task",
        "create",
        "Plan the 1.1 release",
        "--criteria",
        "A dated plan is agreed",
        "--priority",
        "1",
        show=False,
    )
    t.run(
        "task",
        "create",
        "Fix the flaky upload test",
        "--criteria",
        "100 green runs in a row",
        show=False,
    )
    t.run("task", "inbox", "10")
    t.run("verify")
    return str(release["id"])


def _context_tour(t: Tour, task_id: str) -> None:
    t.title("A handoff for the next agent, under a budget")
    for budget in ("512", "1024", "2048"):
        t.run("task", "context", task_id, "--budget", budget)
    t.run("task", "context", task_id, "--budget", "300", "--unit", "tokens", show=False)
    t.say("(the same in cl100k_base tokens with --unit tokens)")
    t.run("prime", "--budget", "1200")


def _sync_tour(t: Tour, task_id: str) -> None:
    t.title("Backup and restore through any Git remote")
    backup = t.workspace / "backup.git"
    t.run("backup", str(backup))
    restored = t.workspace / "restored-ledger"
    from click.testing import CliRunner

    from . import cli

    click.secho(f"$ gitledger --ledger {restored.name} restore {backup.name}", fg="cyan")
    result = CliRunner().invoke(cli, ["--ledger", str(restored), "restore", str(backup)])
    click.echo(result.output.rstrip())
    if result.exit_code != 0:
        t.failures.append("restore into a fresh ledger failed")


def _fuse_tour(t: Tour) -> None:
    t.title("The compaction fuse (Claude Code's PreCompact / SessionStart hooks)")
    t.run("fuse", "demo")


def _memory_tour(t: Tour, task_id: str) -> None:
    t.title("Memory: individual facts, offered as hints")
    t.run(
        "remember",
        "Release builds need the signing key from the vault",
        "--kind",
        "constraint",
        "--tag",
        "release",
        "--importance",
        "4",
    )
    t.run(
        "remember",
        "The upload test is flaky under load; rerun before blaming a change",
        "--kind",
        "pitfall",
    )
    t.run("recall", "release", "signing")
    t.say("A handoff offers related facts after the task's own state, labelled as hints:")
    t.run("task", "context", task_id, "--budget", "1200")


TOURS: list[tuple[str, Callable[..., None]]] = [
    ("gitledger.context", _context_tour),
    ("gitledger.memory", _memory_tour),
    ("gitledger.sync", _sync_tour),
]


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@click.command("demo")
@click.option("--keep", is_flag=True, help="Keep the demo workspace and print where it is.")
@click.option("--verbose", is_flag=True, help="Show every command's full output.")
def demo_cmd(keep: bool, verbose: bool) -> None:
    """A tour of gitledger in a throw-away workspace: tasks, gates, history, handoffs, sync."""
    tmp = tempfile.mkdtemp(prefix="gitledger-demo-")
    workspace = Path(tmp)
    subprocess.run(["git", "init", "-q", str(workspace / "project")], check=False)
    ledger = workspace / "project" / ".git" / "gitledger"
    env_before = os.environ.get("GITLEDGER_ACTOR")
    os.environ["GITLEDGER_ACTOR"] = "demo-agent"
    tour = Tour(workspace, ledger, verbose)
    try:
        click.secho(
            "gitledger demo: every command below ran for real in " + str(workspace), bold=True
        )
        tour.run("init", str(workspace / "project"))
        task_id = _core_tour(tour)
        for module, step in TOURS:
            if _has(module):
                step(tour, task_id)
        if _has("gitledger.fuse") and _has("gitledger.cli.fuse"):
            _fuse_tour(tour)
    finally:
        if env_before is None:
            os.environ.pop("GITLEDGER_ACTOR", None)
        else:
            os.environ["GITLEDGER_ACTOR"] = env_before
        if not keep:
            import shutil

            shutil.rmtree(workspace, ignore_errors=True)
    click.echo("")
    if tour.failures:
        click.secho("The tour hit problems:", fg="red")
        for failure in tour.failures:
            click.echo(f"  - {failure}")
        raise SystemExit(1)
    click.secho("Tour complete: every step behaved as described.", fg="green", bold=True)
    if keep:
        click.echo(f"Workspace kept at {workspace}")
