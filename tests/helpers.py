"""Helpers the test modules share, written once: the CLI in and out of process, git, a loopback
git daemon, and where the shared corpus is (tests that need it skip cleanly when it is absent).

Import them by name (``from helpers import invoke``); the fixtures built on them (``cli``,
``daemon``) are in ``conftest.py``.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner, Result

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CORPUS = SHARED / "corpus"
# The tests' own git, found before any test takes it off PATH.
GIT = shutil.which("git") or "git"


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


# --- a real Git server on loopback -------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Daemon:
    base: Path
    port: int
    proc: subprocess.Popen[bytes]

    def url(self, name: str) -> str:
        return f"git://127.0.0.1:{self.port}/{name}"

    def bare(self, name: str) -> Path:
        path = self.base / name
        if not path.exists():
            subprocess.run([GIT, "init", "-q", "--bare", str(path)], check=True)
        return path

    def stop(self) -> None:
        if self.proc.poll() is None:
            # The daemon forks a child per connection in its own process group: end them all.
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)


def start_daemon(base: Path) -> Daemon:
    """``git daemon`` serving ``base`` on a free loopback port, receive-pack enabled."""
    base.mkdir(parents=True, exist_ok=True)
    for _ in range(5):
        port = free_port()
        proc = subprocess.Popen(
            [
                GIT,
                "daemon",
                "--reuseaddr",
                f"--base-path={base}",
                "--export-all",
                "--enable=receive-pack",
                "--informative-errors",
                "--listen=127.0.0.1",
                f"--port={port}",
                str(base),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    return Daemon(base, port, proc)
            except OSError:
                time.sleep(0.05)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    raise RuntimeError("git daemon did not start")
