"""Plain chat JSONL: one ``{"role": ..., "content": ...}`` object per line.

``content`` is a string or a list of ``{"type": "text", "text": ...}`` blocks. Roles ``user``,
``assistant``, ``tool`` (a tool result) and ``system`` are understood; OpenAI-style
``tool_calls`` on assistant lines become tool calls. This is the format to convert any other
agent's log to when it has no reader of its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from ._lines import records
from .claude_code import block_text
from .events import Event, ReadStats, ToolCall, clip, clip_input

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from typing import Any


def _tool_calls(raw: Any) -> tuple[ToolCall, ...]:
    calls: list[ToolCall] = []
    if not isinstance(raw, list):
        return ()
    for item in raw[:50]:
        if not isinstance(item, dict):
            continue
        function: dict[str, Any] = (
            item["function"] if isinstance(item.get("function"), dict) else item
        )
        name = str(function.get("name") or "")
        args = function.get("arguments", function.get("input", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                args = {"input": args}
        calls.append(
            ToolCall(
                id=str(item.get("id") or ""),
                name=name,
                input=clip_input(args) if isinstance(args, dict) else {},
            )
        )
    return tuple(calls)


def read(path: Path, stats: ReadStats) -> Iterator[Event]:
    stats.format = stats.format or "plain"
    names: dict[str, str] = {}
    for number, record in records(path, stats):
        role = record.get("role")
        ts = record.get("timestamp") if isinstance(record.get("timestamp"), str) else None
        text = clip(block_text(record.get("content")))
        common: dict[str, Any] = {"line": number, "source": "plain", "timestamp": ts}
        if role == "user":
            event = Event(kind="user", text=text, **common)
        elif role == "assistant":
            calls = _tool_calls(record.get("tool_calls"))
            for call in calls:
                names[call.id] = call.name
            event = Event(kind="assistant", text=text, tool_calls=calls, **common)
        elif role == "tool":
            call_id = str(record.get("tool_call_id") or "")
            event = Event(
                kind="tool_result",
                text=text,
                tool_use_id=call_id or None,
                tool_name=names.get(call_id) or record.get("name"),
                is_error=bool(record.get("is_error")),
                **common,
            )
        elif role == "system":
            event = Event(kind="system", text=text, subtype="system", is_meta=True, **common)
        else:
            stats.count_unknown(str(role))
            continue
        stats.events += 1
        yield event


__all__ = [
    "read",
]
