"""Gemini CLI chat files (``~/.gemini/tmp/<project>/chats/session-*.json``).

Unlike the other agents, Gemini CLI keeps a session as one JSON document
(``{"sessionId", "projectHash", "startTime", "lastUpdated", "messages": [...]}``), rewritten as the
session goes. It has to be parsed whole, so files over ``MAX_FILE_BYTES`` are skipped (counted as
oversized) rather than loaded. Messages of type ``user`` and ``gemini`` (with ``toolCalls`` whose
``result`` holds the tool output) become events; ``info``/``error``/``warning`` become system events.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from ._lines import decode_text
from .events import Event, ReadStats, ToolCall, Usage, clip, clip_input

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from typing import Any

MAX_FILE_BYTES = 64 * 1024 * 1024


def looks_like(head: bytes) -> bool:
    """Whether the first bytes of a file look like a Gemini CLI chat file."""
    text = head.lstrip()
    if not text.startswith(b"{") or b'"messages"' not in head:
        return False
    # Gemini writes the document indented (a lone "{" first line), or carries projectHash.
    return text.split(b"\n", 1)[0].strip() == b"{" or b'"projectHash"' in head


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text")) for part in content if isinstance(part, dict) and part.get("text")
        )
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return str(content["text"])
    return ""


def _result_text(call: dict[str, Any]) -> str:
    result = call.get("result")
    parts: list[str] = []
    if isinstance(result, list):
        for item in result:
            response = item.get("functionResponse") if isinstance(item, dict) else None
            body = response.get("response") if isinstance(response, dict) else None
            if isinstance(body, dict):
                value = body.get("output", body.get("error", body))
                parts.append(value if isinstance(value, str) else json.dumps(value)[:4_000])
            elif isinstance(item, dict) and isinstance(item.get("text"), str):
                parts.append(item["text"])
    if not parts and isinstance(call.get("resultDisplay"), str):
        parts.append(call["resultDisplay"])
    return "\n".join(parts)


def read(path: Path, stats: ReadStats) -> Iterator[Event]:
    stats.format = stats.format or "gemini"
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            stats.oversized_lines += 1
            return
        raw = path.read_bytes()
    except OSError:
        stats.missing = True
        return
    stats.lines = raw.count(b"\n") + 1
    text = decode_text(raw, stats)
    try:
        document = json.loads(text)
    except ValueError:
        # Gemini CLI rewrites the file in place: a half-written one is the cut-last-line case.
        stats.cut_last_line = True
        return
    messages = document.get("messages") if isinstance(document, dict) else None
    if not isinstance(messages, list):
        stats.invalid_lines += 1
        return
    session = document.get("sessionId") if isinstance(document.get("sessionId"), str) else None
    for number, message in enumerate(messages, start=1):
        if not isinstance(message, dict):
            stats.invalid_lines += 1
            continue
        kind = message.get("type")
        kind = kind if isinstance(kind, str) else None  # a list or dict is unhashable
        ts = message.get("timestamp") if isinstance(message.get("timestamp"), str) else None
        common: dict[str, Any] = {
            "line": number,
            "source": "gemini",
            "timestamp": ts,
            "session_id": session,
            "uuid": message.get("id") if isinstance(message.get("id"), str) else None,
        }
        if kind == "user":
            stats.events += 1
            yield Event(kind="user", text=clip(_text(message.get("content"))), **common)
        elif kind == "gemini":
            raw_calls = message.get("toolCalls")
            calls = (
                [c for c in raw_calls if isinstance(c, dict)] if isinstance(raw_calls, list) else []
            )
            tokens = message.get("tokens")
            usage = None
            if isinstance(tokens, dict):
                usage = Usage(
                    input_tokens=tokens.get("input")
                    if isinstance(tokens.get("input"), int)
                    else None,
                    output_tokens=tokens.get("output")
                    if isinstance(tokens.get("output"), int)
                    else None,
                    cache_read_tokens=tokens.get("cached")
                    if isinstance(tokens.get("cached"), int)
                    else None,
                )
            stats.events += 1
            yield Event(
                kind="assistant",
                text=clip(_text(message.get("content"))),
                tool_calls=tuple(
                    ToolCall(
                        id=str(c.get("id") or ""),
                        name=str(c.get("name") or ""),
                        input=clip_input(c["args"]) if isinstance(c.get("args"), dict) else {},
                    )
                    for c in calls
                ),
                usage=usage,
                model=message.get("model") if isinstance(message.get("model"), str) else None,
                **common,
            )
            for call in calls:
                stats.events += 1
                yield Event(
                    kind="tool_result",
                    text=clip(_result_text(call)),
                    tool_use_id=str(call.get("id") or "") or None,
                    tool_name=str(call.get("name") or "") or None,
                    is_error=str(call.get("status")) in {"error", "cancelled"},
                    **common,
                )
        elif kind in {"info", "error", "warning"}:
            stats.events += 1
            yield Event(
                kind="system",
                subtype=str(kind),
                text=clip(_text(message.get("content"))),
                is_meta=True,
                **common,
            )
        else:
            stats.count_unknown(str(kind))


__all__ = [
    "MAX_FILE_BYTES",
    "looks_like",
    "read",
]
