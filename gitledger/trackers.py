"""Coming from another tracker: beads, Taskwarrior and GitHub issues, converted for import.

Each converter turns the tracker's own export into the lines ``transfer.import_records`` takes,
so every check of an import (the whole file first, errors by line and field, ``--partial``)
applies unchanged. What the formats are, as read from their sources:

beads (``bd export``, ``.beads/issues.jsonl``)
    One issue a line: ``id``, ``title``, ``description``, ``design``, ``acceptance_criteria``,
    ``notes``, ``status`` (open, in_progress, blocked, deferred, closed, pinned, hooked),
    ``priority`` (0 highest … 4, as ours), ``issue_type``, ``assignee``, ``labels``,
    ``comments`` (``author``, ``text``, ``created_at``), ``close_reason`` and ``dependencies``:
    ``{"issue_id", "depends_on_id", "type"}`` where ``blocks`` (and ``waits-for``,
    ``conditional-blocks``) means the issue needs ``depends_on_id`` and ``parent-child`` means
    ``depends_on_id`` is its parent. Other link types (``related``, ``discovered-from``,
    ``tracks`` …) do not order work: they are kept as notes.
Taskwarrior (``task export``)
    A JSON array: ``uuid``, ``description``, ``status`` (pending, completed, deleted, waiting,
    recurring), ``start`` (set while a task is started), ``entry``/``modified``/``due`` as
    ``20261201T210000Z``, ``project``, ``tags``, ``priority`` (H, M, L), ``annotations``
    (``entry``, ``description``) and ``depends`` (a list of uuids; a comma-separated string
    before 2.6).
GitHub (``gh issue list --json number,title,body,state,labels,assignees,comments``)
    A JSON array: ``number``, ``title``, ``body``, ``state`` (OPEN, CLOSED), ``labels``
    (``name``), ``assignees`` (``login``), ``comments`` (``author.login``, ``body``,
    ``createdAt``); ``url``, ``stateReason``, ``createdAt`` and ``updatedAt`` when asked for.

The source's id is kept twice: as a label (``beads:bd-2ws``, ``taskwarrior:UUID``,
``github:12``) a person can search for, and as the task's id itself, derived from it by a hash,
so a second import of the same export updates those tasks instead of creating new ones (and
changes nothing when nothing changed). Notes and comments get ids derived from their text, so
they are not added twice either. A link to an item the export does not hold is kept as a note.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import IO, TYPE_CHECKING, Any

from .errors import InvalidInput
from .model import ID_ALPHABET, ID_LENGTH, MAX_LABEL_BYTES, PRIORITY_DEFAULT
from .transfer import ImportReport, import_records, parse_json_line, read_lines

if TYPE_CHECKING:
    from .ledger import Ledger
    from .model import Task

__all__ = ["SOURCES", "TARGETS", "convert", "derived_id", "export_to", "import_from"]

SOURCES = ("beads", "taskwarrior", "github")

# A whole-array export (Taskwarrior, gh) is read at once; this bounds what that may cost.
MAX_DOCUMENT_CHARS = 256 * 1024 * 1024

Row = tuple[int, dict[str, Any] | InvalidInput]


def derived_id(source: str, source_id: str) -> str:
    """The task id an item of ``source`` always imports as: 100 bits of a SHA-256."""
    digest = hashlib.sha256(f"gitledger-import\0{source}\0{source_id}".encode()).digest()
    bits = int.from_bytes(digest[:13], "big") >> 4
    return "".join(ID_ALPHABET[(bits >> (5 * i)) & 31] for i in range(ID_LENGTH))


def _label(text: str) -> str:
    """A label from a tracker's label or name: one word, no commas, at most 128 bytes."""
    word = "-".join(text.replace(",", " ").split()) or "-"
    while len(word.encode("utf-8")) > MAX_LABEL_BYTES:
        word = word[:-1]
    return word


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _items(value: Any) -> list[Any]:
    """A list field of an export, or nothing when the field holds anything else."""
    return value if isinstance(value, list) else []


def _note(text: str, at: str | None = None, actor: str | None = None) -> dict[str, Any]:
    note: dict[str, Any] = {"text": text}
    if at:
        note["at"] = at
    if actor:
        note["actor"] = actor
    return note


def convert(source: str, stream: IO[str]) -> Iterator[Row]:
    """The import lines for ``source``'s export read from ``stream``."""
    readers = {"beads": _beads, "taskwarrior": _taskwarrior, "github": _github}
    if source not in readers:
        raise InvalidInput(f"Unknown source '{source}'. Use one of: {', '.join(SOURCES)}.")
    return readers[source](stream)


def _array(stream: IO[str], what: str) -> list[Any]:
    try:
        text = stream.read(MAX_DOCUMENT_CHARS + 1)
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"The {what} export is not UTF-8 text ({exc.reason}).") from None
    if len(text) > MAX_DOCUMENT_CHARS:
        raise InvalidInput(f"The {what} export is over {MAX_DOCUMENT_CHARS:,} characters.")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"The {what} export is not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})."
        ) from None
    except RecursionError:
        raise InvalidInput(f"The {what} export nests JSON too deeply to read.") from None
    if not isinstance(data, list):
        raise InvalidInput(
            f"The {what} export is a JSON array of items, not {type(data).__name__}."
        )
    return data


# --- beads -------------------------------------------------------------------------------------

BEADS_STATUS = {
    "open": "open",
    "in_progress": "active",
    "hooked": "active",  # claimed by a worker
    "blocked": "blocked",
    "deferred": "open",
    "pinned": "open",
    "closed": "done",
}
BEADS_NEEDS = frozenset({"blocks", "waits-for", "conditional-blocks"})


def _beads(stream: IO[str]) -> Iterator[Row]:
    items: list[tuple[int, dict[str, Any] | InvalidInput]] = []
    for lineno, text in enumerate(read_lines(stream), 1):
        if not text.strip():
            continue
        try:
            items.append((lineno, parse_json_line(text, lineno)))
        except InvalidInput as exc:
            items.append((lineno, exc))
    present = {
        item["id"]
        for _, item in items
        if isinstance(item, dict) and isinstance(item.get("id"), str)
    }
    for lineno, item in items:
        if isinstance(item, InvalidInput):
            yield lineno, item
            continue
        try:
            yield lineno, _bead(item, lineno, present)
        except InvalidInput as exc:
            yield lineno, exc


def _bead(item: dict[str, Any], lineno: int, present: set[str]) -> dict[str, Any]:
    bead_id = item.get("id")
    if not isinstance(bead_id, str) or not bead_id:
        raise InvalidInput(f"line {lineno}: id: a beads issue needs its id.")
    status = _text(item.get("status")) or "open"
    labels = [_label(f"beads:{bead_id}")]
    if item.get("issue_type"):
        labels.append(_label(f"type:{item['issue_type']}"))
    if status in ("deferred", "pinned"):
        labels.append(status)
    elif status not in BEADS_STATUS:
        labels.append(_label(f"beads-status:{status}"))
    labels += [_label(str(x)) for x in _items(item.get("labels")) if isinstance(x, str)]
    actor = _text(item.get("created_by")) or None
    notes: list[dict[str, Any]] = []
    decisions: list[dict[str, Any]] = []
    if _text(item.get("description")).strip():
        notes.append(_note(item["description"], item.get("created_at"), actor))
    if _text(item.get("design")).strip():
        decisions.append(_note(f"Design: {item['design']}", item.get("created_at"), actor))
    if _text(item.get("notes")).strip():
        notes.append(_note(item["notes"], item.get("updated_at"), actor))
    for comment in _items(item.get("comments")):
        if isinstance(comment, dict) and _text(comment.get("text")).strip():
            notes.append(
                _note(comment["text"], comment.get("created_at"), _text(comment.get("author")))
            )
    parent: str | None = None
    dependencies: list[str] = []
    for dep in _items(item.get("dependencies")):
        if not isinstance(dep, dict) or not isinstance(dep.get("depends_on_id"), str):
            continue
        other, kind = dep["depends_on_id"], _text(dep.get("type")) or "blocks"
        ordering = kind in BEADS_NEEDS or kind == "parent-child"
        if ordering and other in present and other != bead_id:
            if kind == "parent-child":
                parent = derived_id("beads", other)
            elif derived_id("beads", other) not in dependencies:
                dependencies.append(derived_id("beads", other))
        elif ordering:
            notes.append(
                _note(f"beads {kind}: {other} (not in this export)", dep.get("created_at"))
            )
        else:
            notes.append(_note(f"beads {kind}: {other}", dep.get("created_at")))
    if _text(item.get("close_reason")).strip():
        notes.append(_note(f"Closed: {item['close_reason']}", item.get("closed_at"), actor))
    record: dict[str, Any] = {
        "id": derived_id("beads", bead_id),
        "goal": _text(item.get("title")).strip() or bead_id,
        "criteria": _text(item.get("acceptance_criteria")),
        "status": BEADS_STATUS.get(status, "open"),
        "priority": _priority(item.get("priority")),
        "owner": _text(item.get("assignee")) or None,
        "labels": list(dict.fromkeys(labels)),
        "parent": parent,
        "dependencies": dependencies,
        "notes": notes,
        "decisions": decisions,
    }
    for key in ("created_at", "updated_at"):
        if isinstance(item.get(key), str):
            record[key] = item[key]
    if actor:
        record["actor"] = actor
    return record


def _priority(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 4:
        return value
    return PRIORITY_DEFAULT


# --- Taskwarrior -------------------------------------------------------------------------------

TASKWARRIOR_STATUS = {
    "pending": "open",
    "waiting": "open",
    "recurring": "open",
    "completed": "done",
    "deleted": "cancelled",
}
TASKWARRIOR_PRIORITY = {"H": 1, "M": 2, "L": 3}


def _tw_time(value: Any) -> str | None:
    """``20261201T210000Z`` (Taskwarrior's export) as ``2026-12-01T21:00:00Z``."""
    if not isinstance(value, str):
        return None
    try:
        when = datetime.strptime(value, "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return value
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _taskwarrior(stream: IO[str]) -> Iterator[Row]:
    items = _array(stream, "Taskwarrior")
    present = {i["uuid"] for i in items if isinstance(i, dict) and isinstance(i.get("uuid"), str)}
    for n, item in enumerate(items, 1):
        try:
            yield n, _tw_task(item, n, present)
        except InvalidInput as exc:
            yield n, exc


def _tw_task(item: Any, n: int, present: set[str]) -> dict[str, Any]:
    if not isinstance(item, dict) or not isinstance(item.get("uuid"), str):
        raise InvalidInput(f"line {n}: a Taskwarrior task is an object with its uuid.")
    uuid = item["uuid"]
    status = _text(item.get("status")) or "pending"
    mapped = TASKWARRIOR_STATUS.get(status, "open")
    if mapped == "open" and item.get("start"):
        mapped = "active"  # 'task start' was run
    labels = [_label(f"taskwarrior:{uuid}")]
    if _text(item.get("project")):
        labels.append(_label(f"project:{item['project']}"))
    labels += [_label(t) for t in _items(item.get("tags")) if isinstance(t, str)]
    if status in ("waiting", "recurring"):
        labels.append(status)
    notes = [
        _note(a["description"], _tw_time(a.get("entry")))
        for a in _items(item.get("annotations"))
        if isinstance(a, dict) and _text(a.get("description")).strip()
    ]
    if isinstance(item.get("due"), str) and item["due"]:
        notes.append(_note(f"Due {_tw_time(item['due'])}"))
    depends: Any = item.get("depends") or []
    if isinstance(depends, str):  # before 2.6: "uuid,uuid"
        depends = [d for d in depends.split(",") if d]
    depends = _items(depends)
    dependencies: list[str] = []
    for dep in depends:
        if not isinstance(dep, str):
            continue
        if dep in present and dep != uuid:
            dependencies.append(derived_id("taskwarrior", dep))
        else:
            notes.append(_note(f"Taskwarrior depends on {dep} (not in this export)"))
    record: dict[str, Any] = {
        "id": derived_id("taskwarrior", uuid),
        "goal": _text(item.get("description")).strip() or uuid,
        "status": mapped,
        "priority": TASKWARRIOR_PRIORITY.get(_text(item.get("priority")), PRIORITY_DEFAULT),
        "labels": list(dict.fromkeys(labels)),
        "dependencies": list(dict.fromkeys(dependencies)),
        "notes": notes,
    }
    created = _tw_time(item.get("entry"))
    if created:
        record["created_at"] = created
    updated = _tw_time(item.get("modified")) or _tw_time(item.get("end"))
    if updated:
        record["updated_at"] = updated
    return record


# --- GitHub ------------------------------------------------------------------------------------


def _github(stream: IO[str]) -> Iterator[Row]:
    for n, item in enumerate(_array(stream, "GitHub issue list"), 1):
        try:
            yield n, _issue(item, n)
        except InvalidInput as exc:
            yield n, exc


def _login(value: Any) -> str:
    return _text(value.get("login")) if isinstance(value, dict) else ""


def _issue(item: Any, n: int) -> dict[str, Any]:
    if not isinstance(item, dict) or type(item.get("number")) is not int:
        raise InvalidInput(f"line {n}: a GitHub issue is an object with its number.")
    number = item["number"]
    source = _text(item.get("url")) or f"#{number}"  # the url tells two repositories apart
    state = _text(item.get("state")).upper()
    if state == "CLOSED":
        status = "cancelled" if _text(item.get("stateReason")).upper() == "NOT_PLANNED" else "done"
    else:
        status = "open"
    labels = [_label(f"github:{number}")]
    labels += [
        _label(lab["name"])
        for lab in _items(item.get("labels"))
        if isinstance(lab, dict) and _text(lab.get("name"))
    ]
    assignees = [_login(a) for a in _items(item.get("assignees")) if _login(a)]
    labels += [_label(f"assignee:{a}") for a in assignees[1:]]
    author = _login(item.get("author")) or None
    notes: list[dict[str, Any]] = []
    if _text(item.get("body")).strip():
        notes.append(_note(item["body"], item.get("createdAt"), author))
    for comment in _items(item.get("comments")):
        if isinstance(comment, dict) and _text(comment.get("body")).strip():
            notes.append(
                _note(comment["body"], comment.get("createdAt"), _login(comment.get("author")))
            )
    record: dict[str, Any] = {
        "id": derived_id("github", source),
        "goal": _text(item.get("title")).strip() or f"GitHub issue {number}",
        "status": status,
        "owner": assignees[0] if assignees else None,
        "labels": list(dict.fromkeys(labels)),
        "notes": notes,
    }
    if isinstance(item.get("createdAt"), str):
        record["created_at"] = item["createdAt"]
    if isinstance(item.get("updatedAt"), str):
        record["updated_at"] = item["updatedAt"]
    if author:
        record["actor"] = author
    return record


def import_from(
    ledger: Ledger,
    source: str,
    stream: IO[str],
    *,
    actor: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    partial: bool = False,
) -> ImportReport:
    """Import ``source``'s export from ``stream`` (``task import --from SOURCE FILE``)."""
    return import_records(
        ledger, convert(source, stream), actor=actor, progress=progress, partial=partial
    )


# --- export to another tracker -----------------------------------------------------------------

TARGETS = ("beads", "taskwarrior")


def _kept_id(task: Task, source: str) -> str | None:
    prefix = f"{source}:"
    return next((label[len(prefix) :] for label in task.labels if label.startswith(prefix)), None)


def _tw_stamp(iso: str) -> str:
    try:
        when = datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone(timezone.utc)
    except ValueError:
        return iso
    return when.strftime("%Y%m%dT%H%M%SZ")


def _tw_uuid(task: Task) -> str:
    kept = _kept_id(task, "taskwarrior")
    if kept:
        return kept
    digest = hashlib.sha256(f"gitledger-export\0{task.id}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def _to_taskwarrior(task: Task, uuids: dict[str, str]) -> dict[str, Any]:
    status = {"done": "completed", "cancelled": "deleted"}.get(task.status, "pending")
    out: dict[str, Any] = {
        "uuid": uuids[task.id],
        "description": task.goal,
        "status": status,
        "entry": _tw_stamp(task.created_at),
        "modified": _tw_stamp(task.updated_at),
    }
    if task.finished:
        out["end"] = _tw_stamp(task.updated_at)
    if task.status == "active":
        out["start"] = _tw_stamp(task.updated_at)
    priority = {0: "H", 1: "H", 3: "L", 4: "L"}.get(task.priority)
    if priority:
        out["priority"] = priority
    tags, project = [], None
    for label in task.labels:
        if label.startswith("project:"):
            project = label[len("project:") :]
        elif not label.startswith("taskwarrior:"):
            tags.append(label)
    if project:
        out["project"] = project
    if tags:
        out["tags"] = tags
    if task.notes:
        out["annotations"] = [{"entry": _tw_stamp(n.at), "description": n.text} for n in task.notes]
    depends = [uuids[d] for d in task.dependencies if d in uuids]
    if depends:
        out["depends"] = depends
    return out


def _bead_id(task: Task) -> str:
    return _kept_id(task, "beads") or f"gl-{task.id[:10]}"


def _to_beads(task: Task, ids: dict[str, str]) -> dict[str, Any]:
    status = {"active": "in_progress", "done": "closed", "cancelled": "closed"}.get(
        task.status, task.status
    )
    out: dict[str, Any] = {"id": ids[task.id], "title": task.goal}
    if task.criteria:
        out["acceptance_criteria"] = task.criteria
    out.update(status=status, priority=task.priority)
    kind = next((x[len("type:") :] for x in task.labels if x.startswith("type:")), "task")
    out["issue_type"] = kind
    if task.owner:
        out["assignee"] = task.owner
    out["created_at"] = task.created_at
    out["updated_at"] = task.updated_at
    if task.status == "cancelled":
        out["close_reason"] = "cancelled"
    labels = [x for x in task.labels if not x.startswith(("beads:", "type:"))]
    if labels:
        out["labels"] = labels
    deps = [
        {"issue_id": ids[task.id], "depends_on_id": ids[d], "type": "blocks"}
        for d in task.dependencies
        if d in ids
    ]
    if task.parent and task.parent in ids:
        deps.append(
            {"issue_id": ids[task.id], "depends_on_id": ids[task.parent], "type": "parent-child"}
        )
    if deps:
        out["dependencies"] = deps
    entries = [*task.decisions, *task.notes, *task.evidence]
    if entries:
        out["comments"] = [{"author": e.actor, "text": e.text, "created_at": e.at} for e in entries]
    return out


def export_to(ledger: Ledger, target: str, out: IO[str]) -> int:
    """Write every task in ``target``'s own import format: beads' JSONL (``bd import``) or
    Taskwarrior's JSON array (``task import``). Returns how many tasks were written.

    A task that came from that tracker keeps its id there (its ``beads:``/``taskwarrior:``
    label); decisions, notes and evidence become beads comments, notes Taskwarrior annotations.
    """
    if target not in TARGETS:
        raise InvalidInput(f"Unknown target '{target}'. Use one of: {', '.join(TARGETS)}.")
    tasks = sorted(ledger.tasks(), key=lambda t: (t.created_at, t.id))
    if target == "taskwarrior":
        uuids = {t.id: _tw_uuid(t) for t in tasks}
        out.write("[\n")
        out.write(",\n".join(json.dumps(_to_taskwarrior(t, uuids)) for t in tasks))
        out.write("\n]\n")
    else:
        ids = {t.id: _bead_id(t) for t in tasks}
        for task in tasks:
            out.write(json.dumps(_to_beads(task, ids), ensure_ascii=False) + "\n")
    return len(tasks)
