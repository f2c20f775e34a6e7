"""The ledger's queries as a plain scan of the refs: the oracle the derived index is checked
against (``test_index_oracle.py``, ``test_index.py``).

The ledger answers every query through its SQLite index (a file, or one in memory when the file
cannot be kept); this module says what each answer must be, read straight from the task refs
with nothing cached, in plain Python. It lives in the tests so the product has one
implementation of each query.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gitledger.errors import LedgerError
from gitledger.gitstore import GitStore
from gitledger.ledger import claim_state
from gitledger.model import ENTRY_FIELDS, ID_PATTERN, Task, read_record
from gitledger.refs import TASKS_PREFIX

INBOX_RANK = {"active": 0, "blocked": 1, "open": 2}


@dataclass
class Scan:
    """Every readable task of a ledger and the refs that are not readable tasks."""

    tasks: dict[str, Task] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # ref names, sorted


def scan(store: GitStore) -> Scan:
    out = Scan()
    for name, tip in store.refs(TASKS_PREFIX):
        leaf = name[len(TASKS_PREFIX) :]
        if not ID_PATTERN.match(leaf):
            out.problems.append(name)
            continue
        try:
            task = read_record(store, tip, name)[0]
        except LedgerError:
            out.problems.append(name)
            continue
        if task.id != leaf:
            out.problems.append(name)
            continue
        out.tasks[task.id] = task
    out.problems.sort()
    return out


def _newest_first(tasks: Iterable[Task]) -> list[Task]:
    return sorted(tasks, key=lambda t: (t.updated_at, t.id), reverse=True)


def _oldest_first(tasks: Iterable[Task]) -> list[Task]:
    return sorted(tasks, key=lambda t: (t.created_at, t.id))


def _page(items: list[Task], limit: int | None, offset: int = 0) -> list[str]:
    end = None if limit is None else offset + limit
    return [t.id for t in items[offset:end]]


def _matches(
    task: Task,
    statuses: set[str] | None,
    owner: str | None,
    label: str | None,
    parent: str | None,
) -> bool:
    return (
        (not statuses or task.status in statuses)
        and (owner is None or task.owner == owner)
        and (label is None or label in task.labels)
        and (parent is None or task.parent == parent)
    )


def list_tasks(
    s: Scan,
    *,
    statuses: set[str] | None = None,
    owner: str | None = None,
    label: str | None = None,
    parent: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[str]:
    found = [t for t in s.tasks.values() if _matches(t, statuses, owner, label, parent)]
    return _page(_newest_first(found), limit, offset)


def inbox(s: Scan, limit: int | None) -> list[str]:
    found = _newest_first(t for t in s.tasks.values() if t.status in INBOX_RANK)
    found.sort(key=lambda t: INBOX_RANK[t.status])  # stable: newest first within a status
    return _page(found, limit)


def ready(s: Scan, limit: int | None, lease: float = 7200.0) -> list[str]:
    """Open tasks with nothing in the way, and active ones whose claim lapsed (``lease``)."""
    every = s.tasks
    parents = {t.parent for t in every.values() if t.parent and not t.finished}
    now = time.time()
    found = [
        t
        for t in every.values()
        if (t.status == "open" or (t.status == "active" and claim_state(t, lease, now) == "lapsed"))
        and not t.blocker
        and t.id not in parents
        and all(d in every and every[d].status == "done" for d in t.dependencies)
    ]
    found.sort(key=lambda t: (t.priority, t.created_at, t.id))
    return _page(found, limit)


def children(s: Scan, parent: str) -> list[str]:
    return [t.id for t in _oldest_first(t for t in s.tasks.values() if t.parent == parent)]


def dependents(s: Scan, task_id: str) -> list[str]:
    return [t.id for t in _oldest_first(t for t in s.tasks.values() if task_id in t.dependencies)]


# --- search -------------------------------------------------------------------------------------

# What search matches (docs/INDEX.md): every word of the query as a whole word of the task's
# text, words being runs of letters and digits (Unicode), case and diacritics folded; a query
# word ending in * matches every word it begins.
_WORD = re.compile(r"[^\W_]+")


def fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


def words(text: str) -> list[str]:
    return _WORD.findall(fold(text))


def searchable_text(task: Task) -> str:
    parts = [task.goal, task.criteria, task.next or "", task.blocker or "", task.owner or ""]
    parts += task.labels
    parts += [e.text for kind in ENTRY_FIELDS for e in getattr(task, kind)]
    return "\n".join(parts)


def search(
    s: Scan,
    query: Sequence[str],
    *,
    statuses: set[str] | None = None,
    owner: str | None = None,
    label: str | None = None,
    parent: str | None = None,
) -> set[str]:
    """The ids matching plain query words (each a word, or a word then ``*`` for a prefix)."""
    wanted = [(fold(q.rstrip("*")), q.endswith("*")) for q in query]
    out = set()
    for task in s.tasks.values():
        if not _matches(task, statuses, owner, label, parent):
            continue
        have = set(words(searchable_text(task)))
        if all(
            (any(w.startswith(word) for w in have) if prefix else word in have)
            for word, prefix in wanted
        ):
            out.add(task.id)
    return out


__all__ = [
    "Scan",
    "children",
    "dependents",
    "inbox",
    "list_tasks",
    "ready",
    "scan",
    "search",
    "searchable_text",
    "words",
]
