"""Arguments no command should turn into a traceback, and a claim that looks before it dials
(issue 17: D13, D24). Real CLI subprocesses, the real MCP server over stdio, a loopback listener
that counts connections."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading

import pytest
from test_mcp_server import call, connect, run

from gitledger.ledger import Ledger

NOT_UTF8 = [b"\xff", b"\xfe\xfd", b"caf\xe9", b"ok\x80more", b"\xed\xa0\x80"]  # last: a surrogate
HUGE = ["9223372036854775808", "99999999999999999999", str(10**30), str(2**64)]


def gl_bytes(*args: bytes | str) -> subprocess.CompletedProcess[bytes]:
    argv = [os.fsencode(a) if isinstance(a, str) else a for a in args]
    return subprocess.run(
        [os.fsencode(sys.executable), b"-m", b"gitledger", *argv], capture_output=True, timeout=120
    )


@pytest.mark.parametrize("raw", NOT_UTF8, ids=[r.hex() for r in NOT_UTF8])
@pytest.mark.parametrize(
    "command",
    [
        ("task", "search", "@"),
        ("task", "list", "--label", "@"),
        ("task", "list", "--owner", "@"),
        ("task", "search", "ok", "--label", "@"),
    ],
    ids=["search", "list-label", "list-owner", "search-label"],
)
def test_non_utf8_filters_are_refused_with_a_message(
    ledger: Ledger, raw: bytes, command: tuple[str, ...]
) -> None:
    ledger.create("ok task")
    args = [raw if part == "@" else part for part in command]
    out = gl_bytes(*args)
    assert out.returncode == 2, out.stderr
    assert b"Traceback" not in out.stderr and b"not valid UTF-8" in out.stderr


@pytest.mark.parametrize("number", HUGE)
@pytest.mark.parametrize(
    "command",
    [("task", "list", "--limit"), ("task", "search", "ok", "--limit")],
    ids=["list", "search"],
)
def test_limits_past_sqlite_range_mean_all(
    ledger: Ledger, number: str, command: tuple[str, ...]
) -> None:
    ledger.create("ok task")
    out = gl_bytes(*command, number)
    assert out.returncode == 0, out.stderr
    assert b"ok task" in out.stdout


@pytest.mark.parametrize("number", [int(n) for n in HUGE])
def test_library_queries_take_any_non_negative_limit(ledger: Ledger, number: int) -> None:
    ledger.create("ok task")
    assert len(ledger.list_tasks(limit=number)) == 1
    assert len(ledger.list_tasks(limit=1, offset=number)) == 0
    assert len(ledger.inbox(limit=number)) == 1
    assert len(ledger.ready(limit=number)) == 1
    assert len(ledger.search("ok", limit=number)) == 1
    assert len(ledger.search_hits("ok", limit=number)) == 1


def test_mcp_task_list_with_a_limit_of_ten_to_the_thirty(ledger: Ledger) -> None:
    ledger.create("ok task")

    async def go() -> dict:
        async with connect() as client:
            return await call(client, "task_list", {"limit": 10**30})

    assert len(run(go)["tasks"]) == 1


# --- D24: claim --push looks at the id before it contacts the remote ----------------------------


class Listener:
    """A loopback TCP port that counts who connects (and closes on them)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = int(self.sock.getsockname()[1])
        self.connections = 0
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop = True
        self._thread.join()
        self.sock.close()


def claim_push(*args: str) -> tuple[subprocess.CompletedProcess[str], int]:
    """``task claim --push`` to a loopback listener; the result and how many connected."""
    listener = Listener()
    try:
        url = f"git://127.0.0.1:{listener.port}/ledger.git"
        out = subprocess.run(
            [sys.executable, "-m", "gitledger", "task", "claim", "--push", url, "--", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        listener.close()
    return out, listener.connections


@pytest.mark.parametrize("bad_id", ["../x", "ZZ!", "a b", "iiiiii", "lo0u", "x" * 300, "-", "   "])
def test_claim_push_refuses_a_non_id_without_contacting_the_remote(
    ledger: Ledger, bad_id: str
) -> None:
    out, connections = claim_push(bad_id)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "not a task id" in out.stderr, out.stderr
    assert connections == 0


def test_claim_push_of_an_unknown_id_says_it_looked_on_the_remote(ledger: Ledger) -> None:
    out, _connections = claim_push("zzzzzz")
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "No task zzzzzz here" in out.stderr and "127.0.0.1" in out.stderr
