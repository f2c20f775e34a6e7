"""What the hooks do with a verdict: run the turn pipeline and store its state; at a boundary,
commit a fuse snapshot the next compaction restores from."""

from __future__ import annotations

from typing import Any

from .shapes import Step
from .state import TurnState, _read_json, _write_json, judge_ref, load_config
from .turn import TurnDecision, TurnVerdict, decide_turn, turn_signals


def judge_turn(
    ledger: Any,
    session: str,
    transcript: Any,
    *,
    verdict: TurnVerdict | None = None,
) -> TurnDecision:
    """Run the turn pipeline on a transcript and store the session's state (one commit)."""
    from ..transcripts import read_events

    config = load_config(ledger)
    refname = judge_ref(session)
    if not config.enabled:
        return TurnDecision("off", "the judge is disabled (enabled=false)", (), None)
    signals = turn_signals(
        read_events(transcript), window=config.window, long_task_turns=config.long_task_turns
    )
    with ledger.store.lock():
        data, tip = _read_json(ledger, refname)
        state = TurnState.from_dict(data or {}, session)
        before = state.to_dict()
        decision = decide_turn(signals, state, config, verdict)
        if state.to_dict() != before or tip is None:
            _write_json(
                ledger,
                refname,
                state.to_dict(),
                f"judge turn {signals.turn}: {decision.decision} ({decision.reason})\n",
                tip,
            )
    if decision.decision == "compact":
        # An agent without step hooks cannot be made to compact; what it can have is a snapshot
        # taken here, at the boundary, that whichever compaction comes next restores from.
        from dataclasses import replace

        from ..fuse import save

        saved = save(ledger, session, transcript, trigger="turn-boundary")
        decision = replace(decision, checkpoint=str(saved.commit))
    return decision


def step_key(step: Step) -> str:
    """A short fingerprint of a step, so one step's several tool calls checkpoint once."""
    import hashlib

    names = ",".join(c.name for c in step.calls)
    return hashlib.sha256(f"{step.text}\x00{names}".encode()).hexdigest()[:16]


def checkpoint(ledger: Any, session: str, transcript: Any, step: Step) -> str | None:
    """At a boundary, commit a fuse snapshot (trigger ``boundary``) so the next compaction,
    whenever the agent runs it, restores from here. Returns the snapshot's commit, or None when
    this step was checkpointed already (a command hook runs once per tool call of the step)."""
    from ..fuse import save

    refname = judge_ref(session)
    key = step_key(step)
    data, _ = _read_json(ledger, refname)
    if (data or {}).get("last_checkpoint") == key:
        return None
    saved = save(ledger, session, transcript, trigger="boundary")
    with ledger.store.lock():
        data, tip = _read_json(ledger, refname)
        state = TurnState.from_dict(data or {}, session)
        state.last_checkpoint = key
        _write_json(ledger, refname, state.to_dict(), "judge: boundary checkpoint\n", tip)
    return str(saved.commit)


__all__ = [
    "checkpoint",
    "judge_turn",
    "step_key",
]
