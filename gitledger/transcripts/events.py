"""One event stream for every agent's transcript.

Claude Code, Codex and plain ``{"role", "content"}`` JSONL all become a sequence of ``Event``
records. Everything downstream (the fuse's extractor, the step judge) reads only these types, so a
new transcript format is a new reader and nothing else.

Kinds (``Event.kind``), as stable strings:

    user              a message the user typed (or a queued prompt, ``queued=True``);
                      ``is_meta`` marks text the harness wrote in the user's name (caveats,
                      command output, AGENTS.md, environment context)
    assistant         the assistant's text and/or tool calls (``tool_calls``)
    tool_result       a tool's output (``tool_use_id``, ``tool_name``, ``is_error``, ``result``)
    summary           a compaction summary the agent wrote (Claude Code ``isCompactSummary``,
                      Codex ``compacted``)
    compact_boundary  the point where the agent compacted (``result`` has trigger, preTokens)
    title             a session title (Claude Code 1.0 ``summary`` records)
    attachment        harness context attached to a turn (``subtype``: task_reminder, …)
    system            other harness records worth seeing (``subtype``: away_summary, …)

Readers never raise on bad content: lines that are not JSON, records of unknown types, lines over
``MAX_LINE_BYTES`` and a cut last line are skipped and counted in ``ReadStats``.
"""

from __future__ import annotations

from ..structs import asdict, field, struct

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from typing import Any

EVENT_KINDS = (
    "user",
    "assistant",
    "tool_result",
    "summary",
    "compact_boundary",
    "title",
    "attachment",
    "system",
)

# One text field of one event is kept up to this many characters: enough for any real message,
# and it bounds memory for the 10 MB tool outputs some transcripts carry.
MAX_TEXT_CHARS = 100_000
# Tool inputs are kept with each string value cut to this many characters.
MAX_INPUT_CHARS = 8_000
# A line longer than this is skipped (counted as oversized) without being held in memory.
MAX_LINE_BYTES = 32 * 1024 * 1024


@struct(frozen=True, slots=True)
class ToolCall:
    """One tool invocation by the assistant."""

    id: str
    name: str
    input: dict[str, Any]


@struct(frozen=True, slots=True)
class Usage:
    """Token counts of one model response, where the transcript records them."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None


@struct(frozen=True, slots=True)
class Event:
    """One thing that happened in a session. Fields a format lacks stay at their defaults."""

    kind: str
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    # tool_result: which call it answers, that call's tool name (resolved by the reader),
    # whether the tool reported an error, and the structured result when the agent kept one.
    tool_use_id: str | None = None
    tool_name: str | None = None
    is_error: bool = False
    result: Any = None
    # Sub-agents: Claude Code 1.0 writes them inline (isSidechain), 2.x under <session>/subagents/.
    sidechain: bool = False
    agent_id: str | None = None
    timestamp: str | None = None
    usage: Usage | None = None
    stop_reason: str | None = None
    is_meta: bool = False
    queued: bool = False
    subtype: str | None = None
    uuid: str | None = None
    parent_uuid: str | None = None
    session_id: str | None = None
    cwd: str | None = None
    branch: str | None = None  # the git branch checked out when the record was written
    model: str | None = None
    # The model response an assistant event is part of (Claude Code writes each content block of
    # one response as a record of its own, and a tool's result can come between them).
    message_id: str | None = None
    line: int = 0  # 1-based line number in the file it came from
    source: str = ""  # "claude_code", "codex" or "plain"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@struct(slots=True)
class ReadStats:
    """What a reader saw and what it skipped; never an exception."""

    format: str = ""
    lines: int = 0
    events: int = 0
    invalid_lines: int = 0  # not JSON, or JSON that is not an object
    unknown_types: int = 0  # records of a type this reader does not know
    ignored: int = 0  # known records with nothing for the task line (progress, snapshots …)
    oversized_lines: int = 0  # lines over MAX_LINE_BYTES
    non_utf8_lines: int = 0  # lines with bytes that are not UTF-8 (decoded with U+FFFD)
    cut_last_line: bool = False  # the file did not end with a newline and its tail was not JSON
    missing: bool = False  # the file did not exist or could not be read
    unread_results: int = 0  # long tool results the caller does not read, left undecoded
    unknown_type_names: dict[str, int] = field(default_factory=dict)

    def count_unknown(self, name: str) -> None:
        self.unknown_types += 1
        if len(self.unknown_type_names) < 50 or name in self.unknown_type_names:
            self.unknown_type_names[name] = self.unknown_type_names.get(name, 0) + 1

    @property
    def skipped(self) -> int:
        return self.invalid_lines + self.unknown_types + self.oversized_lines

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["skipped"] = self.skipped
        return out


def clip(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    return text if len(text) <= limit else text[:limit]


def clip_input(value: Any, limit: int = MAX_INPUT_CHARS, depth: int = 0) -> Any:
    """A tool input with long strings cut, so one huge Write does not pin megabytes."""
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit]
    if depth > 6:
        return None
    if isinstance(value, dict):
        return {str(k): clip_input(v, limit, depth + 1) for k, v in list(value.items())[:200]}
    if isinstance(value, list):
        return [clip_input(v, limit, depth + 1) for v in value[:200]]
    return value


__all__ = [
    "EVENT_KINDS",
    "MAX_INPUT_CHARS",
    "MAX_LINE_BYTES",
    "MAX_TEXT_CHARS",
    "Event",
    "ReadStats",
    "ToolCall",
    "Usage",
    "clip",
    "clip_input",
]
