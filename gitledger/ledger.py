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

``Ledger`` is the facade; what it applies lives beside it, one concept a module: ``queries.py``
(what a query takes), ``updates.py`` (an update's edits, the conflicts they settle),
``gates.py``, ``keys.py`` (idempotency keys: what an earlier create under a key left),
``claims.py`` (who holds a task, and which agent writes), ``changes.py`` (diffs, messages, a
task's history and version N), ``model.py`` (the record, its files, short ids) and
``verify.py``.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from . import claims, paths
from .changes import Change, Version, commit_message, diff_tasks, history, version_at
from .claims import (
    claim_state,
    claimant_agent,
    format_duration,
    held_stamp,
    hold_claim,
    holder_text,
    machine_name,
    reassign,
)
from .errors import (
    AmbiguousId,
    InvalidInput,
    NoLedger,
    Step,
    StorageError,
    TaskNotFound,
    UnsafeLedger,
    VersionConflict,
)
from .gates import check_update
from .gitstore import GitStore, RefMoved, git_identity, refs_stamp
from .keys import check_key, earlier_create, record_key, request_hash
from .model import (
    ID_LENGTH,
    ID_PATTERN,
    MIN_SHORT_ID,
    PREFIX_PATTERN,
    SCALAR_FIELDS,
    SET_FIELDS,
    HybridClock,
    Task,
    check_text,
    new_id,
    now_iso,
    read_record,
    record_files,
    short_ids,
    shortest_unique,
)
from .queries import SQL_MAX, check_bounds, check_lookup, check_statuses
from .refs import TASKS_DIR, TASKS_PREFIX, task_ref
from .text import one_line
from .updates import (
    WRITE_ATTEMPTS,
    UpdateEdits,
    apply_edits,
    check_priority,
    clean_labels,
    optional_text,
    renamed,
    settle_conflicts,
    unique,
)
from .verify import Problem, VerifyReport, check_evidence_commit

if TYPE_CHECKING:
    from .index import Index, SearchHit


def _hook_store(location: paths.Location) -> GitStore:
    """The store at ``location``, created (and said so on stderr) when it does not exist yet."""
    if not (location.path / "HEAD").exists():
        GitStore.init(location.path)
        sys.stderr.write(f"gitledger: created a ledger at {location.path.resolve()}\n")
    return GitStore(location.path, trust_config=location.trusted_config)


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
                raise NoLedger(*paths.missing_ledger(None))
            location = paths.default_location(cwd)
        if not (location.path / "HEAD").exists():
            if not create:
                raise NoLedger(*paths.missing_ledger(location))
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
            sys.stderr.write(f"gitledger: {exc.worded('cli')} Saving to the per-user ledger.\n")
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
        session id, the MCP server one id per process), else the agent session this command runs
        in (``agents.session_from_env``: Claude Code's Bash tool sets it), else this machine's
        command line, ``cli@HOST``. Two agents of one person are two claimants."""
        return claimant_agent(agent or self.agent)

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
        query = check_lookup(query, "search query") or ""
        owner, label = check_lookup(owner, "owner"), check_lookup(label, "label")
        limit = check_bounds(limit)[0]
        wanted = check_statuses(statuses) or None
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
                f"u). List tasks with ",
                Step("task list"),
                ".",
            )
        if len(wanted) == ID_LENGTH:
            if self.store.tip(task_ref(wanted)) is None:
                raise TaskNotFound(f"No task {wanted}. List tasks with ", Step("task list"), ".")
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
                f"No task id starts with '{wanted}'. List tasks with ", Step("task list"), "."
            )
        if len(ids) > 1:
            raise AmbiguousId(wanted, ids)
        return ids[0]

    def short_id(self, task_id: str) -> str:
        """The shortest prefix (at least 6 characters) that names only this task."""
        scan, self._scan = self._scan, None
        if scan is not None and scan[0] == task_id:
            return shortest_unique(task_id, [i for i in scan[1] if i != task_id])
        found = self.index().ids_if_current(task_id[:MIN_SHORT_ID])
        if found is not None:
            return shortest_unique(task_id, [i for i in found if i != task_id])
        names = self.store.ref_names_starting(TASKS_DIR, task_id[:MIN_SHORT_ID])
        others = [n[len(TASKS_PREFIX) :] for n in names if not n.endswith(task_id)]
        return shortest_unique(task_id, others)

    @staticmethod
    def short_ids(ids: Iterable[str]) -> dict[str, str]:
        """Shortest unique prefixes for a set of ids (``model.short_ids``)."""
        return short_ids(ids)

    # --- reading ------------------------------------------------------------------------------

    def _read(self, commit: str, where: str) -> Task:
        return read_record(self.store, commit, where)[0]

    def _tip(self, task_id: str) -> str:
        tip = self.store.tip(task_ref(task_id))
        if tip is None:
            raise TaskNotFound(f"No task {task_id}. List tasks with ", Step("task list"), ".")
        return tip

    def show(self, task_id: str, at: int | None = None) -> Task:
        """A task as it is now, or as it was at version ``at``."""
        full = self.resolve(task_id)
        tip = self._tip(full)
        task = self._read(tip, task_ref(full))
        return task if at is None else version_at(self.store, tip, task_ref(full), task, at)

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
        owner, label = check_lookup(owner, "owner"), check_lookup(label, "label")
        statuses = check_statuses(status)
        parent_id = self.resolve(parent) if parent else None
        idx = self.index()
        limit, offset = check_bounds(limit, offset)
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
        return self.index().inbox(check_bounds(limit)[0])

    def ready(self, limit: int | None = 10) -> list[Task]:
        """Tasks to start: open ones with no blocker whose every dependency is done and every
        child finished (a parent is an epic: its children are the work), and active ones whose
        claim lapsed (its holder wrote nothing for ``claim_lease()``: ``claim_state`` says
        ``lapsed``, and ``claim`` takes it over); highest priority, then oldest, first."""
        lease = self.claim_lease()
        now = time.time()
        want = check_bounds(limit)[0]
        ask = want
        while True:  # the index's lapsed test is by stamp; claim_state has the last word, so
            # a page it thins is filled from further down the queue
            found = self.index().ready(ask, lapsed_before=held_stamp(now - lease))
            kept = [
                t for t in found if t.status == "open" or claim_state(t, lease, now) == "lapsed"
            ]
            if want is None or ask is None or len(kept) >= want or len(found) < ask:
                return kept[:want]
            ask = min(ask * 2 + 1, SQL_MAX)

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
        return history(self.store, self._tip(full), task_ref(full), limit, offset)

    def diff(self, task_id: str, v1: int, v2: int) -> list[Change]:
        """What changed from version ``v1`` to version ``v2``."""
        return diff_tasks(self.show(task_id, at=v1), self.show(task_id, at=v2))

    # --- writing ------------------------------------------------------------------------------

    def _write(self, task: Task, message: str, author: tuple[str, str], tip: str | None) -> str:
        """Commit one version (under the writer lock) and let the derived index record it."""
        files = record_files(task)
        before = refs_stamp(self.path, TASKS_DIR).encode()
        commit = self.store.write(
            task_ref(task.id), files, message, author, [tip] if tip else [], tip
        )
        self.index().wrote(task, files["task.json"], commit, before)
        return commit

    def record_files(self, task: Task) -> dict[str, bytes]:
        """The tree of one task version (``model.record_files``)."""
        return record_files(task)

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
        check_priority(priority)
        labels = clean_labels(labels)
        owner = optional_text(owner, "owner")
        next = optional_text(next, "next")
        parent_id = self.resolve(parent) if parent else None
        deps = unique(self.resolve(d) for d in dependencies)
        hashed = None
        if idempotency_key is not None:
            check_key(idempotency_key)
            hashed = request_hash(
                {
                    "goal": goal,
                    "criteria": criteria,
                    "parent": parent_id,
                    "owner": owner,
                    "priority": priority,
                    "labels": sorted(labels),
                    "next": next,
                    "dependencies": sorted(deps),
                }
            )
        name, email = self.author(actor)
        with self.store.lock():
            task_id = None
            if idempotency_key is not None:
                # The key's ref is written before the task's, so a create killed between the two
                # is finished by its retry (same id) instead of making a second task.
                existing, task_id = earlier_create(self.store, idempotency_key, hashed)
                if existing is not None:
                    return existing
            if task_id is None:
                for _ in range(WRITE_ATTEMPTS):
                    task_id = new_id()
                    if self.store.tip(task_ref(task_id)) is None:
                        break
                else:  # pragma: no cover - 100 random bits
                    raise StorageError("Could not find a free task id; try again.")
                if idempotency_key is not None:
                    record_key(self.store, idempotency_key, task_id, hashed, (name, email))
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
                request_hash=hashed,
                clock={f: stamp for f in (*SCALAR_FIELDS, *SET_FIELDS)},
            )
            try:
                self._write(task, commit_message(task, None), (name, email), None)
            except RefMoved as exc:  # pragma: no cover - the id was free under the lock
                raise StorageError(
                    f"Task ref {task_id} appeared while creating it; retry."
                ) from exc
            return task

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
        extra = renamed(deprecated)
        edit = UpdateEdits(
            goal=goal,
            criteria=criteria,
            status=status,
            next=next,
            blocker=blocker,
            owner=owner,
            priority=priority,
            parent=parent,
            add_labels=clean_labels([*add_labels, *extra.get("add_labels", ())]),
            remove_labels=clean_labels([*remove_labels, *extra.get("remove_labels", ())]),
            notes=tuple(notes),
            decisions=tuple(decisions),
            evidence=tuple(evidence),
            add_dependencies=[*add_dependencies, *extra.get("add_dependencies", ())],
            remove_dependencies=[*remove_dependencies, *extra.get("remove_dependencies", ())],
        )
        full = self.resolve(task_id)
        edit.check(hold=_hold)
        edit = dataclasses.replace(
            edit,
            add_dependencies=unique(self.resolve(d) for d in edit.add_dependencies),
            remove_dependencies=unique(self.resolve(d) for d in edit.remove_dependencies),
            parent=(self.resolve(parent) if parent else "") if parent is not None else None,
        )
        if expect_version is not None and expect_version < 1:
            raise InvalidInput(
                "The expected version is a version number, 1 or more.", field="expect_version"
            )
        for text in evidence:
            check_evidence_commit(self, text)
        name, email = self.author(actor)
        writer = self.agent_id(agent)
        ref = task_ref(full)
        lease = self.claim_lease() if owner is not None and _hold is None else 0.0
        with self.store.lock():
            for _ in range(WRITE_ATTEMPTS):
                tip = self._tip(full)
                current = self._read(tip, ref)
                if expect_version is not None and current.version != expect_version:
                    raise VersionConflict(full, expect_version, current.version)
                at = now_iso()
                step = edit
                if owner is not None and _hold is None:
                    step = reassign(current, edit, owner, name, writer, lease)
                new = apply_edits(current, step, at=at, actor=name)
                new = hold_claim(current, new, _hold, name, writer, at, owner is not None)
                # Setting a field a merge left in conflict resolves it: the conflict goes.
                claim_moved = bool(_hold) or owner is not None
                new = settle_conflicts(current, new, edit, claim_moved=claim_moved)
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

    def _lookup(self, task_id: str) -> Task | None:
        """The current version of ``task_id``, or None: how the gates read other tasks."""
        ref = task_ref(task_id)
        tip = self.store.tip(ref)
        return None if tip is None else self._read(tip, ref)

    def claim_lease(self) -> float:
        """Seconds a claim lives without a write by its holder (setting ``claim.lease``)."""
        from .settings import claim_lease

        return claim_lease(self.store)

    # Taking and handing back a claim are ``claims.claim`` and ``claims.release`` themselves, as
    # methods: one signature and one docstring, which mypy and ``help()`` show.
    claim = claims.claim
    release = claims.release

    # --- checking -----------------------------------------------------------------------------

    def verify(self) -> VerifyReport:
        """Check every task: objects re-hash to their ids, records validate, versions chain; with
        ``gitledger.requireSigned``, every version is signed by a trusted key (``verify.verify``)."""
        from . import verify

        return verify.verify(self)

    def unverified_evidence(self, task: Task) -> list[str]:
        """The commits ``task``'s evidence cites that this project's repository does not have,
        or cannot check (``verify.unverified_evidence``)."""
        from . import verify

        return verify.unverified_evidence(self, task)

    def repair(self, older_than: float = 60.0) -> list[str]:
        """Remove ref lock files left by killed writers (only while no gitledger writer runs)."""
        from . import verify

        return verify.repair(self, older_than)


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
