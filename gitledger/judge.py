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
are the steps an optional model judge (``gitledger.judge_model``) is asked about; the rest cost
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
function hook hands over ``$.session.messages()`` instead (``context_from_messages``), and
taskcut's replay sets are read by ``replay_contexts`` for the benchmark.

The judge reads only what the assistant said and the names, paths and descriptions of its calls,
never tool output: a tool's output is data, and the boundary is a fact about the assistant's
intent, which it states in its own words.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any

NEXT = "NEXT"
SAME = "SAME"

DEFAULT_FLOOR = 35.0
HYSTERESIS_POINTS = 5.0
DEFAULT_WINDOW = 200_000
LARGE_WINDOW = 1_000_000

# Tools that only look things up. After a compaction the assistant re-reads what it needs; those
# steps are not judged until it does real work again (the summary is not a piece of work).
READ_ONLY_TOOLS = frozenset(
    {
        "Read",
        "Grep",
        "Glob",
        "LS",
        "WebFetch",
        "WebSearch",
        "ToolSearch",
        "NotebookRead",
        "TodoRead",
        "BashOutput",
        "TaskList",
        "TaskGet",
        "ListMcpResourcesTool",
        "ReadMcpResourceTool",
    }
)
EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
ASK_TOOLS = frozenset({"AskUserQuestion", "ExitPlanMode"})
TASK_TOOLS = frozenset({"TodoWrite", "TaskCreate", "TaskUpdate"})
# Text past this many characters is not read for pieces: a step says where it is going early,
# and long messages are wrap-ups.
TEXT_LIMIT = 3000
# How many of the assistant's earlier messages are read back to find the piece in hand.
LOOKBACK_TEXTS = 40


# --- what the judge reads -------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One tool call of the assistant: its name and input (the judge never sees its output)."""

    name: str
    input: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Step:
    """The step being judged: what the assistant just said and the calls it is making."""

    text: str
    calls: tuple[Call, ...] = ()


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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


class _Lazy:
    """A pattern compiled on first use: the big ones cost ~10 ms each to compile, and most steps
    (below the floor) never need them."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        return getattr(self._compiled, name)


# --- reading pieces out of text -------------------------------------------------------------

_NOUN = r"(?:issues?|tasks?|items?|tickets?|bugs?|todos?|problems?|questions?|steps?|phases?)"
_NUM_REF = rf"{_NOUN}\s*#?\s*(\d+)"
_PART_REF = r"parts?\s*\(?([a-hA-H]|\d+)\)?(?![\w])"
_CJK_REF = r"(?:第\s*(\d+)\s*(?:个|项|項|号)|(?:问题|任务|事项)\s*#?\s*(\d+))"
# A piece reference: issue 4, task #2, part (b), 第 4 个.
# Patterns without IGNORECASE run on lowercased text (Python's re is several times slower with it).
PIECE_RE = re.compile(rf"\b{_NUM_REF}|\b{_PART_REF}|{_CJK_REF}")

_START_WORDS = (
    r"now|next(?:\s+(?:is|up|comes))?|up next|on to|onto|moving(?:\s+on)?\s+to|move(?:\s+on)?\s+to|"
    r"turning to|turn to|starting(?:\s+(?:with|on))?|start(?:\s+(?:with|on))?|begin(?:ning)?"
    r"(?:\s+with)?|then|proceed(?:ing)?\s+to|i'?m (?:now )?on|i am (?:now )?on|"
    r"(?:i'?ve )?started(?:\s+on)?|working on|last is|the last one,?|last,?"
)
# "now issue 4", "moving on to task 2", "I'm on issue 5", "Next is Issue 25".
# Read on the few words before each piece reference, which is much cheaper than the whole text.
START_BEFORE_RE: Any = _Lazy(rf"\b(?:{_START_WORDS})\s*[:,]?\s*(?:is\s+|with\s+)?(?:the\s+)?$")
# "committing 9 and starting 10": a bare number after a verb of moving on.
START_BARE_RE = re.compile(
    r"\b(?:starting(?:\s+on)?|start(?:\s+on)?|moving(?:\s+on)?\s+to|on to|then)\s+#?(\d+)\b"
)
START_CJK_RE = re.compile(
    r"(?:开始|进入|转到|接着做|接下来做|正在做|然后做|再做|去做|做)\s*(?:第\s*(\d+)\s*(?:个|项|项)"
    r"|(?:问题|任务)\s*#?\s*(\d+))"
)
# A sentence that opens with the piece and does not say it is done turns to it: "Issue 16:
# GROUPING() type", "Issue 1.", "Issue 5 is the largest so far", "第 14 个问题：…".
HEADING_RE: Any = _Lazy(
    rf"^[\s*_#>-]*(?:{_NUM_REF}|{_PART_REF}|{_CJK_REF}(?:问题|任务|事项)?)(?!\s*(?:and|or|&|,|–|-)\s*\d)"
)
# "before moving on to issue 22", "a checkpoint before Issue 11": the move is announced for later.
DEFER_RE = re.compile(
    rf"\b(?:before|after)\s+(?:(?:i\s+)?(?:moving|move|going|turning|starting|continuing|"
    rf"proceeding)(?:\s+on)?(?:\s+(?:to|with))?\s+)?(?:the\s+)?(?:{_NUM_REF}|{_PART_REF})"
)
_DONE = (
    r"done|pass(?:es|ed|ing)?|fixed|complete[ds]?|finished|committed|resolved|confirmed|"
    r"is in|are in|clean|works|work now|green|solved|handled|implemented|landed|merged|"
    r"no (?:new )?(?:regressions?|failures?)"
)
DONE_RE = re.compile(rf"\b(?:{_DONE})\b", re.IGNORECASE)
DONE_CJK_RE = re.compile(
    r"已通过|通过了|都过了|已经提交|已提交|提交了|已完成|完成了|做完|修好|解决了|已修复"
)
COMMIT_WORD_RE = re.compile(r"\bcommit(?:ting|ted|s)?\b|提交", re.IGNORECASE)
NOT_DONE_RE = re.compile(
    r"\b(?:not|n't|never|still|yet|fails?|failing|broke|breaks|regress(?:ed|es)?)\b|未|没有通过",
    re.IGNORECASE,
)
# Short sentences that close the piece in hand without naming it: "Clean." "Done." "Good."
GENERIC_DONE_RE = re.compile(
    r"^\s*(?:all\s+)?(?:clean|done|good|passing|passes|fixed|all good|all green|green|"
    r"that works|works|perfect|great)\s*[.!]?\s*$",
    re.IGNORECASE,
)
# Asking the person, waiting on a decision, offering work not asked for.
ASK_RE: Any = _Lazy(
    r"\b(?:would you like|do you want|should i|shall i|want me to|let me know|"
    r"which (?:one|option|approach|of these) (?:do|would|should)|please (?:confirm|choose|decide|"
    r"let me know|advise)|can you (?:confirm|tell|check|clarify)|could you (?:confirm|tell|check|"
    r"clarify)|i (?:could|can) also|if you(?:'d| would) like|if you want|your call|"
    r"up to you|waiting for (?:you|your)|before i (?:proceed|continue|go on)|"
    r"i'?d (?:suggest|recommend)|you (?:may|might) want to|next steps? (?:could|would) be)\b"
    r"|要不要|是否需要|你希望|请确认|你想|需要我",
    re.IGNORECASE,
)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?;。！？；])\s+|\n+|(?<=[。！？；，])")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_SPLIT.split(text) if s and s.strip()]


def _piece_ids(match: re.Match[str]) -> str | None:
    for group in match.groups():
        if group:
            return group.lower()
    return None


def piece_refs(text: str) -> list[str]:
    """Every piece the text names, in order: ``issue 4`` → ``"4"``, ``part (b)`` → ``"b"``."""
    if not _MAYBE_PIECE.search(text):
        return []
    found = []
    for match in PIECE_RE.finditer(text.lower()):
        ident = _piece_ids(match)
        if ident:
            found.append(ident)
    return found


# Every piece reference has a digit, a part letter or 第: texts without them are skipped cheaply.
_MAYBE_PIECE = re.compile(r"\d|\bparts?\b|第", re.IGNORECASE)


@lru_cache(maxsize=8192)
def _starts_of(text: str) -> tuple[str, ...]:
    text = text[:TEXT_LIMIT]
    return tuple(started_pieces(text)) if _MAYBE_PIECE.search(text) else ()


def started_pieces(text: str) -> list[str]:
    """The pieces the text says it turns to, in order (announced-for-later moves left out)."""
    lowered = text.lower()
    if not _MAYBE_PIECE.search(lowered):
        return []
    cleaned = DEFER_RE.sub(" ", lowered)
    refs = list(PIECE_RE.finditer(cleaned))
    if not refs:
        return []
    found: list[tuple[int, str]] = []
    for match in refs:
        ident = _piece_ids(match)
        if ident and START_BEFORE_RE.search(cleaned, max(0, match.start() - 48), match.start()):
            found.append((match.start(), ident))
    if "第" in cleaned or "问题" in cleaned or "任务" in cleaned:
        for match in START_CJK_RE.finditer(cleaned):
            ident = _piece_ids(match)
            if ident:
                found.append((match.start(), ident))
    for match in START_BARE_RE.finditer(cleaned):
        found.append((match.start(), match.group(1)))
    offset = 0
    for sentence in sentences(cleaned):
        where = cleaned.find(sentence, offset)
        offset = max(offset, where)
        heading = HEADING_RE.match(sentence)
        if heading and not _claims_done(sentence):
            ident = _piece_ids(heading)
            if ident:
                found.append((max(where, 0), ident))
    found.sort()
    return [ident for _, ident in found]


def _claims_done(sentence: str) -> bool:
    sentence = re.sub(r"\([^()]*\)", " ", sentence)  # an aside does not undo the claim
    if NOT_DONE_RE.search(sentence) and not re.search(
        r"\bno (?:new )?(?:regress|fail)", sentence, re.I
    ):
        return False
    return bool(DONE_RE.search(sentence) or DONE_CJK_RE.search(sentence))


@dataclass(frozen=True)
class Completion:
    pieces: tuple[str, ...]  # the pieces said to be done (empty: the piece in hand)
    generic: bool  # "Clean." / "Committing." without naming a piece
    unnamed: bool = False  # "Oracle passes": done, but which piece is not said


# Any word that can start a finishing claim; a text without one is not read sentence by sentence.
_DONE_HINT = re.compile(
    rf"\b(?:{_DONE}|good|perfect|great|all good)\b|{DONE_CJK_RE.pattern}|{COMMIT_WORD_RE.pattern}",
    re.IGNORECASE,
)


def completions(text: str) -> list[Completion]:
    """What the text says is finished. A commit of the work counts as finishing it."""
    out: list[Completion] = []
    if not _DONE_HINT.search(text):
        return out  # most messages say nothing is finished: skip the sentence-by-sentence read
    for sentence in sentences(DEFER_RE.sub(" ", text.lower())):
        if not _DONE_HINT.search(sentence):
            continue
        refs = tuple(piece_refs(sentence))
        if GENERIC_DONE_RE.match(sentence):
            out.append(Completion((), True))
        elif COMMIT_WORD_RE.search(sentence) and not re.search(r"\bbefore commit", sentence, re.I):
            out.append(Completion(refs, not refs))
        elif _claims_done(sentence):
            out.append(Completion(refs, False, unnamed=not refs))
    return out


@dataclass(frozen=True)
class TextFacts:
    starts: tuple[str, ...]
    done: tuple[Completion, ...]
    refs: tuple[str, ...]


@lru_cache(maxsize=8192)
def _text_facts(text: str) -> TextFacts:
    text = text[:TEXT_LIMIT]
    return TextFacts(_starts_of(text), tuple(completions(text)), tuple(piece_refs(text)))


def asks_person(step: Step) -> bool:
    if any(call.name in ASK_TOOLS for call in step.calls):
        return True
    if ASK_RE.search(step.text):
        return True
    # A question to the person is the step's last sentence; a rhetorical "why?" mid-analysis is not.
    tail = sentences(step.text)[-1:] if step.text.strip() else []
    return bool(tail and tail[0].rstrip().endswith(("?", "？")) and not step.calls)


# --- reading calls --------------------------------------------------------------------------

_READ_ONLY_COMMANDS = frozenset(
    "cat ls grep rg egrep fgrep sed head tail wc find pwd echo less more file stat tree du df "
    "which type awk jq diff cmp sort uniq cut nl od xxd date env printenv realpath dirname "
    "basename true test".split()
)
_READ_ONLY_GIT = frozenset(
    "status log diff show blame branch rev-parse ls-files grep remote".split()
)
_COMMIT_RE = re.compile(r"\bgit\s+(?:-C\s+\S+\s+)?commit\b")


_REDIRECT_RE = re.compile(r"(?<![2&>=-])>(?!&|\s*/dev/null)")
_WRITE_WORDS_RE = re.compile(r"\b(?:sed\s+-i|tee|patch|rm|mv)\b")


def _writes(command: str) -> bool:
    """Whether a shell command changes files (cheap substring checks before each pattern)."""
    if ".write(" in command:
        return True
    if ">" in command and _REDIRECT_RE.search(command):
        return True
    return bool(_WRITE_WORDS_RE.search(command))


@lru_cache(maxsize=8192)
def _bash_kind(command: str) -> str:
    """``commit``, ``read`` (only looks things up), ``write`` (changes files) or ``other``."""
    if "commit" in command and _COMMIT_RE.search(command):
        return "commit"
    if not command.strip():
        return "other"
    if _writes(command):
        return "write"
    for part in re.split(r"&&|\|\||[;|\n]", command):
        words = part.strip().split()
        if not words:
            continue
        program = words[0].rsplit("/", 1)[-1]
        if program == "git" and len(words) > 1 and words[1] in _READ_ONLY_GIT:
            continue
        if program == "sed" and "-i" in words:
            return "write"
        if program not in _READ_ONLY_COMMANDS:
            return "other"
    return "read"


def _kind(call: Call) -> str:
    if call.name == "Bash":
        return _bash_kind(str(call.input.get("command", "")))
    if call.name in READ_ONLY_TOOLS:
        return "read"
    if call.name in EDIT_TOOLS:
        return "write"
    return "other"


def is_read_only(call: Call) -> bool:
    """A call that only looks something up (a read, a search, a read-only shell command)."""
    return _kind(call) == "read"


def is_commit(call: Call) -> bool:
    return _kind(call) == "commit"


def is_file_work(call: Call) -> bool:
    """A call that changes files: the work of some piece is under way."""
    return _kind(call) == "write"


def clear_caches() -> None:
    """Forget cached parses (the benchmark times each step cold)."""
    _bash_kind.cache_clear()
    _text_facts.cache_clear()
    _starts_of.cache_clear()


class TaskList:
    """The assistant's task list as its calls left it: TodoWrite, TaskCreate and TaskUpdate."""

    def __init__(self) -> None:
        self.items: dict[str, dict[str, str]] = {}
        self._next_id = 1

    def apply(self, call: Call) -> list[tuple[str, str, str]]:
        """Apply one call; returns the status changes it made as (id, old, new)."""
        changes: list[tuple[str, str, str]] = []
        data = call.input
        if call.name == "TodoWrite" and isinstance(data.get("todos"), list):
            seen: dict[str, dict[str, str]] = {}
            for index, todo in enumerate(data["todos"]):
                if not isinstance(todo, Mapping):
                    continue
                key = str(todo.get("id") or todo.get("content") or index)
                status = str(todo.get("status", "pending"))
                old = self.items.get(key, {}).get("status", "")
                if old != status:
                    changes.append((key, old, status))
                seen[key] = {"subject": str(todo.get("content", "")), "status": status}
            self.items = seen
        elif call.name == "TaskCreate":
            key = str(data.get("taskId") or self._next_id)
            self._next_id += 1
            self.items[key] = {"subject": str(data.get("subject", "")), "status": "pending"}
            changes.append((key, "", "pending"))
        elif call.name == "TaskUpdate":
            key = str(data.get("taskId", ""))
            new_status = data.get("status")
            if key and isinstance(new_status, str):
                item = self.items.setdefault(key, {"subject": "", "status": ""})
                if item["status"] != new_status:
                    changes.append((key, item["status"], new_status))
                item["status"] = new_status
        return changes

    def in_progress(self) -> list[str]:
        return [k for k, v in self.items.items() if v["status"] == "in_progress"]

    def open_items(self) -> list[str]:
        return [k for k, v in self.items.items() if v["status"] in ("pending", "in_progress")]

    def render(self) -> list[str]:
        return [f"[{v['status']}] {v['subject']}" for v in self.items.values()]


# --- the deterministic judge ----------------------------------------------------------------


@dataclass
class _Thread:
    """Where the work stands before the step, read from the assistant's earlier messages."""

    current: str | None = None  # the piece in hand
    closed: bool = False  # the piece in hand was just finished, nothing done since
    tasks: TaskList = field(default_factory=TaskList)


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
            for call in message.calls:
                if call.name in TASK_TOOLS:
                    thread.tasks.apply(call)
    for message in history[anchor:]:
        if message.role != "assistant":
            continue
        if message.text.strip():
            facts = _text_facts(message.text)
            fresh = [p for p in facts.starts if p != thread.current]
            if fresh:
                thread.current = fresh[-1]
                thread.closed = False
            for done in facts.done:
                if done.unnamed:
                    continue
                if done.generic or thread.current is None or thread.current in done.pieces:
                    thread.closed = True
        for call in message.calls:
            changes = thread.tasks.apply(call) if call.name in TASK_TOOLS else []
            kind = _kind(call)
            if kind == "commit" or any(new == "completed" for _, _, new in changes):
                thread.closed = True
            elif kind == "write" and not message.text.strip():
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

    ``model`` is a callable ``(ctx) -> Verdict`` such as ``gitledger.judge_model.ModelJudge``.
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


# --- building contexts ----------------------------------------------------------------------

SUMMARY_PREFIX = "This session is being continued from a previous conversation"


def _replay_message(raw: Mapping[str, Any]) -> Message:
    calls = tuple(
        Call(str(use.get("tool", "")), dict(use.get("input") or {}))
        for use in raw.get("toolUses") or ()
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


def replay_contexts(data: Mapping[str, Any]) -> dict[int, StepContext]:
    """Every step of a taskcut replay set (``eval/replay/<set>.json``) as the judge would see it.

    A set is the session as segments (one per compaction; each after the first opens with the
    summary) and its steps, each at ``segment[pos:end]``. Tool output is already blanked there.
    """
    segments = [[_replay_message(m) for m in seg] for seg in data.get("segments", ())]
    steps = list(data.get("steps", ()))
    window = window_for(s.get("context") for s in steps)
    first_usage: dict[int, int] = {}
    for raw in steps:
        first_usage.setdefault(int(raw["segment"]), int(raw.get("context") or 0))
    out: dict[int, StepContext] = {}
    for raw in steps:
        seg_no = int(raw["segment"])
        history = tuple(segments[seg_no][: int(raw["pos"])])
        body = raw.get("step") or {}
        step = Step(
            str(body.get("text") or ""),
            tuple(
                Call(str(c.get("name", "")), dict(c.get("input") or {}))
                for c in body.get("calls") or ()
            ),
        )
        compacted = bool(history) and history[0].role == "summary"
        work = any(
            not is_read_only(call) for m in history if m.role == "assistant" for call in m.calls
        )
        out[int(raw["n"])] = StepContext(
            history=history,
            step=step,
            context_tokens=int(raw.get("context") or 0) or None,
            window=window,
            first_in_turn=int(raw.get("index", 0)) == 0,
            ends_turn=not step.calls,
            after_compaction=compacted,
            work_since_compaction=work if compacted else True,
            post_compaction_tokens=first_usage.get(seg_no) if compacted else None,
        )
    return out


def _usage_tokens(usage: Any) -> int | None:
    """Context size of one response: everything that went in (fresh, cached and cache writes)."""
    if usage is None:
        return None
    parts = [usage.input_tokens, usage.cache_read_tokens, usage.cache_creation_tokens]
    if all(p is None for p in parts):
        return None
    return sum(p or 0 for p in parts)


def contexts_from_events(events: Iterable[Any], *, window: int | None = None) -> list[StepContext]:
    """Every assistant step of a transcript (``gitledger.transcripts`` events), in order.

    A step is one model response: the run of assistant events between two tool results or
    prompts (Claude Code writes each content block of a response as a record of its own). The
    history of a step starts at the latest compaction, as the model saw it. Sub-agent events are
    left out: only the main conversation is judged.
    """
    history: list[Message] = []
    steps: list[tuple[list[Message], list[Any], dict[str, Any]]] = []
    state: dict[str, Any] = {
        "compacted": False,
        "work": True,
        "post_tokens": None,
        "turn_steps": 0,
    }
    group: list[Any] = []
    tokens_seen: list[int | None] = []
    model_name: str | None = None
    last_tokens: int | None = None

    def close_group() -> None:
        nonlocal last_tokens
        if not group:
            return
        text = "\n".join(e.text for e in group if e.text.strip())
        calls = tuple(Call(c.name, dict(c.input)) for e in group for c in e.tool_calls)
        tokens = None
        for event in group:
            tokens = _usage_tokens(event.usage) or tokens
        if tokens is None:
            tokens = last_tokens
        last_tokens = tokens
        tokens_seen.append(tokens)
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
        steps.append((list(history), list(group), info))
        history.append(Message("assistant", text, calls))
        state["turn_steps"] += 1
        if state["compacted"] and any(not is_read_only(c) for c in calls):
            state["work"] = True
        group.clear()

    for event in events:
        if getattr(event, "sidechain", False):
            continue
        kind = event.kind
        if kind == "assistant":
            if event.model:
                model_name = event.model
            group.append(event)
            continue
        close_group()
        if kind == "tool_result":
            history.append(Message("tool_result", "", (), bool(event.is_error)))
        elif kind == "user":
            if event.is_meta:
                history.append(Message("meta", event.text))
            else:
                history.append(Message("user", event.text))
                if not event.queued:
                    state["turn_steps"] = 0
        elif kind == "compact_boundary":
            history.clear()
            state.update(compacted=True, work=False, post_tokens=None, turn_steps=0)
        elif kind == "summary":
            history.append(Message("summary", event.text))
    close_group()
    size = window or window_for(tokens_seen, model_name)
    out = []
    for past, _group, info in steps:
        message_text = "\n".join(e.text for e in _group if e.text.strip())
        calls = tuple(Call(c.name, dict(c.input)) for e in _group for c in e.tool_calls)
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


def last_step_context(path: Any, *, window: int | None = None) -> StepContext | None:
    """The last assistant step of a transcript file, or None when it has none."""
    from .transcripts import read_events

    contexts = contexts_from_events(read_events(path), window=window)
    return contexts[-1] if contexts else None


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

JUDGE_REF_PREFIX = "refs/gitledger/judge/"
CONFIG_REF = "refs/gitledger/config/judge"
STATE_FORMAT = 1
IMPACTS = ("low", "medium", "high")
URGENCIES = ("low", "normal", "high")


@dataclass
class JudgeConfig:
    """Settings, stored in the ledger (``gitledger judge config``); ``enabled=false`` makes the
    judge inert everywhere: no verdicts, no state written."""

    enabled: bool = True
    floor: float = DEFAULT_FLOOR
    model: str | None = None
    window: int | None = None
    fill_candidate: float = 70.0
    urgent_fill: float = 85.0
    long_task_turns: int = 5
    idle_turns: int = 3
    compaction_turns: int = 25
    backoff: tuple[int, ...] = (5, 10, 20)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["backoff"] = list(self.backoff)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JudgeConfig:
        config = cls()
        for key, value in data.items():
            if key in cls.__dataclass_fields__:
                config = config.with_value(key, value)
        return config

    def with_value(self, key: str, value: Any) -> JudgeConfig:
        """A copy with ``key`` set from ``value`` (a string from the command line, or JSON)."""
        from .errors import InvalidInput

        if key not in self.__dataclass_fields__:
            raise InvalidInput(
                f"Unknown judge setting {key!r}. Settings: {', '.join(self.__dataclass_fields__)}."
            )
        current = getattr(self, key)
        try:
            parsed: Any
            if key == "enabled":
                parsed = value if isinstance(value, bool) else _parse_bool(str(value))
            elif key == "model":
                parsed = str(value) if value not in (None, "", "none", "null") else None
            elif key == "window":
                parsed = int(value) if value not in (None, "", "none", "null", "auto") else None
                if parsed is not None and parsed < 1000:
                    raise ValueError("a window is at least 1000 tokens")
            elif key == "backoff":
                items = value if isinstance(value, (list, tuple)) else str(value).split(",")
                parsed = tuple(int(x) for x in items)
                if not parsed or any(x < 1 for x in parsed):
                    raise ValueError("turn counts of at least 1")
            elif isinstance(current, float):
                parsed = float(value)
                if not 0 <= parsed <= 100:
                    raise ValueError("a percentage from 0 to 100")
            else:
                parsed = int(value)
                if parsed < 1:
                    raise ValueError("at least 1")
        except (TypeError, ValueError) as exc:
            raise InvalidInput(f"Bad value {value!r} for judge setting {key!r}: {exc}.") from exc
        return JudgeConfig(**{**self.__dict__, key: parsed})


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("true or false")


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
        from .errors import InvalidInput

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


@dataclass
class TurnState:
    """What persists between turns of one session."""

    session: str
    cooldown_until: int = 0  # no candidate before this turn
    deferrals: int = 0  # consecutive deferrals (picks the next backoff)
    last_compaction_turn: int | None = None
    decisions: list[dict[str, Any]] = field(default_factory=list)  # the latest, newest last
    last_checkpoint: str | None = None  # the step the latest boundary checkpoint was taken at

    def to_dict(self) -> dict[str, Any]:
        return {"format": STATE_FORMAT, **asdict(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], session: str) -> TurnState:
        return cls(
            session=session,
            cooldown_until=int(data.get("cooldown_until", 0)),
            deferrals=int(data.get("deferrals", 0)),
            last_compaction_turn=data.get("last_compaction_turn"),
            decisions=list(data.get("decisions", []))[-20:],
            last_checkpoint=data.get("last_checkpoint"),
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


# --- state and settings in the ledger ---------------------------------------------------------


def judge_ref(session: str) -> str:
    from .fuse import check_session

    return JUDGE_REF_PREFIX + check_session(session)


def _read_json(ledger: Any, refname: str) -> tuple[dict[str, Any] | None, str | None]:
    import json

    tip = ledger.store.tip(refname)
    if tip is None:
        return None, None
    raw = ledger.store.read_files(tip, ("state.json",)).get("state.json")
    try:
        data = json.loads(raw or b"{}")
    except ValueError:
        data = {}
    return (data if isinstance(data, dict) else {}), tip


def _write_json(
    ledger: Any, refname: str, data: Mapping[str, Any], message: str, tip: str | None
) -> None:
    import json

    files = {
        "FORMAT": f"{STATE_FORMAT}\n".encode(),
        "state.json": json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True).encode(),
    }
    ledger.store.write(refname, files, message, ledger.author(), [tip] if tip else [], tip)


def config_at(path: Any) -> JudgeConfig:
    """The settings of the ledger at ``path`` (a bare repository), or the defaults if it has
    none. Reads the store directly: the step judge runs on every step of a session and should
    not pay for loading the task model."""
    from pathlib import Path

    from .gitstore import GitStore

    if not (Path(path) / "HEAD").exists():
        return load_config(None)

    class _Store:
        store = GitStore(Path(path))

    return load_config(_Store())


def load_config(ledger: Any | None) -> JudgeConfig:
    import os

    config = JudgeConfig()
    if ledger is not None:
        data, _ = _read_json(ledger, CONFIG_REF)
        if data:
            config = JudgeConfig.from_dict(data)
    env = os.environ.get("GITLEDGER_JUDGE")
    if env is not None and env.strip():
        try:
            if not _parse_bool(env):
                config = JudgeConfig(**{**config.__dict__, "enabled": False})
        except ValueError:
            pass
    return config


def save_config(ledger: Any, changes: Mapping[str, Any]) -> JudgeConfig:
    """Apply ``changes`` (setting → value) to the stored settings; all or nothing."""
    with ledger.store.lock():
        data, tip = _read_json(ledger, CONFIG_REF)
        config = JudgeConfig.from_dict(data or {})
        for key, value in changes.items():
            config = config.with_value(key, value)
        if changes:
            said = ", ".join(f"{k}={v}" for k, v in changes.items())
            _write_json(ledger, CONFIG_REF, config.to_dict(), f"judge config: {said}\n", tip)
    return config


def load_state(ledger: Any, session: str) -> TurnState:
    data, _ = _read_json(ledger, judge_ref(session))
    return TurnState.from_dict(data or {}, session)


def sessions(ledger: Any) -> list[str]:
    return sorted(name[len(JUDGE_REF_PREFIX) :] for name, _ in ledger.store.refs(JUDGE_REF_PREFIX))


def judge_turn(
    ledger: Any,
    session: str,
    transcript: Any,
    *,
    verdict: TurnVerdict | None = None,
) -> TurnDecision:
    """Run the turn pipeline on a transcript and store the session's state (one commit)."""
    from .transcripts import read_events

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

        from .fuse import save

        saved = save(ledger, session, transcript, trigger="turn-boundary")
        decision = replace(decision, checkpoint=str(saved.commit))
    return decision


def step_from_payload(data: Mapping[str, Any]) -> Any:
    """A step handed over by a hook (``{"text": …, "calls": [{"name", "input"}], "usage": …}``)
    as a transcript event, so it is judged after everything the transcript already holds."""
    from .errors import InvalidInput
    from .transcripts import Event, ToolCall, Usage

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


def step_context(
    transcript: Any | None,
    *,
    step: Mapping[str, Any] | None = None,
    window: int | None = None,
) -> StepContext | None:
    """The step to judge: the one a hook handed over (after the transcript), else the
    transcript's last assistant step. None when there is no step at all."""
    from pathlib import Path

    from .transcripts import read_events

    events: list[Any] = []
    try:
        readable = transcript is not None and Path(transcript).is_file()
    except (OSError, ValueError):  # a path too long for the file system is no transcript
        readable = False
    if readable and transcript is not None:
        events = list(read_events(Path(transcript)))
    if step is not None:
        pending = step_from_payload(step)
        last = next((e for e in reversed(events) if e.kind == "assistant"), None)
        # The transcript may already hold the step (Claude Code writes it asynchronously).
        if last is None or last.text.strip() != pending.text.strip() or not pending.text.strip():
            events.append(pending)
    contexts = contexts_from_events(events, window=window)
    return contexts[-1] if contexts else None


def context_from_messages(payload: Mapping[str, Any]) -> StepContext:
    """The step a function hook hands over with the conversation as Claude Code holds it.

    ``payload``: ``messages`` (``$.session.messages()``: ``{role, text, toolUses: [{tool,
    input}], toolResults}``, the shape taskcut's replay sets use too), ``step`` (``{text,
    calls}``), ``context_tokens`` and ``window`` (``$.session.measure()``), ``first_in_turn``.
    The conversation starts at the latest compaction, as the model sees it.
    """
    from .errors import InvalidInput

    raw_messages = payload.get("messages")
    if not isinstance(raw_messages, list) or not all(isinstance(m, Mapping) for m in raw_messages):
        raise InvalidInput('"messages" must be a list of {role, text, toolUses} objects.')
    history = tuple(_replay_message(m) for m in raw_messages)
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


def step_key(step: Step) -> str:
    """A short fingerprint of a step, so one step's several tool calls checkpoint once."""
    import hashlib

    names = ",".join(c.name for c in step.calls)
    return hashlib.sha256(f"{step.text}\x00{names}".encode()).hexdigest()[:16]


def checkpoint(ledger: Any, session: str, transcript: Any, step: Step) -> str | None:
    """At a boundary, commit a fuse snapshot (trigger ``boundary``) so the next compaction,
    whenever the agent runs it, restores from here. Returns the snapshot's commit, or None when
    this step was checkpointed already (a command hook runs once per tool call of the step)."""
    from .fuse import save

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
