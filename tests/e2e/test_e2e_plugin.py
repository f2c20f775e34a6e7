"""The Claude Code plugin in hooks/claude-code, installed the way a user installs it.

``claude plugin marketplace add <checkout>/hooks/claude-code`` then ``claude plugin install
gitledger@gitledger``, with no network. The plugin's hooks run ``gitledger`` found on PATH. Here
a recording ``gitledger`` stands in for the real one, to check the wiring alone: which command
each event runs, with which payload, and that its output reaches the model. The fuse tests run
the same plugin with the real gitledger.
"""

from __future__ import annotations

import json
from pathlib import Path

import e2e_fixtures
import pytest
from claude_harness import PLUGIN_DIR, ClaudeSession, install_plugin
from standin import Reply, text

pytestmark = pytest.mark.e2e

# The shared fixtures, by name (see e2e_fixtures.py for why they are not in a conftest.py).
claude_bin = e2e_fixtures.claude_bin
standin = e2e_fixtures.standin
session = e2e_fixtures.session


def test_plugin_manifest_validates(session: ClaudeSession) -> None:
    done = session.cli("plugin", "validate", str(PLUGIN_DIR), timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PreCompact" in done.stdout and "SessionStart" in done.stdout


def recording_gitledger(session: ClaudeSession) -> Path:
    """A fake ``gitledger`` on PATH that logs each call (argv and stdin) and answers."""
    log = session.root / "gitledger-calls.jsonl"
    fake = session.bin / "gitledger"
    fake.write_text(
        "#!/usr/bin/env python3\n"
        "import json, sys\n"
        "stdin = sys.stdin.read()\n"
        f"with open({str(log)!r}, 'a') as f:\n"
        "    f.write(json.dumps({'argv': sys.argv[1:], 'stdin': stdin}) + '\\n')\n"
        "if sys.argv[1:] == ['fuse', 'restore', '--hook']:\n"
        "    print(json.dumps({'hookSpecificOutput': {'hookEventName': 'SessionStart',\n"
        "        'additionalContext': 'RESTORED-BY-FAKE-LEDGER'}}))\n"
        "elif sys.argv[1:2] == ['prime']:\n"
        "    print('PRIMED-BY-FAKE-LEDGER')\n"
    )
    fake.chmod(0o755)
    return log


def test_installed_plugin_wires_each_event_to_its_gitledger_command(
    session: ClaudeSession,
) -> None:
    install_plugin(session, shim=False)
    log = recording_gitledger(session)
    session.standin.script(Reply([text("Hello.")]))
    session.run("Say hello")
    first = session.standin.of_kind("main")[0]
    assert "PRIMED-BY-FAKE-LEDGER" in first.messages_text()

    session.compact()
    mark = session.standin.mark()
    session.standin.script(Reply([text("Continuing.")]))
    session.run("Carry on")
    after = session.standin.since(mark, "main")[0]
    assert "RESTORED-BY-FAKE-LEDGER" in after.messages_text()

    calls = [json.loads(line) for line in log.read_text().splitlines()]
    argvs = [c["argv"] for c in calls]
    assert argvs[0] == ["prime", "--hook"]
    assert json.loads(calls[0]["stdin"])["source"] == "startup"
    assert ["fuse", "save", "--hook"] in argvs and ["fuse", "restore", "--hook"] in argvs
    save = next(c for c in calls if c["argv"] == ["fuse", "save", "--hook"])
    payload = json.loads(save["stdin"])
    assert payload["hook_event_name"] == "PreCompact"
    assert payload["trigger"] == "manual"
    assert Path(payload["transcript_path"]) == session.transcript
    restore = [json.loads(c["stdin"]) for c in calls if c["argv"] == ["fuse", "restore", "--hook"]]
    assert {r["source"] for r in restore} >= {"compact"}


def test_a_failing_gitledger_never_blocks_compaction(session: ClaudeSession) -> None:
    """Exit 2 from a PreCompact hook blocks the compaction; the plugin reports it as 1."""
    install_plugin(session, shim=False)
    broken = session.bin / "gitledger"
    broken.write_text("#!/bin/sh\ncat >/dev/null\necho 'Error: No such command.' >&2\nexit 2\n")
    broken.chmod(0o755)
    session.standin.script(Reply([text("Hello.")]))
    session.run("Say hello")
    session.compact()
    assert session.standin.of_kind("compact"), "the compaction was blocked"
    boundaries = [r for r in session.records() if r.get("subtype") == "compact_boundary"]
    assert boundaries, "Claude Code recorded no compaction"
