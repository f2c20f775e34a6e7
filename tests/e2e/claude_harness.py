"""Drive the real Claude Code CLI against the stand-in, one scripted session at a time.

A ``ClaudeSession`` owns a temporary HOME (so no user settings, credentials or plugins leak in),
a project folder, and the environment that points Claude Code at the stand-in. ``run()`` sends one
prompt with ``claude -p --output-format json`` (resuming the session after the first turn) and
returns Claude Code's JSON result; ``compact()`` sends ``/compact``. ``hook_runs()`` reads what
Claude Code itself recorded about each hook it ran (event, command, exit code, ``durationMs``) from
the session transcript.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from standin import StandIn

E2E_DIR = Path(__file__).resolve().parent
REPO_ROOT = E2E_DIR.parents[1]
PLUGIN_DIR = REPO_ROOT / "hooks" / "claude-code"
TOOLS = "Write,Read,Edit,TodoWrite,Bash"


def find_claude() -> tuple[Path | None, str]:
    """The pinned Claude Code binary, or None and the reason it cannot be used."""
    claude = E2E_DIR / "node_modules" / ".bin" / "claude"
    if not claude.exists():
        return None, (
            "Claude Code is not installed in tests/e2e/node_modules: "
            "run scripts/install-test-deps (needs node and npm)"
        )
    try:
        done = subprocess.run(
            [str(claude), "--version"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"Claude Code does not start here: {exc}"
    if done.returncode != 0:
        return None, f"Claude Code does not start here: {done.stderr.strip()[:200]}"
    return claude, ""


def gitledger_shim(folder: Path) -> Path:
    """A ``gitledger`` command on a PATH folder that runs this checkout's gitledger.

    Hooks find gitledger on PATH, as they would after ``pipx install git-ledger``; the shim makes
    that true in tests without relying on how (or whether) the package was installed.
    """
    folder.mkdir(parents=True, exist_ok=True)
    shim = folder / "gitledger"
    shim.write_text(
        "#!/bin/sh\n"
        f'PYTHONPATH="{REPO_ROOT}${{PYTHONPATH:+:$PYTHONPATH}}" '
        f'exec "{sys.executable}" -m gitledger "$@"\n'
    )
    shim.chmod(0o755)
    return shim


@dataclass
class ClaudeSession:
    claude: Path
    standin: StandIn
    root: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    session_id: str | None = None
    results: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.project = self.root / "project"
        self.bin = self.root / "bin"
        for folder in (self.home / ".claude", self.project, self.bin):
            folder.mkdir(parents=True, exist_ok=True)

    @property
    def env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("ANTHROPIC_", "CLAUDE_", "CLAUDECODE"))
        }
        env.update(
            HOME=str(self.home),
            PATH=f"{self.bin}{os.pathsep}{env.get('PATH', '')}",
            ANTHROPIC_BASE_URL=self.standin.base_url,
            ANTHROPIC_API_KEY="sk-ant-standin",
            DISABLE_TELEMETRY="1",
            DISABLE_AUTOUPDATER="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        )
        env.update(self.extra_env)
        return env

    def settings(self, data: dict[str, Any]) -> None:
        """Write the user's Claude Code settings (HOME/.claude/settings.json)."""
        (self.home / ".claude" / "settings.json").write_text(json.dumps(data, indent=2))

    def cli(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run ``claude ARGS`` in the project folder with this session's environment."""
        return subprocess.run(
            [str(self.claude), *args],
            cwd=self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def run(self, prompt: str, *, timeout: float = 120) -> dict[str, Any]:
        args = ["-p", "--output-format", "json", "--allowedTools", TOOLS]
        if self.session_id:
            args += ["--resume", self.session_id]
        done = self.cli(*args, "--", prompt, timeout=timeout)
        if done.returncode != 0:
            raise AssertionError(
                f"claude exited {done.returncode}\nstdout: {done.stdout[-2000:]}\n"
                f"stderr: {done.stderr[-2000:]}"
            )
        result: dict[str, Any] = json.loads(done.stdout)
        if result.get("is_error"):
            raise AssertionError(f"claude reported an error: {done.stdout[-2000:]}")
        self.session_id = result["session_id"]
        self.results.append(result)
        return result

    def compact(self) -> dict[str, Any]:
        return self.run("/compact")

    @property
    def transcript(self) -> Path:
        assert self.session_id, "run a turn first"
        found = list((self.home / ".claude" / "projects").glob(f"*/{self.session_id}.jsonl"))
        assert found, f"no transcript for session {self.session_id}"
        return found[0]

    def records(self) -> list[dict[str, Any]]:
        out = []
        for line in self.transcript.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out

    def hook_runs(self) -> list[dict[str, Any]]:
        """Each hook run Claude Code recorded: hookName, hookEvent, command, exitCode, durationMs."""
        runs = []
        for record in self.records():
            attachment = record.get("attachment")
            if isinstance(attachment, dict) and "durationMs" in attachment:
                if str(attachment.get("type", "")).startswith("hook_"):
                    runs.append(attachment)
        return runs


def gitledger(session: ClaudeSession, *args: str) -> subprocess.CompletedProcess[str]:
    """Run gitledger as the session's hooks do: the shim on its PATH, its HOME and ledger."""
    shim = gitledger_shim(session.bin)
    return subprocess.run(
        [str(shim), *args],
        cwd=session.project,
        env=session.env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def install_plugin(session: ClaudeSession, *, shim: bool = True) -> None:
    """Install hooks/claude-code as a user does (``claude plugin marketplace add``, then
    ``claude plugin install``); with ``shim``, the real gitledger is on the session's PATH for
    the plugin's hooks to find (without, the test puts its own ``gitledger`` there)."""
    if shim:
        gitledger_shim(session.bin)
    for args in (
        ("plugin", "marketplace", "add", str(PLUGIN_DIR)),
        ("plugin", "install", "gitledger@gitledger"),
    ):
        done = session.cli(*args, timeout=60)
        assert done.returncode == 0, f"claude {' '.join(args)}: {done.stdout}{done.stderr}"
    listed = session.cli("plugin", "list", timeout=60)
    assert "gitledger@gitledger" in listed.stdout


def missing(probes: Iterable[str], text: str) -> list[str]:
    """The probes that do not occur in text (case-insensitive)."""
    low = text.lower()
    return [p for p in probes if p.lower() not in low]


def which_gitledger() -> str | None:
    return shutil.which("gitledger")
