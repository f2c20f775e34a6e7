"""The step judge: the gate (steps not judged at all), the rules, then the model for unsure steps.

See the package docstring for the rules and the gate.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from ..structs import field, struct
from . import calls, pieces
from .calls import TASK_TOOLS, TaskList, _kind
from .pieces import (
    ANSWER_RE,
    HEADING_START_RE,
    OPENS_RE,
    TEXT_LIMIT,
    TURN_RE,
    _starts_of,
    _text_facts,
    asks_person,
    headings_of,
    is_checkup,
    joined_pieces,
    list_items,
    sentences,
    words_of,
)
from .shapes import (
    DEFAULT_FLOOR,
    HYSTERESIS_POINTS,
    NEXT,
    SAME,
    Call,
    Message,
    Step,
    StepContext,
    Verdict,
)

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from typing import Any

# How many of the assistant's earlier messages are read back to find the piece in hand.
LOOKBACK_TEXTS = 40


# --- the deterministic judge ----------------------------------------------------------------


@struct
class _Thread:
    """Where the work stands before the step, read from the assistant's earlier messages."""

    current: str | None = None  # the piece in hand
    closed: bool = False  # the piece in hand was just finished, nothing done since
    by_heading: bool = False  # the piece in hand was opened with a heading ("F7 — …")
    worked: bool = False  # files were changed since the piece in hand was taken up
    group: frozenset[str] = frozenset()  # the pieces named where it was taken up ("F2/F3/F6")
    # A task-list item went to completed with others still open, and nothing was said or changed
    # since: the step that speaks next opens the next item.
    list_moved: bool = False
    changes: dict[int, list[tuple[str, str, str]]] = field(default_factory=dict)
    tasks: TaskList = field(default_factory=TaskList)


def _list_move(thread: _Thread, message: Message) -> None:
    """Apply a message's task-list calls and keep ``list_moved`` (see ``_Thread``)."""
    if message.text.strip():
        thread.list_moved = False
    for call in message.calls:
        if call.name in TASK_TOOLS:
            changes = thread.tasks.apply(call)
            thread.changes[id(call)] = changes
            if any(new == "completed" for _, _, new in changes):
                thread.list_moved = bool(thread.tasks.open_items())
        elif thread.list_moved and _kind(call) == "write":  # read a call only when it matters
            thread.list_moved = False


def _worked_this_turn(history: Sequence[Message]) -> bool:
    """Whether files were changed in this turn (a message queued meanwhile opens no turn)."""
    for message in reversed(history):
        if (
            message.role == "user"
            and not message.queued
            and not message.text.lstrip().startswith("<")
        ):
            return False
        if message.role == "assistant" and any(
            _kind(c) in ("write", "commit") for c in message.calls
        ):
            return True
    return False


# An opening is new when its words (the share NOVELTY of them: all) are in none of the
# assistant's latest NOVELTY_TEXTS messages nor in what their calls touched. On the development
# set and taskcut's sets together (benchmarks/judge_replay.py, with the list rule): 2 and 1.0
# mark 13.7% of steps unsure for a reach of 98.2%; 2 and 0.8, 15.2% for the same reach; 3 and
# 0.8, 13.7% for 97.3%; 1 and 0.8, 16.9% for 98.2%.
NOVELTY_TEXTS = 2
NOVELTY = 1.0


def touched_words(call: Call) -> str:
    data = call.input
    return " ".join(
        str(data.get(k, "")) for k in ("file_path", "path", "description", "subject", "pattern")
    )


def _opens_other_work(history: Sequence[Message], text: str) -> bool:
    """The step opens by turning to something ("Now let me add …") or with a heading, after files
    were changed in this turn, in words new to the last two messages: it may have moved to
    another piece, in words the rules do not know (what the model is asked about)."""
    if not (OPENS_RE.match(text) or HEADING_START_RE.match(text)):
        return False
    if not _worked_this_turn(history):
        return False
    first = words_of(sentences(text)[0] if text.strip() else "")
    if not first:
        return False
    seen: set[str] = set()
    texts = 0
    for message in reversed(history):
        if message.role != "assistant":
            continue
        if message.text.strip():
            seen |= words_of(message.text)
            texts += 1
        for call in message.calls:
            seen |= words_of(touched_words(call))
        if texts >= NOVELTY_TEXTS:
            break
    return len(first - seen) / len(first) >= NOVELTY


def _asked_items(history: Sequence[Message]) -> tuple[list[frozenset[str]], int] | None:
    """The pieces of a list the person asked for, as words, and where the request is: the list
    in their latest message, or — when that message is a short go-ahead ("fix both") — the list
    in the assistant's message just before it."""
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message.role != "user" or message.queued or message.text.lstrip().startswith("<"):
            continue
        items = list_items(message.text)
        if not items and len(message.text.split()) <= SHORT_GO_AHEAD:
            before = next(
                (m for m in reversed(history[:index]) if m.role == "assistant" and m.text.strip()),
                None,
            )
            items = list_items(before.text) if before is not None else []
        if not 2 <= len(items) <= MAX_ITEMS:
            return None  # a long list is a plan's breakdown of one piece, not pieces asked for
        return [words_of(item) for item in items], index
    return None


def _best_item(words: frozenset[str], items: list[frozenset[str]]) -> int | None:
    """The item sharing the most words (at least two, and more than any other), or None."""
    scores = sorted(((len(words & item), i) for i, item in enumerate(items)), reverse=True)
    if not scores or scores[0][0] < 2 or (len(scores) > 1 and scores[1][0] == scores[0][0]):
        return None
    return scores[0][1]


def _moves_down_the_list(history: Sequence[Message], text: str) -> str | None:
    """The step opens work on another item of the list the person asked for, after files were
    changed for one item: which items, or None."""
    if not OPENS_RE.match(text):
        return None
    found = _asked_items(history)
    if found is None:
        return None
    items, start = found
    target = _best_item(words_of(sentences(text)[0]), items)
    if target is None:
        return None
    worked: set[str] = set()
    changed = False
    for message in history[start + 1 :]:
        if message.role != "assistant":
            continue
        worked |= words_of(message.text)
        for call in message.calls:
            worked |= words_of(touched_words(call))
            changed = changed or _kind(call) in ("write", "commit")
    current = _best_item(frozenset(worked), items)
    if not changed or current is None or current == target:
        return None
    return f"item {current + 1} of the list was worked on and the step opens item {target + 1}"


def _turns_to_a_joined_piece(history: Sequence[Message], text: str) -> str | None:
    """The person's latest request joins pieces with "then" or "also" (``joined_pieces``), work
    was done since it, and a sentence of the step that turns to work ("Now let me reply to the
    comment") names a later piece that nothing since the request turned to: which, or None."""
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message.role != "user" or message.queued or message.text.lstrip().startswith("<"):
            continue
        if list_items(message.text):
            return None  # a list: the list rule reads it
        pieces = joined_pieces(message.text)
        break
    else:
        return None
    if not 2 <= len(pieces) <= MAX_ITEMS:
        return None
    items = [words_of(piece) for piece in pieces]

    def turned_to(said: str) -> set[int]:
        found = set()
        for sentence in sentences(said[:TEXT_LIMIT]):
            if TURN_RE.match(sentence):
                best = _best_item(words_of(sentence), items)
                if best is not None:
                    found.add(best)
        return found

    targets = turned_to(text)
    if not targets:
        return None
    worked = False
    before: set[int] = set()
    for message in history[index + 1 :]:
        if message.role != "assistant":
            continue
        before |= turned_to(message.text)
        worked = worked or any(_kind(c) != "read" for c in message.calls)
    later = sorted(t for t in targets if t > 0 and t not in before)
    if not worked or not later:
        return None
    return f"the person asked for pieces in turn and the step turns to piece {later[0] + 1}"


MAX_ITEMS = 8
SHORT_GO_AHEAD = 12  # words: "fix both", "yes, do 1 and 3 please"
REQUEST_LOOKBACK = 1  # the person's latest message: what this turn asked for


def _asked_for(history: Sequence[Message], thread: _Thread) -> bool:
    """Whether the task-list item now in progress is one the person asked for: it shares at
    least two words with their latest messages (an item of the assistant's own breakdown of one
    request shares none)."""
    asked: set[str] = set()
    seen = 0
    for message in reversed(history):
        if message.role == "user" and not message.text.lstrip().startswith("<"):
            asked |= words_of(message.text)
            seen += 1
            if seen >= REQUEST_LOOKBACK:
                break
    for key in thread.tasks.in_progress():
        if len(words_of(thread.tasks.items[key]["subject"]) & asked) >= 2:
            return True
    return False


def _follow(history: Sequence[Message]) -> _Thread:
    thread = _Thread()
    # The piece in hand is the last one the assistant turned to, so reading starts there; only the
    # task list needs every earlier call. This keeps a long session's step under a few ms.
    anchor = len(history)  # no piece named: nothing after the task list needs reading
    texts_read = 0
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message.role != "assistant" or not message.text.strip():
            continue
        texts_read += 1
        if _starts_of(message.text):
            anchor = index
            break
        if texts_read >= LOOKBACK_TEXTS:
            break  # no piece named for this long: which one is in hand is unknown
    for message in history[:anchor]:
        if message.role == "assistant":
            _list_move(thread, message)
    for message in history[anchor:]:
        if message.role != "assistant":
            continue
        _list_move(thread, message)
        if message.text.strip():
            facts = _text_facts(message.text)
            fresh = [p for p in facts.starts if p != thread.current]
            if fresh:
                thread.current = fresh[-1]
                thread.closed = False
                thread.by_heading = thread.current in headings_of(message.text)
                thread.worked = False
                thread.group = frozenset(facts.refs)
            for done in facts.done:
                if done.unnamed:
                    continue
                if done.generic or thread.current is None or thread.current in done.pieces:
                    thread.closed = True
        for call in message.calls:
            changes = thread.changes.get(id(call), [])
            kind = _kind(call)
            if kind == "commit" or any(new == "completed" for _, _, new in changes):
                thread.closed = True
            elif kind == "write":
                thread.worked = True
                if not message.text.strip():
                    # Silent edits after a finish: the next piece is already under way.
                    thread.closed = False
    return thread


def judge_rules(history: Sequence[Message], step: Step) -> Verdict:
    """The deterministic step judge (see the module docstring for the rules)."""
    text = step.text.strip()
    if asks_person(step):
        return Verdict(
            SAME, "the step asks the person or proposes work; the next word is theirs", "asks"
        )
    thread = _follow(history)
    facts = _text_facts(text)
    starts = [p for p in facts.starts if p != thread.current]
    if len(set(headings_of(text))) >= 2:
        # A heading for each of several pieces: a recap or a plan, not a move (but worth a look).
        return Verdict(SAME, "the step lists several pieces: a recap", "recap", unsure=True)
    if starts and is_checkup(text, starts[-1]):
        return Verdict(
            SAME, "the step turns to a check of the work done, not a piece", "checkup", unsure=True
        )
    if starts:
        target = starts[-1]
        finished_here = [d for d in facts.done if d.generic or d.unnamed or target not in d.pieces]
        if finished_here:
            named = next((d.pieces for d in finished_here if d.pieces), ())
            what = f"piece {', '.join(named)}" if named else "the piece in hand"
            return Verdict(
                NEXT, f"{what} is finished and the step turns to piece {target}", "moves-on"
            )
        if thread.closed and thread.current is not None:
            return Verdict(
                NEXT,
                f"piece {thread.current} was just finished and the step starts piece {target}",
                "starts-next",
            )
        if (
            thread.current is not None
            and thread.by_heading
            and thread.worked
            and target in headings_of(text)
            and target not in thread.group
        ):
            # Working down a list heading by heading: a new heading after changing files for the
            # last one closes it.
            return Verdict(
                NEXT,
                f"piece {thread.current} was worked on and the step opens piece {target}",
                "next-heading",
            )
    if (
        thread.list_moved
        and OPENS_RE.match(text)
        and not is_checkup(text.split("\n", 1)[0])
        and _asked_for(history, thread)
    ):
        return Verdict(
            NEXT,
            "a task-list item was just completed with others open, and the step opens the next",
            "list-then-start",
        )
    moved = _moves_down_the_list(history, text)
    if moved is not None:
        return Verdict(NEXT, moved, "list-item")
    joined = _turns_to_a_joined_piece(history, text)
    if joined is not None:
        return Verdict(NEXT, joined, "joined-piece")
    if ANSWER_RE.search(text[:TEXT_LIMIT]) and (
        _worked_this_turn(history) or any(_kind(c) == "write" for c in step.calls)
    ):
        return Verdict(
            NEXT, "work was done and the step turns to answering the person's question", "answers"
        )
    completed: list[str] = []
    started: list[str] = []
    for call in step.calls:
        for key, _old, new in thread.tasks.apply(call):
            if new == "completed":
                completed.append(key)
            elif new == "in_progress":
                started.append(key)
    moved_to = [k for k in started if k not in completed]
    if completed and moved_to:
        return Verdict(
            NEXT,
            f"task-list item {completed[-1]} went to completed and item {moved_to[-1]} is next",
            "task-list",
        )
    # Unsure, and worth a model's look: the step says a piece (or the piece in hand) is finished,
    # names another piece without closing one, or completes a task-list item. "Tests pass" alone,
    # or a number in passing, is work inside a piece.
    unsure = bool([d for d in facts.done if not d.unnamed] or starts or completed)
    if not unsure and _opens_other_work(history, text):
        unsure = True
    if facts.done:
        reason = "a piece is finished but the step does not move to another (checking, tidying, or the last one)"
    elif starts:
        reason = "the step names another piece but nothing was finished on the way"
    else:
        reason = "work inside a piece"
    return Verdict(SAME, reason, "inside", unsure=unsure)


# --- the gate: steps not judged at all ------------------------------------------------------


def effective_floor(ctx: StepContext, floor: float) -> float:
    """The floor, raised to 5 points above where a compaction left the context if that was above it."""
    if ctx.after_compaction and ctx.post_compaction_tokens and ctx.window > 0:
        after = 100.0 * ctx.post_compaction_tokens / ctx.window
        if after >= floor:
            return after + HYSTERESIS_POINTS
    return floor


def gate(ctx: StepContext, floor: float = DEFAULT_FLOOR) -> Verdict | None:
    """Why this step is not judged, or None when it is."""
    fill = ctx.fill
    if ctx.first_in_turn:
        return Verdict(
            SAME,
            "the first step of a turn is not judged",
            "first-step",
            False,
            by="gate",
            fill=fill,
        )
    if not ctx.step.text.strip():
        return Verdict(
            SAME, "a step with no text is not judged", "no-text", False, by="gate", fill=fill
        )
    if ctx.ends_turn:
        return Verdict(
            SAME,
            "the step ends the turn; the work is back with the person",
            "end-of-turn",
            False,
            by="gate",
            fill=fill,
        )
    if ctx.after_compaction and not ctx.work_since_compaction:
        return Verdict(
            SAME,
            "right after a compaction: only read-only lookups have run since",
            "after-compaction",
            False,
            by="gate",
            fill=fill,
        )
    if floor > 0:
        limit = effective_floor(ctx, floor)
        if fill is None:
            return Verdict(
                SAME,
                "no usage recorded, so the context fill is unknown",
                "no-usage",
                False,
                by="gate",
            )
        if fill < limit:
            return Verdict(
                SAME,
                f"context at {fill:.0f}%, below the floor of {limit:.0f}%",
                "below-floor",
                False,
                by="gate",
                fill=fill,
            )
    return None


def judge_step(
    ctx: StepContext,
    *,
    floor: float = DEFAULT_FLOOR,
    model: Any = None,
) -> Verdict:
    """Judge one step: the gate, then the rules, then (for unsure SAMEs) the model if one is given.

    ``model`` is a callable ``(ctx) -> Verdict`` such as ``gitledger.judge.model.ModelJudge``.
    """
    started = time.perf_counter()
    skipped = gate(ctx, floor)
    if skipped is not None:
        verdict = skipped
    else:
        verdict = judge_rules(ctx.history, ctx.step)
        if (
            model is not None
            and verdict.decision == SAME
            and verdict.unsure
            and verdict.rule != "asks"
        ):
            verdict = model(ctx)
    elapsed = (time.perf_counter() - started) * 1000.0
    return Verdict(**{**verdict.to_dict(), "fill": ctx.fill, "elapsed_ms": round(elapsed, 3)})


def clear_caches() -> None:
    """Forget cached parses (the benchmark times each step cold)."""
    calls._bash_kind.cache_clear()
    pieces.headings_of.cache_clear()
    pieces.words_of.cache_clear()
    pieces._refs_of.cache_clear()
    pieces._text_facts.cache_clear()
    pieces._starts_of.cache_clear()


__all__ = [
    "LOOKBACK_TEXTS",
    "NOVELTY",
    "NOVELTY_TEXTS",
    "REQUEST_LOOKBACK",
    "clear_caches",
    "effective_floor",
    "gate",
    "judge_rules",
    "judge_step",
    "touched_words",
]
