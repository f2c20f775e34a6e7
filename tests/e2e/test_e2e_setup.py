"""``gitledger setup`` inside the real Claude Code, against the stand-in model.

One machine: after ``gitledger setup --write`` and no other step, a new session's first model
request carries the ledger's tasks (the SessionStart hook primes every source), and a compaction
keeps the scripted facts (the fuse hooks). Two machines: two HOMEs and two ledgers sharing one
bare origin, each set up once with ``--sync``; a task created on A reaches the first request of
a fresh session on B with no command typed in between.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import e2e_fixtures
import pytest
import scenario
from claude_harness import ClaudeSession, gitledger, missing
from standin import Reply, StandIn, text, tool_use

pytestmark = pytest.mark.e2e

claude_bin = e2e_fixtures.claude_bin
standin = e2e_fixtures.standin


def machine(claude_bin: Path, standin: StandIn, root: Path) -> ClaudeSession:
    session = ClaudeSession(
        claude=claude_bin,
        standin=standin,
        root=root,
        extra_env={"GITLEDGER_DIR": str(root / "ledger")},
    )
    subprocess.run(["git", "init", "-q", str(session.project)], check=True)
    assert gitledger(session, "init").returncode == 0
    return session


@pytest.fixture
def pair(
    claude_bin: Path, standin: StandIn, tmp_path: Path
) -> tuple[ClaudeSession, ClaudeSession, Path]:
    """Machines A and B (two HOMEs, two ledgers) sharing one bare origin, each set up once with
    ``gitledger setup --sync ORIGIN --write``; and the origin."""
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    a = machine(claude_bin, standin, tmp_path / "a")
    b = machine(claude_bin, standin, tmp_path / "b")
    for side in (a, b):
        done = gitledger(side, "setup", "--sync", str(origin), "--write")
        assert done.returncode == 0, done.stdout + done.stderr
    return a, b, origin


def test_setup_write_alone_primes_every_session_and_keeps_facts_across_compaction(
    claude_bin: Path, standin: StandIn, tmp_path: Path
) -> None:
    session = machine(claude_bin, standin, tmp_path / "one")
    goal = "Migrate the billing exports to UTF-8"
    assert gitledger(session, "task", "create", goal).returncode == 0
    done = gitledger(session, "setup", "--write")
    assert done.returncode == 0, done.stdout + done.stderr
    settings = json.loads((session.home / ".claude" / "settings.json").read_text())
    assert {"PreCompact", "PostCompact", "SessionStart"} <= set(settings["hooks"])
    session.standin.script(Reply([text("Hello.")]))
    session.run("What should I work on?")
    first = session.standin.of_kind("main")[0]
    assert goal in first.messages_text()
    startup = [r for r in session.hook_runs() if r.get("hookName") == "SessionStart:startup"]
    assert startup and all(r["exitCode"] == 0 for r in startup), startup
    session.session_id = None  # the scripted session is a new one, its goal its own
    scenario.play(session)
    session.compact()
    mark = session.standin.mark()
    session.standin.script(Reply([text("Carrying on.")]))
    session.run("Where were we?")
    after = session.standin.since(mark, "main")[0]
    assert missing(scenario.PROBES.values(), after.messages_text()) == []


def test_a_task_from_machine_a_reaches_a_fresh_session_on_machine_b(
    pair: tuple[ClaudeSession, ClaudeSession, Path],
) -> None:
    a, b, origin = pair
    goal = "Ship the CSV export for invoices"
    assert gitledger(a, "task", "create", goal).returncode == 0
    a.standin.script(Reply([text("Noted.")]))
    a.run("Note the CSV export task.")  # its SessionEnd hook pushes
    mark = b.standin.mark()
    b.standin.script(Reply([text("Hello.")]))
    b.run("What should I work on?")  # its SessionStart hook fetches, then primes
    first = b.standin.since(mark, "main")[0]
    assert goal in first.messages_text()


def test_a_session_on_a_compacts_and_stops_and_b_resumes_its_task_line(
    pair: tuple[ClaudeSession, ClaudeSession, Path],
) -> None:
    """Issue 20's handoff: on A a session works on a claimed task, compacts (the PreCompact hook
    saves and pushes) and stops; a fresh session on B, after the same one-time setup and no other
    command, gets that task line in its first model request (prime --hook, source startup)."""
    a, b, origin = pair
    created = gitledger(a, "task", "create", "Billing: CSV export for invoices", "--json")
    task_id = json.loads(created.stdout)["id"]
    claimed = gitledger(a, "task", "claim", task_id, "--push", str(origin))
    assert claimed.returncode == 0, claimed.stderr
    scenario.play(a)
    assert a.session_id
    # Nobody links the session to the task: the save goes with this person's active task.
    a.compact()  # PreCompact saves the snapshot and pushes; then A stops
    mark = b.standin.mark()
    b.standin.script(Reply([text("Hello.")]))
    b.run("Hi")
    first = b.standin.since(mark, "main")[0].messages_text()
    assert f"You most likely resume task {task_id}" in first
    # the snapshot's facts, not only the task's goal
    assert missing([scenario.PROBES["constraint"], scenario.PROBES["decision"]], first) == []


def test_mcp_and_bash_inside_a_session_claim_as_the_session_its_hooks_name(
    claude_bin: Path, standin: StandIn, tmp_path: Path
) -> None:
    """Claude Code (checked on 2.1.332) gives its stdio MCP servers and its Bash tool's commands
    CLAUDE_CODE_SESSION_ID, the session_id its hooks get: a claim made over MCP and one made by
    `gitledger task claim` in Bash both name the session, as a hook's writes do."""
    session = machine(claude_bin, standin, tmp_path / "one")
    ids = []
    for goal in ("Claimed over MCP", "Claimed from Bash"):
        made = gitledger(session, "task", "create", goal, "--json")
        assert made.returncode == 0, made.stderr
        ids.append(json.loads(made.stdout)["id"])
    done = gitledger(session, "setup", "--write")
    assert done.returncode == 0, done.stdout + done.stderr
    path = session.home / ".claude" / "settings.json"
    settings = json.loads(path.read_text())
    settings.setdefault("permissions", {})["allow"] = ["mcp__gitledger__task_claim"]
    path.write_text(json.dumps(settings, indent=2))
    session.standin.script(
        Reply([tool_use("mcp__gitledger__task_claim", {"id": ids[0]})]),
        Reply([tool_use("Bash", {"command": f"gitledger task claim {ids[1]}"})]),
        Reply([text("Both claimed.")]),
    )
    result = session.run("Claim both tasks.")
    for task_id in ids:
        shown = gitledger(session, "task", "show", task_id, "--json")
        assert shown.returncode == 0, shown.stderr
        # on failure, what the tools answered the model (a claim refused, a tool not connected)
        seen = session.standin.of_kind("main")[-1].messages_text()[-3000:]
        assert json.loads(shown.stdout)["agent"] == result["session_id"], (shown.stdout, seen)
