"""Helpers the test modules share, written once: the CLI in and out of process, git, a loopback
git daemon (from ``gitdaemon.py``, which the benchmarks import too), and where the shared corpus
is (tests that need it skip cleanly when it is absent).

Import them by name (``from helpers import invoke``); the fixtures built on them (``cli``,
``daemon``) are in ``conftest.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner, Result
from gitdaemon import GIT, Daemon, free_port, start_daemon

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CORPUS = SHARED / "corpus"
# GIT (gitdaemon's): the tests' own git, found before any test takes it off PATH.


def invoke(*args: str, input: str | None = None, catch_exceptions: bool = False) -> Result:
    """The CLI in this process (click's runner): fast, and an unexpected exception fails loudly."""
    from gitledger.cli import cli

    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=catch_exceptions)


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


def git(git_dir: Path | str, *args: str, check: bool = True) -> str:
    """``git --git-dir GIT_DIR ARGS``: its standard output (a failure raises when ``check``)."""
    return subprocess.run(
        [GIT, "--git-dir", str(git_dir), *args], capture_output=True, text=True, check=check
    ).stdout


def git_refs(git_dir: Path | str, prefix: str = "refs/gitledger/") -> dict[str, str]:
    """Ref name -> object id of every ref under ``prefix``, as git itself lists them."""
    out = git(git_dir, "for-each-ref", "--format=%(objectname) %(refname)")
    pairs = (line.split(" ", 1) for line in out.splitlines())
    return {name: oid for oid, name in pairs if name.startswith(prefix)}


__all__ = [
    "CORPUS",
    "GIT",
    "SHARED",
    "Daemon",
    "free_port",
    "git",
    "git_refs",
    "invoke",
    "run_cli",
    "start_daemon",
]
