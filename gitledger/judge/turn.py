"""The turn pipeline, for agents without step hooks: should the session compact now that a turn ended?"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from .calls import EDIT_TOOLS, TASK_TOOLS, TaskList, _kind
from .contexts import _usage_tokens, window_for
from .shapes import Call
from .state import JudgeConfig, TurnState, _parse_bool

# --- the turn pipeline ----------------------------------------------------------------------
#
# For agents without step hooks the question is asked once a turn ends. Rules, in order: tasks
# in progress → no; a cooldown after a deferral → no; then any of the candidate rules proposes
# compacting, and a verdict with five fields (is the task finished? the impact of compacting
# now? unsaved work? why? how urgent?) confirms or defers it. Deferrals back off 5 → 10 → 20
# turns. At 85% fill a compaction by the agent itself is near, so archiving first only needs
# "safe, and impact not high". Everything the rules read comes from the transcript (so asking
# twice in one turn gives one answer); what must persist -- the cooldown, the backoff, the last
# decisions -- is a small JSON state per session on ``refs/gitledger/judge/<session>``.

IMPACTS = ("low", "medium", "high")
URGENCIES = ("low", "normal", "high")


@dataclass(frozen=True)
class TurnVerdict:
    """The five-field verdict that confirms or defers a candidate."""

    task_finished: bool
    impact: str  # low | medium | high: what compacting now would lose
    unsaved_work: bool
    reason: str
    urgency: str = "normal"  # low | normal | high

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TurnVerdict:
        from ..errors import InvalidInput

        missing = [
            k for k in ("task_finished", "impact", "unsaved_work", "reason") if k not in data
        ]
        if missing:
            raise InvalidInput(
                f"The verdict lacks {', '.join(missing)}. Give all five fields: "
                '{"task_finished": true, "impact": "low", "unsaved_work": false, '
                '"reason": "...", "urgency": "normal"}.'
            )
        impact = str(data["impact"]).lower()
        urgency = str(data.get("urgency", "normal")).lower()
        if impact not in IMPACTS or urgency not in URGENCIES:
            raise InvalidInput(
                f"impact must be one of {', '.join(IMPACTS)} and urgency one of "
                f"{', '.join(URGENCIES)}; got impact={impact!r}, urgency={urgency!r}."
            )
        flags = {}
        for key in ("task_finished", "unsaved_work"):
            value = data[key]
            if isinstance(value, bool):
                flags[key] = value
            else:
                try:
                    flags[key] = _parse_bool(str(value))
                except ValueError as exc:
                    raise InvalidInput(f"{key} must be true or false, not {value!r}.") from exc
        return cls(
            task_finished=flags["task_finished"],
            impact=impact,
            unsaved_work=flags["unsaved_work"],
            reason=str(data["reason"])[:500],
            urgency=urgency,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TurnSignals:
    """What the turn rules read, all derived from the transcript."""

    turn: int  # prompts the person has sent so far
    in_progress: int  # task-list items in progress
    plan_items: int
    plan_done_now: bool  # the last open plan item was completed in this turn
    long_task_finished: bool  # an item in progress for at least N turns went completed this turn
    longest_finished_turns: int
    fill: float | None
    idle_turns: int  # turns in a row, ending with this one, with no edit and no failure
    turns_since_compaction: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def turn_signals(
    events: Iterable[Any], *, window: int | None = None, long_task_turns: int = 5
) -> TurnSignals:
    tasks = TaskList()
    turn = 0
    since_compaction = 0
    started_at: dict[str, int] = {}
    finished_this_turn: list[int] = []
    completed_this_turn = False
    busy_turns: set[int] = set()
    tokens: int | None = None
    tokens_seen: list[int | None] = []
    model_name: str | None = None
    for event in events:
        if getattr(event, "sidechain", False):
            continue
        if event.kind == "user" and not event.is_meta and not event.queued:
            turn += 1
            since_compaction += 1
            finished_this_turn = []
            completed_this_turn = False
        elif event.kind == "compact_boundary":
            since_compaction = 0
        elif event.kind == "tool_result" and event.is_error:
            busy_turns.add(turn)
        elif event.kind == "assistant":
            model_name = event.model or model_name
            value = _usage_tokens(event.usage)
            if value:
                tokens = value
                tokens_seen.append(value)
            for raw in event.tool_calls:
                call = Call(raw.name, dict(raw.input))
                if call.name in EDIT_TOOLS or _kind(call) == "write":
                    busy_turns.add(turn)
                if call.name not in TASK_TOOLS:
                    continue
                for key, _old, new in tasks.apply(call):
                    if new == "in_progress":
                        started_at.setdefault(key, turn)
                    elif new == "completed":
                        completed_this_turn = True
                        finished_this_turn.append(turn - started_at.pop(key, turn) + 1)
    size = window or window_for(tokens_seen, model_name)
    idle = 0
    for t in range(turn, 0, -1):
        if t in busy_turns:
            break
        idle += 1
    longest = max(finished_this_turn, default=0)
    return TurnSignals(
        turn=turn,
        in_progress=len(tasks.in_progress()),
        plan_items=len(tasks.items),
        plan_done_now=bool(tasks.items) and completed_this_turn and not tasks.open_items(),
        long_task_finished=longest >= long_task_turns,
        longest_finished_turns=longest,
        fill=None if tokens is None else 100.0 * tokens / size,
        idle_turns=idle,
        turns_since_compaction=since_compaction,
    )


@dataclass(frozen=True)
class TurnDecision:
    """``compact`` (confirmed), ``defer`` (backed off), ``candidate`` (needs the five-field
    verdict), ``no`` or ``off`` (the judge is disabled)."""

    decision: str
    reason: str
    candidates: tuple[str, ...]
    signals: TurnSignals | None
    verdict: TurnVerdict | None = None
    cooldown_until: int = 0
    checkpoint: str | None = None  # the fuse snapshot committed when the decision is compact

    def to_dict(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "reason": self.reason,
            "candidates": list(self.candidates),
            "signals": self.signals.to_dict() if self.signals else None,
            "verdict": self.verdict.to_dict() if self.verdict else None,
            "cooldown_until": self.cooldown_until,
            "checkpoint": self.checkpoint,
        }


def decide_turn(
    signals: TurnSignals,
    state: TurnState,
    config: JudgeConfig,
    verdict: TurnVerdict | None = None,
) -> TurnDecision:
    """The pipeline for one turn end; updates ``state`` in place (the caller stores it)."""
    if not config.enabled:
        return TurnDecision("off", "the judge is disabled (enabled=false)", (), signals)
    turn = signals.turn

    def done(decision: TurnDecision) -> TurnDecision:
        entry = {"turn": turn, "decision": decision.decision, "reason": decision.reason}
        if not state.decisions or state.decisions[-1] != entry:  # asking twice changes nothing
            state.decisions.append(entry)
            del state.decisions[:-20]
        return decision

    if signals.in_progress > 0:
        return done(TurnDecision("no", f"{signals.in_progress} task(s) in progress", (), signals))
    if turn < state.cooldown_until:
        return done(
            TurnDecision(
                "no",
                f"cooling down after a deferral until turn {state.cooldown_until}",
                (),
                signals,
                cooldown_until=state.cooldown_until,
            )
        )
    candidates = []
    if signals.plan_done_now:
        candidates.append("every plan item is done")
    if signals.long_task_finished:
        candidates.append(f"a task spanning {signals.longest_finished_turns} turns just finished")
    if signals.fill is not None and signals.fill >= config.fill_candidate:
        candidates.append(f"context at {signals.fill:.0f}% (≥ {config.fill_candidate:.0f}%)")
    if signals.idle_turns >= config.idle_turns:
        candidates.append(f"{signals.idle_turns} turns with no edit or failure")
    if signals.turns_since_compaction >= config.compaction_turns:
        candidates.append(f"{signals.turns_since_compaction} turns since the last compaction")
    if not candidates:
        return done(TurnDecision("no", "no rule proposes compacting", (), signals))
    found = tuple(candidates)
    if verdict is None:
        return done(
            TurnDecision(
                "candidate",
                "a candidate: answer the five-field verdict to confirm or defer it",
                found,
                signals,
            )
        )
    safe = not verdict.unsaved_work
    urgent = signals.fill is not None and signals.fill >= config.urgent_fill
    if urgent:
        confirmed = safe and verdict.impact != "high"
        rule = f"urgent (context ≥ {config.urgent_fill:.0f}%): safe and impact not high"
    else:
        confirmed = verdict.task_finished and verdict.impact == "low" and safe
        rule = "task finished, impact low and nothing unsaved"
    if confirmed:
        state.deferrals = 0
        state.cooldown_until = 0
        state.last_compaction_turn = turn
        return done(TurnDecision("compact", f"confirmed: {rule}", found, signals, verdict))
    wait = config.backoff[min(state.deferrals, len(config.backoff) - 1)]
    state.deferrals += 1
    state.cooldown_until = turn + wait
    return done(
        TurnDecision(
            "defer",
            f"deferred ({rule} not met); next candidate after {wait} turns",
            found,
            signals,
            verdict,
            cooldown_until=state.cooldown_until,
        )
    )


__all__ = [
    "IMPACTS",
    "TurnDecision",
    "TurnSignals",
    "TurnVerdict",
    "URGENCIES",
    "decide_turn",
    "turn_signals",
]
