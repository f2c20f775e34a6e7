"""Fixtures for the end-to-end tests: the pinned Claude Code binary, a stand-in API, a session."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from claude_harness import ClaudeSession, find_claude  # noqa: E402
from standin import StandIn  # noqa: E402


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    claude, reason = find_claude()
    if claude is None:
        pytest.skip(reason)
    return claude


@pytest.fixture
def standin() -> Iterator[StandIn]:
    with StandIn() as server:
        yield server


@pytest.fixture
def session(claude_bin: Path, standin: StandIn, tmp_path: Path) -> ClaudeSession:
    return ClaudeSession(claude=claude_bin, standin=standin, root=tmp_path / "cc")
