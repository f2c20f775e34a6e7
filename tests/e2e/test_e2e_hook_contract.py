"""What the fuse relies on, checked against the real Claude Code with a trivial hook.

If a Claude Code release changes when PreCompact and SessionStart fire, what they receive on
stdin, or where SessionStart's additionalContext lands, these tests say so before the fuse tests
fail for a less obvious reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import e2e_fixtures
import pytest
from claude_harness import ClaudeSession
from standin import Reply, text, tool_use

pytestmark = pytest.mark.e2e

# The shared fixtures, by name (see e2e_fixtures.py for why they are not in a conftest.py).
claude_bin = e2e_fixtures.claude_bin
standin = e2e_fixtures.standin
session = e2e_fixtures.session

MARKER = "HOOK-CONTEXT-7f3a"


def recording_hook(session: ClaudeSession) -> Path:
    """A hook that appends its stdin to a log and, on SessionStart(compact), adds context."""
    log = session.root / "hook-payloads.jsonl"
    hook = session.root / "hook.sh"
    hook.write_text(
        "#!/bin/sh\n"
        "payload=$(cat)\n"
        f"printf '%s\\n' \"$payload\" >> '{log}'\n"
        'case "$payload" in *\'"source":"compact"\'*)\n'
        '  printf \'%s\' \'{"hookSpecificOutput":{"hookEventName":"SessionStart",'
        f'"additionalContext":"{MARKER}"}}}}\' ;;\n'
        "esac\n"
    )
    hook.chmod(0o755)
    command = {"type": "command", "command": str(hook)}
    session.settings(
        {
            "hooks": {
                "PreCompact": [{"hooks": [command]}],
                "SessionStart": [{"matcher": "startup|resume|compact", "hooks": [command]}],
            }
        }
    )
    return log


def payloads(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def test_manual_compact_fires_precompact_then_sessionstart_and_injects_context(
    session: ClaudeSession,
) -> None:
    log = recording_hook(session)
    notes = session.project / "notes.txt"
    session.standin.script(
        Reply([tool_use("Write", {"file_path": str(notes), "content": "hello\n"})]),
        Reply([text("Wrote notes.txt.")]),
    )
    session.run("Write notes.txt")
    assert notes.read_text() == "hello\n"

    session.compact()
    events = [(p["hook_event_name"], p.get("source") or p.get("trigger")) for p in payloads(log)]
    assert events[-2:] == [("PreCompact", "manual"), ("SessionStart", "compact")], events
    pre = [p for p in payloads(log) if p["hook_event_name"] == "PreCompact"][-1]
    assert pre["session_id"] == session.session_id
    assert Path(str(pre["transcript_path"])) == session.transcript
    assert Path(str(pre["cwd"])).resolve() == session.project.resolve()

    # The compaction request got the stand-in's thin summary; the next model request carries
    # the hook's additionalContext.
    assert session.standin.of_kind("compact"), "Claude Code sent no compaction request"
    mark = session.standin.mark()
    session.standin.script(Reply([text("Continuing.")]))
    session.run("Carry on")
    first = session.standin.since(mark, "main")[0]
    assert MARKER in first.messages_text()
    assert session.standin.summary.split("<summary>")[1].split("<")[0] in first.messages_text()


def test_context_only_after_compaction(session: ClaudeSession) -> None:
    """The marker is absent before compaction: the test above cannot pass by accident."""
    recording_hook(session)
    session.standin.script(Reply([text("Hello.")]))
    session.run("Say hello")
    assert all(MARKER not in r.messages_text() for r in session.standin.of_kind("main"))


def test_usage_near_the_window_triggers_automatic_compaction(session: ClaudeSession) -> None:
    log = recording_hook(session)
    notes = session.project / "notes.txt"
    session.standin.script(
        # Usage near the model's context window on a tool_use turn: Claude Code compacts before
        # it sends the tool result back.
        Reply(
            [tool_use("Write", {"file_path": str(notes), "content": "x\n"})],
            input_tokens=990_000,
        ),
        Reply([text("Done.")]),
    )
    session.run("Write notes.txt")
    events = [(p["hook_event_name"], p.get("source") or p.get("trigger")) for p in payloads(log)]
    assert ("PreCompact", "auto") in events, events
    assert ("SessionStart", "compact") in events, events
    after = session.standin.of_kind("main")[-1]
    assert MARKER in after.messages_text()
