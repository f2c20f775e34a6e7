"""Claude Code session transcripts (``~/.claude/projects/<project>/<session>.jsonl``).

Covers 1.0 (sub-agents inline with ``isSidechain``, ``summary`` title records), 2.0 and 2.1
(attachments such as ``task_reminder``, ``queue-operation`` records for prompts typed while the
agent was busy, ``system``/``compact_boundary`` followed by the ``isCompactSummary`` user record,
and sub-agent transcripts under ``<session>/subagents/agent-*.jsonl``).

Claude Code writes one record per content block of a response (a text block and each tool call are
separate records with the same message id), so one response may be several ``assistant`` events.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

from ._lines import decode, lines, records
from .events import Event, ReadStats, ToolCall, Usage, clip, clip_input

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from typing import Any

# Records that carry nothing for the task line; skipped silently (counted as ignored).
IGNORED_TYPES = frozenset(
    {
        "progress",
        "file-history-snapshot",
        "permission-mode",
        "last-prompt",
        "custom-title",
        "tag",
        "agent-name",
        "pr-link",
        "worktree-state",
        "mode",
    }
)
# System subtypes worth an event; others are ignored.
SYSTEM_KEPT = frozenset({"away_summary", "api_error", "informational", "local_command"})
# How many tool-use ids to remember for naming tool results (bounded memory).
_MAX_REMEMBERED_CALLS = 20_000


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _usage(message: dict[str, Any]) -> Usage | None:
    raw = message.get("usage")
    if not isinstance(raw, dict):
        return None
    return Usage(
        input_tokens=_int(raw.get("input_tokens")),
        output_tokens=_int(raw.get("output_tokens")),
        cache_read_tokens=_int(raw.get("cache_read_input_tokens")),
        cache_creation_tokens=_int(raw.get("cache_creation_input_tokens")),
    )


def block_text(content: Any) -> str:
    """The text of a content value: a string, or the text blocks of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                value = block.get("text")
                if isinstance(value, str):
                    parts.append(value)
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return ""


def _small_result(value: Any) -> Any:
    """The structured toolUseResult, minus bulky fields (file contents, full prompts)."""
    if not isinstance(value, dict):
        return clip_input(value, 2_000) if isinstance(value, str | list) else None
    out = {}
    for key, item in value.items():
        if key in {"originalFile", "structuredPatch", "file", "content", "stdout", "stderr"}:
            continue
        out[key] = clip_input(item, 2_000)
    return out


def _blocks(content: list[Any], kind: str, texts: list[str]) -> list[dict[str, Any]]:
    """The blocks of type ``kind`` in a message's content list; the text of its text blocks is
    appended to ``texts`` on the way (any other block, and anything not a dict, is passed over)."""
    found = []
    for block in content:
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif btype == kind:
            found.append(block)
    return found


class ClaudeCodeReader:
    """Turns Claude Code JSONL records into events; holds the tool-use id → name map."""

    def __init__(self, stats: ReadStats, agent_id: str | None = None) -> None:
        self.stats = stats
        self.agent_id = agent_id
        self.tool_names: dict[str, str] = {}

    def _remember(self, call_id: str, name: str) -> None:
        if len(self.tool_names) >= _MAX_REMEMBERED_CALLS:
            self.tool_names.pop(next(iter(self.tool_names)))
        self.tool_names[call_id] = name

    def events(self, number: int, record: dict[str, Any]) -> Iterator[Event]:
        kind = record.get("type")
        if not isinstance(kind, str):
            self.stats.count_unknown("<none>")
            return
        common: dict[str, Any] = {
            "line": number,
            "source": "claude_code",
            "timestamp": record.get("timestamp")
            if isinstance(record.get("timestamp"), str)
            else None,
            "sidechain": bool(record.get("isSidechain")) or self.agent_id is not None,
            "agent_id": record.get("agentId") or self.agent_id,
            "uuid": record.get("uuid"),
            "parent_uuid": record.get("parentUuid"),
            "session_id": record.get("sessionId"),
            "cwd": record.get("cwd") if isinstance(record.get("cwd"), str) else None,
            "branch": record.get("gitBranch") if isinstance(record.get("gitBranch"), str) else None,
            "is_meta": bool(record.get("isMeta")),
        }
        if kind == "user":
            yield from self._user(record, common)
        elif kind == "assistant":
            yield from self._assistant(record, common)
        elif kind == "system":
            subtype = record.get("subtype")
            subtype = subtype if isinstance(subtype, str) else None
            if subtype == "compact_boundary":
                meta = record.get("compactMetadata")
                yield Event(
                    kind="compact_boundary",
                    text=str(record.get("content") or ""),
                    result=meta if isinstance(meta, dict) else None,
                    subtype=subtype,
                    **common,
                )
            elif subtype in SYSTEM_KEPT:
                yield Event(
                    kind="system",
                    text=clip(str(record.get("content") or "")),
                    subtype=str(subtype),
                    **common,
                )
            else:
                self.stats.ignored += 1
        elif kind == "summary":
            yield Event(kind="title", text=clip(str(record.get("summary") or "")), **common)
        elif kind == "attachment":
            yield from self._attachment(record, common)
        elif kind == "queue-operation":
            if record.get("operation") == "enqueue":
                text = block_text(record.get("content"))
                if text.strip():
                    yield Event(kind="user", text=clip(text), queued=True, **common)
                    return
            self.stats.ignored += 1
        elif kind in IGNORED_TYPES:
            self.stats.ignored += 1
        else:
            self.stats.count_unknown(kind)

    def _user(self, record: dict[str, Any], common: dict[str, Any]) -> Iterator[Event]:
        message = record.get("message")
        if not isinstance(message, dict):
            self.stats.invalid_lines += 1
            return
        content = message.get("content")
        if record.get("isCompactSummary"):
            yield Event(kind="summary", text=clip(block_text(content)), **common)
            return
        if isinstance(content, str):
            yield Event(kind="user", text=clip(content), **common)
            return
        if not isinstance(content, list):
            return
        texts: list[str] = []
        tool_use_result = record.get("toolUseResult")
        for block in _blocks(content, "tool_result", texts):
            call_id = str(block.get("tool_use_id") or "")
            yield Event(
                kind="tool_result",
                text=clip(block_text(block.get("content"))),
                tool_use_id=call_id or None,
                tool_name=self.tool_names.get(call_id),
                is_error=bool(block.get("is_error")),
                result=_small_result(tool_use_result),
                **common,
            )
        if texts:
            yield Event(kind="user", text=clip("\n".join(texts)), **common)

    def _assistant(self, record: dict[str, Any], common: dict[str, Any]) -> Iterator[Event]:
        message = record.get("message")
        if not isinstance(message, dict):
            self.stats.invalid_lines += 1
            return
        content = message.get("content")
        texts: list[str] = []
        calls: list[ToolCall] = []
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            for block in _blocks(content, "tool_use", texts):
                call_id = str(block.get("id") or "")
                name = str(block.get("name") or "")
                raw_input = block.get("input")
                calls.append(
                    ToolCall(
                        id=call_id,
                        name=name,
                        input=clip_input(raw_input) if isinstance(raw_input, dict) else {},
                    )
                )
                if call_id:
                    self._remember(call_id, name)
        if not texts and not calls:
            self.stats.ignored += 1  # thinking-only or empty blocks
            return
        model = message.get("model")
        message_id = message.get("id")
        yield Event(
            kind="assistant",
            text=clip("\n".join(texts)),
            tool_calls=tuple(calls),
            usage=_usage(message),
            stop_reason=message.get("stop_reason")
            if isinstance(message.get("stop_reason"), str)
            else None,
            model=model if isinstance(model, str) else None,
            message_id=message_id if isinstance(message_id, str) else None,
            **common,
        )

    def _attachment(self, record: dict[str, Any], common: dict[str, Any]) -> Iterator[Event]:
        attachment = record.get("attachment")
        if not isinstance(attachment, dict):
            self.stats.invalid_lines += 1
            return
        subtype = str(attachment.get("type") or "")
        if subtype == "queued_command":
            prompt = attachment.get("prompt")
            text = prompt if isinstance(prompt, str) else block_text(prompt)
            if text.strip():
                yield Event(kind="user", text=clip(text), queued=True, subtype=subtype, **common)
                return
        if subtype in {"task_reminder", "todo_reminder", "plan_file_reference", "edited_text_file"}:
            yield Event(
                kind="attachment",
                subtype=subtype,
                text=clip(block_text(attachment.get("content"))),
                result=clip_input(attachment.get("content") or attachment.get("filename"), 2_000),
                **common,
            )
            return
        self.stats.ignored += 1


# A tool result is skipped unread only from this size on: a shorter line costs little to decode.
SKIP_FROM_BYTES = 4_096
_HEAD_BYTES = 8_192  # where a result line names its call: before its content
_RESULT_ID_RE = re.compile(rb'"tool_use_id"\s*:\s*"([A-Za-z0-9_.:-]{1,200})"')
_TIMESTAMP_RE = re.compile(rb'"timestamp"\s*:\s*"([0-9T:.+Z-]{10,40})"')
_ERROR_RE = re.compile(rb'"is_error"\s*:\s*true')


def _unread_result(raw: bytes, skip: Callable[[str], bool]) -> str | None:
    """The call id of a long line that is one tool result the caller does not read, judged
    from its bytes: exactly one ``tool_use_id``, named in its head, no error, not a summary,
    and ``skip(id)`` says so. None for any other line, which is decoded as always."""
    head = raw[:_HEAD_BYTES]
    if b'"tool_result"' not in head or raw.count(b'"tool_use_id"') != 1:
        return None
    found = _RESULT_ID_RE.search(head)
    if found is None or b"isCompactSummary" in raw or _ERROR_RE.search(raw):
        return None
    call_id = found.group(1).decode("ascii")
    return call_id if skip(call_id) else None


def read(
    path: Path,
    stats: ReadStats,
    *,
    agent_id: str | None = None,
    skip_result: Callable[[str], bool] | None = None,
) -> Iterator[Event]:
    """The events of a Claude Code transcript. ``skip_result(call_id)``: whether the caller
    reads the result of that tool call; a long result it does not read (an ``Edit``'s file copy,
    a ``Read``'s content) is not decoded: its event has no text, only its call and time."""
    stats.format = stats.format or "claude_code"
    reader = ClaudeCodeReader(stats, agent_id=agent_id)
    if skip_result is None:
        for number, record in records(path, stats):
            for event in reader.events(number, record):
                stats.events += 1
                yield event
        return
    for number, raw, complete in lines(path, stats):
        long = complete and len(raw) >= SKIP_FROM_BYTES
        call_id = _unread_result(raw, skip_result) if long else None
        if call_id is not None:
            stamp = _TIMESTAMP_RE.search(raw)
            stats.unread_results += 1
            stats.events += 1
            yield Event(
                kind="tool_result",
                tool_use_id=call_id,
                tool_name=reader.tool_names.get(call_id),
                timestamp=stamp.group(1).decode("ascii") if stamp else None,
                line=number,
                source="claude_code",
            )
            continue
        value = decode(raw, complete, stats)
        if value is None:
            continue
        for event in reader.events(number, value):
            stats.events += 1
            yield event


def subagent_files(path: Path) -> list[Path]:
    """Sub-agent transcripts Claude Code 2.x writes beside a session (``<session>/subagents``)."""
    folder = path.with_suffix("") / "subagents"
    try:
        return sorted(folder.glob("agent-*.jsonl"))
    except OSError:
        return []


def read_subagents(path: Path, stats: ReadStats) -> Iterator[Event]:
    """Events of every sub-agent transcript of a session, one file after another."""
    for sub in subagent_files(path):
        agent = sub.stem.removeprefix("agent-")
        yield from read(sub, stats, agent_id=agent)


__all__ = [
    "ClaudeCodeReader",
    "IGNORED_TYPES",
    "SYSTEM_KEPT",
    "block_text",
    "read",
    "read_subagents",
    "subagent_files",
]
