"""Codex CLI rollout files (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Each line is ``{"timestamp", "type", "payload"}``. The conversation is in ``response_item``
records (messages, function and custom tool calls and their outputs); ``event_msg`` repeats the
user and agent messages for the UI, so only its token counts are read. ``compacted`` records hold
the summary Codex wrote when it compacted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from ._lines import records
from .events import Event, ReadStats, ToolCall, Usage, clip, clip_input

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from typing import Any

CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
# User messages Codex writes itself in the user's name.
_META_PREFIXES = ("<environment_context>", "# AGENTS.md instructions", "<user_instructions>")


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
    return "\n".join(parts)


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        clipped: dict[str, Any] = clip_input(raw)
        return clipped
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return {"input": clip_input(raw)}
        if isinstance(value, dict):
            parsed: dict[str, Any] = clip_input(value)
            return parsed
        return {"input": clip_input(value)}
    return {}


def read(path: Path, stats: ReadStats) -> Iterator[Event]:
    stats.format = stats.format or "codex"
    names: dict[str, str] = {}
    cwd: str | None = None
    session: str | None = None
    for number, record in records(path, stats):
        rtype = record.get("type")
        rtype = rtype if isinstance(rtype, str) else None  # a list or dict is unhashable
        payload = record.get("payload")
        ts = record.get("timestamp") if isinstance(record.get("timestamp"), str) else None
        if not isinstance(payload, dict):
            if rtype in CODEX_TYPES:
                stats.invalid_lines += 1
            else:
                stats.count_unknown(str(rtype))
            continue
        common: dict[str, Any] = {
            "line": number,
            "source": "codex",
            "timestamp": ts,
            "cwd": cwd,
            "session_id": session,
        }
        event: Event | None = None
        if rtype == "session_meta":
            cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
            session = payload.get("id") if isinstance(payload.get("id"), str) else None
            stats.ignored += 1
            continue
        if rtype == "compacted":
            event = Event(kind="summary", text=clip(str(payload.get("message") or "")), **common)
        elif rtype == "event_msg":
            if payload.get("type") == "token_count":
                info = payload.get("info")
                usage = info.get("last_token_usage") if isinstance(info, dict) else None
                if isinstance(usage, dict):
                    event = Event(
                        kind="system",
                        subtype="token_count",
                        usage=Usage(
                            input_tokens=usage.get("input_tokens"),
                            output_tokens=usage.get("output_tokens"),
                            cache_read_tokens=usage.get("cached_input_tokens"),
                        ),
                        **common,
                    )
            if event is None:
                stats.ignored += 1
                continue
        elif rtype == "response_item":
            event = _response_item(payload, names, common)
            if event is None:
                stats.ignored += 1
                continue
        elif rtype == "turn_context":
            if isinstance(payload.get("cwd"), str):
                cwd = payload["cwd"]
            stats.ignored += 1
            continue
        else:
            stats.count_unknown(str(rtype))
            continue
        stats.events += 1
        yield event


def _response_item(
    payload: dict[str, Any], names: dict[str, str], common: dict[str, Any]
) -> Event | None:
    ptype = payload.get("type")
    ptype = ptype if isinstance(ptype, str) else None
    if ptype == "message":
        role = payload.get("role")
        text = _content_text(payload.get("content"))
        if role == "user":
            meta = text.lstrip().startswith(_META_PREFIXES)
            return Event(kind="user", text=clip(text), is_meta=meta, **common)
        if role == "assistant":
            return Event(kind="assistant", text=clip(text), **common)
        return None  # developer/system messages: instructions, not the task line
    if ptype in {"function_call", "custom_tool_call", "local_shell_call"}:
        call_id = str(payload.get("call_id") or payload.get("id") or "")
        name = str(payload.get("name") or ("shell" if ptype == "local_shell_call" else ""))
        raw = payload.get("arguments", payload.get("input", payload.get("action")))
        names[call_id] = name
        if len(names) > 20_000:
            names.pop(next(iter(names)))
        return Event(
            kind="assistant",
            tool_calls=(ToolCall(id=call_id, name=name, input=_arguments(raw)),),
            **common,
        )
    if ptype in {"function_call_output", "custom_tool_call_output"}:
        call_id = str(payload.get("call_id") or "")
        output = payload.get("output")
        text = ""
        is_error = False
        if isinstance(output, str):
            text = output
            try:
                parsed = json.loads(output)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                text = str(parsed.get("output", output))
                metadata = parsed.get("metadata")
                if isinstance(metadata, dict) and isinstance(metadata.get("exit_code"), int):
                    is_error = bool(metadata["exit_code"] != 0)
        elif isinstance(output, dict):
            text = str(output.get("content") or output.get("output") or "")
            is_error = bool(output.get("success") is False)
        return Event(
            kind="tool_result",
            text=clip(text),
            tool_use_id=call_id or None,
            tool_name=names.get(call_id),
            is_error=is_error,
            **common,
        )
    return None


__all__ = [
    "CODEX_TYPES",
    "read",
]
