"""Text as data and in fewer bytes: one line, cut at a word, condensed to the clauses that
name the most (what the renderer does to an item that does not fit)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from ..text import cut, fold

_REMINDER_RE = re.compile(
    r"<(system-reminder|ide_selection|ide_opened_file|ide_diagnostics)>.*?</\1>", re.S
)
_TAG_RE = re.compile(r"</?[a-zA-Z][\w-]*>")
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(\[])|\n+")
_LINE_NUMBER_RE = re.compile(r"^\s*\d+[→\t]", re.M)


def clean(text: str) -> str:
    """One line of data: reminders dropped, control characters folded, whitespace collapsed."""
    text = fold(_REMINDER_RE.sub(" ", text))
    # A fence inside stored text must not close ours.
    return text.replace("~~~", "~ ~ ~").replace("```", "` ` `")


_HEADING_LIKE_RE = re.compile(r"\b([A-Z])([A-Z][A-Z0-9 ()/-]*[A-Z0-9)])(?=:)")


def defang(text: str) -> str:
    """``text`` as an item inside a rendered section, in exactly as many bytes: nothing in it
    reads as a fence (``~~~``, three backquotes), as the separator of a one-line section
    (``|``) or as a section heading (``RULES:``, ``OPEN ITEMS:``, written ``Rules:``). Applied
    after shortening too, since dropping words can join what ``clean`` kept apart."""
    text = text.replace("~~~", "~-~").replace("```", "`'`").replace("|", "/")
    return _HEADING_LIKE_RE.sub(lambda m: m.group(1) + m.group(2).lower(), text)


_FILLER_WORDS_RE = re.compile(
    r"(?<![\w/.`'-])(a|an|the|that|which|is|are|was|were|been|being|just|really|very|also|"
    r"please|so|then|now|there|here|some|its|it|this|these|those|of|looks good|ok|okay)"
    r"(?![\w/`'-]|\.\w)[,.]?\s*",
    re.I,
)


# Words a note can do without once an item has to be shortened (the first person, "let me").
_NOTE_WORDS_RE = re.compile(
    r"(?<![\w/.`'-])(i'?ll|i'?m|i am|i|we'?ll|we|let me|let'?s|actually|basically)"
    r"(?![\w/`'-]|\.\w)\s*",
    re.I,
)


@lru_cache(maxsize=4096)  # the packer asks again for every slot it tries
def _dense(text: str) -> str:
    """``text`` as a terse note: filler words and the first person left out."""
    dense = _NOTE_WORDS_RE.sub("", _FILLER_WORDS_RE.sub("", text))
    return " ".join(dense.split()) or text


def shorten(text: str, limit: int) -> str:
    """``text`` in ``limit`` bytes: as is if it fits, else without filler words, then cut."""
    if len(text.encode("utf-8")) <= limit:
        return text
    dense = " ".join(_FILLER_WORDS_RE.sub("", text).split())
    return cut(dense or text, limit)


# Clause boundaries: punctuation followed by a space, a dash between words, or a conjunction that
# starts a reason or a contrast.
_CLAUSE_RE = re.compile(
    r"(?<=[,;:.!?])(?<!\s\d\.)(?<!\s\d\d\.)\s+|\s+[—–-]\s+|"
    r"\s+(?=(?:because|since|so that|so|but|rather than|instead of|while|and then)\s)",
    re.I,
)
# Words a reader cannot reconstruct from context: names with digits, underscores, slashes, dots
# or quotes (two points); CamelCase and ALL-CAPS words, addresses and versions (one point).
_NAME_RE = re.compile(r"[\d_/`]|\w\.\w")
_CAPS_RE = re.compile(r"[A-Z][a-z0-9]+[A-Z]|[A-Z][A-Z0-9]+$")
_DOTTED_NUMBER_RE = re.compile(r"\d+(\.\d+)+")


@lru_cache(maxsize=16_384)
def _word_salience(word: str) -> int:
    word = word.strip(".,;:!?()[]{}\"'…")
    if _DOTTED_NUMBER_RE.fullmatch(word):
        return 1
    if _NAME_RE.search(word):
        return 2
    return 1 if _CAPS_RE.match(word) else 0


@lru_cache(maxsize=4096)
def _salience(text: str) -> int:
    """How much ``text`` names: the points of its distinct words (see ``_word_salience``)."""
    return sum(_word_salience(word) for word in set(text.split()))


@lru_cache(maxsize=4096)
def _named(clause: str) -> int:
    """The salience of a clause that reads on its own: brackets and quotes balanced."""
    pairs = (("(", ")"), ("[", "]"), ("{", "}"))
    if not re.search(r"[^\W\d_]{2}", clause):
        return 0  # a list's number ("2."), a rule ("---"): no clause of its own
    if clause.count("`") % 2 or any(clause.count(a) != clause.count(b) for a, b in pairs):
        return 0
    return _salience(clause)


@lru_cache(maxsize=4096)
def _clauses(text: str) -> tuple[tuple[str, str], ...]:
    """``text`` split into (clause, the separator that followed it). A short clause ending in ":"
    is a label ("last action:", "Found one earlier attempt:") and stays with what follows it."""
    out: list[tuple[str, str]] = []
    start = 0
    for match in _CLAUSE_RE.finditer(text):
        label = text[match.start() - 1] == ":" and match.start() - start <= 30
        if match.start() > start and not label:
            out.append((text[start : match.start()], text[match.start() : match.end()]))
            start = match.end()
    if start < len(text):
        out.append((text[start:], ""))
    return tuple(out)


def condense(text: str, limit: int, *, terse: bool = True) -> str:
    """``text`` in at most ``limit`` UTF-8 bytes, keeping what says the most.

    As is if it fits; else as a terse note (filler words and the first person left out; not when
    ``terse`` is false: the person's words are quoted as written, only cut); else its
    first clause, which says what the item is, plus as many of its other clauses as fit, those
    naming files, identifiers or numbers first, in their original order with "…" for a gap;
    a first clause that does not fit alone is cut at a word boundary."""
    if len(text.encode("utf-8")) <= limit:
        return text
    dense = _dense(text) if terse else " ".join(text.split())
    if len(dense.encode("utf-8")) <= limit:
        return dense
    parts = _clauses(dense)
    if len(parts) < 2:
        return cut(dense, limit)

    def build(chosen: list[int]) -> str:
        out = ""
        for n, i in enumerate(chosen):
            clause = parts[i][0]
            if n + 1 < len(chosen):
                gap = chosen[n + 1] != i + 1
                out += clause.rstrip(" ,;:") + " … " if gap else clause + parts[i][1]
            else:
                out += clause.rstrip(" ,;:.") + ("…" if i + 1 < len(parts) else "")
        return out

    chosen = [0]
    if len(build(chosen).encode("utf-8")) > limit:
        return _window(parts[0][0], limit)
    # the clauses that name the most for their length first; a fragment of code cut out of its
    # brackets names nothing a reader can use
    rest = sorted(range(1, len(parts)), key=lambda i: (-_named(parts[i][0]) / len(parts[i][0]), i))
    size = len(build(chosen).encode("utf-8"))
    for i in rest:
        # adding a clause can save at most a gap mark and the final "…" (8 bytes)
        if size + len(parts[i][0].encode("utf-8")) - 8 > limit:
            continue
        trial = sorted([*chosen, i])
        trial_size = len(build(trial).encode("utf-8"))
        if trial_size <= limit:
            chosen, size = trial, trial_size
    shown, head = build(chosen), cut(dense, limit)
    # Whole clauses, unless the head of the note (cut mid-clause) names more, or as much in a
    # good deal more words.
    gain = _salience(head) - _salience(shown)
    return head if gain > 0 or (gain == 0 and len(shown) < len(head) * 2 // 3) else shown


def _window(text: str, limit: int) -> str:
    """The words of ``text`` that fit ``limit`` bytes (with "…" where cut) and name the most
    files, identifiers or numbers; the earliest such run of words when several do; the head of
    ``text`` when no run names one. A run starts at the first word or at a word that names
    something, and keeps the first word, which often says which way the rest goes ("Never")."""
    words = text.rstrip(" ,;:.").split()
    best: tuple[int, int, str] = (1, 0, cut(text, limit))
    sizes = [len(w.encode("utf-8")) + 1 for w in words]
    for i, word in enumerate(words):
        if i and not _word_salience(word):
            continue
        lead = "" if i == 0 else words[0] + " … " if i > 1 else words[0] + " "
        room = limit - len(lead.encode("utf-8")) + 1 - 3  # +1: no space after the last word
        j, used = i, 0
        while j < len(words) and used + sizes[j] <= room + (3 if j + 1 == len(words) else 0):
            used += sizes[j]
            j += 1
        if j == i:
            continue
        shown = lead + " ".join(words[i:j]) + ("…" if j < len(words) else "")
        score = _salience(shown)
        if score > best[0] or (score == best[0] and j - i > best[1]):
            best = (score, j - i, shown)
    return best[2]


def shorten_path(path: str, limit: int) -> str:
    """A file path in ``limit`` bytes, shortened from the left: the file name says the most."""
    if len(path.encode("utf-8")) <= limit:
        return path
    parts = path.split("/")
    tail = parts[-1]
    for part in reversed(parts[:-1]):
        longer = part + "/" + tail
        if len(("…/" + longer).encode("utf-8")) > limit:
            break
        tail = longer
    shown = "…/" + tail
    return shown if len(shown.encode("utf-8")) <= limit else cut(parts[-1], limit)


# Leads that label what follows ("Decision: use X because Y"): kept, since they say what it is.
_LABEL_LEADS = frozenset(
    {"decision", "decided", "finding", "findings", "root cause", "conclusion", "constraint"}
)


def relative_paths(text: str, folder: str) -> str:
    """``text`` with the paths under ``folder`` written relative to it (``/home/a/cli/cmd/x.go``
    -> ``cmd/x.go``); a folder of one character (``/``) changes nothing."""
    root = folder.rstrip("/")
    return text.replace(root + "/", "") if len(root) > 1 else text


def _sentences(text: str) -> Iterator[str]:
    for part in _SENTENCE_RE.split(text):
        part = part.strip(" \t-*#>")
        lead, colon, rest = part.partition(": ")
        if colon and len(lead) <= 30 and len(rest) >= 12 and lead.lower() not in _LABEL_LEADS:
            part = rest  # "Two rules from ops: never …" -> "never …"
        if 12 <= len(part) <= 600:
            yield part


def _norm(text: str) -> str:
    return re.sub(r"[\W_]+", " ", text.lower()).strip()


__all__ = [
    "clean",
    "condense",
    "defang",
    "relative_paths",
    "shorten",
    "shorten_path",
]
