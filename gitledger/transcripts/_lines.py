"""Streaming JSONL: one parsed record at a time, in bounded memory, never raising on content."""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

from .events import MAX_LINE_BYTES, ReadStats

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from typing import IO, Any

_CHUNK = 1 << 20


def open_regular(path: Path | str) -> IO[bytes]:
    """``path`` opened for reading if it is a regular file; OSError otherwise.

    Opened without blocking and checked on the open file, so a FIFO or a device put in the
    transcript's place (even after a caller checked the name) is refused instead of read forever.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _lines(path: Path, stats: ReadStats) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, bytes, ended_with_newline); lines over MAX_LINE_BYTES are skipped unread."""
    try:
        handle = open_regular(path)  # closed in finally
    except OSError:
        stats.missing = True
        return
    number = 0
    try:
        while True:
            try:
                line = handle.readline(MAX_LINE_BYTES + 1)
            except OSError:
                stats.missing = True
                return
            if not line:
                return
            number += 1
            if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                # Too long: drop what we read and skip to the next newline chunk by chunk.
                stats.oversized_lines += 1
                while True:
                    rest = handle.readline(_CHUNK)
                    if not rest or rest.endswith(b"\n"):
                        break
                continue
            yield number, line, line.endswith(b"\n")
    finally:
        handle.close()


def decode_text(raw: bytes, stats: ReadStats) -> str:
    """``raw`` as UTF-8; bytes that are not become U+FFFD, and ``stats`` counts the line."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        stats.non_utf8_lines += 1
        return raw.decode("utf-8", errors="replace")


def records(path: Path, stats: ReadStats) -> Iterator[tuple[int, dict[str, Any]]]:
    """Every JSON object in a JSONL file with its line number; bad lines counted in ``stats``."""
    for number, raw, complete in lines(path, stats):
        value = decode(raw, complete, stats)
        if value is not None:
            yield number, value


def lines(path: Path, stats: ReadStats) -> Iterator[tuple[int, bytes, bool]]:
    """The raw lines of a JSONL file (see ``_lines``), counted in ``stats``: for a reader that
    looks at a line's bytes before it decodes them (``decode``)."""
    for line in _lines(path, stats):
        stats.lines += 1
        yield line


def decode(raw: bytes, complete: bool, stats: ReadStats) -> dict[str, Any] | None:
    """The JSON object on one line, or None (blank, not JSON, not an object: counted)."""
    stripped = raw.strip()
    if not stripped:
        return None
    try:
        value = json.loads(decode_text(stripped, stats))
    except (ValueError, RecursionError):
        if not complete:
            stats.cut_last_line = True
        else:
            stats.invalid_lines += 1
        return None
    if not isinstance(value, dict):
        stats.invalid_lines += 1
        return None
    return value


_KEYS = ("type", "payload", "sessionId", "uuid", "role", "content")
_TYPE_RE = re.compile(rb'"type"\s*:\s*"([A-Za-z0-9_.-]{1,64})"')


def head_records(head: bytes, limit: int = 20) -> list[dict[str, Any]]:
    """The JSON objects on the whole lines of ``head`` (the first bytes of a file), at most
    ``limit``; the line ``head`` cuts off is sketched from its keys (its first ``"type"`` value
    and which of the keys a format is told by it names), never parsed whole."""
    out: list[dict[str, Any]] = []
    lines = head.split(b"\n")
    cut_off = lines.pop()  # after the last newline: a line that goes on past the head
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        try:
            value = json.loads(stripped.decode("utf-8", errors="replace"))
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            out.append(value)
            if len(out) >= limit:
                return out
    if cut_off.lstrip().startswith(b"{"):
        sketch: dict[str, Any] = {k: True for k in _KEYS if b'"%s"' % k.encode() in cut_off}
        found = _TYPE_RE.search(cut_off)
        sketch["type"] = found.group(1).decode() if found else None
        out.append(sketch)
    return out
