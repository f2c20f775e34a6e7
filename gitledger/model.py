"""Task records: what one version of a task holds, its limits, and how it is stored.

A task version is a Git commit whose tree has three files:

``FORMAT``
    ``gitledger-task 1``: the record format, so a reader can refuse what it does not know and a
    migration has something to key on.
``task.json``
    the machine record (canonical JSON: sorted keys, UTF-8), validated by ``Task`` below.
``task.md``
    the same record rendered as Markdown, so ``git log -p`` on a task's ref reads like a changelog.

Lists (notes, decisions, evidence) hold entries with random ids, so that two machines' concurrent
additions merge as a union that never loses one. ``clock`` keeps, per scalar field, the hybrid
logical clock stamp of its last change; merges of diverged histories pick the later write by that
stamp, never by raw wall time.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import time
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import CorruptRecord, InvalidInput

FORMAT_NAME = "gitledger-task"
FORMAT_VERSION = 1
FORMAT_LINE = f"{FORMAT_NAME} {FORMAT_VERSION}\n"

STATUSES = ("open", "active", "blocked", "done", "cancelled")
Status = Literal["open", "active", "blocked", "done", "cancelled"]
FINISHED = frozenset({"done", "cancelled"})

MAX_FIELD_BYTES = 64 * 1024
MAX_LABELS = 64
MAX_LABEL_BYTES = 128
PRIORITY_MIN, PRIORITY_MAX, PRIORITY_DEFAULT = 0, 4, 2

# Crockford's base32 alphabet: no i, l, o, u, so an id read aloud or retyped survives.
ID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
ID_LENGTH = 20  # 100 random bits
MIN_SHORT_ID = 6
ID_PATTERN = re.compile(rf"^[{ID_ALPHABET}]{{{ID_LENGTH}}}$")
PREFIX_PATTERN = re.compile(rf"^[{ID_ALPHABET}]{{1,{ID_LENGTH}}}$")

# Fields a merge treats as single values (last writer wins by clock) rather than sets.
SCALAR_FIELDS = ("goal", "criteria", "status", "owner", "blocker", "next", "priority", "parent")
SET_FIELDS = ("labels", "dependencies")
ENTRY_FIELDS = ("decisions", "evidence", "notes")


def new_id() -> str:
    """100 random bits in Crockford's base32: one urandom call, five bits a character."""
    bits = int.from_bytes(os.urandom(13), "big") >> 4  # 104 bits, keep 100
    return "".join(ID_ALPHABET[(bits >> (5 * i)) & 31] for i in range(ID_LENGTH))


def new_entry_id() -> str:
    return secrets.token_hex(6)


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def criteria_hash(criteria: str) -> str:
    """SHA-256 of the criteria text: evidence is bound to the criteria it was logged against."""
    return hashlib.sha256(criteria.encode("utf-8")).hexdigest()


def check_text(value: str, field: str, *, limit: int = MAX_FIELD_BYTES) -> str:
    """Refuse text gitledger would store badly: NUL bytes, undecodable bytes, oversize fields."""
    if "\x00" in value:
        raise InvalidInput(f"{field} contains a NUL byte; remove it and try again.")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        # click hands undecodable argv bytes over as lone surrogates.
        raise InvalidInput(
            f"{field} is not valid UTF-8; re-encode the text as UTF-8 and try again."
        ) from None
    if size > limit:
        raise InvalidInput(
            f"{field} is {size:,} bytes, over the limit of {limit:,}; shorten it or store the "
            f"long text in a file and refer to it."
        )
    return value


class HybridClock:
    """A hybrid logical clock: wall milliseconds, a counter, and the writer's node.

    Stamps sort as strings. A new stamp is later than every stamp the writer has seen, even when
    the wall clock stepped backwards, so a merge's last-writer-wins never depends on skew alone.
    """

    @staticmethod
    def node() -> str:
        raw = os.environ.get("GITLEDGER_NODE") or f"{os.uname().nodename}"
        return hashlib.sha256(raw.encode()).hexdigest()[:8]

    @staticmethod
    def parse(stamp: str) -> tuple[int, int]:
        wall, counter, _ = stamp.split(".", 2)
        return int(wall), int(counter)

    @classmethod
    def tick(cls, seen: list[str]) -> str:
        wall = int(time.time() * 1000)
        counter = 0
        if seen:
            last_wall, last_counter = cls.parse(max(seen))
            if last_wall >= wall:
                wall, counter = last_wall, last_counter + 1
        return f"{wall:013d}.{counter:04d}.{cls.node()}"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, validate_assignment=False)


class Entry(_Strict):
    """A note or a decision: text with who wrote it and when."""

    id: str
    text: str
    at: str
    actor: str

    @field_validator("text")
    @classmethod
    def _text(cls, value: str) -> str:
        return check_text(value, "entry text")


class Evidence(Entry):
    """Evidence, bound to the task and to the criteria it was logged against."""

    task_id: str
    criteria_hash: str


class FieldConflict(_Strict):
    """A scalar both sides of a merge changed; the later write won, the other is kept here."""

    field: str
    kept: Any
    dropped: Any
    at: str


class Task(_Strict):
    id: str
    version: int = Field(ge=1)
    goal: str
    criteria: str = ""
    status: Status = "open"
    owner: str | None = None
    blocker: str | None = None
    next: str | None = None
    priority: int = Field(default=PRIORITY_DEFAULT, ge=PRIORITY_MIN, le=PRIORITY_MAX)
    labels: list[str] = Field(default_factory=list)
    parent: str | None = None
    dependencies: list[str] = Field(default_factory=list)
    decisions: list[Entry] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)
    notes: list[Entry] = Field(default_factory=list)
    created_at: str
    updated_at: str
    actor: str
    idempotency_key: str | None = None
    request_hash: str | None = None
    clock: dict[str, str] = Field(default_factory=dict)
    conflicts: list[FieldConflict] = Field(default_factory=list)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not ID_PATTERN.match(value):
            raise ValueError(f"not a task id: {value!r}")
        return value

    @field_validator("parent")
    @classmethod
    def _parent(cls, value: str | None) -> str | None:
        if value is not None and not ID_PATTERN.match(value):
            raise ValueError(f"not a task id: {value!r}")
        return value

    @field_validator("dependencies")
    @classmethod
    def _dependencies(cls, value: list[str]) -> list[str]:
        for dep in value:
            if not ID_PATTERN.match(dep):
                raise ValueError(f"not a task id: {dep!r}")
        return value

    @field_validator("goal", "criteria", "owner", "blocker", "next")
    @classmethod
    def _texts(cls, value: str | None, info: Any) -> str | None:
        if value is not None:
            check_text(value, info.field_name)
        return value

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: list[str]) -> list[str]:
        if len(value) > MAX_LABELS:
            raise ValueError(f"at most {MAX_LABELS} labels")
        for label in value:
            check_text(label, "label", limit=MAX_LABEL_BYTES)
            if not label.strip() or any(ch.isspace() for ch in label) or "," in label:
                raise ValueError(f"a label is one word without commas: {label!r}")
        return value

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


# --- encoding ----------------------------------------------------------------------------------


def encode_record(task: Task) -> bytes:
    return (
        json.dumps(task.to_json_dict(), sort_keys=True, ensure_ascii=False, indent=1) + "\n"
    ).encode("utf-8")


def decode_record(data: bytes, *, where: str) -> Task:
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise CorruptRecord(f"{where}: task.json is not valid JSON ({exc}).") from exc
    try:
        return Task.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise CorruptRecord(
            f"{where}: task.json does not validate ({loc}: {first['msg']})."
        ) from exc
    except InvalidInput as exc:  # a field check (a NUL byte, a size limit) on stored data
        raise CorruptRecord(f"{where}: task.json does not validate ({exc.message})") from exc


def check_format(data: bytes | None, *, where: str) -> None:
    if data is None:
        raise CorruptRecord(f"{where}: no FORMAT file; this is not a gitledger task record.")
    line = data.decode("utf-8", "replace").strip()
    name, _, version = line.partition(" ")
    if name != FORMAT_NAME or not version.isdigit():
        raise CorruptRecord(f"{where}: unknown record format {line!r}.")
    if int(version) > FORMAT_VERSION:
        raise CorruptRecord(
            f"{where}: record format {version} is newer than this gitledger understands "
            f"({FORMAT_VERSION}); upgrade gitledger."
        )


def render_markdown(task: Task) -> str:
    """The human view stored beside the record: one field a line, lists as bullets."""

    def line(value: object) -> str:
        return " ".join(str(value).split()) if value not in (None, "") else "—"

    out = [
        f"# {line(task.goal)}",
        "",
        f"- id: {task.id}",
        f"- version: {task.version}",
        f"- status: {task.status}",
        f"- priority: {task.priority}",
        f"- owner: {line(task.owner)}",
        f"- next: {line(task.next)}",
        f"- blocker: {line(task.blocker)}",
        f"- parent: {line(task.parent)}",
        f"- dependencies: {', '.join(task.dependencies) or '—'}",
        f"- labels: {', '.join(task.labels) or '—'}",
        f"- updated: {task.updated_at} by {line(task.actor)}",
        "",
        "## Criteria",
        "",
        line(task.criteria),
    ]
    for title, entries in (
        ("Decisions", task.decisions),
        ("Evidence", task.evidence),
        ("Notes", task.notes),
    ):
        if entries:
            out += ["", f"## {title}", ""]
            out += [f"- {e.at} {line(e.actor)}: {line(e.text)}" for e in entries]
    if task.conflicts:
        out += ["", "## Merge conflicts", ""]
        out += [f"- {c.field}: kept {c.kept!r}, dropped {c.dropped!r}" for c in task.conflicts]
    return "\n".join(out) + "\n"
