"""Fixtures for the end-to-end tests: the pinned Claude Code binary, a stand-in API, a session.

Test modules import them by name. They are not in a conftest.py: the suite's other tests import
helpers with ``from conftest import ...``, and a second conftest module would shadow that name.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from claude_harness import ClaudeSession, find_claude
from standin import StandIn


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
