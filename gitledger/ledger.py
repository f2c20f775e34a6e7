"""The task ledger: tasks as Git refs, versions as commits, and the rules that keep them honest.

Every interface (CLI, MCP server, hooks, Python callers) goes through ``Ledger``, and every
update passes the gates (``gates.py``: decisions for goal, criteria and cancel changes, a blocker
for blocked, criteria, evidence and finished dependencies for done, no cycles).

Writes hold the ledger's writer lock and move the task's ref by compare-and-swap, so concurrent
writers are serialized and none is lost; ``expect_version`` turns a stale write into a
``VersionConflict`` instead. An update that changes nothing writes nothing.

Every query (listing, inbox, ready, search, children, dependents) goes through the derived
SQLite index (``index.py``, ``Ledger.index()``): its file beside the refs, or the same index built
in memory when the file cannot be kept. There is no second implementation to drift; the tests
hold a plain scan of the refs as the oracle (``tests/scan.py``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shlex
import sys
import time
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import paths
from .changes import Change, commit_message, diff_tasks, stamp_clock
from .errors import (
    AmbiguousId,
    ClaimConflict,
    CorruptRecord,
    Fix,
    GateRefused,
    IdempotencyConflict,
    InvalidInput,
    LedgerError,
    NoLedger,
    StorageError,
    TaskNotFound,
    UnsafeLedger,
    VersionConflict,
    VersionNotFound,
)
from .gates import check_reassign, check_update
from .gitstore import GitStore, RefMoved, commit_exists, git_identity, refs_stamp
from .model import (
    ID_LENGTH,
    ID_PATTERN,
    MIN_SHORT_ID,
    PREFIX_PATTERN,
    PRIORITY_MAX,
    PRIORITY_MIN,
    RECORD_FILES,
    SCALAR_FIELDS,
    SET_FIELDS,
    STATUSES,
    Entry,
    Evidence,
    HybridClock,
    Task,
    check_label,
    check_text,
    criteria_hash,
    encode_record,
    format_line,
    new_entry_id,
    new_id,
    now_iso,
    read_record,
    record_from_files,
    render_markdown,
)
from .refs import KEYS_PREFIX, TASKS_DIR, TASKS_PREFIX, task_ref
from .text import one_line

if TYPE_CHECKING:
    from .index import Index, SearchHit

_WRITE_ATTEMPTS = 20
_COMMIT_EVIDENCE = re.compile(r"^commit:([0-9a-fA-F]{7,40})\b")


@dataclass(frozen=True)
class Version:
    version: int
    commit: str
    actor: str
    at: str
    summary: str
    changes: tuple[Change, ...]
    parents: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "commit": self.commit,
            "actor": self.actor,
            "at": self.at,
            "summary": self.summary,
            "parents": list(self.parents),
            "changes": [c.to_dict() for c in self.changes],
        }


@dataclass
class Problem:
    ref: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"ref": self.ref, "message": self.message}


@dataclass
class VerifyReport:
    tasks: int = 0
    versions: int = 0
    problems: list[Problem] = field(default_factory=list)
    # Evidence citing a commit this project's repository lacks: listed, not a failure (the commit
    # may be on another machine, not pushed yet).
    unverified: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "tasks": self.tasks,
            "versions": self.versions,
            "problems": [p.to_dict() for p in self.problems],
            "unverified": [p.to_dict() for p in self.unverified],
        }


def _hook_store(location: paths.Location) -> GitStore:
    """The store at ``location``, created (and said so on stderr) when it does not exist yet."""
    if not (location.path / "HEAD").exists():
        GitStore.init(location.path)
        sys.stderr.write(f"gitledger: created a ledger at {location.path.resolve()}\n")
    return GitStore(location.path, trust_config=location.trusted_config)


@dataclass(frozen=True)
class _Edit:
    """The edits of one update, checked once by ``Ledger.update`` and applied to each version
    it reads (named as ``edits.UPDATE_EDITS`` names them)."""

    goal: str | None
    criteria: str | None
    status: str | None
    next: str | None
    blocker: str | None
    owner: str | None
    priority: int | None
    parent: str | None
    add_labels: list[str]
    remove_labels: list[str]
    notes: tuple[str, ...]
    decisions: tuple[str, ...]
    evidence: tuple[str, ...]
    add_dependencies: list[str]
    remove_dependencies: list[str]

    @property
    def empty(self) -> bool:
        scalars = (self.goal, self.criteria, self.status, self.next, self.blocker, self.owner)
        if any(v is not None for v in (*scalars, self.priority, self.parent)):
            return False
        lists = (self.add_labels, self.remove_labels, self.notes, self.decisions, self.evidence)
        return not any((*lists, self.add_dependencies, self.remove_dependencies))


# Keywords of Ledger.update before the edits had one spelling (edits.py): old name -> new.
_RENAMED = {
    "labels_add": "add_labels",
    "labels_remove": "remove_labels",
    "dependencies_add": "add_dependencies",
    "dependencies_remove": "remove_dependencies",
}


def _renamed(deprecated: dict[str, Sequence[str]]) -> dict[str, Sequence[str]]:
    out: dict[str, Sequence[str]] = {}
    for old, value in deprecated.items():
        new = _RENAMED.get(old)
        if new is None:
            raise TypeError(f"Ledger.update() got an unexpected keyword argument '{old}'")
        warnings.warn(
            f"Ledger.update({old}=...) is deprecated; use {new}=...", DeprecationWarning, 3
        )
        out[new] = value
    return out


class Ledger:
    """A ledger of tasks in a bare Git repository."""

    def __init__(
        self,
        store: GitStore,
        *,
        project_root: Path | None = None,
        actor: str | None = None,
        kind: str = "explicit",
        agent: str | None = None,
    ) -> None:
        self.store = store
        self.path = store.path
        self.project_root = project_root
        self.kind = kind
        self.actor = actor
        self.agent = agent
        self.last_claim = ""  # what the last claim() did: see CLAIM_OUTCOMES
        self.skipped: list[Problem] = []  # unreadable refs met by the last listing
        self._scan: tuple[str, list[str]] | None = None  # see resolve()
        self._index: Index | None = None  # see index()

    # --- opening ------------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: Path | None = None,
        *,
        actor: str | None = None,
        create: bool = False,
        cwd: Path | None = None,
        agent: str | None = None,
    ) -> Ledger:
        if path is not None:
            location: paths.Location | None = paths.Location(
                Path(path).expanduser().absolute(), "explicit", None
            )
        else:
            location = paths.discover(cwd)
        if location is None:
            if not create:
                raise NoLedger(paths.missing_ledger(None))
            location = paths.default_location(cwd)
        if not (location.path / "HEAD").exists():
            if not create:
                raise NoLedger(paths.missing_ledger(location))
            GitStore.init(location.path)
        return cls(
            GitStore(location.path, trust_config=location.trusted_config),
            project_root=location.project_root,
            actor=actor,
            kind=location.kind,
            agent=agent,
        )

    @classmethod
    def init(cls, path: Path | None = None, *, actor: str | None = None) -> Ledger:
        """Create the ledger for ``path`` (default: here) at its default place; idempotent."""
        env = os.environ.get(paths.ENV_LEDGER)
        if path is None and env:
            location = paths.Location(Path(env).expanduser().absolute(), "explicit", None)
        else:
            location = paths.default_location(path)
        store = GitStore.init(location.path)
        return cls(store, project_root=location.project_root, actor=actor, kind=location.kind)

    @classmethod
    def open_for_hook(
        cls, cwd: Path | None = None, *, actor: str | None = None, agent: str | None = None
    ) -> Ledger:
        """The ledger a hook writes to: the project's if there is one, else the per-user ledger.

        A hook must work in any folder without littering it, so outside a Git work tree (and with
        no ``.gitledger/`` or ``GITLEDGER_DIR``) it uses the ledger in the user's data directory.
        Creating a ledger is said once, on stderr.
        """
        try:
            location = paths.discover(cwd)
            store = _hook_store(location) if location is not None else None
        except UnsafeLedger as exc:
            # A hook must still save the session: to the per-user ledger, saying why.
            sys.stderr.write(f"gitledger: {exc.message} Saving to the per-user ledger.\n")
            location = store = None
        if location is None or store is None:
            location = paths.Location(paths.user_ledger_dir(), "user", None)
            store = _hook_store(location)
        return cls(
            store,
            project_root=location.project_root,
            actor=actor,
            kind=location.kind,
            agent=agent,
        )

    # --- identity -----------------------------------------------------------------------------

    def author(self, actor: str | None = None) -> tuple[str, str]:
        """The commit author for a write: --actor / GITLEDGER_ACTOR, else the Git identity."""
        chosen = actor or self.actor or os.environ.get("GITLEDGER_ACTOR")
        if chosen:
            check_text(chosen, "actor", limit=256)
            match = re.match(r"^\s*(.*?)\s*<([^<>]*)>\s*$", chosen)
            if match and match.group(1):
                return match.group(1), match.group(2)
            name = " ".join(chosen.split()) or "unknown"
            return name, f"{re.sub(r'[^A-Za-z0-9._-]+', '-', name)}@gitledger"
        identity = git_identity(self.project_root or Path.cwd())
        if identity:
            return identity
        return "unknown", "unknown@gitledger"

    def agent_id(self, agent: str | None = None) -> str:
        """Which of the person's agents writes: --agent / GITLEDGER_AGENT (a hook passes its
        session id, the MCP server one id per process), else this machine's command line,
        ``cli@HOST``. Two agents of one person are two claimants."""
        chosen = agent or self.agent or os.environ.get("GITLEDGER_AGENT")
        if chosen:
            check_text(chosen, "agent", limit=256)
            text = " ".join(chosen.split())
            if text:
                return text
        return f"cli@{machine_name()}"

    # --- the derived index ------------------------------------------------------------------

    def index(self) -> Index:
        """This ledger's derived index (``index.py``), opened on first use and kept with the
        ledger: every query goes through it. When its file cannot be kept (a read-only
        directory, ``GITLEDGER_NO_INDEX=1``) it is built in memory from the refs instead."""
        if self._index is None:
            from .index import open_index

            self._index = open_index(self.store)
        return self._index

    def require_index(self) -> Index:
        """The index's file (for ``index rebuild``/``status``), or a StorageError naming why it
        cannot be kept; queries work without it (``index()``)."""
        found = self.index()
        if found.in_memory:
            raise StorageError(
                f"Cannot keep the index file in {self.path} (is the ledger read-only, or "
                f"GITLEDGER_NO_INDEX=1 set?); listing and search still work, from an index built "
                f"in memory."
            )
        return found

    def search_hits(
        self,
        query: str,
        limit: int | None = 20,
        *,
        statuses: Sequence[str] = (),
        owner: str | None = None,
        label: str | None = None,
        parent: str | None = None,
    ) -> list[SearchHit]:
        """``search`` with each hit's BM25 score and snippet, filtered like ``list_tasks``."""
        query = _filter_text(query, "search query") or ""
        owner, label = _filter_text(owner, "owner"), _filter_text(label, "label")
        limit = _bounds(limit)[0]
        wanted = set(statuses) or None
        if wanted and wanted - set(STATUSES):
            raise InvalidInput(f"Unknown status. Use one of: {', '.join(STATUSES)}.")
        parent_id = self.resolve(parent) if parent else None
        idx = self.index()
        hits = idx.search(query, limit, statuses=wanted, owner=owner, label=label, parent=parent_id)
        self.skipped = [Problem(ref, message) for ref, message in idx.problems()]
        return hits

    # --- ids ----------------------------------------------------------------------------------

    def resolve(self, prefix: str) -> str:
        """The full id for an id or a unique prefix of one, like git resolves a short object id."""
        wanted = prefix.strip().lower()
        if not wanted or not PREFIX_PATTERN.match(wanted):
            raise TaskNotFound(
                f"'{one_line(prefix, 40)}' is not a task id (ids use 0-9 and a-z without i, l, o, "
                f"u). List tasks with 'gitledger task list'."
            )
        if len(wanted) == ID_LENGTH:
            if self.store.tip(task_ref(wanted)) is None:
                raise TaskNotFound(f"No task {wanted}. List tasks with 'gitledger task list'.")
            return wanted
        # The index answers when it is known current (a stat or three); else list the directory.
        ids = self.index().ids_if_current(wanted)
        if ids is None:
            names = self.store.ref_names_starting(TASKS_DIR, wanted)
            ids = [
                n[len(TASKS_PREFIX) :] for n in names if ID_PATTERN.match(n[len(TASKS_PREFIX) :])
            ]
            if len(ids) == 1 and len(wanted) <= MIN_SHORT_ID:
                # Every id sharing the resolved id's first MIN_SHORT_ID characters was in this
                # scan: short_id() of this id may use it instead of listing the directory again
                # (a 100,000-entry directory costs ~95 ms). Used once, then dropped.
                self._scan = (ids[0], ids)
        if not ids:
            raise TaskNotFound(
                f"No task id starts with '{wanted}'. List tasks with 'gitledger task list'."
            )
        if len(ids) > 1:
            raise AmbiguousId(wanted, ids)
        return ids[0]

    def short_id(self, task_id: str) -> str:
        """The shortest prefix (at least 6 characters) that names only this task."""
        scan, self._scan = self._scan, None
        if scan is not None and scan[0] == task_id:
            return _shortest_unique(task_id, [i for i in scan[1] if i != task_id])
        found = self.index().ids_if_current(task_id[:MIN_SHORT_ID])
        if found is not None:
            return _shortest_unique(task_id, [i for i in found if i != task_id])
        names = self.store.ref_names_starting(TASKS_DIR, task_id[:MIN_SHORT_ID])
        others = [n[len(TASKS_PREFIX) :] for n in names if not n.endswith(task_id)]
        return _shortest_unique(task_id, others)

    @staticmethod
    def short_ids(ids: Iterable[str]) -> dict[str, str]:
        """Shortest unique prefixes for a set of ids (neighbours in sorted order decide)."""
        ordered = sorted(set(ids))
        out: dict[str, str] = {}
        for i, task_id in enumerate(ordered):
            neighbours = ordered[max(0, i - 1) : i] + ordered[i + 1 : i + 2]
            out[task_id] = _shortest_unique(task_id, neighbours)
        return out

    # --- reading ------------------------------------------------------------------------------

    def _read(self, commit: str, where: str) -> Task:
        return read_record(self.store, commit, where)[0]

    def _tip(self, task_id: str) -> str:
        tip = self.store.tip(task_ref(task_id))
        if tip is None:
            raise TaskNotFound(f"No task {task_id}. List tasks with 'gitledger task list'.")
        return tip

    def show(self, task_id: str, at: int | None = None) -> Task:
        """A task as it is now, or as it was at version ``at``."""
        full = self.resolve(task_id)
        tip = self._tip(full)
        task = self._read(tip, task_ref(full))
        if at is None or at == task.version:
            return task
        if at < 1 or at > task.version:
            raise VersionNotFound(
                f"Task {full} has versions 1 to {task.version}; there is no version {at}."
            )
        for info in self.store.first_parent_chain(tip):
            record = self._read(info.oid, task_ref(full))
            if record.version == at:
                return record
            if record.version < at:
                break
        raise VersionNotFound(f"Task {full} has no version {at} on its main line of history.")

    def tasks(self) -> Iterator[Task]:
        """Every readable task, by id; unreadable refs are collected in ``self.skipped``, not
        raised."""
        idx = self.index()
        found = idx.all_tasks()
        self.skipped = [Problem(ref, message) for ref, message in idx.problems()]
        yield from found

    def list_tasks(
        self,
        *,
        status: str | Sequence[str] | None = None,
        owner: str | None = None,
        label: str | None = None,
        parent: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Task]:
        """Tasks matching every filter given, most recently updated first."""
        owner, label = _filter_text(owner, "owner"), _filter_text(label, "label")
        statuses = _statuses(status)
        parent_id = self.resolve(parent) if parent else None
        idx = self.index()
        limit, offset = _bounds(limit, offset)
        page = idx.list_tasks(
            statuses=statuses,
            owner=owner,
            label=label,
            parent=parent_id,
            limit=limit,
            offset=offset,
        )
        self.skipped = [Problem(ref, message) for ref, message in idx.problems()]
        return page

    def inbox(self, limit: int | None = 10) -> list[Task]:
        """What needs attention: active, then blocked, then open; newest first within each."""
        return self.index().inbox(_bounds(limit)[0])

    def ready(self, limit: int | None = 10) -> list[Task]:
        """Tasks to start: open ones with no blocker whose every dependency is done and every
        child finished (a parent is an epic: its children are the work), and active ones whose
        claim lapsed (its holder wrote nothing for ``claim_lease()``: ``claim_state`` says
        ``lapsed``, and ``claim`` takes it over); highest priority, then oldest, first."""
        lease = self.claim_lease()
        now = time.time()
        found = self.index().ready(_bounds(limit)[0], lapsed_before=_iso(now - lease))
        return [t for t in found if t.status == "open" or claim_state(t, lease, now) == "lapsed"]

    def search(self, query: str, limit: int | None = 20) -> list[Task]:
        """Tasks holding every word of ``query`` as a whole word (case and diacritics folded) in
        any of their text, best first (BM25, a word in the goal weighing most). The query is
        FTS5 syntax (``word*``, ``"a phrase"``, ``OR``, ``NOT``, ``goal:word``); one it cannot
        parse is taken as plain words (docs/INDEX.md)."""
        return [hit.task for hit in self.search_hits(query, limit)]

    def children(self, task_id: str) -> list[Task]:
        """The tasks whose parent is ``task_id``, oldest first."""
        return self.index().children(self.resolve(task_id))

    def dependents(self, task_id: str) -> list[Task]:
        """The tasks that depend on ``task_id`` (list it among their dependencies), oldest
        first."""
        return self.index().dependents(self.resolve(task_id))

    # --- history ------------------------------------------------------------------------------

    def history(self, task_id: str, limit: int | None = None, offset: int = 0) -> list[Version]:
        """Versions newest first, each with what changed in it."""
        full = self.resolve(task_id)
        tip = self._tip(full)
        where = task_ref(full)
        cache: dict[str, Task] = {}

        def record(oid: str) -> Task:
            if oid not in cache:
                cache[oid] = self._read(oid, where)
            return cache[oid]

        out: list[Version] = []
        for n, info in enumerate(self.store.walk(tip)):
            if n < offset:
                continue
            if limit is not None and len(out) >= limit:
                break
            current = record(info.oid)
            previous = record(info.parents[0]) if info.parents else None
            changes = tuple(diff_tasks(previous, current))
            out.append(
                Version(
                    version=current.version,
                    commit=info.oid,
                    actor=info.author_name,
                    at=current.updated_at,
                    summary=info.message.splitlines()[0] if info.message else "",
                    changes=changes,
                    parents=info.parents,
                )
            )
        return out

    def diff(self, task_id: str, v1: int, v2: int) -> list[Change]:
        """What changed from version ``v1`` to version ``v2``."""
        return diff_tasks(self.show(task_id, at=v1), self.show(task_id, at=v2))

    # --- writing ------------------------------------------------------------------------------

    def _write(self, task: Task, message: str, author: tuple[str, str], tip: str | None) -> str:
        """Commit one version (under the writer lock) and let the derived index record it."""
        files = self.record_files(task)
        before = refs_stamp(self.path, TASKS_DIR).encode()
        commit = self.store.write(
            task_ref(task.id), files, message, author, [tip] if tip else [], tip
        )
        self.index().wrote(task, files["task.json"], commit, before)
        return commit

    def record_files(self, task: Task) -> dict[str, bytes]:
        """The tree of one task version: format line, machine record, Markdown view."""
        return {
            "FORMAT": format_line(task).encode(),
            "task.json": encode_record(task),
            "task.md": render_markdown(task).encode("utf-8"),
        }

    def _entries(self, texts: Iterable[str], kind: str, actor: str, at: str) -> list[Entry]:
        return [
            Entry(id=new_entry_id(), text=check_text(t, kind), at=at, actor=actor)
            for t in texts
            if _nonblank(t, kind)
        ]

    def create(
        self,
        goal: str,
        *,
        criteria: str = "",
        parent: str | None = None,
        owner: str | None = None,
        priority: int = 2,
        labels: Sequence[str] = (),
        next: str | None = None,
        dependencies: Sequence[str] = (),
        idempotency_key: str | None = None,
        actor: str | None = None,
    ) -> Task:
        """Create a task. With ``idempotency_key``, repeating the same request returns the same
        task, and a different request under the same key is refused."""
        goal = check_text(goal, "goal")
        if not goal.strip():
            raise InvalidInput("A task needs a goal: say in a sentence what is to be achieved.")
        check_text(criteria, "criteria")
        _check_priority(priority)
        labels = _clean_labels(labels)
        owner = _optional_text(owner, "owner")
        next = _optional_text(next, "next")
        parent_id = self.resolve(parent) if parent else None
        deps = _unique(self.resolve(d) for d in dependencies)
        request_hash = None
        if idempotency_key is not None:
            check_text(idempotency_key, "idempotency key", limit=512)
            if not idempotency_key.strip():
                raise InvalidInput("An idempotency key cannot be blank.")
            request = {
                "goal": goal,
                "criteria": criteria,
                "parent": parent_id,
                "owner": owner,
                "priority": priority,
                "labels": sorted(labels),
                "next": next,
                "dependencies": sorted(deps),
            }
            request_hash = hashlib.sha256(
                json.dumps(request, sort_keys=True, ensure_ascii=False).encode()
            ).hexdigest()
        name, email = self.author(actor)
        with self.store.lock():
            task_id = None
            if idempotency_key is not None:
                # The key's ref is written before the task's, so a create killed between the two
                # is finished by its retry (same id) instead of making a second task.
                keyed = self._keyed(idempotency_key)
                if keyed is not None:
                    key_task, key_hash = keyed
                    existing = self._keyed_task(key_task)
                    known_hash = key_hash or (existing.request_hash if existing else None)
                    if known_hash is not None and known_hash != request_hash:
                        raise IdempotencyConflict(
                            f"Idempotency key '{one_line(idempotency_key, 40)}' was already used for "
                            f"a different request (task {key_task}). Use a new key, or repeat "
                            f"the original request exactly."
                        )
                    if existing is not None:
                        return existing
                    task_id = key_task  # the earlier create died after its key: finish it
            if task_id is None:
                for _ in range(_WRITE_ATTEMPTS):
                    task_id = new_id()
                    if self.store.tip(task_ref(task_id)) is None:
                        break
                else:  # pragma: no cover - 100 random bits
                    raise StorageError("Could not find a free task id; try again.")
                if idempotency_key is not None:
                    self._record_key(idempotency_key, task_id, request_hash, (name, email))
            at = now_iso()
            stamp = HybridClock.tick([])
            task = Task(
                id=task_id,
                version=1,
                goal=goal,
                criteria=criteria,
                status="open",
                owner=owner,
                next=next,
                priority=priority,
                labels=labels,
                parent=parent_id,
                dependencies=deps,
                created_at=at,
                updated_at=at,
                actor=name,
                idempotency_key=idempotency_key,
                request_hash=request_hash,
                clock={f: stamp for f in (*SCALAR_FIELDS, *SET_FIELDS)},
            )
            try:
                self._write(task, commit_message(task, None), (name, email), None)
            except RefMoved as exc:  # pragma: no cover - the id was free under the lock
                raise StorageError(
                    f"Task ref {task_id} appeared while creating it; retry."
                ) from exc
            return task

    def _key_ref(self, key: str) -> str:
        return KEYS_PREFIX + hashlib.sha256(key.encode("utf-8")).hexdigest()

    def _keyed(self, key: str) -> tuple[str, str | None] | None:
        """The task id (and request hash) an idempotency key names, if the key was used."""
        tip = self.store.tip(self._key_ref(key))
        if tip is None:
            return None
        data = self.store.read_files(tip, ("key.json",))["key.json"]
        if data is None:
            return None
        raw = json.loads(data)
        return str(raw["task_id"]), raw.get("request_hash")

    def _keyed_task(self, task_id: str) -> Task | None:
        task_tip = self.store.tip(task_ref(task_id))
        if task_tip is None:
            return None
        first = list(self.store.first_parent_chain(task_tip))[-1]
        original = self._read(first.oid, task_ref(task_id))
        current = self._read(task_tip, task_ref(task_id))
        # The request hash lives in the first version; the caller gets the task as it is now.
        return current.replace(request_hash=original.request_hash)

    def _record_key(
        self, key: str, task_id: str, request_hash: str | None, author: tuple[str, str]
    ) -> None:
        body = json.dumps({"task_id": task_id, "request_hash": request_hash}).encode() + b"\n"
        self.store.write(
            self._key_ref(key),
            {"key.json": body},
            f"idempotency key for {task_id}\n",
            author,
            [],
            None,
        )

    def update(
        self,
        task_id: str,
        *,
        goal: str | None = None,
        criteria: str | None = None,
        status: str | None = None,
        next: str | None = None,
        blocker: str | None = None,
        owner: str | None = None,
        priority: int | None = None,
        parent: str | None = None,
        add_labels: Sequence[str] = (),
        remove_labels: Sequence[str] = (),
        notes: Sequence[str] = (),
        decisions: Sequence[str] = (),
        evidence: Sequence[str] = (),
        add_dependencies: Sequence[str] = (),
        remove_dependencies: Sequence[str] = (),
        expect_version: int | None = None,
        actor: str | None = None,
        agent: str | None = None,
        _hold: str | None = None,
        **deprecated: Sequence[str],
    ) -> Task:
        """Write one new version with every change given. Empty strings clear optional fields
        (owner, next, blocker, parent). Refused changes write nothing.

        ``agent`` is the writing agent (see ``agent_id``): a write by a claim's holder renews its
        lease. ``owner`` assigns the task to a person, which drops any agent's claim on it (use
        ``claim``/``release`` to hand a claim over); reassigning a task another person or agent
        holds a live claim on needs a decision in the same update (``gates.check_reassign``), and
        a dropped claim is named in a note. ``_hold`` is for
        ``claim``/``release``.

        The edits are spelled as the MCP tool ``task_update`` and the CLI spell them
        (``edits.py``); ``labels_add``, ``labels_remove``, ``dependencies_add`` and
        ``dependencies_remove`` still work, with a ``DeprecationWarning``.
        """
        extra = _renamed(deprecated)
        edit = _Edit(
            goal=goal,
            criteria=criteria,
            status=status,
            next=next,
            blocker=blocker,
            owner=owner,
            priority=priority,
            parent=parent,
            add_labels=_clean_labels([*add_labels, *extra.get("add_labels", ())]),
            remove_labels=_clean_labels([*remove_labels, *extra.get("remove_labels", ())]),
            notes=tuple(notes),
            decisions=tuple(decisions),
            evidence=tuple(evidence),
            add_dependencies=[*add_dependencies, *extra.get("add_dependencies", ())],
            remove_dependencies=[*remove_dependencies, *extra.get("remove_dependencies", ())],
        )
        full = self.resolve(task_id)
        if status is not None and status not in STATUSES:
            raise InvalidInput(
                f"Unknown status '{one_line(status, 30)}'. Use one of: {', '.join(STATUSES)}.",
                field="status",
            )
        if goal is not None:
            check_text(goal, "goal")
            if not goal.strip():
                raise InvalidInput("The goal cannot be blank.", field="goal")
        for value, name in (
            (criteria, "criteria"),
            (next, "next"),
            (blocker, "blocker"),
            (owner, "owner"),
        ):
            if value is not None:
                check_text(value, name)
        if priority is not None:
            _check_priority(priority)
        for texts, kind in ((notes, "note"), (decisions, "decision"), (evidence, "evidence")):
            for text in texts:
                check_text(text, kind)
        if edit.empty and _hold is None:  # a claim of an active task changes the hold alone
            raise InvalidInput(
                "Nothing to update: give at least one field, e.g. ",
                Fix("status", "active"),
                " or ",
                Fix("notes"),
                ".",
            )
        edit = dataclasses.replace(
            edit,
            add_dependencies=_unique(self.resolve(d) for d in edit.add_dependencies),
            remove_dependencies=_unique(self.resolve(d) for d in edit.remove_dependencies),
            parent=(self.resolve(parent) if parent else "") if parent is not None else None,
        )
        if expect_version is not None and expect_version < 1:
            raise InvalidInput(
                "The expected version is a version number, 1 or more.", field="expect_version"
            )
        for text in evidence:
            self._check_evidence_commit(text)
        name, email = self.author(actor)
        writer = self.agent_id(agent)
        ref = task_ref(full)
        lease = self.claim_lease() if owner is not None and _hold is None else 0.0
        with self.store.lock():
            for _ in range(_WRITE_ATTEMPTS):
                tip = self._tip(full)
                current = self._read(tip, ref)
                if expect_version is not None and current.version != expect_version:
                    raise VersionConflict(full, expect_version, current.version)
                at = now_iso()
                step = edit
                if owner is not None and _hold is None:
                    step = self._reassign(current, edit, owner, name, writer, lease)
                new = self._apply(current, step, at=at, actor=name)
                new = _hold_claim(current, new, _hold, name, writer, at, owner is not None)
                if current.conflicts:
                    # Setting a field a merge left in conflict resolves it: the conflict goes.
                    resolved = {
                        f
                        for f, v in (
                            ("goal", goal),
                            ("criteria", criteria),
                            ("status", status),
                            ("next", next),
                            ("blocker", blocker),
                            ("owner", owner),
                            ("priority", priority),
                            ("parent", parent),
                        )
                        if v is not None
                    }
                    if _hold or owner is not None:
                        resolved |= {"owner", "agent"}
                    new = new.replace(
                        conflicts=[c for c in current.conflicts if c.field not in resolved]
                    )
                changes = diff_tasks(current, new)
                if _hold == "take" and new.held_at != current.held_at:
                    changes.append(Change("held_at", "set", current.held_at, new.held_at))
                if not changes:
                    return current
                check_update(current, new, [c.field for c in changes], self._lookup, self.children)
                new = new.replace(version=current.version + 1)
                message = commit_message(new, changes)
                try:
                    self._write(new, message, (name, email), tip)
                except RefMoved:
                    continue  # a writer outside gitledger's lock moved it; read again
                return new
        raise StorageError(f"Task {full} kept changing under this update; try again.")

    @staticmethod
    def _reassign(
        current: Task, edit: _Edit, owner: str, name: str, writer: str, lease: float
    ) -> _Edit:
        """An assignment (``owner``) checked by the reassign gate; one that drops another
        holder's claim says whose in a note, as a steal does."""
        new_owner = owner.strip() or None
        state = claim_state(current, lease)
        mine = current.owner == name and current.agent in (None, writer)
        check_reassign(current, new_owner, state, mine, bool(edit.decisions))
        if new_owner == current.owner or state not in ("live", "lapsed") or mine:
            return edit
        how = "live" if state == "live" else "lapsed"
        note = (
            f"Reassigned to {new_owner or 'nobody'}, dropping the {how} claim of "
            f"{holder_text(current)}."
        )
        return dataclasses.replace(edit, notes=(*edit.notes, note))

    def _apply(self, current: Task, edit: _Edit, *, at: str, actor: str) -> Task:
        changes: dict[str, Any] = {}
        for name in ("goal", "criteria", "status", "priority"):
            if getattr(edit, name) is not None:
                changes[name] = getattr(edit, name)
        for name in ("next", "blocker", "owner"):
            value = getattr(edit, name)
            if value is not None:
                changes[name] = value if value.strip() else None
        if edit.parent is not None:
            changes["parent"] = edit.parent or None
        labels = [lb for lb in current.labels if lb not in edit.remove_labels]
        labels += [lb for lb in edit.add_labels if lb not in labels]
        changes["labels"] = labels
        missing = [d for d in edit.remove_dependencies if d not in current.dependencies]
        if missing:
            raise InvalidInput(
                f"Task {current.id} does not depend on {', '.join(missing)}; nothing to remove.",
                field="dependencies",
            )
        deps = [d for d in current.dependencies if d not in edit.remove_dependencies]
        deps += [d for d in edit.add_dependencies if d not in deps]
        changes["dependencies"] = deps
        new_criteria = changes.get("criteria", current.criteria)
        changes["notes"] = current.notes + self._entries(edit.notes, "note", actor, at)
        changes["decisions"] = current.decisions + self._entries(
            edit.decisions, "decision", actor, at
        )
        changes["evidence"] = current.evidence + [
            Evidence(
                id=new_entry_id(),
                text=text,
                at=at,
                actor=actor,
                task_id=current.id,
                criteria_hash=criteria_hash(new_criteria),
            )
            for text in edit.evidence
            if _nonblank(text, "evidence")
        ]
        updated = current.replace(**changes)
        clock = stamp_clock(current, updated)
        return updated.replace(clock=clock, updated_at=at, actor=actor)

    def _lookup(self, task_id: str) -> Task | None:
        """The current version of ``task_id``, or None: how the gates read other tasks."""
        ref = task_ref(task_id)
        tip = self.store.tip(ref)
        return None if tip is None else self._read(tip, ref)

    def _check_evidence_commit(self, text: str) -> None:
        match = _COMMIT_EVIDENCE.match(text.strip())
        if match and self.project_root is not None:
            if not commit_exists(self.project_root, match.group(1)):
                raise InvalidInput(
                    f"Evidence cites commit {match.group(1)}, which this repository does not have."
                )

    def unverified_evidence(self, task: Task) -> list[str]:
        """The commits ``task``'s evidence cites (``commit:SHA ...``) that this project's
        repository does not have, or cannot check (no repository here): unverified evidence."""
        out = []
        for entry in task.evidence:
            match = _COMMIT_EVIDENCE.match(entry.text.strip())
            if match and (
                self.project_root is None or not commit_exists(self.project_root, match.group(1))
            ):
                out.append(match.group(1))
        return out

    def claim_lease(self) -> float:
        """Seconds a claim lives without a write by its holder (setting ``claim.lease``)."""
        from .settings import claim_lease

        return claim_lease(self.store)

    def claim(
        self,
        task_id: str,
        *,
        actor: str | None = None,
        agent: str | None = None,
        steal: bool = False,
        decision: str | None = None,
    ) -> Task:
        """Take a task for this person's agent: the first claim wins, a second gets ClaimConflict.

        The claimant is the person (``actor``) *and* the agent (``agent_id``): two agents of one
        person are two claimants. Claiming sets owner and agent and makes the task active. The
        holder's re-claim writes nothing (``last_claim`` says "already yours"), unless its lease
        had lapsed, which renews it. A claim whose holder wrote nothing for ``claim_lease()``
        seconds has lapsed: the next claimant takes it, with a note naming the old holder. A live
        claim is taken only with ``steal`` and a ``decision`` saying why. (With a remote,
        ``sync.claim`` makes the claim count only once the push landed.)
        """
        full = self.resolve(task_id)
        name, _email = self.author(actor)
        holder = self.agent_id(agent)
        if steal and not (decision and decision.strip()):
            raise GateRefused(
                "Taking a live claim needs a decision saying why: add ",
                Fix("decision"),
                ".",
                rule="steal-needs-decision",
                field="decision",
            )
        if decision is not None and not steal:
            raise InvalidInput("--decision goes with --steal; to record one, use 'task update'.")
        lease = self.claim_lease()
        for _ in range(_WRITE_ATTEMPTS):
            current = self._read(self._tip(full), task_ref(full))
            if current.finished:
                raise GateRefused(
                    f"Task {full[:MIN_SHORT_ID]} is {current.status}; nothing to claim.",
                    rule="claim-needs-unfinished",
                    field="status",
                )
            state = claim_state(current, lease)
            mine = current.owner == name and current.agent == holder
            notes: list[str] = []
            if mine and state == "live" and current.status != "open":
                self.last_claim = "already yours"
                return current
            if mine:
                outcome = "claimed" if current.status == "open" else "renewed"
            elif state == "free" or (state == "assigned" and current.owner == name):
                outcome = "claimed"
            elif state == "lapsed":
                outcome = "took over a lapsed claim"
                notes.append(
                    f"Took over the claim of {holder_text(current)}: it had lapsed (no write by "
                    f"its holder since {current.held_at}, lease {format_duration(lease)})."
                )
            elif steal:
                outcome = "stolen"
                notes.append(f"Took the live claim of {holder_text(current)}.")
            else:
                raise ClaimConflict(
                    f"Task {full[:MIN_SHORT_ID]} is already claimed by {holder_text(current)}"
                    f"{_since(current)}; pick another with 'gitledger task ready', wait for its "
                    f"lease ({format_duration(lease)} without a write) to lapse, or take it with "
                    f"--steal --decision WHY."
                )
            try:
                # expect_version makes the claim a compare-and-swap: of two racing claimants,
                # one writes and the other re-reads, sees the holder and gets ClaimConflict.
                task = self.update(
                    full,
                    status="active" if current.status == "open" else None,
                    notes=notes,
                    decisions=[decision] if steal and decision else [],
                    expect_version=current.version,
                    actor=actor,
                    agent=holder,
                    _hold="take",
                )
            except VersionConflict:
                continue
            self.last_claim = outcome
            return task
        raise StorageError(f"Task {full} kept changing while claiming it; try again.")

    def release(self, task_id: str, *, actor: str | None = None, agent: str | None = None) -> Task:
        """Hand a claim back: owner and agent cleared, an active task open again.

        Only the holder releases a live claim (another agent takes one with ``claim(steal=True)``);
        a lapsed claim anyone may release. Releasing an unclaimed task writes nothing
        (``last_claim`` says "not claimed").
        """
        full = self.resolve(task_id)
        name, _email = self.author(actor)
        holder = self.agent_id(agent)
        current = self.show(full)
        state = claim_state(current, self.claim_lease())
        if state == "free":
            self.last_claim = "not claimed"
            return current
        mine = current.owner == name and (current.agent == holder or current.agent is None)
        if not mine and state != "lapsed":
            raise ClaimConflict(
                f"Task {full[:MIN_SHORT_ID]} is claimed by {holder_text(current)}, not by "
                f"{name} ({holder}); only its holder releases it. To take it over: 'gitledger "
                f"task claim {full[:MIN_SHORT_ID]} --steal --decision WHY'."
            )
        task = self.update(
            full,
            status="open" if current.status == "active" else None,
            expect_version=current.version,
            actor=actor,
            agent=holder,
            _hold="release",
        )
        self.last_claim = "released"
        return task

    # --- checking -----------------------------------------------------------------------------

    def verify(self) -> VerifyReport:
        """Check every task: objects re-hash to their ids, records validate, versions chain; with
        ``gitledger.requireSigned`` (or GITLEDGER_REQUIRE_SIGNED=1), every version is signed by a
        key the user trusts (gpg.ssh.allowedSignersFile, or the gpg keyring)."""
        report = VerifyReport()
        require_signed = self.store.signing_required()
        for name, tip in self.store.refs(TASKS_PREFIX):
            leaf = name[len(TASKS_PREFIX) :]
            if not ID_PATTERN.match(leaf):
                report.problems.append(Problem(name, "not a gitledger task id (a foreign ref)"))
                continue
            report.tasks += 1
            try:
                versions: dict[str, int] = {}
                infos = list(self.store.walk(tip))
                for info in reversed(infos):  # oldest first, so parents are known
                    self.store.check_objects(info.oid)
                    files = self.store.read_files(info.oid, RECORD_FILES)
                    record = record_from_files(files, where=name, commit=info.oid)[0]
                    if record.id != leaf:
                        raise CorruptRecord(f"version {record.version} says id {record.id}")
                    expected = max((versions[p] for p in info.parents), default=0) + 1
                    if record.version != expected:
                        raise CorruptRecord(
                            f"commit {info.oid[:12]} is version {record.version}, expected "
                            f"{expected}: the version chain is broken"
                        )
                    versions[info.oid] = record.version
                    report.versions += 1
                    if require_signed:
                        check = self.store.check_signature(info.oid)
                        if check.status != "good":
                            why = (
                                f"version {record.version} (commit {info.oid[:12]}) {check.detail}"
                            )
                            if check.status == "unsigned":
                                # Bulk writes (task import, memory import) never sign.
                                why += (
                                    ": written before signing was on (gitledger.sign), by "
                                    "another tool, or by 'task import', which does not sign"
                                )
                            report.problems.append(Problem(name, why))
                if infos:
                    where = "no repository here to check" if self.project_root is None else ""
                    for sha in self.unverified_evidence(record):
                        report.unverified.append(
                            Problem(
                                name,
                                f"evidence cites commit {sha}, "
                                + (where or "which this repository does not have")
                                + " (fetch it, or correct the evidence)",
                            )
                        )
            except LedgerError as exc:
                report.problems.append(Problem(name, exc.message))
        for name, what in sorted(self.store.broken_refs(TASKS_PREFIX).items()):
            report.tasks += 1
            report.problems.append(Problem(name, self._broken_ref_advice(name, what)))
        return report

    def _broken_ref_advice(self, name: str, what: str) -> str:
        """What a broken task ref means and the command that restores it, when its newest
        version is still in the object store (a ref file emptied by a crash keeps its commits)."""
        leaf = name[len(TASKS_PREFIX) :]
        said = f"the ref file {what}: the task is missing from listings, exports and backups"
        versions = []
        for info in self.store.lost_commits(f"Task: {leaf}\n"):
            found = re.search(r"^Version: (\d+)$", info.message, re.M)
            if found:
                versions.append((int(found.group(1)), info.time, info.oid))
        if not versions:
            return f"{said}; no version of it is left here: restore it from a backup"
        version, _when, oid = max(versions)
        # git update-ref refuses a ref whose file is broken; rewriting the file is what works.
        return (
            f"{said}; its newest version left here is {version} (commit {oid}): restore it with "
            f"echo {oid} > {shlex.quote(str(self.path / name))}"
        )

    def repair(self, older_than: float = 60.0) -> list[str]:
        """Remove ref lock files left by killed writers (only while no gitledger writer runs)."""
        removed = []
        with self.store.lock(timeout=5):
            for lock in self.store.stale_ref_locks(older_than):
                lock.unlink(missing_ok=True)
                removed.append(str(lock.relative_to(self.path)))
        return removed


# --- helpers ----------------------------------------------------------------------------------


def _shortest_unique(task_id: str, others: Iterable[str]) -> str:
    length = MIN_SHORT_ID
    for other in others:
        common = 0
        for a, b in zip(task_id, other, strict=False):
            if a != b:
                break
            common += 1
        length = max(length, common + 1)
    return task_id[: min(length, len(task_id))]


def _statuses(status: str | Sequence[str] | None) -> set[str] | None:
    if status is None:
        return None
    wanted = {status} if isinstance(status, str) else set(status)
    unknown = wanted - set(STATUSES)
    if unknown:
        raise InvalidInput(
            f"Unknown status '{sorted(unknown)[0]}'. Use one of: {', '.join(STATUSES)}."
        )
    return wanted


_SQL_MAX = 2**63 - 1  # SQLite's largest integer


def _bounds(limit: int | None, offset: int = 0) -> tuple[int | None, int]:
    """A query's limit and offset checked once for every query path: negative is refused; past
    SQLite's integer range a limit means no limit and an offset is clamped (both mean "all")."""
    if limit is not None and limit < 0:
        raise InvalidInput("A limit cannot be negative.")
    if offset < 0:
        raise InvalidInput("An offset cannot be negative.")
    return (None if limit is not None and limit > _SQL_MAX else limit), min(offset, _SQL_MAX)


def _filter_text(value: str | None, what: str) -> str | None:
    """A search or filter text that can be looked up: refused when it is not text (a lone
    surrogate: argv bytes that are not UTF-8)."""
    if value is None:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"The {what} is not valid UTF-8 text (byte {exc.start + 1} is no character); give "
            f"it as UTF-8."
        ) from None
    return value


def _check_priority(priority: int) -> None:
    if not isinstance(priority, int) or not PRIORITY_MIN <= priority <= PRIORITY_MAX:
        raise InvalidInput(
            f"Priority is {PRIORITY_MIN} (highest) to {PRIORITY_MAX} (lowest), not {priority!r}."
        )


def _clean_labels(labels: Sequence[str]) -> list[str]:
    out: list[str] = []
    for label in labels:
        label = check_label(label.strip())
        if label not in out:
            out.append(label)
    return out


def _optional_text(value: str | None, name: str) -> str | None:
    if value is None:
        return None
    check_text(value, name)
    return value if value.strip() else None


def _nonblank(text: str, kind: str) -> bool:
    if not text.strip():
        raise InvalidInput(f"A {kind} cannot be blank.")
    return True


def _unique(ids: Iterable[str]) -> list[str]:
    out: list[str] = []
    for task_id in ids:
        if task_id not in out:
            out.append(task_id)
    return out


# --- claims -----------------------------------------------------------------------------------


def machine_name() -> str:
    """This machine's name in claims (``GITLEDGER_NODE`` overrides the host name)."""
    return os.environ.get("GITLEDGER_NODE") or os.uname().nodename or "localhost"


def claim_state(task: Task, lease: float, now: float | None = None) -> str:
    """``free`` (no owner), ``assigned`` (an owner but no agent's claim: ``--owner``, or a claim
    from before claims named agents), ``live`` or ``lapsed`` (the holder wrote nothing for
    ``lease`` seconds)."""
    if not task.owner:
        return "free"
    if task.held_at is None:
        return "assigned"
    held = _epoch(task.held_at)
    if held is None:
        return "live"
    return "lapsed" if (time.time() if now is None else now) - held > lease else "live"


def holder_text(task: Task) -> str:
    """Who holds a claim, as messages say it: ``alice (agent cli@laptop)``."""
    if not task.owner:
        return "nobody"
    return f"{task.owner} (agent {task.agent})" if task.agent else task.owner


def format_duration(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def _since(task: Task) -> str:
    return f" since {task.held_at[:16].replace('T', ' ')}" if task.held_at else ""


def _iso(epoch: float) -> str:
    """A time as ``held_at`` stamps are written (``model.now_iso``), so stamps compare as text."""
    stamp = datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def _epoch(stamp: str) -> float | None:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _hold_claim(
    current: Task, new: Task, hold: str | None, name: str, writer: str, at: str, assigned: bool
) -> Task:
    """The claim fields of a new version: taken, released, dropped by an assignment, or the
    holder's lease renewed by this write."""
    if hold == "take":
        held = new.replace(owner=name, agent=writer, held_at=at)
    elif hold == "release":
        held = new.replace(owner=None, agent=None, held_at=None)
    elif assigned and new.owner != current.owner:
        held = new.replace(agent=None, held_at=None)
    elif current.held_at and current.owner == name and current.agent == writer:
        return new.replace(held_at=at)
    else:
        return new
    if (held.owner, held.agent) != (current.owner, current.agent):
        # owner and agent are one claim: a merge decides them together by the owner's stamp
        clock = dict(held.clock)
        clock["owner"] = HybridClock.tick(list(held.clock.values()))
        held = held.replace(clock=clock)
    return held


__all__ = [
    "Ledger",
    "Problem",
    "VerifyReport",
    "Version",
    "claim_state",
    "format_duration",
    "holder_text",
    "machine_name",
]
