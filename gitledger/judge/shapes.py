"""What the judge reads and what it answers: calls, messages, a step in its context, a verdict."""

from __future__ import annotations

from collections.abc import Mapping

from ..structs import asdict, field, struct

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from typing import Any

NEXT = "NEXT"
SAME = "SAME"

DEFAULT_FLOOR = 35.0
HYSTERESIS_POINTS = 5.0
DEFAULT_WINDOW = 200_000
LARGE_WINDOW = 1_000_000


@struct(frozen=True)
class Call:
    """One tool call of the assistant: its name and input (the judge never sees its output)."""

    name: str
    input: Mapping[str, Any] = field(default_factory=dict)


@struct(frozen=True)
class Message:
    """One message in the context, reduced to what the judge reads.

    ``role`` is ``user`` (a request the person typed), ``assistant``, ``tool_result`` (output,
    never read beyond its existence and error flag), ``summary`` (a compaction summary) or
    ``meta`` (text the harness or a plugin wrote in the person's name).
    """

    role: str
    text: str = ""
    calls: tuple[Call, ...] = ()
    is_error: bool = False
    queued: bool = False  # a user message typed while the assistant worked: it opens no turn


@struct(frozen=True)
class Step:
    """The step being judged: what the assistant just said and the calls it is making."""

    text: str
    calls: tuple[Call, ...] = ()


@struct(frozen=True)
class StepContext:
    """A step with everything the gate and the judges need, built from a transcript."""

    history: tuple[Message, ...]  # the context before the step, from the last compaction on
    step: Step
    context_tokens: int | None = None  # usage recorded for the step (or the latest before it)
    window: int = DEFAULT_WINDOW
    first_in_turn: bool = False
    ends_turn: bool = False  # the step's last block is not a tool call: nothing continues
    after_compaction: bool = False  # the history starts at a compaction
    work_since_compaction: bool = True  # a non-read-only call has run since that compaction
    post_compaction_tokens: int | None = None  # the first usage recorded after that compaction

    @property
    def fill(self) -> float | None:
        if self.context_tokens is None or self.window <= 0:
            return None
        return 100.0 * self.context_tokens / self.window


@struct(frozen=True)
class Verdict:
    """The judge's answer. ``judged`` is False when the gate skipped the step (then SAME)."""

    decision: str
    reason: str
    rule: str
    judged: bool = True
    unsure: bool = False
    by: str = "rules"  # rules | model | gate
    fill: float | None = None
    elapsed_ms: float = 0.0

    @property
    def is_next(self) -> bool:
        return self.decision == NEXT

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


__all__ = [
    "Call",
    "DEFAULT_FLOOR",
    "DEFAULT_WINDOW",
    "HYSTERESIS_POINTS",
    "LARGE_WINDOW",
    "Message",
    "NEXT",
    "SAME",
    "Step",
    "StepContext",
    "Verdict",
]
