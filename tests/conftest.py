"""Every test gets its own ledger, home and Git identity: nothing leaks between tests or to the
user's real configuration."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CORPUS = SHARED / "corpus"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test Person")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "test@example.com")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test Person")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "test@example.com")
    (home / ".gitconfig").write_text("[user]\n\tname = Test Person\n\temail = test@example.com\n")
    monkeypatch.setenv("GITLEDGER_DIR", str(tmp_path / "ledger"))
    monkeypatch.delenv("GITLEDGER_ACTOR", raising=False)
    monkeypatch.delenv("GITLEDGER_HOME", raising=False)
    for name in ("GITLEDGER_AGENT", "GITLEDGER_CLAIM_LEASE", "GITLEDGER_SYNC_FUSE"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


@pytest.fixture
def ledger(isolated: Path):  # type: ignore[no-untyped-def]
    from gitledger.ledger import Ledger

    return Ledger.init()


def run_cli(
    *args: str, cwd: Path | None = None, input: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The real CLI as a subprocess."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "gitledger", *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=120,
    )


@pytest.fixture
def cli():  # type: ignore[no-untyped-def]
    return run_cli
