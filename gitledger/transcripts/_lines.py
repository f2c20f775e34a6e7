"""Streaming JSONL: one parsed record at a time, in bounded memory, never raising on content."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from .events import MAX_LINE_BYTES, ReadStats

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


def records(path: Path, stats: ReadStats) -> Iterator[tuple[int, dict[str, Any]]]:
    """Every JSON object in a JSONL file with its line number; bad lines counted in ``stats``."""
    for number, raw, complete in _lines(path, stats):
        stats.lines += 1
        stripped = raw.strip()
        if not stripped:
            continue
        try:
            text = stripped.decode("utf-8")
        except UnicodeDecodeError:
            stats.non_utf8_lines += 1
            text = stripped.decode("utf-8", errors="replace")
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            if not complete:
                stats.cut_last_line = True
            else:
                stats.invalid_lines += 1
            continue
        if not isinstance(value, dict):
            stats.invalid_lines += 1
            continue
        yield number, value


def first_records(path: Path, limit: int = 20) -> list[dict[str, Any]]:
    """The first few JSON objects of a file, for sniffing its format."""
    out: list[dict[str, Any]] = []
    stats = ReadStats()
    for _, record in records(path, stats):
        out.append(record)
        if len(out) >= limit:
            break
    return out
