"""A real Git server on loopback: ``git daemon`` serving bare repositories, push enabled.

One copy for the tests (``helpers.start_daemon``, the ``daemon`` fixture) and the benchmarks
that sync through a server (``sync_bench``, ``kill_harness``, ``reliability_mix``), which put
this folder on ``sys.path`` to import it. Nothing here imports gitledger.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# The daemon's git, found on import: before a test or a benchmark takes git off PATH.
GIT = shutil.which("git") or "git"


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
    """``git daemon`` serving ``base`` on a free loopback port, receive-pack enabled. A port
    taken between choosing and binding it is retried (five ports, 10 s each)."""
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


@contextlib.contextmanager
def served(base: Path) -> Iterator[Daemon]:
    """``start_daemon`` as a context: the daemon and its children end when the block does."""
    daemon = start_daemon(base)
    try:
        yield daemon
    finally:
        daemon.stop()


__all__ = ["GIT", "Daemon", "free_port", "served", "start_daemon"]
