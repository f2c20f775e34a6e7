"""Transcript readers: Claude Code, Codex, Gemini CLI and plain JSONL, as one stream of ``Event``.

    from gitledger.transcripts import read_events, ReadStats
    stats = ReadStats()
    for event in read_events(path, stats=stats):
        ...

``read_events`` sniffs the format from the first records and streams the file one line at a time
(memory stays bounded however long the file is). It never raises on content: see ``ReadStats``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from . import claude_code, codex, gemini, plain
from ._lines import head_records, open_regular
from .events import EVENT_KINDS, Event, ReadStats, ToolCall, Usage

FORMATS = ("claude_code", "codex", "gemini", "plain")


SNIFF_BYTES = 64 * 1024  # the format shows in the first records; a long line is not read whole


def sniff(path: Path) -> str:
    """The format of a transcript file: "claude_code", "codex", "gemini" or "plain" (the fallback).

    Reads only the first ``SNIFF_BYTES`` of the file: whole lines there are parsed, and a line
    longer than that (a 30 MB tool result) is judged by the keys its head names, so sniffing
    costs the same whatever the file holds."""
    try:
        with open_regular(path) as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError:
        head = b""
    if gemini.looks_like(head[:4_096]):
        return "gemini"
    for record in head_records(head):
        rtype = record.get("type")
        rtype = rtype if isinstance(rtype, str) else None  # a list or dict is unhashable
        if rtype in codex.CODEX_TYPES and "payload" in record:
            return "codex"
        if isinstance(rtype, str) and (
            "sessionId" in record
            or "uuid" in record
            or rtype in claude_code.IGNORED_TYPES
            or rtype in {"summary", "queue-operation", "user", "assistant", "system"}
        ):
            return "claude_code"
        if "role" in record and "content" in record:
            return "plain"
    return "plain"


def read_events(
    path: Path | str,
    *,
    stats: ReadStats | None = None,
    format: str | None = None,
    subagents: bool = False,
    skip_result: Callable[[str], bool] | None = None,
) -> Iterator[Event]:
    """Stream the events of one transcript; ``subagents=True`` appends Claude Code's
    ``<session>/subagents/*.jsonl`` transcripts (as sidechain events) after the main file.
    ``skip_result(call_id)``: whether the caller leaves that call's result unread; a long one
    (Claude Code's format) then arrives without its text, undecoded."""
    path = Path(path)
    stats = stats if stats is not None else ReadStats()
    kind = format or sniff(path)
    stats.format = kind
    if kind == "codex":
        yield from codex.read(path, stats)
    elif kind == "claude_code":
        yield from claude_code.read(path, stats, skip_result=skip_result)
        if subagents:
            yield from claude_code.read_subagents(path, stats)
    elif kind == "gemini":
        yield from gemini.read(path, stats)
    elif kind == "plain":
        yield from plain.read(path, stats)
    else:
        raise ValueError(f"unknown transcript format {kind!r}; expected one of {FORMATS}")


__all__ = [
    "EVENT_KINDS",
    "FORMATS",
    "Event",
    "ReadStats",
    "ToolCall",
    "Usage",
    "read_events",
    "sniff",
]
