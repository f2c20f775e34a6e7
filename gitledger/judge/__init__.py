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

# Each name is imported from its module on first use; this block is the one list of them, for
# type checkers and for ``lazy_exports`` alike.
TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from .cache import CACHE_DIR as CACHE_DIR
    from .cache import read_step_context as read_step_context
    from .cache import step_context as step_context
    from .calls import *  # noqa: F403
    from .contexts import SUMMARY_PREFIX as SUMMARY_PREFIX
    from .contexts import context_from_messages as context_from_messages
    from .contexts import contexts_from_events as contexts_from_events
    from .contexts import last_step_context as last_step_context
    from .contexts import read_message as read_message
    from .contexts import step_from_payload as step_from_payload
    from .contexts import window_for as window_for
    from .hook import *  # noqa: F403
    from .pieces import TEXT_LIMIT as TEXT_LIMIT
    from .pieces import Completion as Completion
    from .pieces import TextFacts as TextFacts
    from .pieces import asks_person as asks_person
    from .pieces import completions as completions
    from .pieces import piece_refs as piece_refs
    from .pieces import sentences as sentences
    from .pieces import started_pieces as started_pieces
    from .shapes import *  # noqa: F403
    from .state import CONFIG_REF as CONFIG_REF
    from .state import JUDGE_REF_PREFIX as JUDGE_REF_PREFIX
    from .state import STATE_FORMAT as STATE_FORMAT
    from .state import JudgeConfig as JudgeConfig
    from .state import TurnState as TurnState
    from .state import config_at as config_at
    from .state import judge_ref as judge_ref
    from .state import load_config as load_config
    from .state import load_state as load_state
    from .state import record_spend as record_spend
    from .state import save_config as save_config
    from .state import sessions as sessions
    from .step import LOOKBACK_TEXTS as LOOKBACK_TEXTS
    from .step import clear_caches as clear_caches
    from .step import effective_floor as effective_floor
    from .step import gate as gate
    from .step import judge_rules as judge_rules
    from .step import judge_step as judge_step
    from .turn import *  # noqa: F403

__getattr__, __dir__ = lazy_exports(globals())
