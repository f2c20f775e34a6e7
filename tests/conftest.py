"""Every test gets its own ledger, home and Git identity: nothing leaks between tests or to the
user's real configuration."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import CORPUS, SHARED, Daemon, run_cli, start_daemon

__all__ = ["CORPUS", "SHARED", "run_cli"]  # for the tests that import them from here


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
    for name in (
        "GITLEDGER_AGENT",
        "GITLEDGER_CLAIM_LEASE",
        "GITLEDGER_SYNC_FUSE",
        "CLAUDE_CODE_SESSION_ID",  # a suite run from inside a Claude Code session
    ):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


@pytest.fixture
def ledger(isolated: Path):  # type: ignore[no-untyped-def]
    from gitledger.ledger import Ledger

    return Ledger.init()


@pytest.fixture
def cli():  # type: ignore[no-untyped-def]
    return run_cli


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    """A ``git daemon`` on loopback serving bare repositories under ``tmp_path/served``."""
    server = start_daemon(tmp_path / "served")
    try:
        yield server
    finally:
        server.stop()
