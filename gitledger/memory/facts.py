"""The fact record: what one remembered fact is, how strong it is, how it is stored and merged.

A fact's strength follows a spacing curve (the package docstring says how); its fingerprint is
its kind plus its text with case, punctuation and spacing folded, so the same fact remembered
twice is one fact. Everything here is a pure function of records; storage and the index are in
``memory/store.py`` and ``memory/recall.py``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal

from ..errors import CorruptRecord, InvalidInput
from ..model import FieldCheck, check_text, new_id, record_from_dict
from ..text import one_line

if TYPE_CHECKING:
    from ..gitstore import GitStore

FACT_KINDS = ("decision", "pitfall", "constraint", "preference", "todo", "accomplishment")
FactKind = Literal["decision", "pitfall", "constraint", "preference", "todo", "accomplishment"]
FORMAT_LINE = "gitledger-fact 1\n"
FACT_FILES = ("FORMAT", "fact.json")
MAX_FACT_BYTES = 4096
BASE_STABILITY_DAYS = 3.0
DAY = 86400.0

Clock = Callable[[], float]


def iso(ts: float) -> str:
    return (
        datetime.fromtimestamp(ts, timezone.utc)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def timestamp(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def strength(importance: int, uses: int, last_used: float, now: float) -> float:
    """Retention on a spacing curve, scaled by importance (see the module docstring)."""
    stability = BASE_STABILITY_DAYS * (2 ** min(uses, 12)) * (importance / 3)
    idle_days = max(0.0, (now - last_used) / DAY)
    return float(0.5 ** (idle_days / stability) * (0.5 + importance / 10))


def fingerprint(kind: str, text: str) -> str:
    folded = " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())
    return hashlib.sha256(f"{kind}\n{folded}".encode()).hexdigest()[:32]


@dataclass(kw_only=True, slots=True)
class Fact:
    """One remembered fact, one version of it (a commit on ``refs/gitledger/memory/<id>``).

    Checked on construction like the task records (``model.FieldCheck``): strict JSON types.
    """

    id: str
    version: int
    kind: FactKind
    text: str
    tags: list[str] = field(default_factory=list)
    importance: int = 3
    source_task: str | None = None
    source_session: str | None = None
    source_commit: str | None = None
    created_at: str
    last_used_at: str
    uses: int = 0
    active: bool = True
    forgotten_reason: str | None = None
    fingerprint: str
    actor: str

    def __post_init__(self) -> None:
        check = FieldCheck()
        check.text("id", self.id, limit=256)
        check.integer("version", self.version, 1)
        if self.kind not in FACT_KINDS:
            check.fail("kind", f"{self.kind!r} is not one of {', '.join(FACT_KINDS)}")
        check.text("text", self.text, limit=MAX_FACT_BYTES)
        self.tags = check.items("tags", self.tags)
        for tag in self.tags:
            check.text("tags", tag, limit=256)
        check.integer("importance", self.importance, 1, 5)
        for name in ("source_task", "source_session", "source_commit", "forgotten_reason"):
            check.optional_text(name, getattr(self, name))
        for name in ("created_at", "last_used_at", "fingerprint", "actor"):
            check.text(name, getattr(self, name), limit=1024)
        check.integer("uses", self.uses, 0)
        if type(self.active) is not bool:
            check.fail("active", f"expected true or false, got {self.active!r}")

    @classmethod
    def from_dict(cls, raw: object, *, where: str = "") -> Fact:
        return record_from_dict(cls, raw, where)

    def replace(self, **changes: Any) -> Fact:
        """A copy with ``changes`` applied, checked like a new fact."""
        return dataclasses.replace(self, **changes)

    def to_json_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        out["tags"] = list(self.tags)
        return out

    def strength(self, now: float) -> float:
        return strength(self.importance, self.uses, timestamp(self.last_used_at), now)

    def to_dict(self, now: float | None = None) -> dict[str, Any]:
        data = self.to_json_dict()
        if now is not None:
            data["strength"] = round(self.strength(now), 4)
        return data


@dataclass(frozen=True)
class Hit:
    fact: Fact
    score: float
    relevance: float
    strength: float

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.fact.to_dict(),
            "score": round(self.score, 4),
            "relevance": round(self.relevance, 4),
            "strength": round(self.strength, 4),
        }


def new_fact(
    kind: str,
    text: str,
    *,
    tags: list[str],
    importance: int,
    now: float,
    actor: str,
    task: str | None = None,
    session: str | None = None,
    commit: str | None = None,
) -> Fact:
    """The first version of a fact remembered at ``now``, with a new id and its fingerprint."""
    return Fact(
        id=new_id(),
        version=1,
        kind=kind,  # type: ignore[arg-type] # checked by Fact itself
        text=text,
        tags=tags,
        importance=importance,
        source_task=task,
        source_session=session,
        source_commit=commit,
        created_at=iso(now),
        last_used_at=iso(now),
        fingerprint=fingerprint(kind, text),
        actor=actor,
    )


def encode_fact(fact: Fact) -> bytes:
    return (json.dumps(fact.to_json_dict(), sort_keys=True, ensure_ascii=False) + "\n").encode()


def to_row(fact: Fact) -> str:
    """A fact as the memory index stores it (compact JSON)."""
    return json.dumps(fact.to_json_dict(), ensure_ascii=False, separators=(",", ":"))


def from_row(text: str) -> Fact:
    return Fact.from_dict(json.loads(text))


def decode_fact(data: bytes | None, where: str) -> Fact:
    if data is None:
        raise CorruptRecord(f"{where}: no fact.json")
    try:
        return Fact.from_dict(json.loads(data))
    except InvalidInput as exc:
        raise CorruptRecord(f"{where}: fact.json does not validate ({exc.message})") from exc
    except (ValueError, RecursionError) as exc:
        raise CorruptRecord(f"{where}: fact.json is not valid JSON ({exc})") from exc


def clean_tags(tags: Iterable[str]) -> list[str]:
    out: list[str] = []
    for tag in tags:
        check_text(tag, "tag", limit=128)
        tag = tag.strip().lower()
        if not tag or any(ch.isspace() for ch in tag) or "," in tag:
            raise InvalidInput(f"A tag is one word without commas, not {tag!r}.")
        if tag not in out:
            out.append(tag)
    return out


def fact_files(fact: Fact) -> dict[str, bytes]:
    """The tree of one fact version."""
    return {"FORMAT": FORMAT_LINE.encode(), "fact.json": encode_fact(fact)}


def read_fact(store: GitStore, commit: str, where: str) -> Fact:
    files = store.read_files(commit, FACT_FILES)
    if files["FORMAT"] != FORMAT_LINE.encode():
        raise CorruptRecord(f"{where}: unknown fact format")
    return decode_fact(files["fact.json"], where)


def merge_facts(base: Fact | None, ours: Fact, theirs: Fact) -> Fact:
    """One fact changed on two machines: keep every use and tag, never lose a restore.

    Uses add up (each side's uses since the common version), the latest use and the highest
    importance win, tags are a union; if one side forgot or restored the fact, that change wins,
    and if both changed it differently, the fact stays active (forgetting is the cheap one to redo).
    """
    base_uses = base.uses if base else 0
    uses = base_uses + max(0, ours.uses - base_uses) + max(0, theirs.uses - base_uses)
    active = ours.active
    if base is not None and ours.active == base.active:
        active = theirs.active
    elif base is not None and theirs.active != base.active and theirs.active != ours.active:
        active = True
    elif base is None and ours.active != theirs.active:
        active = True
    reason = None if active else (ours.forgotten_reason or theirs.forgotten_reason)
    return ours.replace(
        version=max(ours.version, theirs.version) + 1,
        uses=uses,
        last_used_at=max(ours.last_used_at, theirs.last_used_at),
        created_at=min(ours.created_at, theirs.created_at),
        importance=max(ours.importance, theirs.importance),
        tags=ours.tags + [t for t in theirs.tags if t not in ours.tags],
        active=active,
        forgotten_reason=reason,
        source_task=ours.source_task or theirs.source_task,
        source_session=ours.source_session or theirs.source_session,
    )


def check_kind(kind: str) -> None:
    if kind not in FACT_KINDS:
        raise InvalidInput(f"Unknown kind '{kind[:30]}'. Use one of: {', '.join(FACT_KINDS)}.")


def short(text: str, width: int = 60) -> str:
    return one_line(text, width)


def strength_curve(importance: int, uses: int, days: Iterable[float]) -> list[float]:
    """Strength after ``days`` idle, for docs and tests of the curve's shape."""
    return [strength(importance, uses, 0.0, d * DAY) for d in days]


__all__ = [
    "BASE_STABILITY_DAYS",
    "DAY",
    "FACT_FILES",
    "FACT_KINDS",
    "FORMAT_LINE",
    "MAX_FACT_BYTES",
    "Clock",
    "Fact",
    "FactKind",
    "Hit",
    "check_kind",
    "clean_tags",
    "decode_fact",
    "encode_fact",
    "fact_files",
    "fingerprint",
    "from_row",
    "iso",
    "merge_facts",
    "new_fact",
    "read_fact",
    "short",
    "strength",
    "strength_curve",
    "timestamp",
    "to_row",
]
