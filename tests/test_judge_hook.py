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


def make_mod(folder: Path) -> Path:
    """A plugin holding only the judge module, named the way the real plugin names it."""
    shutil.copytree(MODULE, folder / "judge")
    (folder / "hooks").mkdir()
    (folder / "hooks" / "hooks.json").write_text(json.dumps({"modules": ["../judge/register.ts"]}))
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
