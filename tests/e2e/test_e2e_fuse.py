"""The compaction fuse inside the real Claude Code, against a stand-in that summarises badly.

Each test plays the same scripted session (scenario.py: a goal, a todo list, a constraint, a file
written, a decision with its reason), compacts it, and reads the first model request after the
compaction, which is exactly what the model would see. The stand-in's summary is one thin
sentence, so a fact in that request got there through the fuse or through what Claude Code
itself keeps (the last messages, re-read files), and the baseline run shows which is which.

gitledger is found on PATH, as after ``pipx install git-ledger``: a ``gitledger`` shim on the
session's PATH runs this checkout with the test's own Python.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import e2e_fixtures
import pytest
import scenario
from claude_harness import ClaudeSession, gitledger, install_plugin, missing
from standin import Reply, Request, text, tool_use

pytestmark = pytest.mark.e2e

# The shared fixtures, by name (see e2e_fixtures.py for why they are not in a conftest.py).
claude_bin = e2e_fixtures.claude_bin
standin = e2e_fixtures.standin
session = e2e_fixtures.session


def first_request_after_compaction(session: ClaudeSession) -> Request:
    """Compact, then send one prompt; return the model request that prompt produced."""
    session.compact()
    mark = session.standin.mark()
    session.standin.script(Reply([text("Continuing.")]))
    session.run("Continue.")
    return session.standin.since(mark, "main")[0]


def fuse_refs(session: ClaudeSession) -> list[str]:
    ledger = os.environ["GITLEDGER_DIR"]
    done = subprocess.run(
        ["git", "--git-dir", ledger, "for-each-ref", "--format=%(refname)", "refs/gitledger/fuse/"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


def test_probes_are_not_in_claude_codes_own_prompt(session: ClaudeSession) -> None:
    """A probe found after compaction cannot have come from Claude Code's system prompt."""
    session.standin.script(Reply([text("Hello.")]))
    session.run("Say hello")
    first = session.standin.of_kind("main")[0]
    assert missing(scenario.PROBES.values(), first.text()) == list(scenario.PROBES.values())


def test_manual_compact_keeps_every_fact_with_the_fuse_and_loses_them_without(
    claude_bin: Path, tmp_path: Path, session: ClaudeSession
) -> None:
    # Without the fuse: the same session, no hooks.
    bare = ClaudeSession(claude=claude_bin, standin=session.standin, root=tmp_path / "bare")
    scenario.play(bare)
    without = first_request_after_compaction(bare)
    lost = {fact for fact, probe in scenario.PROBES.items() if missing([probe], without.text())}
    assert lost == set(scenario.PROBES) - scenario.KEPT_WITHOUT_FUSE, lost

    # With the fuse, installed as the plugin.
    install_plugin(session)
    scenario.play(session)
    with_fuse = first_request_after_compaction(session)
    assert missing(scenario.PROBES.values(), with_fuse.messages_text()) == []
    assert f"refs/gitledger/fuse/{session.session_id}" in fuse_refs(session)


def test_fuse_setup_write_is_the_other_way_in(session: ClaudeSession) -> None:
    done = gitledger(session, "fuse", "setup", "--write")
    assert done.returncode == 0, done.stdout + done.stderr
    settings = json.loads((session.home / ".claude" / "settings.json").read_text())
    assert "PreCompact" in settings["hooks"] and "SessionStart" in settings["hooks"]
    scenario.play(session)
    after = first_request_after_compaction(session)
    assert missing(scenario.PROBES.values(), after.messages_text()) == []
    assert f"refs/gitledger/fuse/{session.session_id}" in fuse_refs(session)


def test_automatic_compaction_keeps_every_fact(session: ClaudeSession) -> None:
    install_plugin(session)
    scenario.play(session)
    mark = session.standin.mark()
    notes = session.project / "CHANGELOG.md"
    session.standin.script(
        # Usage near the context window: Claude Code compacts by itself before it sends the tool
        # result back; that next request is the first after compaction.
        Reply(
            [tool_use("Write", {"file_path": str(notes), "content": "- CSV export\n"})],
            input_tokens=990_000,
        ),
        Reply([text("Noted in the changelog.")]),
    )
    session.run("Note it in the changelog.")
    compactions = session.standin.since(mark, "compact")
    assert compactions, "Claude Code did not compact by itself"
    after = [r for r in session.standin.since(mark, "main")][1]
    assert missing(scenario.PROBES.values(), after.messages_text()) == []
    # Claude Code itself recorded the compaction as automatic.
    boundaries = [r for r in session.records() if r.get("subtype") == "compact_boundary"]
    assert boundaries[-1]["compactMetadata"]["trigger"] == "auto"


def test_prime_at_startup_brings_the_ledgers_tasks_into_a_new_session(
    session: ClaudeSession,
) -> None:
    goal = "Migrate the billing exports to UTF-8"
    assert gitledger(session, "init").returncode == 0
    created = gitledger(session, "task", "create", goal, "--json")
    assert created.returncode == 0, created.stdout + created.stderr
    install_plugin(session)
    session.standin.script(Reply([text("Hello.")]))
    session.run("What should I work on?")
    first = session.standin.of_kind("main")[0]
    assert goal in first.messages_text()
    startup = [r for r in session.hook_runs() if r["hookName"] == "SessionStart:startup"]
    assert startup and startup[0]["exitCode"] == 0


def test_without_a_ledger_the_plugin_says_how_to_start_one(session: ClaudeSession) -> None:
    install_plugin(session)
    session.standin.script(Reply([text("Hello.")]))
    session.run("Hello")
    startup = [r for r in session.hook_runs() if r["hookName"] == "SessionStart:startup"]
    assert startup and startup[0]["exitCode"] == 0
    assert "gitledger init" in session.standin.of_kind("main")[0].messages_text()


def fuse_file(session: ClaudeSession, name: str) -> str:
    ledger = os.environ["GITLEDGER_DIR"]
    done = subprocess.run(
        ["git", "--git-dir", ledger, "show", f"refs/gitledger/fuse/{session.session_id}:{name}"],
        capture_output=True,
        text=True,
    )
    return done.stdout if done.returncode == 0 else ""


def test_the_summary_is_steered_recorded_and_complemented(session: ClaudeSession) -> None:
    """PreCompact's text reaches the request that asks for the summary; PostCompact's summary is
    committed beside the snapshot; the first request after /compact carries the complement."""
    install_plugin(session)
    scenario.play(session)
    mark = session.standin.mark()
    session.compact()
    (summary_request,) = session.standin.since(mark, "compact")
    asked = summary_request.messages_text()
    assert "[gitledger fuse] Points this conversation holds" in asked
    assert "~~~ quoted-from-conversation" in asked
    assert missing(["invoices page", "pandas", "German Excel"], asked) == []
    # PostCompact: the summary the stand-in wrote is in the snapshot's commit
    assert "worked on some files" in fuse_file(session, "summary.md")
    assert "leaves out" in fuse_file(session, "restore.md").splitlines()[0]
    message = subprocess.run(
        ["git", "--git-dir", os.environ["GITLEDGER_DIR"], "log", "-1", "--format=%B"]
        + [f"refs/gitledger/fuse/{session.session_id}"],
        capture_output=True,
        text=True,
    ).stdout
    assert re.search(r"The summary says \d+ of the \d+ items the snapshot holds", message), message
    mark = session.standin.mark()
    session.standin.script(Reply([text("Continuing.")]))
    session.run("Continue.")
    after = session.standin.since(mark, "main")[0].messages_text()
    assert "What the compaction summary above leaves out" in after
    assert missing(scenario.PROBES.values(), after) == []


PROSE_PLAN = (
    "Here is how I will do it. First I will move the tariff tables into tariffs.toml so finance "
    "can edit them, then I will make the quote engine read them at startup, and after that I "
    "will add a golden test that prices the Kestrel order at 1,482.50 euros."
)


def _play_prose_plan(session: ClaudeSession) -> str:
    session.standin.script(Reply([text(PROSE_PLAN)]))
    session.run("Make the quote engine's tariffs editable without a release.")
    session.standin.script(Reply([text("Started on the first step.")]))
    session.run("Sounds good, go ahead.")
    session.standin.script(Reply([text("The tables are moved.")]))
    session.run("Keep going.")
    return first_request_after_compaction(session).messages_text()


def test_a_plan_stated_in_prose_survives_compaction(
    claude_bin: Path, tmp_path: Path, session: ClaudeSession
) -> None:
    """Claude Code 2.1.332 in -p mode has no TodoWrite: the plan is only the assistant's prose."""
    probes = ["tariffs.toml", "golden test", "1,482.50"]
    bare = ClaudeSession(claude=claude_bin, standin=session.standin, root=tmp_path / "bare")
    assert missing(probes, _play_prose_plan(bare)) == probes  # lost without the fuse
    install_plugin(session)
    assert missing(probes, _play_prose_plan(session)) == []
