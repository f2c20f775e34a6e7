"""When to compact: a step judge and a turn-end rule pipeline.

Compaction at a fixed fill level fires in the middle of a piece of work and summarises away detail
that is still live. The right moment is when the work moves on from a finished piece to the next
piece the person asked for. Two ways to find it live here:

**The step judge** (``judge_step``) reads one assistant step -- what it just said and the calls it
is making -- with the conversation before it, and answers ``NEXT`` (the work moves on here:
compacting now loses nothing live) or ``SAME``. The deterministic rules, in order:

1. a step that asks the person something, waits for a decision, or proposes work nobody asked for
   is SAME (the next message is the person's, and it may be about this piece);
2. a step that moves to another piece -- it names the piece it turns to ("now issue 4", "Issue 4:",
   "moving on to task 2", "开始第 4 个") and that piece is not the one already in hand -- is NEXT
   when a piece was finished on the way: in the same step ("issue 3 passes"), or by the step
   before it with nothing else done since (a commit, a task-list item completed, "Issue 3 done.");
3. a task list whose item goes to completed in this step while another goes in progress is NEXT;
4. anything else is SAME -- work inside a piece, a piece passing but still being checked or tidied,
   the last piece finishing and the wrap-up after it (nothing has moved on yet), a status recap.

Rule 2 needs "the piece in hand": the last piece the assistant said it was turning to, read from
its earlier messages in the current context. Saying again that it is on issue 4 is not a move.
A SAME that says a piece is finished, or names another piece, without a move is ``unsure``: those
are the steps an optional model judge (``gitledger.judge.model``) is asked about; the rest cost
nothing.

**Not judged at all** (``gate``): the first step of a turn, a step with no text, a step that ends
the turn (its last block is not a tool call: the work is back with the person), a step right
after a compaction until something other than a read-only lookup has run, and anything below the
floor (default 35% of the context window, from the usage the transcript records), with 5 points
of hysteresis after a compaction that left the context above the floor.

**The turn pipeline** (``judge_turn``), for agents without step hooks, is in the second half of
this module; its state per session is a ref in the ledger, ``refs/gitledger/judge/<session>``,
and its settings are one record on ``refs/gitledger/config/judge``.

Transcripts are read through ``gitledger.transcripts`` (``contexts_from_events``); a Claude Code
function hook hands over ``$.session.messages()`` instead (``context_from_messages``).

The judge reads only what the assistant said and the names, paths and descriptions of its calls,
never tool output: a tool's output is data, and the boundary is a fact about the assistant's
intent, which it states in its own words.

The package, by concern (each imported only when used, so a hook pays for what it touches):
``shapes`` (what the judge reads and answers), ``calls`` (tool names and call kinds, the task
list), ``pieces`` (pieces read out of text), ``step`` (the gate, the rules, ``judge_step``),
``contexts`` (a step's context from a transcript or a hook payload), ``state`` (settings and
per-session state on refs), ``turn`` (the turn pipeline), ``hook`` (running it and boundary
checkpoints), ``model`` (the optional model judge).
"""

from __future__ import annotations

from ..lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "NEXT": "gitledger.judge.shapes",
    "SAME": "gitledger.judge.shapes",
    "DEFAULT_FLOOR": "gitledger.judge.shapes",
    "HYSTERESIS_POINTS": "gitledger.judge.shapes",
    "DEFAULT_WINDOW": "gitledger.judge.shapes",
    "LARGE_WINDOW": "gitledger.judge.shapes",
    "Call": "gitledger.judge.shapes",
    "Message": "gitledger.judge.shapes",
    "Step": "gitledger.judge.shapes",
    "StepContext": "gitledger.judge.shapes",
    "Verdict": "gitledger.judge.shapes",
    "READ_ONLY_TOOLS": "gitledger.judge.calls",
    "EDIT_TOOLS": "gitledger.judge.calls",
    "ASK_TOOLS": "gitledger.judge.calls",
    "TASK_TOOLS": "gitledger.judge.calls",
    "SHELL_TOOLS": "gitledger.judge.calls",
    "TaskList": "gitledger.judge.calls",
    "is_read_only": "gitledger.judge.calls",
    "is_commit": "gitledger.judge.calls",
    "is_file_work": "gitledger.judge.calls",
    "TEXT_LIMIT": "gitledger.judge.pieces",
    "Completion": "gitledger.judge.pieces",
    "TextFacts": "gitledger.judge.pieces",
    "sentences": "gitledger.judge.pieces",
    "piece_refs": "gitledger.judge.pieces",
    "started_pieces": "gitledger.judge.pieces",
    "completions": "gitledger.judge.pieces",
    "asks_person": "gitledger.judge.pieces",
    "LOOKBACK_TEXTS": "gitledger.judge.step",
    "judge_rules": "gitledger.judge.step",
    "effective_floor": "gitledger.judge.step",
    "gate": "gitledger.judge.step",
    "judge_step": "gitledger.judge.step",
    "clear_caches": "gitledger.judge.step",
    "SUMMARY_PREFIX": "gitledger.judge.contexts",
    "read_message": "gitledger.judge.contexts",
    "window_for": "gitledger.judge.contexts",
    "contexts_from_events": "gitledger.judge.contexts",
    "last_step_context": "gitledger.judge.contexts",
    "step_from_payload": "gitledger.judge.contexts",
    "step_context": "gitledger.judge.cache",
    "read_step_context": "gitledger.judge.cache",
    "CACHE_DIR": "gitledger.judge.cache",
    "context_from_messages": "gitledger.judge.contexts",
    "JUDGE_REF_PREFIX": "gitledger.judge.state",
    "CONFIG_REF": "gitledger.judge.state",
    "STATE_FORMAT": "gitledger.judge.state",
    "JudgeConfig": "gitledger.judge.state",
    "TurnState": "gitledger.judge.state",
    "judge_ref": "gitledger.judge.state",
    "config_at": "gitledger.judge.state",
    "load_config": "gitledger.judge.state",
    "save_config": "gitledger.judge.state",
    "load_state": "gitledger.judge.state",
    "sessions": "gitledger.judge.state",
    "record_spend": "gitledger.judge.state",
    "IMPACTS": "gitledger.judge.turn",
    "URGENCIES": "gitledger.judge.turn",
    "TurnVerdict": "gitledger.judge.turn",
    "TurnSignals": "gitledger.judge.turn",
    "TurnDecision": "gitledger.judge.turn",
    "turn_signals": "gitledger.judge.turn",
    "decide_turn": "gitledger.judge.turn",
    "judge_turn": "gitledger.judge.hook",
    "step_key": "gitledger.judge.hook",
    "checkpoint": "gitledger.judge.hook",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:  # for type checkers: the names above, statically
    from .cache import (  # noqa: F401
        CACHE_DIR,
        read_step_context,
        step_context,
    )
    from .calls import (  # noqa: F401
        ASK_TOOLS,
        EDIT_TOOLS,
        READ_ONLY_TOOLS,
        SHELL_TOOLS,
        TASK_TOOLS,
        TaskList,
        is_commit,
        is_file_work,
        is_read_only,
    )
    from .contexts import (  # noqa: F401
        SUMMARY_PREFIX,
        context_from_messages,
        contexts_from_events,
        last_step_context,
        read_message,
        step_from_payload,
        window_for,
    )
    from .hook import (  # noqa: F401
        checkpoint,
        judge_turn,
        step_key,
    )
    from .pieces import (  # noqa: F401
        TEXT_LIMIT,
        Completion,
        TextFacts,
        asks_person,
        completions,
        piece_refs,
        sentences,
        started_pieces,
    )
    from .shapes import (  # noqa: F401
        DEFAULT_FLOOR,
        DEFAULT_WINDOW,
        HYSTERESIS_POINTS,
        LARGE_WINDOW,
        NEXT,
        SAME,
        Call,
        Message,
        Step,
        StepContext,
        Verdict,
    )
    from .state import (  # noqa: F401
        CONFIG_REF,
        JUDGE_REF_PREFIX,
        STATE_FORMAT,
        JudgeConfig,
        TurnState,
        config_at,
        judge_ref,
        load_config,
        load_state,
        record_spend,
        save_config,
        sessions,
    )
    from .step import (  # noqa: F401
        LOOKBACK_TEXTS,
        clear_caches,
        effective_floor,
        gate,
        judge_rules,
        judge_step,
    )
    from .turn import (  # noqa: F401
        IMPACTS,
        URGENCIES,
        TurnDecision,
        TurnSignals,
        TurnVerdict,
        decide_turn,
        turn_signals,
    )
