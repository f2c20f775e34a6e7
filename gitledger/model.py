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

import dataclasses
import hashlib
import json
import os
import re
import secrets
import time
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, dataclass, field
from datetime import datetime, timezone
from json.encoder import encode_basestring as _encode_string
from typing import TYPE_CHECKING, Any, Literal, NoReturn, Protocol, TypeVar

from .errors import CorruptRecord, InvalidInput
from .text import fold

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

FORMAT_NAME = "gitledger-task"
# Format 2 added the claim's agent and lease (``agent``, ``held_at``); a record without them is
# still written as format 1, so a ledger nobody claimed in by agent stays readable by older
# versions, and an older version meeting a format-2 record says to upgrade rather than fail.
FORMAT_VERSION = 2
FORMAT_LINE = f"{FORMAT_NAME} 1\n"
FORMAT_LINE_CLAIMS = f"{FORMAT_NAME} 2\n"

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


def shortest_unique(task_id: str, others: Iterable[str]) -> str:
    """The shortest prefix of ``task_id`` (at least ``MIN_SHORT_ID`` characters) that none of
    ``others`` starts with."""
    length = MIN_SHORT_ID
    for other in others:
        common = 0
        for a, b in zip(task_id, other, strict=False):
            if a != b:
                break
            common += 1
        length = max(length, common + 1)
    return task_id[: min(length, len(task_id))]


def short_ids(ids: Iterable[str]) -> dict[str, str]:
    """Shortest unique prefixes for a set of ids (neighbours in sorted order decide)."""
    ordered = sorted(set(ids))
    out: dict[str, str] = {}
    for i, task_id in enumerate(ordered):
        neighbours = ordered[max(0, i - 1) : i] + ordered[i + 1 : i + 2]
        out[task_id] = shortest_unique(task_id, neighbours)
    return out


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


def check_label(label: str) -> str:
    """A label is one word: no spaces, no commas, at most MAX_LABEL_BYTES."""
    check_text(label, "label", limit=MAX_LABEL_BYTES)
    if not label or any(ch.isspace() for ch in label) or "," in label:
        raise InvalidInput(f"A label is one word without commas, not {label!r}.")
    return label


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


_E = TypeVar("_E", "Entry", "Evidence", "FieldConflict")
_R = TypeVar("_R", bound="DataclassInstance")


class FieldCheck:
    """Checks one record's values, naming the field that is wrong; shared by every record class.

    Records are read on every command, so they are plain dataclasses checked here by hand rather
    than pydantic models: importing pydantic's BaseModel and building the schemas cost more CPU
    per process (80-120 ms) than the whole margin a `task show` has over its import floor.
    The checks are strict: values are the JSON types the record format writes, nothing coerced.
    """

    __slots__ = ()

    def fail(self, name: str, message: str) -> NoReturn:
        raise InvalidInput(f"{name}: {message}")

    def text(self, name: str, value: object, *, limit: int = MAX_FIELD_BYTES) -> str:
        if type(value) is not str:
            self.fail(name, f"expected text, got {_kind(value)}")
        try:
            return check_text(value, name, limit=limit)
        except InvalidInput as exc:
            self.fail(name, exc.message)

    def optional_text(self, name: str, value: object) -> str | None:
        return None if value is None else self.text(name, value)

    def task_id(self, name: str, value: object) -> str:
        if type(value) is not str or not ID_PATTERN.match(value):
            self.fail(name, f"not a task id: {value!r}")
        return value

    def integer(self, name: str, value: object, low: int, high: int | None = None) -> int:
        if type(value) is not int:
            self.fail(name, f"expected an integer, got {_kind(value)}")
        if value < low or (high is not None and value > high):
            bounds = f"{low}..{high}" if high is not None else f"at least {low}"
            self.fail(name, f"{value} is out of range ({bounds})")
        return value

    def items(self, name: str, value: object) -> list[Any]:
        """A copy of a list (or tuple) value, so a record never shares a list with its caller."""
        if type(value) is not list and type(value) is not tuple:
            self.fail(name, f"expected a list, got {_kind(value)}")
        return list(value)

    def entries(self, name: str, value: object, cls: type[_E]) -> list[_E]:
        out = self.items(name, value)
        for i, item in enumerate(out):
            if type(item) is dict:
                out[i] = cls.from_dict(item, where=f"{name}[{i}]")
            elif not isinstance(item, cls):
                self.fail(name, f"item {i} is {_kind(item)}, not {cls.__name__}")
        return out


def _at(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def record_from_dict(cls: type[_R], raw: object, where: str = "") -> _R:
    """A record from its JSON object: unknown keys and missing required ones are refused."""
    if type(raw) is not dict:
        raise InvalidInput(f"{where or 'record'}: expected an object, got {_kind(raw)}")
    names = cls.__dataclass_fields__
    extra = [k for k in raw if k not in names]
    if extra:
        raise InvalidInput(f"{_at(where, str(extra[0]))}: unknown field")
    required = _REQUIRED.get(cls)
    if required is None:
        required = _REQUIRED[cls] = tuple(n for n, f in names.items() if _required(f))
    missing = [n for n in required if n not in raw]
    if missing:
        raise InvalidInput(f"{_at(where, missing[0])}: field required")
    try:
        return cls(**raw)
    except InvalidInput as exc:
        if where:  # a nested record: say where it sits, "notes[2].text: ..."
            raise InvalidInput(f"{where}.{exc.message}") from None
        raise


_REQUIRED: dict[type, tuple[str, ...]] = {}


def _required(f: Any) -> bool:
    return f.default is MISSING and f.default_factory is MISSING


@dataclass(kw_only=True, slots=True)
class Entry:
    """A note or a decision: text with who wrote it and when."""

    id: str
    text: str
    at: str
    actor: str

    def __post_init__(self) -> None:
        check = FieldCheck()
        check.text("id", self.id, limit=MAX_LABEL_BYTES)
        self.text = check.text("text", self.text)
        check.text("at", self.at, limit=MAX_LABEL_BYTES)
        check.text("actor", self.actor, limit=MAX_FIELD_BYTES)

    @classmethod
    def from_dict(cls: type[_R], raw: object, *, where: str = "") -> _R:
        return record_from_dict(cls, raw, where)

    def to_json_dict(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "at": self.at, "actor": self.actor}


@dataclass(kw_only=True, slots=True)
class Evidence(Entry):
    """Evidence, bound to the task and to the criteria it was logged against."""

    task_id: str
    criteria_hash: str

    def __post_init__(self) -> None:
        Entry.__post_init__(self)
        check = FieldCheck()
        check.text("task_id", self.task_id, limit=MAX_LABEL_BYTES)
        check.text("criteria_hash", self.criteria_hash, limit=MAX_LABEL_BYTES)

    def to_json_dict(self) -> dict[str, Any]:
        out = Entry.to_json_dict(self)
        out["task_id"] = self.task_id
        out["criteria_hash"] = self.criteria_hash
        return out


@dataclass(kw_only=True, slots=True)
class FieldConflict:
    """A scalar both sides of a merge changed; the later write won, the other is kept here."""

    field: str
    kept: Any
    dropped: Any
    at: str

    def __post_init__(self) -> None:
        check = FieldCheck()
        check.text("field", self.field, limit=MAX_LABEL_BYTES)
        check.text("at", self.at, limit=MAX_LABEL_BYTES)
        for name in ("kept", "dropped"):
            value = getattr(self, name)
            if isinstance(value, tuple):
                setattr(self, name, list(value))
            elif not isinstance(value, str | int | list | None):
                check.fail(name, f"expected a field value, got {_kind(value)}")

    @classmethod
    def from_dict(cls, raw: object, *, where: str = "") -> FieldConflict:
        return record_from_dict(cls, raw, where)

    def to_json_dict(self) -> dict[str, Any]:
        kept = list(self.kept) if isinstance(self.kept, list) else self.kept
        dropped = list(self.dropped) if isinstance(self.dropped, list) else self.dropped
        return {"field": self.field, "kept": kept, "dropped": dropped, "at": self.at}


@dataclass(kw_only=True, slots=True)
class Task:
    """One version of a task. Constructing one (or ``dataclasses.replace``) checks every field."""

    id: str
    version: int
    goal: str
    criteria: str = ""
    status: Status = "open"
    owner: str | None = None
    blocker: str | None = None
    next: str | None = None
    priority: int = PRIORITY_DEFAULT
    labels: list[str] = field(default_factory=list)
    parent: str | None = None
    dependencies: list[str] = field(default_factory=list)
    decisions: list[Entry] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    notes: list[Entry] = field(default_factory=list)
    created_at: str
    updated_at: str
    actor: str
    idempotency_key: str | None = None
    request_hash: str | None = None
    clock: dict[str, str] = field(default_factory=dict)
    conflicts: list[FieldConflict] = field(default_factory=list)
    # The claim: ``owner`` is the person, ``agent`` which of their agents holds it (a session, an
    # MCP server process, a machine's CLI), ``held_at`` the holder's last write (the lease).
    agent: str | None = None
    held_at: str | None = None

    def __post_init__(self) -> None:
        check = FieldCheck()
        check.task_id("id", self.id)
        check.integer("version", self.version, 1)
        check.text("goal", self.goal)
        check.text("criteria", self.criteria)
        if self.status not in STATUSES:
            check.fail("status", f"{self.status!r} is not one of {', '.join(STATUSES)}")
        for name in ("owner", "blocker", "next"):
            check.optional_text(name, getattr(self, name))
        check.integer("priority", self.priority, PRIORITY_MIN, PRIORITY_MAX)
        labels = self.labels = check.items("labels", self.labels)
        if len(labels) > MAX_LABELS:
            check.fail("labels", f"at most {MAX_LABELS} labels")
        for label in labels:
            if type(label) is not str:
                check.fail("labels", f"expected text, got {_kind(label)}")
            try:
                check_label(label)
            except InvalidInput as exc:
                check.fail("labels", exc.message)
        if self.parent is not None:
            check.task_id("parent", self.parent)
        self.dependencies = check.items("dependencies", self.dependencies)
        for dep in self.dependencies:
            check.task_id("dependencies", dep)
        self.decisions = check.entries("decisions", self.decisions, Entry)
        self.evidence = check.entries("evidence", self.evidence, Evidence)
        self.notes = check.entries("notes", self.notes, Entry)
        for name in ("created_at", "updated_at"):
            check.text(name, getattr(self, name), limit=MAX_LABEL_BYTES)
        check.text("actor", self.actor)
        check.optional_text("idempotency_key", self.idempotency_key)
        check.optional_text("request_hash", self.request_hash)
        if type(self.clock) is not dict:
            check.fail("clock", f"expected an object, got {_kind(self.clock)}")
        for key, stamp in self.clock.items():
            if type(stamp) is not str:
                check.fail("clock", f"{key}: expected a stamp, got {_kind(stamp)}")
        self.clock = dict(self.clock)
        self.conflicts = check.entries("conflicts", self.conflicts, FieldConflict)
        check.optional_text("agent", self.agent)
        if self.held_at is not None:
            check.text("held_at", self.held_at, limit=MAX_LABEL_BYTES)

    @classmethod
    def from_dict(cls, raw: object, *, where: str = "") -> Task:
        """A task from its JSON object (``task show --json``'s fields); InvalidInput says why
        not."""
        return record_from_dict(cls, raw, where)

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    def to_json_dict(self) -> dict[str, Any]:
        """The record as JSON types, every field by name (what task.json and --json hold); the
        claim's ``agent`` and ``held_at`` only when set (see FORMAT_VERSION)."""
        out: dict[str, Any] = {
            "id": self.id,
            "version": self.version,
            "goal": self.goal,
            "criteria": self.criteria,
            "status": self.status,
            "owner": self.owner,
            "blocker": self.blocker,
            "next": self.next,
            "priority": self.priority,
            "labels": list(self.labels),
            "parent": self.parent,
            "dependencies": list(self.dependencies),
            "decisions": [e.to_json_dict() for e in self.decisions],
            "evidence": [e.to_json_dict() for e in self.evidence],
            "notes": [e.to_json_dict() for e in self.notes],
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "actor": self.actor,
            "idempotency_key": self.idempotency_key,
            "request_hash": self.request_hash,
            "clock": dict(self.clock),
            "conflicts": [c.to_json_dict() for c in self.conflicts],
        }
        if self.agent is not None:
            out["agent"] = self.agent
        if self.held_at is not None:
            out["held_at"] = self.held_at
        return out

    def replace(self, **changes: Any) -> Task:
        """A copy with ``changes`` applied, checked like a new record."""
        return dataclasses.replace(self, **changes)


# --- encoding ----------------------------------------------------------------------------------


def encode_record(task: Task) -> bytes:
    """Canonical task.json: ``json.dumps(sort_keys=True, ensure_ascii=False, indent=1)``, byte for
    byte, written by ``canonical_json`` (the standard library's indenting encoder is pure Python
    and was a fifth of a bulk import's time)."""
    return (canonical_json(task.to_json_dict()) + "\n").encode("utf-8")


def canonical_json(value: Any, indent: str = "") -> str:
    """The text ``json.dumps(value, sort_keys=True, ensure_ascii=False, indent=1)`` gives."""
    kind = type(value)
    if kind is str:
        return _encode_string(value)
    if kind is dict:
        if not value:
            return "{}"
        inner = indent + " "
        items = [_encode_string(k) + ": " + canonical_json(value[k], inner) for k in sorted(value)]
        return "{\n" + inner + (",\n" + inner).join(items) + "\n" + indent + "}"
    if kind is list:
        if not value:
            return "[]"
        inner = indent + " "
        items = [canonical_json(item, inner) for item in value]
        return "[\n" + inner + (",\n" + inner).join(items) + "\n" + indent + "]"
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return int.__repr__(value)
    return json.dumps(value)  # floats (and a clear TypeError for what JSON cannot hold)


def decode_record(data: bytes, *, where: str) -> Task:
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise CorruptRecord(f"{where}: task.json is not valid JSON ({exc}).") from exc
    try:
        return Task.from_dict(raw)
    except InvalidInput as exc:
        raise CorruptRecord(f"{where}: task.json does not validate ({exc.message}).") from exc


RECORD_FILES = ("FORMAT", "task.json")


def format_line(task: Task) -> str:
    """The FORMAT file of a version: 2 only when it holds what format 1 has no field for."""
    return FORMAT_LINE_CLAIMS if task.agent is not None or task.held_at is not None else FORMAT_LINE


def record_files(task: Task) -> dict[str, bytes]:
    """The tree of one task version: format line, machine record, Markdown view."""
    return {
        "FORMAT": format_line(task).encode(),
        "task.json": encode_record(task),
        "task.md": render_markdown(task).encode("utf-8"),
    }


def record_from_files(
    files: Mapping[str, bytes | None], *, where: str, commit: str
) -> tuple[Task, bytes]:
    """The task record of one version from its files (``RECORD_FILES``, as
    ``GitStore.read_files`` gives them), and the stored ``task.json`` bytes."""
    check_format(files.get("FORMAT"), where=where)
    data = files.get("task.json")
    if data is None:
        raise CorruptRecord(f"{where}: commit {commit[:12]} has no task.json.")
    return decode_record(data, where=where), data


class ReadsFiles(Protocol):
    """What ``read_record`` needs of a store (``GitStore`` has it)."""

    def read_files(self, commit: str, names: tuple[str, ...]) -> dict[str, bytes | None]: ...


def read_record(store: ReadsFiles, commit: str, where: str) -> tuple[Task, bytes]:
    """One version of a task, read from ``commit``: the record and its stored ``task.json``."""
    return record_from_files(store.read_files(commit, RECORD_FILES), where=where, commit=commit)


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
        return fold(str(value)) if value not in (None, "") else "—"

    out = [
        f"# {line(task.goal)}",
        "",
        f"- id: {task.id}",
        f"- version: {task.version}",
        f"- status: {task.status}",
        f"- priority: {task.priority}",
        f"- owner: {line(task.owner)}",
        *([f"- agent: {line(task.agent)}"] if task.agent else []),
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


__all__ = [
    "ENTRY_FIELDS",
    "Entry",
    "Evidence",
    "FINISHED",
    "FORMAT_LINE",
    "FORMAT_LINE_CLAIMS",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "FieldCheck",
    "FieldConflict",
    "HybridClock",
    "ID_ALPHABET",
    "ID_LENGTH",
    "ID_PATTERN",
    "MAX_FIELD_BYTES",
    "MAX_LABELS",
    "MAX_LABEL_BYTES",
    "MIN_SHORT_ID",
    "PREFIX_PATTERN",
    "RECORD_FILES",
    "ReadsFiles",
    "SCALAR_FIELDS",
    "SET_FIELDS",
    "STATUSES",
    "Status",
    "Task",
    "canonical_json",
    "check_format",
    "check_label",
    "check_text",
    "criteria_hash",
    "decode_record",
    "encode_record",
    "format_line",
    "new_entry_id",
    "new_id",
    "now_iso",
    "read_record",
    "record_from_dict",
    "record_files",
    "record_from_files",
    "render_markdown",
    "short_ids",
    "shortest_unique",
]
