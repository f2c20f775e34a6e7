"""The plugin's launcher (hooks/claude-code/bin/gitledger-hook), run directly: no Claude Code needed.

It finds gitledger in a fixed order, never blocks the agent when gitledger is missing, and turns
exit status 2 (which blocks a compaction in Claude Code) into 1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from claude_harness import PLUGIN_DIR, REPO_ROOT

LAUNCHER = PLUGIN_DIR / "bin" / "gitledger-hook"

pytestmark = pytest.mark.skipif(not Path("/bin/sh").exists(), reason="the launcher needs /bin/sh")


def launch(*args: str, path: list[Path], **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("GITLEDGER_BIN", "PYTHONPATH")}
    full.update(PATH=os.pathsep.join(str(p) for p in path), **env)
    return subprocess.run(
        [str(LAUNCHER), *args], env=full, capture_output=True, text=True, timeout=120
    )


def fake(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return script


def test_the_launcher_is_executable_and_the_manifest_points_at_it() -> None:
    assert os.access(LAUNCHER, os.X_OK)
    assert (
        "${CLAUDE_PLUGIN_ROOT}/bin/gitledger-hook"
        in (PLUGIN_DIR / "hooks" / "hooks.json").read_text()
    )


def test_gitledger_on_path_gets_the_arguments_and_stdin(tmp_path: Path) -> None:
    fake(tmp_path / "bin", "gitledger", 'echo "args: $*"; cat\n')
    done = subprocess.run(
        [str(LAUNCHER), "fuse", "save", "--hook"],
        input='{"session_id": "s"}',
        env={**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert done.stdout == 'args: fuse save --hook\n{"session_id": "s"}'


def test_gitledger_bin_comes_first_and_may_carry_arguments(tmp_path: Path) -> None:
    fake(tmp_path / "bin", "gitledger", "echo from-path\n")
    done = launch(
        "--help",
        path=[tmp_path / "bin", Path("/usr/bin"), Path("/bin")],
        GITLEDGER_BIN=f"{sys.executable} -m gitledger",
        PYTHONPATH=str(REPO_ROOT),
    )
    assert done.returncode == 0, done.stderr
    assert "from-path" not in done.stdout and "Usage: gitledger" in done.stdout


def test_python3_m_gitledger_is_the_fallback(tmp_path: Path) -> None:
    # A script, not a symlink: a symlink to a virtual environment's interpreter runs outside
    # that environment (it finds no pyvenv.cfg beside itself), without gitledger's dependencies.
    fake(tmp_path / "bin", "python3", f'exec "{sys.executable}" "$@"\n')
    done = launch("--help", path=[tmp_path / "bin"], PYTHONPATH=str(REPO_ROOT))
    assert done.returncode == 0, done.stderr
    assert "Usage: gitledger" in done.stdout


def test_no_gitledger_at_all_never_blocks_the_agent(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = launch("fuse", "save", "--hook", path=[tmp_path / "empty"])
    assert done.returncode == 0
    assert done.stdout == ""
    assert "GITLEDGER_BIN" in done.stderr and "pipx install git-ledger" in done.stderr


@pytest.mark.parametrize(("status", "reported"), [(0, 0), (1, 1), (2, 1), (3, 3)])
def test_exit_status_2_is_reported_as_1(tmp_path: Path, status: int, reported: int) -> None:
    fake(tmp_path / "bin", "gitledger", f"exit {status}\n")
    done = launch("fuse", "save", path=[tmp_path / "bin"])
    assert done.returncode == reported
