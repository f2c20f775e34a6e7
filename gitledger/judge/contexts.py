"""Building the judge's view of a step: from transcript events, from a hook's payload, or from the
conversation a Claude Code function hook hands over (``$.session.messages()``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .calls import is_read_only
from .shapes import DEFAULT_WINDOW, LARGE_WINDOW, Call, Message, Step, StepContext

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from typing import Any

SUMMARY_PREFIX = "This session is being continued from a previous conversation"


def read_message(raw: Mapping[str, Any]) -> Message:
    # A hook's payload is input from outside: tool uses of another shape are skipped, not fatal.
    uses = raw.get("toolUses")
    calls = tuple(
        Call(
            str(use.get("tool", "")),
            dict(use["input"]) if isinstance(use.get("input"), Mapping) else {},
        )
        for use in (uses if isinstance(uses, list) else ())
        if isinstance(use, Mapping)
    )
    text = str(raw.get("text") or "")
    if raw.get("role") == "assistant":
        return Message("assistant", text, calls)
    if raw.get("toolResults"):
        return Message("tool_result", "")
    if text.startswith(SUMMARY_PREFIX):
        return Message("summary", text)
    if "plugin sent a message" in text[:200]:
        return Message("meta", text)
    return Message("user", text)


def window_for(tokens: Iterable[int | None], model: str | None = None) -> int:
    """The context window: 1M for a model that says so or a session that went past 200k."""
    if model and "[1m]" in model.lower():
        return LARGE_WINDOW
    return LARGE_WINDOW if any(t and t > DEFAULT_WINDOW for t in tokens) else DEFAULT_WINDOW


def _usage_tokens(usage: Any) -> int | None:
    """Context size of one response: everything that went in (fresh, cached and cache writes)."""
    if usage is None:
        return None
    parts = [usage.input_tokens, usage.cache_read_tokens, usage.cache_creation_tokens]
    if all(p is None for p in parts):
        return None
    return sum(p or 0 for p in parts)


class StepReader:
    """Reads transcript events into assistant steps; can be saved and resumed (``judge.cache``).

    A step is one model response: the run of assistant events between two tool results or
    prompts (Claude Code writes each content block of a response as a record of its own). The
    history of a step starts at the latest compaction, as the model saw it. Sub-agent events are
    left out: only the main conversation is judged. With ``last_only`` only the latest step is
    kept (a hook judges the latest step: copying each history is quadratic).
    """

    def __init__(self, *, last_only: bool = False) -> None:
        self.last_only = last_only
        self.history: list[Message] = []
        self.epoch = 0  # counts compactions: a step's history is a prefix of this epoch's
        self.steps: list[tuple[list[Message], list[Any], dict[str, Any]]] = []
        self.state: dict[str, Any] = {
            "compacted": False,
            "work": True,
            "post_tokens": None,
            "turn_steps": 0,
        }
        self.group: list[Any] = []
        # Results (and harness notes) that arrive between two blocks of one response are held:
        # when the next block belongs to the same response, the step goes on.
        self.held: list[Any] = []
        self.past_default = False  # some usage went past the default window
        self.model_name: str | None = None
        self.last_tokens: int | None = None
        self.last_assistant_text: str | None = None
        self.last_epoch = 0  # the epoch of the latest step kept

    def _close_group(self) -> None:
        group, state = self.group, self.state
        if not group:
            return
        text = "\n".join(e.text for e in group if e.text.strip())
        calls = tuple(Call(c.name, dict(c.input)) for e in group for c in e.tool_calls)
        tokens = None
        for event in group:
            tokens = _usage_tokens(event.usage) or tokens
        if tokens is None:
            tokens = self.last_tokens
        self.last_tokens = tokens
        if tokens and tokens > DEFAULT_WINDOW:
            self.past_default = True
        if state["compacted"] and state["post_tokens"] is None:
            state["post_tokens"] = tokens
        info = {
            "tokens": tokens,
            "first": state["turn_steps"] == 0,
            "ends": not group[-1].tool_calls,
            "compacted": state["compacted"],
            "work": state["work"],
            "post_tokens": state["post_tokens"],
        }
        if self.last_only:
            self.steps.clear()
        self.steps.append((list(self.history), list(group), info))
        self.last_epoch = self.epoch
        self.history.append(Message("assistant", text, calls))
        state["turn_steps"] += 1
        if state["compacted"] and any(not is_read_only(c) for c in calls):
            state["work"] = True
        group.clear()

    def _take(self, event: Any) -> None:
        kind = event.kind
        history, state = self.history, self.state
        if kind == "tool_result":
            history.append(Message("tool_result", "", (), bool(event.is_error)))
        elif kind == "user":
            if event.is_meta:
                history.append(Message("meta", event.text))
            else:
                history.append(Message("user", event.text, queued=bool(event.queued)))
                if not event.queued:
                    state["turn_steps"] = 0
        elif kind == "compact_boundary":
            self.history = []
            self.epoch += 1
            state.update(compacted=True, work=False, post_tokens=None, turn_steps=0)
        elif kind == "summary":
            history.append(Message("summary", event.text))

    def flush(self) -> None:
        self._close_group()
        for waiting in self.held:
            self._take(waiting)
        self.held.clear()

    def feed(self, event: Any) -> None:
        if event.kind == "assistant":
            self.last_assistant_text = event.text
        if getattr(event, "sidechain", False):
            return
        group = self.group
        if event.kind == "assistant":
            if event.model:
                self.model_name = event.model
            if self.held and not (event.message_id and group[-1].message_id == event.message_id):
                self.flush()  # a new response after results: the step before it is over
            group.append(event)
            return
        if group and group[-1].message_id and event.kind in ("tool_result", "attachment", "system"):
            self.held.append(event)
            return
        self.flush()
        self._take(event)

    def contexts(self, window: int | None = None) -> list[StepContext]:
        """Every step read (the latest only with ``last_only``), once reading is over."""
        self.flush()
        if window:
            size = window
        elif self.model_name and "[1m]" in self.model_name.lower():
            size = LARGE_WINDOW
        else:
            size = LARGE_WINDOW if self.past_default else DEFAULT_WINDOW
        out = []
        for past, group, info in self.steps:
            message_text = "\n".join(e.text for e in group if e.text.strip())
            calls = tuple(Call(c.name, dict(c.input)) for e in group for c in e.tool_calls)
            out.append(
                StepContext(
                    history=tuple(past),
                    step=Step(message_text, calls),
                    context_tokens=info["tokens"],
                    window=size,
                    first_in_turn=info["first"],
                    ends_turn=info["ends"],
                    after_compaction=info["compacted"],
                    work_since_compaction=info["work"],
                    post_compaction_tokens=info["post_tokens"],
                )
            )
        return out


def contexts_from_events(
    events: Iterable[Any], *, window: int | None = None, last_only: bool = False
) -> list[StepContext]:
    """Every assistant step of a transcript (``gitledger.transcripts`` events), in order (see
    ``StepReader``)."""
    reader = StepReader(last_only=last_only)
    for event in events:
        reader.feed(event)
    return reader.contexts(window)


def last_step_context(path: Any, *, window: int | None = None) -> StepContext | None:
    """The last assistant step of a transcript file, or None when it has none."""
    from ..transcripts import read_events

    contexts = contexts_from_events(read_events(path), window=window, last_only=True)
    return contexts[-1] if contexts else None


def step_from_payload(data: Mapping[str, Any]) -> Any:
    """A step handed over by a hook (``{"text": …, "calls": [{"name", "input"}], "usage": …}``)
    as a transcript event, so it is judged after everything the transcript already holds."""
    from ..errors import InvalidInput
    from ..transcripts import Event, ToolCall, Usage

    if not isinstance(data, Mapping):  # context_from_messages passes the payload's "step" on
        raise InvalidInput('A step is {"text": "...", "calls": [{"name": "...", "input": {...}}]}.')
    text = data.get("text", "")
    raw_calls = data.get("calls", [])
    if not isinstance(text, str) or not isinstance(raw_calls, list):
        raise InvalidInput('A step is {"text": "...", "calls": [{"name": "...", "input": {...}}]}.')
    calls = []
    for index, raw in enumerate(raw_calls):
        if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
            raise InvalidInput(
                f"Step call {index + 1} needs a string 'name' and an 'input' object."
            )
        given = raw.get("input")
        calls.append(
            ToolCall(
                str(raw.get("id", "")),
                raw["name"],
                dict(given) if isinstance(given, Mapping) else {},
            )
        )
    usage = None
    tokens = data.get("context_tokens")
    if isinstance(tokens, int) and tokens >= 0:
        usage = Usage(input_tokens=tokens)
    return Event(kind="assistant", text=text, tool_calls=tuple(calls), usage=usage, source="hook")


def context_from_messages(payload: Mapping[str, Any]) -> StepContext:
    """The step a function hook hands over with the conversation as Claude Code holds it.

    ``payload``: ``messages`` (``$.session.messages()``: ``{role, text, toolUses: [{tool,
    input}], toolResults}``, the shape taskcut's replay sets use too), ``step`` (``{text,
    calls}``), ``context_tokens`` and ``window`` (``$.session.measure()``), ``first_in_turn``.
    The conversation starts at the latest compaction, as the model sees it.
    """
    from ..errors import InvalidInput

    raw_messages = payload.get("messages")
    if not isinstance(raw_messages, list) or not all(isinstance(m, Mapping) for m in raw_messages):
        raise InvalidInput('"messages" must be a list of {role, text, toolUses} objects.')
    history = tuple(read_message(m) for m in raw_messages)
    event = step_from_payload(payload.get("step") or {})
    step = Step(event.text, tuple(Call(c.name, dict(c.input)) for c in event.tool_calls))
    # The hook may hand over a conversation that already ends with the step itself.
    # Live, Claude Code's list may already hold the step, and even its tool results.
    end = len(history)
    while end > 0 and history[end - 1].role == "tool_result":
        end -= 1
    start = end
    while start > 0 and history[start - 1].role == "assistant":
        start -= 1
    trailing = "\n".join(m.text for m in history[start:end] if m.text.strip())
    if start < end and trailing.strip() == step.text.strip():
        history = history[:start]
    tokens = payload.get("context_tokens")
    window = payload.get("window")
    compacted = bool(history) and history[0].role == "summary"
    work = any(not is_read_only(c) for m in history if m.role == "assistant" for c in m.calls)
    return StepContext(
        history=history,
        step=step,
        context_tokens=tokens if isinstance(tokens, int) and tokens >= 0 else None,
        window=window if isinstance(window, int) and window > 0 else DEFAULT_WINDOW,
        first_in_turn=bool(payload.get("first_in_turn", False)),
        ends_turn=not step.calls,
        after_compaction=compacted,
        work_since_compaction=work if compacted else True,
        post_compaction_tokens=payload.get("post_compaction_tokens")
        if isinstance(payload.get("post_compaction_tokens"), int)
        else None,
    )


__all__ = [
    "SUMMARY_PREFIX",
    "StepReader",
    "context_from_messages",
    "contexts_from_events",
    "last_step_context",
    "read_message",
    "step_from_payload",
    "window_for",
]
