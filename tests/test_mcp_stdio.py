"""The MCP server over real stdio: malformed requests get JSON-RPC errors, and fuse_save reads
only agents' transcripts (D22)."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gitledger.mcp_stdio import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, screen

TRANSCRIPT_LINE = {
    "type": "user",
    "sessionId": "s1",
    "message": {"role": "user", "content": "Make the parser resumable"},
}


class Wire:
    """A real ``gitledger mcp`` process, spoken to line by line."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gitledger", "mcp", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "1"},
                },
            }
        )
        assert self.receive()["id"] == 0
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any] | bytes) -> None:
        raw = message if isinstance(message, bytes) else json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 60) -> dict[str, Any]:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            raise AssertionError("the server did not answer")
        line = self.proc.stdout.readline()
        assert line, self.proc.stderr.read().decode() if self.proc.stderr else ""
        answer: dict[str, Any] = json.loads(line)
        return answer

    def call(self, id_: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.send(
            {
                "jsonrpc": "2.0",
                "id": id_,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments},
            }
        )
        answer = self.receive()
        assert answer["id"] == id_
        return answer

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def wire(ledger: Any) -> Any:
    server = Wire()
    yield server
    server.close()


DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.mark.parametrize(
    ("raw", "id_", "code"),
    [
        (
            b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"task_create",'
            b'"arguments":{"goal":"a \\ud800 b"}}}',
            7,
            INVALID_PARAMS,
        ),
        (
            b'{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"x":"\xff\xfe"}}',
            8,
            PARSE_ERROR,
        ),
        (b'{"jsonrpc":"2.0","id":9,"method":"tools/list","params":' + DEEP + b"}", 9, PARSE_ERROR),
        (
            b'{"jsonrpc":"2.0","id":10,"method":"tools/list","params":{"a":'
            + b'{"a":' * 100_000
            + b"1"
            + b"}" * 100_001,
            10,
            PARSE_ERROR,
        ),
        (b"{not json", None, PARSE_ERROR),
        (b"[1, 2]", None, INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":11,"nothing":true}', 11, INVALID_REQUEST),
    ],
)
def test_a_malformed_request_gets_a_json_rpc_error_and_the_server_goes_on(
    wire: Wire, raw: bytes, id_: Any, code: int
) -> None:
    wire.send(raw)
    answer = wire.receive()
    assert answer["id"] == id_ and answer["error"]["code"] == code, answer
    wire.send({"jsonrpc": "2.0", "id": 99, "method": "tools/list"})
    assert "tools" in wire.receive()["result"]


def test_screen_passes_good_lines_unchanged() -> None:
    line = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
    assert screen(line) == (line.decode(), None)
    assert screen(b"  \n") == (None, None)


@pytest.mark.parametrize(
    "target", ["/etc/passwd", "/proc/self/environ", "/dev/zero", "elsewhere", "link-out"]
)
def test_fuse_save_reads_only_agents_transcripts(wire: Wire, target: str, isolated: Path) -> None:
    elsewhere = isolated / "elsewhere.jsonl"
    elsewhere.write_text(json.dumps(TRANSCRIPT_LINE) + "\n")
    folder = Path.home() / ".claude" / "projects" / "p"
    folder.mkdir(parents=True)
    link = folder / "out.jsonl"
    link.symlink_to(elsewhere)  # a link inside the folder to a file outside it
    path = {"elsewhere": str(elsewhere), "link-out": str(link)}.get(target, target)
    answer = wire.call(1, "fuse_save", {"session": "s1", "transcript": path})
    result = answer["result"]
    assert result["isError"] is True
    assert "Traceback" not in json.dumps(result)
    wire.send(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "fuse_restore", "arguments": {"session": "s1"}},
        }
    )
    assert wire.receive()["result"]["isError"] is True  # nothing was saved


def test_fuse_save_reads_a_transcript_in_an_agents_folder_or_one_allowed(
    ledger: Any, isolated: Path
) -> None:
    folder = Path.home() / ".claude" / "projects" / "p"
    folder.mkdir(parents=True)
    (folder / "s1.jsonl").write_text(json.dumps(TRANSCRIPT_LINE) + "\n")
    extra = isolated / "kept"
    extra.mkdir()
    (extra / "s2.jsonl").write_text(json.dumps(TRANSCRIPT_LINE) + "\n")
    wire = Wire("--transcripts", str(extra))
    try:
        for id_, session, path in [(1, "s1", folder / "s1.jsonl"), (2, "s2", extra / "s2.jsonl")]:
            answer = wire.call(id_, "fuse_save", {"session": session, "transcript": str(path)})
            assert answer["result"]["isError"] is False, answer
    finally:
        wire.close()
    env_wire_env = dict(os.environ, GITLEDGER_TRANSCRIPTS=str(extra))
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from gitledger.mcp_server import allowed_transcript_dirs as a; print(a())",
        ],
        env=env_wire_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert str(extra) in proc.stdout
