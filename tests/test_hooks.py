"""gitledger.hooks: every hook reads its payload one way and never breaks the agent.

Real processes: the CLI as a subprocess with stdin an idle pipe, a 60 MB payload, a closed or full
stdout, and transcripts that are /dev/zero, FIFOs, directories and symlink loops.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from gitledger import hooks
from gitledger.errors import InvalidInput

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "transcripts"
TRANSCRIPT = FIXTURES / "claude_2_1_session.jsonl"

HOOK_COMMANDS = [
    ("fuse", "save", "--hook"),
    ("fuse", "restore", "--hook"),
    ("judge", "step", "--hook"),
    ("judge", "turn", "--hook"),
]


def _popen(args: tuple[str, ...], **kwargs: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "gitledger", *args],
        stdout=kwargs.pop("stdout", subprocess.PIPE),
        stderr=subprocess.PIPE,
        **kwargs,
    )


def _fuse_rows(cli: Any) -> list[dict[str, Any]]:
    out = cli("fuse", "status", "--json")
    assert out.returncode == 0, out.stderr
    rows: list[dict[str, Any]] = json.loads(out.stdout)
    return rows


# --- the payload reader ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"", {}),
        (b"   \n", {}),
        (b'{"session_id": "a"}', {"session_id": "a"}),
        (b"[1, 2]", {}),
        (b"not json", {}),
        (b'{"a": "\xff"}', {}),
        (b"[" * 100_000 + b"]" * 100_000, {}),
        (b'{"a": "' + b"x" * (hooks.MAX_PAYLOAD_BYTES + 10) + b'"}', {}),
    ],
)
def test_read_payload_is_an_object_or_empty(raw: bytes, expected: dict[str, Any]) -> None:
    assert hooks.read_payload(io.BytesIO(raw)) == expected


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b"[1]", "must be a JSON object, not a list"),
        (b"{nope", "is not JSON"),
        (b'{"a": "\xff"}', "is not UTF-8"),
        (b"[" * 100_000, "is not JSON"),
        (b" " * (hooks.MAX_PAYLOAD_BYTES + 1), "larger than 1,048,576 bytes"),
    ],
)
def test_strict_read_payload_says_what_is_wrong(raw: bytes, says: str) -> None:
    if not raw.strip():  # a large blank payload is no payload, even strictly
        assert hooks.read_payload(io.BytesIO(raw), strict=True) == {}
        return
    with pytest.raises(InvalidInput, match=says):
        hooks.read_payload(io.BytesIO(raw), strict=True)


def test_read_raw_gives_up_on_an_idle_pipe_and_stops_at_the_cap() -> None:
    read_fd, write_fd = os.pipe()
    try:
        with os.fdopen(read_fd, "rb", closefd=False) as stream:
            assert hooks.read_raw(stream, wait=0.2) is None  # nothing arrives: None, no hang
            os.write(write_fd, b"x" * 5_000)
            got = hooks.read_raw(stream, wait=0.2, limit=1_000)
            assert got is not None and len(got) == 1_001  # the cap, plus one byte to tell
    finally:
        os.close(read_fd)
        os.close(write_fd)


@pytest.mark.parametrize(
    "value", [None, 3, ["a"], {"a": 1}, "", "a\x00b", "\ud800", "x" * 5_000, True]
)
def test_text_field_refuses_what_is_not_usable_text(value: Any) -> None:
    assert hooks.text_field({"k": value}, "k") is None


def test_transcript_file_takes_only_regular_files(tmp_path: Path) -> None:
    assert hooks.transcript_file(str(TRANSCRIPT)) == TRANSCRIPT
    link = tmp_path / "link.jsonl"
    link.symlink_to(TRANSCRIPT)
    assert hooks.transcript_file(str(link)) == link  # a link to a file is that file
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for bad, says in [
        ("/dev/zero", "a device"),
        ("/dev/urandom", "a device"),
        (str(fifo), "a FIFO"),
        (str(tmp_path), "a directory"),
        (str(loop), "Cannot read"),
        (str(tmp_path / "none.jsonl"), "No transcript"),
        ("a\x00b", "not a usable path"),
        (42, "no transcript_path"),
    ]:
        with pytest.raises(InvalidInput, match=says):
            hooks.transcript_file(bad)


def test_transcript_readers_refuse_a_fifo_put_in_place_after_the_check(tmp_path: Path) -> None:
    from gitledger.transcripts import ReadStats, read_events

    fifo = tmp_path / "t.jsonl"
    os.mkfifo(fifo)
    stats = ReadStats()
    done: list[Any] = []
    thread = threading.Thread(target=lambda: done.append(list(read_events(fifo, stats=stats))))
    thread.start()
    thread.join(20)
    if thread.is_alive():  # unblock the reader so the test run ends, then fail
        with open(fifo, "wb"):
            pass
        thread.join(5)
        pytest.fail("reading a FIFO transcript blocked")
    assert done == [[]] and stats.missing


# --- the hook commands as real processes ----------------------------------------------------


@pytest.mark.parametrize("args", HOOK_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_a_hook_on_an_idle_open_stdin_gives_up_and_exits_0(args: tuple[str, ...]) -> None:
    proc = _popen(args, stdin=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=60)  # the pipe stays open: only the 5 s bound ends it
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"{' '.join(args)} hung on an idle stdin")
    assert proc.returncode == 0, err
    assert b"Traceback" not in err and err.count(b"\n") <= 1


@pytest.mark.parametrize("args", HOOK_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_a_hook_given_a_60_mb_payload_reads_one_mib_and_exits_0(
    args: tuple[str, ...], tmp_path: Path
) -> None:
    big = tmp_path / "big.json"
    with open(big, "wb") as out:
        out.write(b'{"session_id": "s", "pad": "')
        out.write(b"x" * 60_000_000)
        out.write(b'"}')
    with open(big, "rb") as stdin:
        proc = _popen(args, stdin=stdin)
        out_bytes, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and out_bytes == b""
    assert b"Traceback" not in err and err.count(b"\n") == 1


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/urandom", "fifo", "dir", "loop"])
@pytest.mark.parametrize("command", ["fuse save", "judge step", "judge turn"])
def test_a_transcript_that_is_no_regular_file_saves_nothing_and_holds_no_lock(
    target: str, command: str, isolated: Path, cli: Any
) -> None:
    assert cli("init").returncode == 0
    if target == "fifo":
        path = isolated / "t.fifo"
        os.mkfifo(path)
    elif target == "dir":
        path = isolated / "a-dir"
        path.mkdir()
    elif target == "loop":
        path = isolated / "loop.jsonl"
        path.symlink_to(path)
    else:
        path = Path(target)
    payload = json.dumps(
        {"session_id": "never-saved", "transcript_path": str(path), "cwd": str(isolated)}
    )
    result = cli(*command.split(), "--hook", input=payload)
    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and result.stdout == ""
    assert _fuse_rows(cli) == []  # D23: nothing committed for a session never saved
    created = cli("task", "create", "The lock is free")
    assert created.returncode == 0, created.stderr


@pytest.mark.parametrize("how", ["closed", "full"])
@pytest.mark.parametrize("args", HOOK_COMMANDS + [("fuse", "save", "--hook", "--json")])
def test_a_hook_whose_stdout_is_closed_or_full_exits_0(
    how: str, args: tuple[str, ...], isolated: Path, cli: Any
) -> None:
    saved = cli("fuse", "save", "--transcript", str(TRANSCRIPT), "--session", "s1")
    assert saved.returncode == 0, saved.stderr
    payload = json.dumps(
        {"session_id": "s1", "transcript_path": str(TRANSCRIPT), "cwd": str(isolated)}
    ).encode()
    if how == "full":
        with open("/dev/full", "wb") as full:
            proc = _popen(args, stdin=subprocess.PIPE, stdout=full)
            _, err = proc.communicate(payload, timeout=120)
    else:
        proc = subprocess.Popen(
            [sys.executable, "-c", _CLOSED_STDOUT, *args],
            stdin=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        _, err = proc.communicate(payload, timeout=120)
    assert proc.returncode == 0, err.decode()
    assert b"Traceback" not in err and b"Exception ignored" not in err


# Runs the CLI with fd 1 closed, as an agent that does not read a hook's answer may start it.
_CLOSED_STDOUT = """
import os, sys
os.close(1)
sys.argv = ["gitledger", *sys.argv[1:]]
from gitledger.cli import main
main()
"""


def test_restore_with_stdout_closed_leaves_no_output_in_the_ledger(
    isolated: Path, cli: Any
) -> None:
    """With fd 1 closed the first file a hook opens would be fd 1: nothing may land in it."""
    cli("fuse", "save", "--transcript", str(TRANSCRIPT), "--session", "s1")
    before = {p: p.read_bytes() for p in (isolated / "ledger").rglob("*") if p.is_file()}
    proc = subprocess.Popen(
        [sys.executable, "-c", _CLOSED_STDOUT, "fuse", "restore", "--hook"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _, err = proc.communicate(json.dumps({"session_id": "s1"}).encode(), timeout=120)
    assert proc.returncode == 0, err
    for path in (isolated / "ledger").rglob("*"):
        if path.is_file() and path in before:
            assert b"hookSpecificOutput" not in path.read_bytes(), path
