"""Reading a transcript for the step judge incrementally: a hook judges after every step, and a
transcript only grows, so each run reads the lines written since the last one.

The reader's state after the last whole line (``StepReader``: the history since the latest
compaction, the step being read, the turn's counters) is kept with the byte offset it reached,
in the directory of the ledger the judge keeps its state in (``gitledger-judge/`` in the ledger's
Git directory, beside the index's ``gitledger-index.sqlite``; a disposable cache, never data):

- ``<key>.json``: the offset, hashes of the transcript's first and last 4 KiB before the offset,
  the reader's counters and the step being read, and how many messages of the history the log
  holds;
- ``<key>.<token>.jsonl``: the history, one message a line, appended to as it grows and written
  anew under a new token when a compaction starts a new one.

A cache that does not match — another file at that path, a transcript rewritten before the
offset or shorter than it, a log that does not hold what the state says, a format version it
does not know — is ignored and the transcript read whole, which gives the same verdict. A run
that cannot take the cache's lock (a hook of the same step running beside it) reads and judges
but does not write; a lock older than a minute (its run died) is taken over. Only Claude Code transcripts are read this way; other formats are read
whole by ``gitledger.transcripts``.

Reading whole also skips the records the judge never reads without decoding them: a line whose
top-level ``"type"`` is ``"progress"`` (hook and sub-agent progress, often half a transcript),
recognised only where that is certain (the key comes before any nested object or array; JSON
escapes every quote inside a string, so the bytes ``"type":"progress"`` are never string content).
"""

from __future__ import annotations

import contextlib
import json
import os
import zlib
from collections.abc import Mapping
from pathlib import Path

from .contexts import StepReader, step_from_payload
from .shapes import Call, Message, StepContext

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from typing import Any

CACHE_DIR = "gitledger-judge"
FORMAT = 1
_EDGE = 4096  # bytes hashed at the transcript's head and before the offset


# Checksums, not hashes: a cache that matches by accident would have to match the transcript's
# path, its length past the offset, and two checksums of its bytes; and zlib is already loaded,
# where hashlib costs a hook's process more than reading the new lines.
def _digest(data: bytes) -> str:
    return f"{len(data):x}-{zlib.crc32(data):08x}-{zlib.adler32(data):08x}"


def _key(path: Path) -> str:
    name = os.fsencode(os.path.abspath(path))
    return f"{zlib.crc32(name):08x}{zlib.adler32(name):08x}"


# --- what is kept ------------------------------------------------------------------------------


def _message(m: Message) -> list[Any]:
    return [m.role, m.text, [[c.name, dict(c.input)] for c in m.calls], m.is_error, m.queued]


def _unmessage(raw: list[Any]) -> Message:
    role, text, calls, is_error, queued = raw
    return Message(role, text, tuple(Call(n, i) for n, i in calls), is_error, queued)


def _event(e: Any) -> dict[str, Any]:
    usage = e.usage
    return {
        "kind": e.kind,
        "text": e.text,
        "calls": [[c.name, dict(c.input)] for c in e.tool_calls],
        "usage": None
        if usage is None
        else [usage.input_tokens, usage.cache_read_tokens, usage.cache_creation_tokens],
        "model": e.model,
        "message_id": e.message_id,
        "is_error": e.is_error,
        "is_meta": e.is_meta,
        "queued": e.queued,
    }


def _unevent(raw: dict[str, Any]) -> Any:
    from ..transcripts.events import Event, ToolCall, Usage

    usage = raw["usage"]
    return Event(
        kind=raw["kind"],
        text=raw["text"],
        tool_calls=tuple(ToolCall("", n, i) for n, i in raw["calls"]),
        usage=None
        if usage is None
        else Usage(
            input_tokens=usage[0], cache_read_tokens=usage[1], cache_creation_tokens=usage[2]
        ),
        model=raw["model"],
        message_id=raw["message_id"],
        is_error=raw["is_error"],
        is_meta=raw["is_meta"],
        queued=raw["queued"],
    )


def _lines_of(history: list[Message]) -> bytes:
    return b"".join(json.dumps(_message(m), ensure_ascii=False).encode() + b"\n" for m in history)


def _reader_state(reader: StepReader) -> dict[str, Any] | None:
    """The reader's state but its history (which the log keeps); None when it cannot be kept
    (the latest step was read before the latest compaction)."""
    step = None
    if reader.steps:
        if reader.last_epoch != reader.epoch:
            return None
        past, group, info = reader.steps[-1]
        step = {"past": len(past), "group": [_event(e) for e in group], "info": info}
    return {
        "state": dict(reader.state),
        "group": [_event(e) for e in reader.group],
        "held": [_event(e) for e in reader.held],
        "step": step,
        "past_default": reader.past_default,
        "model_name": reader.model_name,
        "last_tokens": reader.last_tokens,
        "last_assistant_text": reader.last_assistant_text,
    }


def _restore(saved: dict[str, Any], history: list[Message]) -> StepReader:
    reader = StepReader(last_only=True)
    reader.history = history
    reader.state = dict(saved["state"])
    reader.group = [_unevent(e) for e in saved["group"]]
    reader.held = [_unevent(e) for e in saved["held"]]
    step = saved["step"]
    if step is not None:
        reader.steps = [
            (history[: step["past"]], [_unevent(e) for e in step["group"]], dict(step["info"]))
        ]
    reader.past_default = bool(saved["past_default"])
    reader.model_name = saved["model_name"]
    reader.last_tokens = saved["last_tokens"]
    reader.last_assistant_text = saved["last_assistant_text"]
    return reader


class _Cache:
    """One transcript's cache files in ``folder``."""

    def __init__(self, folder: Path, transcript: Path) -> None:
        self.folder = folder
        self.key = _key(transcript)
        self.transcript = os.path.abspath(transcript)
        self.state_path = folder / f"{self.key}.json"
        self.saved: dict[str, Any] | None = None
        self.snapshot: dict[str, Any] | None = None

    def load(self, handle: Any, size: int) -> tuple[StepReader, int, int] | None:
        """(reader, offset, line number) resumed from the cache, if it matches the file."""
        try:
            saved = json.loads(self.state_path.read_bytes())
            if saved.get("format") != FORMAT or saved.get("transcript") != self.transcript:
                return None
            offset = int(saved["offset"])
            if offset <= 0 or offset > size:
                return None
            handle.seek(0)
            if _digest(handle.read(min(_EDGE, offset))) != saved["head"]:
                return None
            start = max(0, offset - _EDGE)
            handle.seek(start)
            if _digest(handle.read(offset - start)) != saved["tail"]:
                return None
            log = self.folder / saved["log"]
            with open(log, "rb") as lines:
                data = lines.read(int(saved["log_bytes"]))
            rows = data.splitlines()
            if len(rows) != int(saved["history"]) or len(data) != int(saved["log_bytes"]):
                return None
            history = [_unmessage(json.loads(row)) for row in rows]
            reader = _restore(saved["reader"], history)
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            return None
        self.saved = saved
        return reader, offset, int(saved.get("lines", 0))

    def capture(self, reader: StepReader, handle: Any, offset: int, lines: int) -> None:
        """Note the reader's state at ``offset`` (written by ``save``, if the caller keeps it)."""
        state = _reader_state(reader)
        if state is None or offset <= 0:
            self.snapshot = None
            return
        where = handle.tell()  # reading goes on from here
        handle.seek(0)
        head = _digest(handle.read(min(_EDGE, offset)))
        start = max(0, offset - _EDGE)
        handle.seek(start)
        tail = _digest(handle.read(offset - start))
        handle.seek(where)
        self.snapshot = {
            "offset": offset,
            "lines": lines,
            "head": head,
            "tail": tail,
            "history": reader.history,
            "count": len(reader.history),
            "epoch": reader.epoch,
            "reader": state,
        }

    @property
    def exists(self) -> bool:
        return self.state_path.exists()

    def save(self) -> None:
        """Write the state ``capture`` noted; any failure leaves the cache as it was."""
        if self.snapshot is None:
            return
        lock = self.folder / f"{self.key}.lock"
        with contextlib.suppress(OSError, ValueError):
            self.folder.mkdir(exist_ok=True)
            if not _take_lock(lock):
                return  # another run of this step is writing it
            try:
                self._write(self.snapshot)
            finally:
                with contextlib.suppress(OSError):
                    lock.unlink()

    def drop(self) -> None:
        """Remove this transcript's cache (the judge is disabled: it keeps nothing)."""
        with contextlib.suppress(OSError):
            for path in self.folder.glob(f"{self.key}.*"):
                path.unlink()

    def _write(self, snap: dict[str, Any]) -> None:
        old = self._current()
        history = snap["history"][: snap["count"]]
        if old is not None and old["epoch"] == snap["epoch"] and old["history"] <= len(history):
            # The same history, grown: append what is new to its log.
            log_name, kept, size = old["log"], old["history"], old["log_bytes"]
            with open(self.folder / log_name, "r+b") as out:
                out.truncate(size)
                out.seek(size)
                data = _lines_of(history[kept:])
                out.write(data)
            log_bytes = size + len(data)
        else:
            log_name = f"{self.key}.{os.urandom(6).hex()}.jsonl"
            data = _lines_of(history)
            (self.folder / log_name).write_bytes(data)
            log_bytes = len(data)
        document = {
            "format": FORMAT,
            "transcript": self.transcript,
            "offset": snap["offset"],
            "lines": snap["lines"],
            "head": snap["head"],
            "tail": snap["tail"],
            "log": log_name,
            "log_bytes": log_bytes,
            "history": len(history),
            "epoch": snap["epoch"],
            "reader": snap["reader"],
        }
        temporary = self.folder / f"{self.key}.json.tmp"
        temporary.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
        os.replace(temporary, self.state_path)
        if old is not None and old["log"] != log_name:
            with contextlib.suppress(OSError):
                (self.folder / old["log"]).unlink()

    def _current(self) -> dict[str, Any] | None:
        """The state on disk now (under the lock), if it is one this run can extend."""
        try:
            saved = json.loads(self.state_path.read_bytes())
            if saved.get("format") != FORMAT or saved.get("transcript") != self.transcript:
                return None
            log = self.folder / saved["log"]
            if log.stat().st_size < int(saved["log_bytes"]):
                return None
            return {
                "log": saved["log"],
                "history": int(saved["history"]),
                "log_bytes": int(saved["log_bytes"]),
                "epoch": int(saved["epoch"]),
            }
        except (OSError, ValueError, KeyError, TypeError):
            return None


# A lock left by a run that died (a hook killed at its timeout) is taken over after this long.
STALE_LOCK_SECONDS = 60.0


def _take_lock(lock: Path) -> bool:
    """Create ``lock`` exclusively (no fcntl: importing it costs a hook more than the write)."""
    import time

    for _ in range(2):
        try:
            os.close(os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            return True
        except FileExistsError:
            try:
                if time.time() - os.stat(lock).st_mtime < STALE_LOCK_SECONDS:
                    return False
                os.unlink(lock)
            except OSError:
                return False
    return False


# --- reading -----------------------------------------------------------------------------------


def _is_progress(line: bytes) -> bool:
    """A record whose top-level type is ``progress``, known without decoding it (see above)."""
    at = line.find(b'"type":"progress"')
    if at <= 0 or not line.startswith(b"{"):
        return False
    head = line[1:at]
    return b"{" not in head and b"[" not in head


def read_step(
    transcript: Path,
    *,
    folder: Path | None,
    pending: Any = None,
    window: int | None = None,
) -> tuple[StepContext | None, _Cache | None]:
    """The transcript's last step (after it, ``pending``: a step a hook handed over), read from
    where the cache in ``folder`` left off, or whole; and the cache, whose ``save()`` brings it
    up to date (the caller decides whether to keep it)."""
    from ..transcripts import read_events, sniff
    from ..transcripts._lines import open_regular
    from ..transcripts.claude_code import ClaudeCodeReader
    from ..transcripts.events import MAX_LINE_BYTES, ReadStats

    cache = _Cache(folder, transcript) if folder is not None else None
    resumed = None
    try:
        handle = open_regular(transcript)
    except OSError:
        handle = None
    if handle is None:
        reader = StepReader(last_only=True)
    else:
        with handle:
            size = os.fstat(handle.fileno()).st_size
            if cache is not None:
                resumed = cache.load(handle, size)
            if resumed is None and sniff(transcript) != "claude_code":
                reader = StepReader(last_only=True)
                for event in read_events(transcript):
                    reader.feed(event)
            else:
                reader, offset, number = resumed or (StepReader(last_only=True), 0, 0)
                stats = ReadStats()
                events = ClaudeCodeReader(stats)
                handle.seek(offset)
                kept = False
                while True:
                    try:
                        line = handle.readline(MAX_LINE_BYTES + 1)
                    except OSError:
                        break
                    if not line:
                        break
                    number += 1
                    complete = line.endswith(b"\n")
                    if len(line) > MAX_LINE_BYTES and not complete:
                        ended = False
                        while True:  # too long: skipped unread, as gitledger.transcripts does
                            rest = handle.readline(1 << 20)
                            if not rest or rest.endswith(b"\n"):
                                ended = bool(rest)
                                break
                        if not ended:  # still being written: keep the state before it
                            if cache is not None:
                                cache.capture(reader, handle, offset, number - 1)
                            kept = True
                            break
                        offset = handle.tell()
                        continue
                    if not complete and cache is not None:
                        # A line still being written: keep the state before it.
                        cache.capture(reader, handle, offset, number - 1)
                        kept = True
                    _feed(reader, events, number, line)
                    if complete:
                        offset += len(line)
                if cache is not None and not kept:
                    cache.capture(reader, handle, offset, number)
    if pending is not None:
        last = reader.last_assistant_text
        # The transcript may already hold the step (Claude Code writes it asynchronously).
        if last is None or last.strip() != pending.text.strip() or not pending.text.strip():
            reader.feed(pending)
    contexts = reader.contexts(window)
    return (contexts[-1] if contexts else None), cache


def step_context(
    transcript: Any | None,
    *,
    step: Mapping[str, Any] | None = None,
    window: int | None = None,
    cache: Any | None = None,
) -> StepContext | None:
    """The step to judge: the one a hook handed over (after the transcript), else the
    transcript's last assistant step. None when there is no step at all. With ``cache`` (a
    folder), the transcript is read from where the last run left off and the cache brought up
    to date (``judge.cache``)."""
    context, kept = read_step_context(transcript, step=step, window=window, cache=cache)
    if kept is not None:
        kept.save()
    return context


def read_step_context(
    transcript: Any | None,
    *,
    step: Mapping[str, Any] | None = None,
    window: int | None = None,
    cache: Any | None = None,
) -> tuple[StepContext | None, Any]:
    """``step_context``, with the cache still to save (``judge.cache``) or None: the caller
    decides whether to keep it (a disabled judge keeps nothing)."""
    try:
        readable = transcript is not None and Path(transcript).is_file()
    except (OSError, ValueError):  # a path too long for the file system is no transcript
        readable = False
    pending = step_from_payload(step) if step is not None else None
    if not readable or transcript is None:
        if pending is None:
            return None, None
        reader = StepReader(last_only=True)
        reader.feed(pending)
        contexts = reader.contexts(window)
        return (contexts[-1] if contexts else None), None
    return read_step(
        Path(transcript),
        folder=Path(cache) if cache is not None else None,
        pending=pending,
        window=window,
    )


def _feed(reader: StepReader, events: Any, number: int, line: bytes) -> None:
    """One JSONL line into the reader, as ``gitledger.transcripts`` reads it."""
    stripped = line.strip()
    if not stripped or _is_progress(stripped):
        return
    try:
        text = stripped.decode("utf-8")
    except UnicodeDecodeError:
        text = stripped.decode("utf-8", errors="replace")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return
    if not isinstance(value, dict):
        return
    for event in events.events(number, value):
        reader.feed(event)


__all__ = [
    "CACHE_DIR",
    "FORMAT",
    "read_step",
    "read_step_context",
    "step_context",
]
