"""The MCP server: the ledger's tools for agents that speak MCP, over stdio.

``gitledger mcp`` runs it. Each tool is one call into the library (``Ledger`` or a service module),
so the gates, the error messages and the exit kinds are the ones the CLI has; this module only
describes the tools, checks arguments against their schemas and turns results into MCP results.

Design notes:

- **Hand-written schemas on the SDK's low-level ``Server``.** ``MCPServer`` would generate schemas
  from signatures, but those carry a title per property, ``anyOf`` with ``null`` for each optional
  and defaults, which multiplies the token cost of ``tools/list`` (every agent pays it on every
  turn). Here each property is a type, a one-line description and, for closed sets, an enum;
  required fields are listed; unknown fields are refused. ``benchmarks/mcp_bench.py`` counts the
  cl100k tokens of the whole list.
- **Errors are tool results, not protocol errors.** A ``LedgerError`` comes back with
  ``isError`` set, ``structuredContent`` equal to ``error.to_dict()`` (``{"error": kind,
  "message": ...}``, what ``--json`` prints on the CLI) and the same JSON as text, so a model sees
  the message that names the fix and a program can branch on the kind.
- **One ledger, opened once, read fresh on every call.** Reads go to the refs (and, once it
  exists, to the index, which brings itself up to date from the refs) on each call; writes are
  compare-and-swap under the ledger's lock. Nothing is cached here, so writes made by other
  processes between two calls are seen by the next one.
- **One worker thread.** Calls run one at a time on a single thread, off the event loop: the
  ledger's objects (a pygit2 repository, SQLite connections) stay on the thread that made them,
  concurrent requests are serialized rather than interleaved, and a slow call (a backup over the
  network) does not stop the server from answering pings.
- **Optional services register only when they exist.** The context assembler, sync and memory are
  separate modules; a tool that needs one is listed only when that module and function import.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import os
import re
import secrets
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .edits import UPDATE_EDITS
from .errors import InvalidInput, LedgerError
from .model import STATUSES

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

    from .ledger import Ledger
    from .memory import Fact, Memory
    from .model import Task

SERVER_NAME = "gitledger"
CONTEXT_URI = "gitledger://task/{id}/context"
_CONTEXT_URI_RE = re.compile(r"^gitledger://task/([^/]+)/context$")
log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "gitledger keeps your task line in Git so it survives compaction, restarts and other "
    "machines. Start with prime (it shows who holds what). Claim one task with task_claim and "
    "remote origin, so exactly one agent wins it; claim_conflict means pick another. While "
    "working record next, decisions and evidence with task_update (each write renews your "
    "claim's lease). Run sync before you stop. Finish with status done plus evidence, status "
    "blocked plus a blocker, or task_release to hand it back."
)

# --- schema pieces ------------------------------------------------------------------------------


def _s(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


def _i(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "integer", "description": description, **extra}


def _list(description: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "description": description}


_ID = _s("Task id or unique prefix")
_LIMIT = _i("Max results", minimum=0)
_PRIORITY = _i("0 highest to 4 lowest", minimum=0, maximum=4)
_STATUS = _s("New status", enum=list(STATUSES))


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, what a model needs to know to call it, and the call itself."""

    name: str
    description: str
    properties: dict[str, dict[str, Any]]
    required: tuple[str, ...]
    run: Callable[[Server, dict[str, Any]], dict[str, Any]]
    read_only: bool = True
    needs: str | None = None  # "module:function" that must import for the tool to be listed

    def input_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": self.properties,
            "additionalProperties": False,
        }
        if self.required:
            schema["required"] = list(self.required)
        return schema


def _optional(spec: str) -> Callable[..., Any] | None:
    """The function ``module:attr`` if that module has been written (and imports), else None."""
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            return None
        log.warning("gitledger: %s does not import (%s); its tools are left out", module_name, exc)
        return None
    except Exception as exc:  # noqa: BLE001 - a broken service must not take the core tools down
        log.warning("gitledger: %s does not import (%s); its tools are left out", module_name, exc)
        return None
    found = getattr(module, attr, None)
    return found if callable(found) else None


# --- results ------------------------------------------------------------------------------------

# Merge bookkeeping a model never needs; the CLI's --json keeps it for programs.
_HIDDEN = ("clock", "request_hash")

# Results carry full ids and no short ids. An agent copies ids into notes and later calls, and a
# short prefix that is unique today may be ambiguous once the ledger grows; a full id never is.
# (Finding the shortest unique prefix also scans the ref directory: ~270 ms at 100,000 tasks.)


def task_result(led: Ledger, task: Task) -> dict[str, Any]:
    data = task.to_json_dict()
    for name in _HIDDEN:
        data.pop(name, None)
    return data


def task_summaries(led: Ledger, tasks: list[Task]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "tasks": [
            {
                "id": t.id,
                "status": t.status,
                "priority": t.priority,
                "goal": t.goal,
                "owner": t.owner,
                "next": t.next,
                "version": t.version,
                "updated_at": t.updated_at,
            }
            for t in tasks
        ]
    }
    skipped = getattr(led, "skipped", None)
    if skipped:
        out["skipped"] = [p.to_dict() for p in skipped[:20]]
    return out


def _as_dict(value: Any) -> dict[str, Any]:
    """A service's return value as a JSON object (a record, pydantic model, dict or text)."""
    if hasattr(value, "to_dict"):
        value = value.to_dict()
    elif hasattr(value, "to_json_dict"):
        value = value.to_json_dict()
    elif hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        return {"text": value}
    if isinstance(value, list):
        return {
            "items": [_as_dict(v) if not isinstance(v, str | int | float) else v for v in value]
        }
    return {"result": value}


# --- the tools ----------------------------------------------------------------------------------


def _create(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    led = srv.ledger()
    task = led.create(
        a["goal"],
        criteria=a.get("criteria", ""),
        parent=a.get("parent"),
        owner=a.get("owner"),
        priority=a.get("priority", 2),
        labels=a.get("labels", ()),
        next=a.get("next"),
        dependencies=a.get("dependencies", ()),
        idempotency_key=a.get("idempotency_key"),
        actor=srv.actor,
    )
    return task_result(led, task)


def _update(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    led = srv.ledger()
    edits = {name: a[name] for name in UPDATE_EDITS if name in a}
    task = led.update(a["id"], **edits, expect_version=a.get("expect_version"), actor=srv.actor)
    return task_result(led, task)


def _show(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    led = srv.ledger()
    return task_result(led, led.show(a["id"], at=a.get("at")))


def _list_tasks(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    led = srv.ledger()
    tasks = led.list_tasks(
        status=a.get("status") or None,
        owner=a.get("owner"),
        label=a.get("label"),
        parent=a.get("parent"),
        limit=a.get("limit", 50),
        offset=a.get("offset", 0),
    )
    return task_summaries(led, tasks)


def _inbox(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    led = srv.ledger()
    return task_summaries(led, led.inbox(a.get("limit", 10)))


def _ready(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    led = srv.ledger()
    tasks = led.ready(a.get("limit", 10))
    out = task_summaries(led, tasks)
    for row, task in zip(out["tasks"], tasks, strict=True):
        if task.status == "active":  # in the ready queue: a claim that lapsed (Ledger.ready)
            row.update(claim="lapsed", agent=task.agent, held_at=task.held_at)
    return out


def _search(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    led = srv.ledger()
    limit = a.get("limit", 20)
    hits = led.search_hits(a["query"], limit)
    out = task_summaries(led, [h.task for h in hits])
    for row, hit in zip(out["tasks"], hits, strict=True):
        if hit.snippet:
            row["snippet"] = hit.snippet  # why it matched
    return out


def _children(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    led = srv.ledger()
    return task_summaries(led, led.children(a["id"]))


def _history(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    led = srv.ledger()
    versions = led.history(a["id"], limit=a.get("limit", 20), offset=a.get("offset", 0))
    return {"versions": [v.to_dict() for v in versions]}


def _claim(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    led = srv.ledger()
    remote = a.get("remote")
    steal, decision = bool(a.get("steal")), a.get("decision")
    if remote:
        claim = _optional("gitledger.sync:claim")
        if claim is None:
            raise InvalidInput("Claiming through a remote needs gitledger's sync module.")
        task = claim(led, a["id"], remote, actor=srv.actor, steal=steal, decision=decision)
    else:
        task = led.claim(a["id"], actor=srv.actor, steal=steal, decision=decision)
    return {**task_result(led, task), "claim": led.last_claim}


def _release(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    led = srv.ledger()
    task = led.release(a["id"], actor=srv.actor)
    return {**task_result(led, task), "claim": led.last_claim}


def _verify(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    from . import fuse

    return fuse.verify(srv.ledger()).to_dict()


CORE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "task_create",
        "Create a task. Returns it with its id and version.",
        {
            "goal": _s("What is to be achieved, one sentence"),
            "criteria": _s("How we will know it is done (needed before done)"),
            "next": _s("The next concrete action"),
            "priority": _PRIORITY,
            "labels": _list("Labels, one word each"),
            "parent": _s("Parent task id"),
            "dependencies": _list("Ids of tasks that must be done first"),
            "owner": _s("Owner"),
            "idempotency_key": _s("Repeat-safe key: same request returns the same task"),
        },
        ("goal",),
        _create,
        read_only=False,
    ),
    ToolSpec(
        "task_update",
        "Write one new version with every change given (lists append). Gates: goal/criteria "
        "change, cancel, or reassigning (owner) a task another agent holds needs a decision; "
        "blocked needs a blocker; done needs criteria and evidence. '' clears next, blocker, "
        "owner, parent.",
        {
            "id": _ID,
            "expect_version": _i("Fail with version_conflict unless the task is at this version"),
            "status": _STATUS,
            "next": _s("Next action"),
            "blocker": _s("What it waits on"),
            "notes": _list("Notes to add"),
            "decisions": _list("Decisions to add, each with its reason"),
            "evidence": _list("Evidence the criteria are met (commit:SHA, test output)"),
            "goal": _s("New goal"),
            "criteria": _s("New completion criteria"),
            "owner": _s("Owner"),
            "priority": _PRIORITY,
            "parent": _s("Parent task id"),
            "add_labels": _list("Labels to add"),
            "remove_labels": _list("Labels to remove"),
            "add_dependencies": _list("Task ids to depend on"),
            "remove_dependencies": _list("Task ids to stop depending on"),
        },
        ("id",),
        _update,
        read_only=False,
    ),
    ToolSpec(
        "task_show",
        "Read one task in full (at: an earlier version).",
        {"id": _ID, "at": _i("Version number", minimum=1)},
        ("id",),
        _show,
    ),
    ToolSpec(
        "task_list",
        "List tasks, most recently updated first.",
        {
            "status": {
                "type": "array",
                "items": {"type": "string", "enum": list(STATUSES)},
                "description": "Only these statuses",
            },
            "owner": _s("Only this owner"),
            "label": _s("Only this label"),
            "parent": _s("Only children of this task"),
            "limit": _LIMIT,
            "offset": _i("Skip this many", minimum=0),
        },
        (),
        _list_tasks,
    ),
    ToolSpec(
        "task_inbox",
        "What needs attention: active, then blocked, then open tasks.",
        {"limit": _LIMIT},
        (),
        _inbox,
    ),
    ToolSpec(
        "task_ready",
        "Tasks that can start now, by priority: open with nothing in the way, or active with a "
        "lapsed claim (claim: 'lapsed'; task_claim takes it over).",
        {"limit": _LIMIT},
        (),
        _ready,
    ),
    ToolSpec(
        "task_search",
        "Full-text search over all task text, best match first.",
        {"query": _s('Words; "a phrase", prefix*, OR, NOT work'), "limit": _LIMIT},
        ("query",),
        _search,
    ),
    ToolSpec(
        "task_history",
        "Versions of a task, newest first, with what changed in each.",
        {"id": _ID, "limit": _LIMIT, "offset": _i("Skip the newest N", minimum=0)},
        ("id",),
        _history,
    ),
    ToolSpec(
        "task_children",
        "Subtasks of a task.",
        {"id": _ID},
        ("id",),
        _children,
    ),
    ToolSpec(
        "task_claim",
        "Take a task for this agent and make it active. First claim wins; claim_conflict if "
        "another person or agent holds it; re-claiming your own says 'already yours'.",
        {
            "id": _ID,
            "remote": _s("Count the claim only once this remote accepted it (e.g. origin)"),
            "steal": {"type": "boolean", "description": "Take a live claim (needs decision)"},
            "decision": _s("Why you take a live claim (with steal)"),
        },
        ("id",),
        _claim,
        read_only=False,
    ),
    ToolSpec(
        "task_release",
        "Hand back this agent's claim: owner cleared, the task open again.",
        {"id": _ID},
        ("id",),
        _release,
        read_only=False,
    ),
    ToolSpec(
        "verify",
        "Check every task's objects, records and version chain.",
        {},
        (),
        _verify,
    ),
)


# --- tools over optional services ---------------------------------------------------------------


def _context(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    task_context = _optional("gitledger.context:task_context")
    assert task_context is not None
    kwargs = {k: a[k] for k in ("budget", "unit") if k in a}
    return _as_dict(task_context(srv.ledger(), a["id"], **kwargs))


def _prime(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    prime = _optional("gitledger.handoff:prime")
    assert prime is not None
    kwargs = {k: a[k] for k in ("budget", "unit") if k in a}
    return _as_dict(prime(srv.ledger(), **kwargs))


def _backup(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    backup = _optional("gitledger.sync:backup")
    assert backup is not None
    return _as_dict(backup(srv.ledger(), a.get("remote")))


def _restore(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    restore = _optional("gitledger.sync:restore")
    assert restore is not None
    return _as_dict(restore(srv.ledger(), a["source"]))


def _sync(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    sync = _optional("gitledger.sync:sync")
    assert sync is not None
    return _as_dict(sync(srv.ledger(), a.get("remote")))


def _fuse_restore(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    restore_text = _optional("gitledger.fuse:restore_text")
    assert restore_text is not None
    kwargs = {"budget": a["budget"]} if "budget" in a else {}
    text, saved = restore_text(srv.ledger(), a.get("session"), **kwargs)
    return {"session": saved.session, "link": saved.link, "trigger": saved.trigger, "text": text}


def _fuse_save(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    save = _optional("gitledger.fuse:save")
    assert save is not None
    transcript = srv.transcript(a["transcript"])
    saved = save(srv.ledger(), a["session"], transcript, trigger="mcp", actor=srv.actor)
    return {k: v for k, v in saved.to_dict().items() if k != "snapshot"}


def _fuse_link(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    link = _optional("gitledger.fuse:link")
    assert link is not None
    saved = link(srv.ledger(), a["session"], a["id"], actor=srv.actor)
    return {k: v for k, v in saved.to_dict().items() if k != "snapshot"}


def _fact(srv: Server, fact: Fact) -> dict[str, Any]:
    return fact.to_dict(srv.memory().clock())


def _remember(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    fact, new = srv.memory().remember(
        a["text"],
        kind=a.get("kind", "decision"),
        tags=a.get("tags", ()),
        importance=a.get("importance", 3),
        task=a.get("task"),
        actor=srv.actor,
    )
    return {**_fact(srv, fact), "new": new}


def _recall(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    hits = srv.memory().recall(a["query"], a.get("k", 5), kind=a.get("kind"), actor=srv.actor)
    return {"hints": [h.to_dict() for h in hits]}


def _memory_list(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    facts = srv.memory().list_facts(
        active=not a.get("forgotten", False), kind=a.get("kind"), limit=a.get("limit", 50)
    )
    return {"facts": [_fact(srv, f) for f in facts]}


def _memory_stats(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    return srv.memory().stats()


def _memory_forget(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    return _fact(srv, srv.memory().forget(a["id"], actor=srv.actor))


def _memory_restore(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    return _fact(srv, srv.memory().restore(a["id"], actor=srv.actor))


def _memory_import(srv: Server, a: dict[str, Any]) -> dict[str, Any]:
    return srv.memory().import_facts(a["facts"], actor=srv.actor)


_BUDGET = _i("Max size in unit", minimum=1)
_SESSION = _s("Agent session id")
_FACT_KIND = _s(
    "Kind of fact",
    enum=["decision", "pitfall", "constraint", "preference", "todo", "accomplishment"],
)
_UNIT = _s("Budget unit", enum=["bytes", "tokens"])

SERVICE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "prime",
        "Start here: your active and claimed tasks, what is ready, recent decisions.",
        {"budget": _BUDGET, "unit": _UNIT},
        (),
        _prime,
        needs="gitledger.context:prime",
    ),
    ToolSpec(
        "task_context",
        "One task's handoff under a size budget: state, decisions, evidence, related tasks.",
        {"id": _ID, "budget": _BUDGET, "unit": _UNIT},
        ("id",),
        _context,
        needs="gitledger.context:task_context",
    ),
    ToolSpec(
        "backup",
        "Push every ledger ref to a Git remote (name, URL or path).",
        {"remote": _s("Remote, default origin")},
        (),
        _backup,
        read_only=False,
        needs="gitledger.sync:backup",
    ),
    ToolSpec(
        "restore",
        "Fetch ledger refs from a remote, path or bundle and merge them in.",
        {"source": _s("Remote, URL, path or bundle")},
        ("source",),
        _restore,
        read_only=False,
        needs="gitledger.sync:restore",
    ),
    ToolSpec(
        "sync",
        "Fetch, merge diverged tasks, push to a remote.",
        {"remote": _s("Remote, default origin")},
        (),
        _sync,
        read_only=False,
        needs="gitledger.sync:sync",
    ),
    ToolSpec(
        "fuse_restore",
        "After compaction: the saved task line of a session (newest if none given).",
        {"session": _SESSION, "budget": _i("Max bytes", minimum=1)},
        (),
        _fuse_restore,
        needs="gitledger.fuse:restore_text",
    ),
    ToolSpec(
        "fuse_save",
        "Snapshot a session's transcript (JSONL) to the ledger before compacting.",
        {"session": _SESSION, "transcript": _s("Transcript file path")},
        ("session", "transcript"),
        _fuse_save,
        read_only=False,
        needs="gitledger.fuse:save",
    ),
    ToolSpec(
        "fuse_link",
        "Tie a session to a task: its restores then carry the task's state.",
        {"session": _SESSION, "id": _ID},
        ("session", "id"),
        _fuse_link,
        read_only=False,
        needs="gitledger.fuse:link",
    ),
    ToolSpec(
        "remember",
        "Keep a fact for later sessions (same fact again reinforces it). Hints, not task state.",
        {
            "text": _s("The fact, one or two sentences"),
            "kind": _FACT_KIND,
            "tags": _list("Tags"),
            "importance": _i("1 low to 5 high", minimum=1, maximum=5),
            "task": _s("Task id it came from"),
        },
        ("text",),
        _remember,
        read_only=False,
        needs="gitledger.memory:Memory",
    ),
    ToolSpec(
        "recall",
        "Facts worth reading for a query, by relevance and strength; recalling reinforces them.",
        {"query": _s("Words to look for"), "k": _i("How many", minimum=1), "kind": _FACT_KIND},
        ("query",),
        _recall,
        read_only=False,  # recalling counts as a use and writes it
        needs="gitledger.memory:Memory",
    ),
    ToolSpec(
        "memory_list",
        "Remembered facts, strongest first.",
        {
            "kind": _FACT_KIND,
            "forgotten": {"type": "boolean", "description": "List forgotten facts instead"},
            "limit": _LIMIT,
        },
        (),
        _memory_list,
        needs="gitledger.memory:Memory",
    ),
    ToolSpec(
        "memory_stats",
        "Counts of active and forgotten facts by kind, and the capacity.",
        {},
        (),
        _memory_stats,
        needs="gitledger.memory:Memory",
    ),
    ToolSpec(
        "memory_forget",
        "Take a fact out of use (kept in history; memory_restore brings it back).",
        {"id": _s("Fact id or unique prefix")},
        ("id",),
        _memory_forget,
        read_only=False,
        needs="gitledger.memory:Memory",
    ),
    ToolSpec(
        "memory_restore",
        "Bring a forgotten fact back.",
        {"id": _s("Fact id or unique prefix")},
        ("id",),
        _memory_restore,
        read_only=False,
        needs="gitledger.memory:Memory",
    ),
    ToolSpec(
        "memory_import",
        "Remember many facts at once; one bad fact refuses all.",
        {
            "facts": {
                "type": "array",
                "description": "Facts: {text, kind, tags, importance}",
                "items": {"type": "object"},
            }
        },
        ("facts",),
        _memory_import,
        read_only=False,
        needs="gitledger.memory:Memory",
    ),
)


def available_tools() -> list[ToolSpec]:
    """Every tool whose library code is present, core tools first."""
    tools = list(CORE_TOOLS)
    tools += [t for t in SERVICE_TOOLS if t.needs is None or _optional(t.needs) is not None]
    return tools


def missing_tools() -> list[str]:
    """Tools left out because the module they need is not there (for the setup report)."""
    return [t.name for t in SERVICE_TOOLS if t.needs and _optional(t.needs) is None]


def read_only_tool_names() -> list[str]:
    return [t.name for t in available_tools() if t.read_only]


# --- the server ---------------------------------------------------------------------------------


def _coerce(spec: ToolSpec, args: dict[str, Any]) -> dict[str, Any]:
    """Forgive a lone string where a list is expected: models often send one."""
    out = dict(args)
    for name, prop in spec.properties.items():
        if prop.get("type") == "array" and isinstance(out.get(name), str):
            out[name] = [out[name]]
    return out


def describe_schema_error(tool: str, error: ValidationError) -> str:
    where = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "additionalProperties":
        allowed = ", ".join(sorted(error.schema.get("properties", {})))
        return f"{tool}: {error.message}. Arguments it takes: {allowed}."
    if error.validator == "required":
        return f"{tool}: {error.message}."
    return f"{tool}: argument '{where}': {error.message}."


class Server:
    """The ledger behind the MCP tools: opened on first use, then kept for the session."""

    def __init__(
        self,
        path: Path | None = None,
        *,
        actor: str | None = None,
        agent: str | None = None,
        transcript_dirs: list[Path] | None = None,
    ) -> None:
        from jsonschema import Draft202012Validator

        self.path = path
        self.transcript_dirs = allowed_transcript_dirs(transcript_dirs)
        self.actor = actor
        self.agent = agent or os.environ.get("GITLEDGER_AGENT") or process_agent()
        self._ledger: Ledger | None = None
        self._memory: Memory | None = None
        self.tools = {t.name: t for t in available_tools()}
        self._validators = {
            name: Draft202012Validator(t.input_schema()) for name, t in self.tools.items()
        }
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gitledger-mcp")

    def memory(self) -> Memory:
        """The ledger's memory of facts, made once (its SQLite index stays on this thread)."""
        if self._memory is None:
            memory_class = _optional("gitledger.memory:Memory")
            if memory_class is None:
                raise InvalidInput("This install has no memory module.")
            self._memory = cast("Memory", memory_class(self.ledger()))
        return self._memory

    def ledger(self) -> Ledger:
        """The ledger, opened once; a missing ledger is retried on the next call."""
        if self._ledger is None:
            from .ledger import Ledger

            self._ledger = Ledger.open(self.path, actor=self.actor, agent=self.agent)
        return self._ledger

    def transcript(self, value: str) -> Path:
        """The transcript ``fuse_save`` may read: a regular file inside an agent's transcript
        folder (or one given with ``gitledger mcp --transcripts DIR``). Any other file a client
        names (``/proc/self/environ``, ``/etc/passwd``) is refused: the server is not a reader of
        files for whoever speaks to it."""
        from .hooks import transcript_file

        path = transcript_file(os.path.expanduser(value))
        real = Path(os.path.realpath(path))
        for folder in self.transcript_dirs:
            top = Path(os.path.realpath(folder))
            if top in real.parents:
                return path
        shown = ", ".join(str(d) for d in self.transcript_dirs) or "none"
        raise InvalidInput(
            f"fuse_save reads only agents' transcripts (folders: {shown}); {path} is not in one. "
            "Start the server with 'gitledger mcp --transcripts DIR' to allow another folder."
        )

    # Synchronous entry points (run on the worker thread; also usable in-process).

    def call(self, name: str, arguments: dict[str, Any] | None) -> tuple[dict[str, Any], bool]:
        """Run tool ``name``: (structured result, is_error)."""
        from jsonschema.exceptions import best_match

        spec = self.tools.get(name)
        if spec is None:
            known = ", ".join(sorted(self.tools))
            error = InvalidInput(f"No tool '{name}'. Tools: {known}.")
            return error.to_dict(), True
        args = _coerce(spec, arguments or {})
        problem = best_match(self._validators[name].iter_errors(args))
        if problem is not None:
            return InvalidInput(describe_schema_error(name, problem)).to_dict(), True
        try:
            return spec.run(self, args), False
        except LedgerError as exc:
            return exc.to_dict("mcp"), True
        except Exception as exc:  # noqa: BLE001 - a bug must come back as a result, not a hang
            log.exception("tool %s failed", name)
            return {"error": "internal_error", "message": f"{type(exc).__name__}: {exc}"}, True

    def read_context(self, uri: str) -> str:
        """The text of ``gitledger://task/{id}/context``: the handoff, or the task's Markdown."""
        match = _CONTEXT_URI_RE.match(uri)
        if match is None:
            raise InvalidInput(f"Unknown resource {uri}; use {CONTEXT_URI}.")
        task_id = match.group(1)
        task_context = _optional("gitledger.context:task_context")
        led = self.ledger()
        if task_context is not None:
            result = task_context(led, task_id)
            text = getattr(result, "text", None)
            if isinstance(text, str):
                return text
            return result if isinstance(result, str) else json.dumps(_as_dict(result))
        from .model import render_markdown

        return render_markdown(led.show(task_id))

    # The MCP side.

    def mcp_tools(self) -> list[Any]:
        import mcp_types as types

        return [
            types.Tool(
                name=t.name,
                description=t.description,
                input_schema=t.input_schema(),
                annotations=types.ToolAnnotations(
                    read_only_hint=t.read_only,
                    destructive_hint=False if not t.read_only else None,
                ),
            )
            for t in self.tools.values()
        ]

    def build(self) -> Any:
        import mcp_types as types
        from mcp.server.lowlevel import Server as LowLevelServer

        from . import __version__ as server_version  # the package's own (see cli --version)

        tools = self.mcp_tools()

        async def list_tools(ctx: Any, params: Any) -> Any:
            return types.ListToolsResult(tools=tools)

        async def call_tool(ctx: Any, params: Any) -> Any:
            loop = asyncio.get_running_loop()
            result, is_error = await loop.run_in_executor(
                self._executor, self.call, params.name, params.arguments
            )
            text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)],
                structured_content=result,
                is_error=is_error,
            )

        async def list_templates(ctx: Any, params: Any) -> Any:
            return types.ListResourceTemplatesResult(
                resource_templates=[
                    types.ResourceTemplate(
                        name="task-context",
                        uri_template=CONTEXT_URI,
                        description="A task's handoff: what the next agent needs to continue it.",
                        mime_type="text/plain",
                    )
                ]
            )

        async def list_resources(ctx: Any, params: Any) -> Any:
            return types.ListResourcesResult(resources=[])

        async def read_resource(ctx: Any, params: Any) -> Any:
            from mcp.shared.exceptions import MCPError

            uri = str(params.uri)
            loop = asyncio.get_running_loop()
            try:
                text = await loop.run_in_executor(self._executor, self.read_context, uri)
            except LedgerError as exc:
                raise MCPError(
                    code=-32602, message=exc.worded("mcp"), data=exc.to_dict("mcp")
                ) from exc
            return types.ReadResourceResult(
                contents=[types.TextResourceContents(uri=uri, text=text, mime_type="text/plain")]
            )

        return LowLevelServer(
            SERVER_NAME,
            version=server_version,
            instructions=INSTRUCTIONS,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_resources=list_resources,
            on_list_resource_templates=list_templates,
            on_read_resource=read_resource,
        )

    async def serve_stdio(self) -> None:
        from .mcp_stdio import guarded_stdio_server

        server = self.build()
        try:
            async with guarded_stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
        finally:
            self._executor.shutdown(wait=False)


def tools_list_json() -> str:
    """The result of tools/list as a client receives it (for counting its tokens)."""
    tools = [
        t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in Server().mcp_tools()
    ]
    return json.dumps({"tools": tools}, ensure_ascii=False)


def process_agent() -> str:
    """This server process's agent id, ``mcp-<random>@HOST``: two servers are two claimants.
    Pin it with GITLEDGER_AGENT in the server's ``env`` (or ``gitledger --agent ID mcp``)."""
    from .ledger import machine_name

    return f"mcp-{secrets.token_hex(3)}@{machine_name()}"


def allowed_transcript_dirs(extra: list[Path] | None = None) -> list[Path]:
    """Where ``fuse_save`` may read: every agent's transcript folders, the folders in
    GITLEDGER_TRANSCRIPTS (separated by ':'), and ``extra``."""
    from .agents import transcript_dirs

    folders = [Path(d) for d in transcript_dirs()]
    folders += [Path(d) for d in os.environ.get("GITLEDGER_TRANSCRIPTS", "").split(os.pathsep) if d]
    return folders + list(extra or [])


def run(
    path: Path | None = None,
    *,
    actor: str | None = None,
    agent: str | None = None,
    transcript_dirs: list[Path] | None = None,
) -> None:
    """Serve MCP over stdin/stdout until the client closes the pipe."""
    import anyio

    # stdout belongs to the protocol: anything logged goes to stderr.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    server = Server(path, actor=actor, agent=agent, transcript_dirs=transcript_dirs)
    anyio.run(server.serve_stdio, backend="asyncio")


__all__ = [
    "CONTEXT_URI",
    "CORE_TOOLS",
    "INSTRUCTIONS",
    "SERVER_NAME",
    "SERVICE_TOOLS",
    "Server",
    "ToolSpec",
    "allowed_transcript_dirs",
    "available_tools",
    "describe_schema_error",
    "log",
    "missing_tools",
    "process_agent",
    "read_only_tool_names",
    "run",
    "task_result",
    "task_summaries",
    "tools_list_json",
]
