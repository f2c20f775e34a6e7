"""``gitledger demo``: a short tour in a throw-away workspace, every command run for real.

Each step runs the real command (in-process, through click) in a new Git project with its own
ledger, and prints what a user would type there and what they would see (long outputs are cut to
a few lines unless ``--verbose``). A step whose exit code is not the one the tour says fails the
tour. The workspace is deleted at the end unless ``--keep``; with ``--json`` nothing but one JSON
summary is printed.

What it shows, in order: tasks and their gates, the history from Git, search and a graph, a
handoff under three budgets, memory, sync between two ledgers through a bare repository, the
boundary judge on a small session it writes, and the fuse saving and restoring a long one.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from ..text import plural

SHOWN_LINES = 8

# A small session in plain JSONL (the format any agent's log converts to): two pieces of work,
# the first finished and the second started in the last step, which the judge should call NEXT.
JUDGE_SESSION: list[dict[str, Any]] = [
    {
        "role": "user",
        "content": "Fix issue 3 (the login redirect drops next=), then issue 4 (the CSV export "
        "times out).",
    },
    {
        "role": "assistant",
        "content": "Starting with issue 3: the redirect drops the next= parameter.",
        "tool_calls": [
            {
                "id": "c1",
                "function": {
                    "name": "Edit",
                    "arguments": {
                        "file_path": "app/login.py",
                        "old_string": "a",
                        "new_string": "b",
                    },
                },
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "The file app/login.py has been updated."},
    {
        "role": "assistant",
        "content": "Running the login tests.",
        "tool_calls": [
            {"id": "c2", "function": {"name": "Bash", "arguments": {"command": "pytest -q"}}}
        ],
    },
    {"role": "tool", "tool_call_id": "c2", "content": "12 passed in 0.8s"},
    {
        "role": "assistant",
        "content": "Issue 3 is done: the redirect keeps next= and the login tests pass. Now issue "
        "4: the CSV export.",
        "tool_calls": [
            {"id": "c3", "function": {"name": "Read", "arguments": {"file_path": "app/export.py"}}}
        ],
    },
]


@dataclass
class Step:
    section: str
    command: str
    exit_code: int
    expected: int
    output: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "section": self.section,
            "command": self.command,
            "exit_code": self.exit_code,
            "expected": self.expected,
            "ok": self.exit_code == self.expected,
        }


@dataclass
class Tour:
    workspace: Path
    ledger: Path
    verbose: bool = False
    quiet: bool = False  # --json: no narration, no command output
    section: str = ""
    steps: list[Step] = field(default_factory=list)

    @property
    def failures(self) -> list[str]:
        return [
            f"gitledger {s.command} exited {s.exit_code}, expected {s.expected}"
            for s in self.steps
            if s.exit_code != s.expected
        ]

    def title(self, text: str) -> None:
        self.section = text
        if not self.quiet:
            click.echo("")
            click.secho(f"== {text}", bold=True)

    def say(self, text: str) -> None:
        if not self.quiet:
            click.echo(text)

    def run(
        self, *args: str, expect: int = 0, ledger: Path | None = None, full: int | None = None
    ) -> str:
        """Run ``gitledger ARGS`` as typed in the project; ``ledger`` names another ledger.

        ``full`` is how many lines of its output to show (0: all; default ``SHOWN_LINES``).
        """
        from click.testing import CliRunner

        from . import cli

        shown = shlex.join(args)
        if ledger is not None:
            shown = f"--ledger {ledger.name} {shown}"
        result = CliRunner().invoke(
            cli, ["--ledger", str(ledger or self.ledger), *args], catch_exceptions=False
        )
        output = result.output
        self.steps.append(Step(self.section, shown, result.exit_code, expect, output))
        if self.quiet:
            return output
        click.secho(f"$ gitledger {shown}", fg="cyan")
        lines = output.rstrip().splitlines()
        limit = SHOWN_LINES if full is None else full
        if not self.verbose and limit and len(lines) > limit:
            # The first lines and the last (a handoff's "omitted:" line, a summary), cut between.
            hidden = len(lines) - limit
            lines = [
                *lines[: limit - 1],
                f"  … {plural(hidden, 'line')} not shown (--verbose)",
                lines[-1],
            ]
        if lines:
            click.echo("\n".join(lines))
        if result.exit_code != expect:
            click.secho(f"(unexpected exit code {result.exit_code})", fg="red")
        elif expect:
            click.secho(f"(refused as it should be: exit {result.exit_code})", fg="yellow")
        return output


def _first_word(output: str) -> str:
    return output.split()[0] if output.split() else ""


def _tasks(t: Tour) -> str:
    t.title("A task is a Git ref; every change is a commit")
    rid = _first_word(
        t.run(
            "task",
            "create",
            "Ship the 1.0 release",
            "--criteria",
            "Tests pass and the release is tagged",
            "--next",
            "Write the changelog",
            "--label",
            "release",
        )
    )
    changelog = _first_word(
        t.run(
            "task",
            "create",
            "Write the changelog",
            "--criteria",
            "Lists every change",
            "--parent",
            rid,
        )
    )
    t.run(
        "task",
        "update",
        rid,
        "--status",
        "active",
        "--dependency",
        changelog,
        "--decision",
        "Release from main, not a branch: nothing else is in flight",
        "--note",
        "CI is slow today: about 20 minutes a run",
        "--note",
        "The 0.9 users asked for a migration guide; it can follow the release by a week",
        "--note",
        "Windows wheels build on the nightly runner only; check its last run before tagging",
        "--note",
        "Marketing wants the announcement on a Tuesday; the tag can go out any day before",
        "--expect-version",
        "1",
    )

    t.title("Gates keep the ledger honest")
    t.say("Done needs every dependency done and evidence for the current criteria:")
    t.run("task", "update", rid, "--status", "done", "--evidence", "v1.0 tagged", expect=1)
    t.say("A writer that read version 1 gets a version conflict (exit 3) and writes nothing:")
    t.run("task", "update", rid, "--next", "Tag it", "--expect-version", "1", expect=3)
    t.run("task", "update", changelog, "--status", "done", "--evidence", "CHANGELOG.md reviewed")
    t.run(
        "task",
        "update",
        rid,
        "--decision",
        "Tag only after the changelog is merged, so the tag names a reviewed tree",
        "--note",
        "The release notes reuse the changelog's summary",
        "--evidence",
        "CI run 4211 green on main",
        "--note",
        "The signing key for the tag lives in the team vault; ask ops for access a day ahead",
        "--note",
        "Two downstream packages pin the 0.9 API; their maintainers were told on Monday",
    )
    return rid


def _history(t: Tour, rid: str) -> None:
    t.title("History and review come from Git")
    t.run("task", "history", rid)
    t.run("log", rid, "-p", "-n", "1")


def _search(t: Tour, rid: str) -> None:
    t.title("Search, queues and graphs")
    for goal, criteria in (
        ("Plan the 1.1 release", "A dated plan is agreed"),
        ("Fix the flaky upload test", "100 green runs in a row"),
    ):
        t.run("task", "create", goal, "--criteria", criteria, "--label", "backlog")
    t.run("task", "search", "release")
    t.run("task", "ready")
    t.run("graph", rid, "--format", "mermaid")


def _handoff(t: Tour, rid: str) -> None:
    t.title("A handoff for the next agent, under a budget")
    t.say("The same task at 1,024 and 2,048 bytes; the last line says what did not fit:")
    t.run("task", "context", rid, "1024", full=0)
    t.run("task", "context", rid, "2048", full=0)
    t.say("And in cl100k_base tokens:")
    t.run("task", "context", rid, "--budget", "300", "--unit", "tokens")
    t.run("prime", "--budget", "800")


def _memory(t: Tour) -> None:
    t.title("Memory: individual facts, offered as hints")
    t.run("remember", "Deploys need the VPN", "--kind", "constraint", "--tag", "ops")
    t.run("recall", "deploy")


def _sync(t: Tour, rid: str) -> None:
    t.title("Sync: two ledgers through a bare Git repository")
    remote = t.workspace / "team.git"
    laptop = t.workspace / "laptop-ledger"
    t.say(f"{remote.name} stands in for any Git server; {laptop.name} for a second machine.")
    t.run("backup", str(remote))
    t.run("restore", str(remote), ledger=laptop)
    t.run("task", "update", rid, "--note", "Tagged from the laptop", ledger=laptop)
    t.run("sync", str(remote), ledger=laptop)
    t.run("sync", str(remote))
    t.run("task", "update", rid, "--status", "done", "--next", "", "--evidence", "v1.0 tagged")
    t.run("task", "show", rid)


def _judge(t: Tour) -> None:
    t.title("When to compact: the boundary judge")
    session = t.workspace / "project" / "two-issues.jsonl"
    session.write_text("".join(json.dumps(line) + "\n" for line in JUDGE_SESSION))
    t.say(f"{session.name}: a six-line session in plain JSONL; its last step finishes issue 3.")
    t.run("judge", "step", "--transcript", str(session), "--floor", "0")


def _fuse(t: Tour) -> None:
    from ..transcripts.synthetic import write_demo_session

    t.title("The compaction fuse: save a session's task line, restore it after compaction")
    session = t.workspace / "project" / "long-session.jsonl"
    write_demo_session(session)
    size = session.stat().st_size
    t.say(f"{session.name}: a synthetic Claude Code session of {size:,} bytes.")
    t.run("fuse", "save", "--transcript", str(session), "--session", "demo")
    t.run("fuse", "restore", "--session", "demo", "--plain", "--budget", "1500")


@click.command("demo")
@click.option("--keep", is_flag=True, help="Keep the demo workspace and print where it is.")
@click.option("--verbose", is_flag=True, help="Show every command's full output.")
@click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON summary of the steps instead."
)
def demo_cmd(keep: bool, verbose: bool, as_json: bool) -> None:
    """A short tour of every part, run for real in a throw-away workspace it deletes after.

    Tasks and gates, history, search and a graph, handoffs, memory, sync through a bare
    repository, the boundary judge and the fuse. Exits 1 if any step behaves otherwise than the
    tour says.
    """
    workspace = Path(tempfile.mkdtemp(prefix="gitledger-demo-"))
    project = workspace / "project"
    subprocess.run(["git", "init", "-q", str(project)], check=False, capture_output=True)
    tour = Tour(workspace, project / ".git" / "gitledger", verbose=verbose, quiet=as_json)
    env_before = os.environ.get("GITLEDGER_ACTOR")
    os.environ["GITLEDGER_ACTOR"] = "demo-agent"
    try:
        if not as_json:
            click.secho(
                f"gitledger demo: each command below runs for real in {project} "
                "(its ledger is .git/gitledger there).",
                bold=True,
            )
        tour.run("init", str(project))
        rid = _tasks(tour)
        _history(tour, rid)
        _search(tour, rid)
        _handoff(tour, rid)
        _memory(tour)
        _sync(tour, rid)
        _judge(tour)
        _fuse(tour)
        tour.title("Every object re-hashed, every record validated")
        tour.run("verify")
    finally:
        if env_before is None:
            os.environ.pop("GITLEDGER_ACTOR", None)
        else:
            os.environ["GITLEDGER_ACTOR"] = env_before
        if not keep:
            shutil.rmtree(workspace, ignore_errors=True)
    failures = tour.failures
    if as_json:
        summary = {
            "ok": not failures,
            "workspace": str(workspace) if keep else None,
            "steps": [s.to_dict() for s in tour.steps],
            "failures": failures,
        }
        click.echo(json.dumps(summary, indent=2))
    else:
        click.echo("")
        if failures:
            click.secho("The tour hit problems:", fg="red")
            for failure in failures:
                click.echo(f"  - {failure}")
        else:
            click.secho(
                f"Tour complete: {len(tour.steps)} commands, each behaved as described.",
                fg="green",
                bold=True,
            )
        if keep:
            click.echo(f"Workspace kept at {workspace} (cd {project} to look around).")
        else:
            click.echo("The workspace is deleted; 'gitledger demo --keep' keeps it to look around.")
    if failures:
        raise SystemExit(1)


__all__ = [
    "JUDGE_SESSION",
    "SHOWN_LINES",
    "Step",
    "Tour",
    "demo_cmd",
]
