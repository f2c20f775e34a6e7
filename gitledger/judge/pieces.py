"""Reading pieces of work out of the assistant's words: which piece it names, turns to, finishes,
and whether it asks the person something."""

from __future__ import annotations

import re
from functools import lru_cache

from ..structs import struct
from .calls import ASK_TOOLS
from .patterns import Lazy

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from typing import Any

    from .shapes import Step

# Text past this many characters is not read for pieces: a step says where it is going early,
# and long messages are wrap-ups.
TEXT_LIMIT = 3000


_NOUN = (
    r"(?:issues?|tasks?|items?|tickets?|bugs?|todos?|problems?|questions?|steps?|phases?|"
    r"findings?|fix(?:es)?|scenarios?|comments?|points?|concerns?|suggestions?)"
)
_NUM_REF = rf"{_NOUN}\s*#?\s*(\d+)"
_PART_REF = r"parts?\s*\(?([a-hA-H]|\d+)\)?(?![\w])"
_CJK_REF = r"(?:第\s*(\d+)\s*(?:个|项|項|号)|(?:问题|任务|事项)\s*#?\s*(\d+))"
# A piece reference: issue 4, task #2, part (b), 第 4 个.
# Patterns without IGNORECASE run on lowercased text (Python's re is several times slower with it).
# A short code for a piece (T3, F7, #4): a letter and one or two digits, or a number after #.
_CODE_REF = r"\b([a-z]\d{1,2})(?!\w|\.\d)|(?<![\w&])#(\d+)\b"
PIECE_RE: Any = Lazy(rf"\b{_NUM_REF}|\b{_PART_REF}|{_CJK_REF}|{_CODE_REF}")

_START_WORDS = (
    r"now|next(?:\s+(?:is|up|comes))?|up next|on to|onto|moving(?:\s+on)?\s+to|move(?:\s+on)?\s+to|"
    r"turning to|turn to|starting(?:\s+(?:with|on))?|start(?:\s+(?:with|on))?|begin(?:ning)?"
    r"(?:\s+with)?|then|proceed(?:ing)?\s+to|i'?m (?:now )?on|i am (?:now )?on|"
    r"(?:i'?ve )?started(?:\s+on)?|working on|last is|the last one,?|last,?|"
    r"launch(?:ing)?|dispatch(?:ing)?(?:\s+\S+){0,4}?\s+for|address(?:ing)?|tackl(?:e|ing)|"
    r"fix(?:ing)?|handl(?:e|ing)|proceed(?:ing)?\s+with|continu(?:e|ing)\s+with"
)
# "now issue 4", "moving on to task 2", "I'm on issue 5", "Next is Issue 25".
# Read on the few words before each piece reference, which is much cheaper than the whole text.
# "now test hygiene (F15)": a piece in brackets right after a few words of moving on.
START_BEFORE_RE: Any = Lazy(
    rf"\b(?:{_START_WORDS})\s*[:,]?\s*(?:is\s+|with\s+)?(?:the\s+)?$"
    r"|\b(?:now|next|on to|moving on to)\s+(?:[\w-]+\s+){1,4}\($"
)
# "committing 9 and starting 10": a bare number after a verb of moving on.
START_BARE_RE: Any = Lazy(
    r"\b(?:starting(?:\s+on)?|start(?:\s+on)?|moving(?:\s+on)?\s+to|on to|then)\s+#?(\d+)\b"
)
START_CJK_RE: Any = Lazy(
    r"(?:开始|进入|转到|接着做|接下来做|正在做|然后做|再做|去做|做)\s*(?:第\s*(\d+)\s*(?:个|项|项)"
    r"|(?:问题|任务)\s*#?\s*(\d+))"
)
# A sentence that opens with the piece and does not say it is done turns to it: "Issue 16:
# GROUPING() type", "Issue 1.", "Issue 5 is the largest so far", "第 14 个问题：…".
HEADING_RE: Any = Lazy(
    rf"^[\s*_#>-]*(?:{_NUM_REF}|{_PART_REF}|{_CJK_REF}(?:问题|任务|事项)?|{_CODE_REF})"
    r"(?!\s*(?:and|or|&|,|–|-)\s*\d)"
)
# "before moving on to issue 22", "a checkpoint before Issue 11": the move is announced for later.
DEFER_RE: Any = Lazy(
    rf"\b(?:before|after)\s+(?:(?:i\s+)?(?:moving|move|going|turning|starting|continuing|"
    rf"proceeding)(?:\s+on)?(?:\s+(?:to|with))?\s+)?(?:the\s+)?(?:{_NUM_REF}|{_PART_REF})"
)
# "Will review its diff, then T3": a piece after "then" in a sentence about what will happen
# is a plan for later, not a move.
DEFER_THEN_RE: Any = Lazy(
    rf"(\b(?:will|'ll|going to)\b[^.!?\n]{{0,80}}?)\bthen\s+(?:the\s+)?"
    rf"(?:{_NUM_REF}|{_PART_REF}|{_CODE_REF})"
)
_DONE = (
    r"done|pass(?:es|ed|ing)?|fixed|complete[ds]?|finished|committed|resolved|confirmed|"
    r"is in|are in|clean|works|work now|green|solved|handled|implemented|landed|merged|"
    r"no (?:new )?(?:regressions?|failures?)"
)
# "pre-pass", "fixed-size": a word joined to another by a hyphen is not a finishing claim.
DONE_RE: Any = Lazy(rf"(?<![-/])\b(?:{_DONE})\b(?!-)", re.IGNORECASE)
DONE_CJK_RE: Any = Lazy(
    r"已通过|通过了|都过了|已经提交|已提交|提交了|已完成|完成了|做完|修好|解决了|已修复"
)
COMMIT_WORD_RE: Any = Lazy(r"\bcommit(?:ting|ted|s)?\b|提交", re.IGNORECASE)
NOT_DONE_RE: Any = Lazy(
    r"\b(?:not|n't|never|still|yet|fails?|failing|broke|breaks|regress(?:ed|es)?)\b|未|没有通过",
    re.IGNORECASE,
)
# Short sentences that close the piece in hand without naming it: "Clean." "Done." "Good."
GENERIC_DONE_RE: Any = Lazy(
    r"^\s*(?:all\s+)?(?:clean|done|good|passing|passes|fixed|all good|all green|green|"
    r"that works|works|perfect|great)\s*[.!]?\s*$",
    re.IGNORECASE,
)
# Asking the person, waiting on a decision, offering work not asked for.
ASK_RE: Any = Lazy(
    r"\b(?:would you like|do you want|should i|shall i|want me to|let me know|"
    r"which (?:one|option|approach|of these) (?:do|would|should)|please (?:confirm|choose|decide|"
    r"let me know|advise)|can you (?:confirm|tell|check|clarify)|could you (?:confirm|tell|check|"
    r"clarify)|i (?:could|can) also|if you(?:'d| would) like|if you want|your call|"
    r"up to you|waiting for (?:you|your)|before i (?:proceed|continue|go on)|"
    r"i'?d (?:suggest|recommend)|you (?:may|might) want to|next steps? (?:could|would) be)\b"
    r"|要不要|是否需要|你希望|请确认|你想|需要我",
    re.IGNORECASE,
)
_SENTENCE_SPLIT: Any = Lazy(r"(?<=[.!?;。！？；])\s+|\n+|(?<=[。！？；，])")


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
_MAYBE_PIECE: Any = Lazy(r"\d|\bparts?\b|第", re.IGNORECASE)


@lru_cache(maxsize=8192)
def _starts_of(text: str) -> tuple[str, ...]:
    text = text[:TEXT_LIMIT]
    return tuple(started_pieces(text)) if _MAYBE_PIECE.search(text) else ()


_SET_OFF: Any = Lazy(r"\s*(?:[:.—–()]|-\s|\*\*|$)")


@lru_cache(maxsize=8192)
def headings_of(text: str) -> tuple[str, ...]:
    """The pieces the text opens a heading for ("Issue 4:", "**Item 2: …**", "F7 — …")."""
    text = text[:TEXT_LIMIT]
    return tuple(started_pieces(text, headings=True)) if _MAYBE_PIECE.search(text) else ()


def started_pieces(text: str, *, headings: bool = False) -> list[str]:
    """The pieces the text says it turns to, in order (announced-for-later moves left out);
    with ``headings``, only those it opens a heading for."""
    lowered = text.lower()
    if not _MAYBE_PIECE.search(lowered):
        return []
    cleaned = DEFER_RE.sub(" ", lowered)
    if "then" in cleaned:
        cleaned = DEFER_THEN_RE.sub(lambda m: m.group(1) + " " * (m.end() - m.end(1)), cleaned)
    refs = list(PIECE_RE.finditer(cleaned))
    if not refs:
        return []
    found: list[tuple[int, str]] = []
    for match in refs if not headings else ():
        ident = _piece_ids(match)
        if ident and START_BEFORE_RE.search(cleaned, max(0, match.start() - 48), match.start()):
            found.append((match.start(), ident))
    if not headings and ("第" in cleaned or "问题" in cleaned or "任务" in cleaned):
        for match in START_CJK_RE.finditer(cleaned):
            ident = _piece_ids(match)
            if ident:
                found.append((match.start(), ident))
    for match in START_BARE_RE.finditer(cleaned) if not headings else ():
        found.append((match.start(), match.group(1)))
    offset = 0
    for sentence in sentences(cleaned):
        where = cleaned.find(sentence, offset)
        offset = max(offset, where)
        heading = HEADING_RE.match(sentence)
        # A heading opens a line, or sets its piece off ("Issue 4:", "F7 — …"); "Phase 5 calls
        # it again" inside a paragraph only mentions the piece.
        if (
            heading
            and (
                where <= 0 or cleaned[where - 1] == "\n" or _SET_OFF.match(sentence, heading.end())
            )
            and not _claims_done(sentence)
        ):
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


@struct(frozen=True)
class Completion:
    pieces: tuple[str, ...]  # the pieces said to be done (empty: the piece in hand)
    generic: bool  # "Clean." / "Committing." without naming a piece
    unnamed: bool = False  # "Oracle passes": done, but which piece is not said


# Any word that can start a finishing claim; a text without one is not read sentence by sentence.
_DONE_HINT: Any = Lazy(
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


@struct(frozen=True)
class TextFacts:
    starts: tuple[str, ...]
    done: tuple[Completion, ...]
    text: str = ""  # what was read (the first TEXT_LIMIT characters)

    @property
    def refs(self) -> tuple[str, ...]:
        """Every piece named, read only when asked: most messages never need it."""
        return _refs_of(self.text)


@lru_cache(maxsize=8192)
def _refs_of(text: str) -> tuple[str, ...]:
    return tuple(piece_refs(text))


@lru_cache(maxsize=8192)
def _text_facts(text: str) -> TextFacts:
    text = text[:TEXT_LIMIT]
    return TextFacts(_starts_of(text), tuple(completions(text)), text)


def asks_person(step: Step) -> bool:
    if any(call.name in ASK_TOOLS for call in step.calls):
        return True
    if ASK_RE.search(step.text):
        return True
    # A question to the person is the step's last sentence; a rhetorical "why?" mid-analysis is not.
    tail = sentences(step.text)[-1:] if step.text.strip() else []
    return bool(tail and tail[0].rstrip().endswith(("?", "？")) and not step.calls)


# A piece that only checks what is done: the wrap-up, not a piece of its own.
CHECKUP_RE: Any = Lazy(
    r"\b(?:final|verif(?:y|ication|ying)|sanity|lint(?:ing)?|wrap(?:-|\s)?up|double-check|"
    r"full (?:test )?suite|regression check)\b",
    re.IGNORECASE,
)


def is_checkup(text: str, piece: str | None = None) -> bool:
    """Whether the sentence that turns to ``piece`` (or the text) describes a check of the work
    done."""
    if piece is None:
        return bool(CHECKUP_RE.search(text[:TEXT_LIMIT]))
    for sentence in sentences(text[:TEXT_LIMIT]):
        if piece in piece_refs(sentence):
            return bool(CHECKUP_RE.search(sentence))
    return False


# A step that opens with a heading of a few words set off by a dash or colon ("Engine fixes — …").
HEADING_START_RE: Any = Lazy(r"^[\s*_#>]*(?:[\w`'/-]+\s+){0,4}[\w`'/-]+\s*(?:—|–|:\s*$|\*\*\s*$)")

# A step that opens by turning to something: "Now I'll add …", "Next, …", "Moving on to …".
OPENS_RE: Any = Lazy(
    r"^[\s*_#>-]*(?:now|next|moving on|on to|then|finally|let me now|time to)\b", re.IGNORECASE
)


# --- the words of a piece -------------------------------------------------------------------

_WORD_RE: Any = Lazy(r"[a-z][a-z0-9_]{2,}")
_STOP = frozenset(
    "the and for with that this from into then also now let add make use new can you all are "
    "was were has have had not but its it's our out get set one two any each when what which "
    "who how why where there their them they will would should could may might must just like "
    "want need needs please yes sure okay see look check code file files run test tests".split()
)


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


@lru_cache(maxsize=8192)
def words_of(text: str) -> frozenset[str]:
    """The content words of a text, lowercased and stemmed: what a piece is about."""
    return frozenset(
        _stem(w) for w in _WORD_RE.findall(text[:TEXT_LIMIT].lower()) if w not in _STOP
    )


# The step turns to answering what the person asked: a piece of its own.
ANSWER_RE: Any = Lazy(
    r"\b(?:(?:to |let me |now (?:i'?ll |let me )?)answer(?:ing)? your (?:\w+ )?questions?|"
    r"(?:as for|regarding|on|about) your (?:\w+ )?question)\b",
    re.IGNORECASE,
)

# An item of a list: "1. …", "- …", "* …", "**2. …**" at the start of a line.
_ITEM_RE: Any = Lazy(r"^[ \t]*(?:\*\*)?(?:\d{1,2}[.)]|[-*•])[ \t]+(?=\S)", re.MULTILINE)


def list_items(text: str) -> list[str]:
    """The items of the first list of two or more items in the text (each item's text up to the
    next item or a blank line)."""
    text = text[: TEXT_LIMIT * 3]
    starts = [m.start() for m in _ITEM_RE.finditer(text)]
    if len(starts) < 2:
        return []
    items = []
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else len(text)
        body = text[start:end]
        blank = body.find("\n\n")
        items.append(body[:blank] if blank > 0 else body)
    return items


# Pieces a request joins in words: "create the issue, then reference it in the reply", "Can we
# add logging? Also, …". A split point is "then" after a comma, dash, "and" or a sentence's end,
# or "also" opening a sentence.
_JOINED_RE: Any = Lazy(
    r"(?:[,;:]|\s[-–—]|\band|[.!?])\s+then\b[,:]?|(?:^|[.!?]\s+|\n\s*)also\b[,:]?",
    re.IGNORECASE,
)
# A sentence that turns to work: "Now let me reply to the comment", "Next, the docs".
TURN_RE: Any = Lazy(r"^[\s*_#>-]*(?:now|next|then|moving on|on to)\b", re.IGNORECASE)


def joined_pieces(text: str) -> list[str]:
    """The pieces a request joins with "then" or "also" (see ``_JOINED_RE``), in order; empty
    when it joins fewer than two."""
    text = text[:TEXT_LIMIT]
    parts = [p.strip() for p in _JOINED_RE.split(text)]
    return [p for p in parts if p] if len([p for p in parts if p]) >= 2 else []


__all__ = [
    "ANSWER_RE",
    "ASK_RE",
    "CHECKUP_RE",
    "COMMIT_WORD_RE",
    "Completion",
    "DEFER_RE",
    "DEFER_THEN_RE",
    "DONE_CJK_RE",
    "DONE_RE",
    "GENERIC_DONE_RE",
    "HEADING_RE",
    "HEADING_START_RE",
    "NOT_DONE_RE",
    "OPENS_RE",
    "PIECE_RE",
    "START_BARE_RE",
    "START_BEFORE_RE",
    "START_CJK_RE",
    "TEXT_LIMIT",
    "TURN_RE",
    "TextFacts",
    "asks_person",
    "completions",
    "headings_of",
    "is_checkup",
    "joined_pieces",
    "list_items",
    "piece_refs",
    "sentences",
    "started_pieces",
    "words_of",
]
