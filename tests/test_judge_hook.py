"""The Claude Code function-hook module (hooks/claude-code/judge/register.ts) under Claude Code's
own plugin test kit: `claude plugin test` loads the module into the pinned Claude Code and runs
hooks/claude-code/judge/judge.test.ts against it (the engine beneath the plugin is stubbed there).

Not a live session: that the module ends a real turn and compacts in an interactive session is
not shown here. Skips where the pinned Claude Code is not installed (scripts/install-test-deps).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULE = ROOT / "hooks" / "claude-code" / "judge"
CLAUDE = ROOT / "tests" / "e2e" / "node_modules" / ".bin" / "claude"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not CLAUDE.exists(), reason="Claude Code is not installed in tests/e2e"),
]


def make_mod(folder: Path, hooks: dict[str, object] | None = None) -> Path:
    """A plugin holding only the judge module, named the way the real plugin names it."""
    shutil.copytree(MODULE, folder / "judge")
    # The module runs gitledger through the plugin's launcher, as in the real plugin.
    (folder / "bin").mkdir()
    shutil.copy2(ROOT / "hooks" / "claude-code" / "bin" / "gitledger-hook", folder / "bin")
    (folder / "hooks").mkdir()
    spec: dict[str, object] = {"modules": ["../judge/register.ts"]}
    if hooks:
        spec["hooks"] = hooks
    (folder / "hooks" / "hooks.json").write_text(json.dumps(spec))
    (folder / ".claude-plugin").mkdir()
    (folder / ".claude-plugin" / "plugin.json").write_text(
        json.dumps({"name": "gitledger-judge-test", "version": "0.0.0", "license": "Apache-2.0"})
    )
    return folder


def claude(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE"))}
    env.update(HOME=str(tmp_path / "home"), DISABLE_AUTOUPDATER="1", DISABLE_TELEMETRY="1")
    (tmp_path / "home").mkdir(exist_ok=True)
    return subprocess.run(
        [str(CLAUDE), *args], capture_output=True, text=True, env=env, timeout=300
    )


def test_module_passes_its_tests_in_claude_codes_kit(tmp_path: Path) -> None:
    mod = make_mod(tmp_path / "mod")
    done = claude(tmp_path, "plugin", "test", str(mod))
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert " 0 fail" in out and "(fail)" not in out
    assert out.count("(pass)") >= 6


def test_module_validates(tmp_path: Path) -> None:
    mod = make_mod(tmp_path / "mod")
    done = claude(tmp_path, "plugin", "validate", str(mod))
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "turn.step, turn.complete" in out
    assert "$.session.compact" in out and "$.turn.abort" in out


def test_a_broken_module_fails_the_kit(tmp_path: Path) -> None:
    """The kit is a real check: a module that hands $ to a helper it cannot follow does not load."""
    mod = make_mod(tmp_path / "mod")
    source = mod / "judge" / "register.ts"
    source.write_text(source.read_text().replace("await load($)", "await (0, load)($)"))
    done = claude(tmp_path, "plugin", "test", str(mod))
    assert done.returncode != 0


def _tmux(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, timeout=30)


def _live(tmp_path: Path, mod: Path, replies: list[object], judge_answer: str | None = None):
    """Run the real Claude Code interactively in tmux with the plugin at ``mod``, against the
    stand-in model scripted with ``replies``; type "Do tasks 1 and 2." and wait until three
    main-loop requests have arrived. Returns (the stand-in, the screen, the debug log)."""
    import sys
    import time

    sys.path.insert(0, str(ROOT / "tests" / "e2e"))
    from claude_harness import ClaudeSession, gitledger_shim
    from standin import StandIn

    name = f"gljudge-{os.getpid()}-{len(list(tmp_path.iterdir()))}"
    with StandIn() as server:
        if judge_answer is not None:
            server.judge_answer = judge_answer
        session = ClaudeSession(
            CLAUDE,
            server,
            tmp_path / "run",
            extra_env={
                "CLAUDE_CODE_ENABLE_FUNCTION_HOOKS": "1",
                "PYTHONPATH": str(ROOT),
                "GITLEDGER_DIR": str(tmp_path / "hook-ledger"),
            },
        )
        gitledger_shim(session.bin)
        key = session.env["ANTHROPIC_API_KEY"]
        (session.home / ".claude.json").write_text(
            json.dumps(
                {
                    "hasCompletedOnboarding": True,
                    "theme": "dark",
                    "customApiKeyResponses": {"approved": [key[-20:]], "rejected": []},
                    "projects": {str(session.project): {"hasTrustDialogAccepted": True}},
                }
            )
        )
        session.settings({"permissions": {"allow": ["Bash", "Write", "Read"]}})
        server.script(*replies)  # type: ignore[arg-type]
        env = session.env
        env_args: list[str] = []
        for var in (
            "HOME",
            "PATH",
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_API_KEY",
            "DISABLE_TELEMETRY",
            "DISABLE_AUTOUPDATER",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
            "CLAUDE_CODE_ENABLE_FUNCTION_HOOKS",
            "PYTHONPATH",
            "GITLEDGER_DIR",
        ):
            env_args += ["-e", f"{var}={env[var]}"]
        debug = tmp_path / "debug.log"
        started = _tmux(
            "new-session", "-d", "-s", name, "-x", "160", "-y", "50", "-c", str(session.project),
            *env_args, str(CLAUDE), "--plugin-dir", str(mod), "--debug-file", str(debug),
        )  # fmt: skip
        assert started.returncode == 0, started.stderr
        try:
            deadline = time.monotonic() + 90
            while (
                time.monotonic() < deadline
                and "❯" not in _tmux("capture-pane", "-p", "-t", name).stdout
            ):
                time.sleep(1)
            time.sleep(2)
            _tmux("send-keys", "-t", name, "Do tasks 1 and 2.", "")
            time.sleep(1)
            _tmux("send-keys", "-t", name, "Enter")
            deadline = time.monotonic() + 150
            while time.monotonic() < deadline:
                kinds = [r.kind for r in server.requests if r.kind != "side"]
                if kinds.count("main") >= 3:
                    break
                time.sleep(2)
            time.sleep(2)
            screen = _tmux("capture-pane", "-p", "-t", name).stdout
        finally:
            _tmux("kill-session", "-t", name)
        log = debug.read_text(errors="replace") if debug.exists() else ""
        return server, screen, log


def _hook_refs(tmp_path: Path) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(tmp_path / "hook-ledger"), "for-each-ref", "--format=%(refname)"],
        capture_output=True,
        text=True,
    ).stdout


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
@pytest.mark.parametrize("plugin", ["module", "full-plugin"])
def test_live_interactive_session_compacts_at_the_boundary(tmp_path: Path, plugin: str) -> None:
    """The real Claude Code, interactive in tmux, against the stand-in model: the step that says
    task 1 is done and moves to task 2 is judged NEXT by the real `gitledger judge step`, the turn
    ends before its next request, Claude Code compacts (a summary request reaches the stand-in)
    and the plugin's "Continue." starts the next turn, which goes on with task 2."""
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "e2e"))
    from standin import Reply, text, tool_use

    if plugin == "module":
        # Only the module, and a PreCompact command hook like the plugin's.
        pre_compact = {"type": "command", "command": "gitledger fuse save --hook", "timeout": 60}
        mod = make_mod(tmp_path / "mod", {"PreCompact": [{"hooks": [pre_compact]}]})
        plugin_name = "gitledger-judge-test"
    else:
        # The plugin as shipped: its hooks.json names the module and the fuse hooks.
        mod = ROOT / "hooks" / "claude-code"
        plugin_name = json.loads((mod / ".claude-plugin" / "plugin.json").read_text())["name"]
    # 45% of the 1M window this Claude Code's default model has: past the 35% floor.
    server, screen, log = _live(
        tmp_path,
        mod,
        [
            Reply([text("Task 1."), tool_use("Bash", {"command": "echo one > a.txt"})], 450_000),
            Reply(
                [text("Task 1 done. Moving to task 2."), tool_use("Bash", {"command": "true"})],
                455_000,
            ),
            Reply([text("Task 2 done.")], 20_000),
        ],
    )
    kinds = [r.kind for r in server.requests if r.kind != "side"]
    assert kinds[:4] == ["main", "main", "compact", "main"], (kinds, screen)
    assert f"$.turn.abort ({plugin_name}): cancelled turn" in log
    assert "Continue." in server.requests[-1].messages_text() or "Continue." in screen
    assert "Task 2 done." in screen
    # The compaction the module ran fired PreCompact: the fuse snapshot is in the ledger.
    refs = _hook_refs(tmp_path)
    assert "refs/gitledger/fuse/" in refs, (refs, log[-2000:])


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_live_session_asks_its_own_model_about_an_unsure_step(tmp_path: Path) -> None:
    """A step the rules are unsure of ("Now the README section." after a file was written) is
    put to the session's own model through $.model.complete, once, with the model judge's
    prompt; the stand-in answers NEXT, so the turn ends and Claude Code compacts; the call's
    tokens are counted in the session's judge state, as `gitledger judge status` shows."""
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "e2e"))
    from standin import Reply, text, tool_use

    mod = make_mod(tmp_path / "mod")
    server, screen, log = _live(
        tmp_path,
        mod,
        [
            Reply([text("Task 1."), tool_use("Bash", {"command": "echo one > a.txt"})], 450_000),
            Reply(
                [text("Now the README section."), tool_use("Bash", {"command": "true"})], 455_000
            ),
            Reply([text("Task 2 done.")], 20_000),
        ],
        judge_answer="Task 1 is written and the step turns to the README.\nNEXT",
    )
    kinds = [r.kind for r in server.requests if r.kind != "side"]
    assert kinds[:5] == ["main", "main", "judge", "compact", "main"], (kinds, screen, log[-3000:])
    asked = next(r for r in server.requests if r.kind == "judge")
    prompt = asked.messages_text()
    assert "Now the README section." in prompt and "Do tasks 1 and 2." in prompt
    status = subprocess.run(
        [sys.executable, "-m", "gitledger", "judge", "status", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "GITLEDGER_DIR": str(tmp_path / "hook-ledger")},
    )
    assert status.returncode == 0, status.stderr
    spend = json.loads(status.stdout)["model_spend"]
    assert spend["calls"] == 1 and spend["failures"] == 0, spend
    assert spend["input_tokens"] == 321 and spend["output_tokens"] == 7, spend
