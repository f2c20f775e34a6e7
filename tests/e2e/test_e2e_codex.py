"""The Codex CLI's compaction hooks, driven against a stand-in Responses API.

Codex (npm ``@openai/codex``, pinned in package.json) has PreCompact, PostCompact and SessionStart
hooks in ``$CODEX_HOME/hooks.json`` with Claude Code's payload shape. Hooks it has not been told
to trust do not run; ``codex exec --dangerously-bypass-hook-trust`` runs them for one invocation,
which is what automation that writes its own hooks (these tests) is meant to use. A user trusts
``gitledger fuse setup --agent codex``'s hooks once in Codex's hook review.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from claude_harness import E2E_DIR
from codex_standin import CodexReply, CodexRequest, CodexStandIn

pytestmark = pytest.mark.e2e

MARKER = "CODEX-HOOK-CONTEXT-51c2"
AUTO_COMPACT_LIMIT = 5_000


@pytest.fixture(scope="module")
def codex_bin() -> Path:
    codex = E2E_DIR / "node_modules" / ".bin" / "codex"
    if not codex.exists():
        pytest.skip(
            "Codex is not installed in tests/e2e/node_modules: run scripts/install-test-deps"
        )
    return codex


@pytest.fixture
def codex_standin() -> Iterator[CodexStandIn]:
    with CodexStandIn() as server:
        yield server


class CodexSession:
    def __init__(self, codex: Path, standin: CodexStandIn, root: Path) -> None:
        self.codex = codex
        self.standin = standin
        self.root = root
        self.home = root / "home"
        self.codex_home = self.home / ".codex"
        self.project = root / "project"
        self.codex_home.mkdir(parents=True)
        self.project.mkdir()
        (self.codex_home / "config.toml").write_text(
            'model = "gpt-standin"\n'
            'model_provider = "standin"\n'
            f"model_auto_compact_token_limit = {AUTO_COMPACT_LIMIT}\n"
            "[model_providers.standin]\n"
            'name = "standin"\n'
            f'base_url = "{standin.base_url}"\n'
            'wire_api = "responses"\n'
            'env_key = "STANDIN_API_KEY"\n'
        )
        self.started = False

    def hooks(self, data: dict[str, object]) -> None:
        (self.codex_home / "hooks.json").write_text(json.dumps(data))

    def run(self, prompt: str) -> list[dict[str, object]]:
        args = [str(self.codex), "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check"]
        args += ["--json"]
        if self.started:
            args += ["resume", "--last"]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CODEX_"))}
        env.update(HOME=str(self.home), CODEX_HOME=str(self.codex_home), STANDIN_API_KEY="x")
        done = subprocess.run(
            [*args, prompt],
            cwd=self.project,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        self.started = True
        return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def recording_hook(session: CodexSession) -> Path:
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
    session.hooks(
        {
            "hooks": {
                "PreCompact": [{"hooks": [command]}],
                "PostCompact": [{"hooks": [command]}],
                "SessionStart": [{"hooks": [command]}],
            }
        }
    )
    return log


def test_codex_auto_compaction_fires_the_hooks_and_injects_session_start_context(
    codex_bin: Path, codex_standin: CodexStandIn, tmp_path: Path
) -> None:
    session = CodexSession(codex_bin, codex_standin, tmp_path / "codex")
    log = recording_hook(session)
    codex_standin.script("Planned.", CodexReply("Working on it.", input_tokens=9_000))
    session.run("Add a CSV export to the invoices page.")
    session.run("Go on.")  # reports usage above the auto-compaction limit
    assert not codex_standin.of_kind("compact")
    assert all(MARKER not in r.text() for r in codex_standin.requests)

    mark = codex_standin.mark()
    codex_standin.script("Continuing.")
    session.run("Continue.")  # Codex compacts before it sends this turn
    assert codex_standin.since(mark, "compact"), "Codex did not compact by itself"
    after = codex_standin.since(mark, "main")[0]
    assert MARKER in after.text()
    assert codex_standin.summary in after.text()

    payloads = [json.loads(line) for line in log.read_text().splitlines()]
    events = [(p["hook_event_name"], p.get("source") or p.get("trigger")) for p in payloads]
    assert events[0] == ("SessionStart", "startup")
    tail = [e for e in events if e[0] != "SessionStart" or e[1] == "compact"]
    assert tail[-3:] == [
        ("PreCompact", "auto"),
        ("PostCompact", "auto"),
        ("SessionStart", "compact"),
    ]
    pre = next(p for p in payloads if p["hook_event_name"] == "PreCompact")
    assert Path(str(pre["transcript_path"])).is_file()
    assert Path(str(pre["cwd"])).resolve() == session.project.resolve()


GOAL = "Add a CSV export to the invoices page of the billing app."
CONSTRAINT = "Do not add pandas as a dependency; use only the standard library csv module."
DECISION = (
    "We decided to use semicolons as the delimiter, because the accounting team opens the files "
    "in German Excel, where the comma is the decimal separator."
)
# Codex keeps the user's own messages across compaction; what the assistant said goes.
ASSISTANT_PROBES = {"decision": "semicolon", "decision's reason": "German Excel"}


def play_and_compact(session: CodexSession) -> CodexRequest:
    s = session.standin
    s.script("I will plan the export.", "Understood.", DECISION)
    session.run(GOAL)
    session.run(CONSTRAINT)
    session.run("Which delimiter should the export use?")
    s.script(CodexReply("Next I will wire up the toolbar.", input_tokens=9_000))
    session.run("Good, go on.")
    mark = s.mark()
    s.script("Continuing.")
    session.run("Continue.")
    assert s.since(mark, "compact"), "Codex did not compact by itself"
    return s.since(mark, "main")[0]


def test_codex_with_the_fuse_keeps_what_the_assistant_decided(
    codex_bin: Path, codex_standin: CodexStandIn, tmp_path: Path
) -> None:
    bare = CodexSession(codex_bin, codex_standin, tmp_path / "bare")
    without = play_and_compact(bare).text()
    assert GOAL in without and CONSTRAINT in without  # Codex keeps user messages itself
    assert all(p not in without for p in ASSISTANT_PROBES.values())

    session = CodexSession(codex_bin, codex_standin, tmp_path / "fused")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODEX_")}
    env.update(HOME=str(session.home))
    done = subprocess.run(
        [sys.executable, "-m", "gitledger", "fuse", "setup", "--agent", "codex", "--write"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (session.codex_home / "hooks.json").is_file()
    after = play_and_compact(session).text()
    for fact, probe in ASSISTANT_PROBES.items():
        assert probe in after, f"the fuse lost the {fact}"
