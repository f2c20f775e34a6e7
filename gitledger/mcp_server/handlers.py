"""The MCP tools' handlers: each parses its arguments, makes one library call and shapes the
result as a JSON object. Results carry full ids and no short ids: an agent copies ids into
notes and later calls, and a prefix unique today may be ambiguous once the ledger grows (finding
the shortest unique prefix also scans the ref directory: ~270 ms at 100,000 tasks)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..errors import InvalidInput
from ..lazy import import_spec
from .shapes import JSON, Arguments, JSONObject

if TYPE_CHECKING:
    from ..ledger import Ledger
    from ..memory import Fact
    from ..model import Task
    from .server import Server

log = logging.getLogger("gitledger.mcp_server")

# Merge bookkeeping a model never needs; the CLI's --json keeps it for programs.
_HIDDEN = ("clock", "request_hash")


def present(spec: str) -> bool:
    """Whether the function ``module:attr`` is there (its module written and importing). A
    service that fails to import is logged and left out: it must not take the core tools down."""
    try:
        found = import_spec(spec)
    except Exception as exc:  # noqa: BLE001 - a broken service must not take the core tools down
        module_name = spec.partition(":")[0]
        log.warning("gitledger: %s does not import (%s); its tools are left out", module_name, exc)
        return False
    return callable(found)


def task_result(led: Ledger, task: Task) -> JSONObject:
    data: JSONObject = task.to_json_dict()
    for name in _HIDDEN:
        data.pop(name, None)
    return data


def task_summaries(
    led: Ledger, tasks: list[Task], extras: list[JSONObject] | None = None
) -> JSONObject:
    """The tasks as one short row each (``extras``: more fields per row, in the same order)."""
    rows: list[JSON] = []
    for n, t in enumerate(tasks):
        row: JSONObject = {
            "id": t.id,
            "status": t.status,
            "priority": t.priority,
            "goal": t.goal,
            "owner": t.owner,
            "next": t.next,
            "version": t.version,
            "updated_at": t.updated_at,
        }
        if extras:
            row.update(extras[n])
        rows.append(row)
    out: JSONObject = {"tasks": rows}
    skipped = getattr(led, "skipped", None)
    if skipped:
        out["skipped"] = [p.to_dict() for p in skipped[:20]]
    return out


# --- the core tools -----------------------------------------------------------------------------


def create(srv: Server, a: Arguments) -> JSONObject:
    led = srv.ledger()
    task = led.create(
        a.text("goal"),
        criteria=a.text_or("criteria", ""),
        parent=a.maybe_text("parent"),
        owner=a.maybe_text("owner"),
        priority=a.number("priority", 2),
        labels=a.texts("labels"),
        next=a.maybe_text("next"),
        dependencies=a.texts("dependencies"),
        idempotency_key=a.maybe_text("idempotency_key"),
        actor=srv.actor,
    )
    return task_result(led, task)


def update(srv: Server, a: Arguments) -> JSONObject:
    led = srv.ledger()
    task = led.update(
        a.text("id"), **a.edits(), expect_version=a.maybe_number("expect_version"), actor=srv.actor
    )
    return task_result(led, task)


def show(srv: Server, a: Arguments) -> JSONObject:
    led = srv.ledger()
    return task_result(led, led.show(a.text("id"), at=a.maybe_number("at")))


def list_tasks(srv: Server, a: Arguments) -> JSONObject:
    led = srv.ledger()
    tasks = led.list_tasks(
        status=a.texts("status") or None,
        owner=a.maybe_text("owner"),
        label=a.maybe_text("label"),
        parent=a.maybe_text("parent"),
        limit=a.number("limit", 50),
        offset=a.number("offset", 0),
    )
    return task_summaries(led, tasks)


def inbox(srv: Server, a: Arguments) -> JSONObject:
    led = srv.ledger()
    return task_summaries(led, led.inbox(a.number("limit", 10)))


def ready(srv: Server, a: Arguments) -> JSONObject:
    led = srv.ledger()
    tasks = led.ready(a.number("limit", 10))
    # In the ready queue an active task is one whose claim lapsed (Ledger.ready).
    lapsed: list[JSONObject] = [
        {"claim": "lapsed", "agent": t.agent, "held_at": t.held_at} if t.status == "active" else {}
        for t in tasks
    ]
    return task_summaries(led, tasks, lapsed)


def search(srv: Server, a: Arguments) -> JSONObject:
    led = srv.ledger()
    hits = led.search_hits(a.text("query"), a.number("limit", 20))
    why: list[JSONObject] = [{"snippet": h.snippet} if h.snippet else {} for h in hits]
    return task_summaries(led, [h.task for h in hits], why)


def children(srv: Server, a: Arguments) -> JSONObject:
    led = srv.ledger()
    return task_summaries(led, led.children(a.text("id")))


def history(srv: Server, a: Arguments) -> JSONObject:
    led = srv.ledger()
    versions = led.history(a.text("id"), limit=a.number("limit", 20), offset=a.number("offset", 0))
    return {"versions": [v.to_dict() for v in versions]}


def claim(srv: Server, a: Arguments) -> JSONObject:
    led = srv.ledger()
    remote = a.maybe_text("remote")
    steal, decision = a.flag("steal"), a.maybe_text("decision")
    if remote:
        if not present("gitledger.sync:claim"):
            raise InvalidInput("Claiming through a remote needs gitledger's sync module.")
        from ..sync import claim as claim_through

        task = claim_through(
            led, a.text("id"), remote, actor=srv.actor, steal=steal, decision=decision
        )
    else:
        task = led.claim(a.text("id"), actor=srv.actor, steal=steal, decision=decision)
    return {**task_result(led, task), "claim": led.last_claim}


def release(srv: Server, a: Arguments) -> JSONObject:
    led = srv.ledger()
    task = led.release(a.text("id"), actor=srv.actor)
    return {**task_result(led, task), "claim": led.last_claim}


def verify(srv: Server, a: Arguments) -> JSONObject:
    from .. import fuse

    return fuse.verify(srv.ledger()).to_dict()


# --- tools over the services (each listed only when its module is there: ``present``) ---------


def context(srv: Server, a: Arguments) -> JSONObject:
    from ..context import DEFAULT_BUDGET, task_context

    budget, unit = a.number("budget", DEFAULT_BUDGET), a.text_or("unit", "bytes")
    return task_context(srv.ledger(), a.text("id"), budget, unit).to_dict()


def prime(srv: Server, a: Arguments) -> JSONObject:
    from ..handoff import prime as digest

    budget, unit = a.maybe_number("budget"), a.text_or("unit", "bytes")
    return digest(srv.ledger(), budget, unit, interface="mcp").to_dict()


def backup(srv: Server, a: Arguments) -> JSONObject:
    from ..sync import backup as push_all

    return push_all(srv.ledger(), a.maybe_text("remote")).to_dict()


def restore(srv: Server, a: Arguments) -> JSONObject:
    from ..sync import restore as fetch_all

    return fetch_all(srv.ledger(), a.text("source")).to_dict()


def sync(srv: Server, a: Arguments) -> JSONObject:
    from ..sync import sync as sync_with

    return sync_with(srv.ledger(), a.maybe_text("remote")).to_dict()


def fuse_restore(srv: Server, a: Arguments) -> JSONObject:
    from ..fuse import restore_text
    from ..fuse.snapshot import DEFAULT_BUDGET

    budget = a.number("budget", DEFAULT_BUDGET)
    text, saved = restore_text(srv.ledger(), a.maybe_text("session"), budget, interface="mcp")
    return {"session": saved.session, "link": saved.link, "trigger": saved.trigger, "text": text}


def fuse_save(srv: Server, a: Arguments) -> JSONObject:
    from ..fuse import save

    transcript = srv.transcript(a.text("transcript"))
    saved = save(srv.ledger(), a.text("session"), transcript, trigger="mcp", actor=srv.actor)
    return {k: v for k, v in saved.to_dict().items() if k != "snapshot"}


def fuse_link(srv: Server, a: Arguments) -> JSONObject:
    from ..fuse import link

    saved = link(srv.ledger(), a.text("session"), a.text("id"), actor=srv.actor)
    return {k: v for k, v in saved.to_dict().items() if k != "snapshot"}


def _fact(srv: Server, fact: Fact) -> JSONObject:
    return fact.to_dict(srv.memory().clock())


def remember(srv: Server, a: Arguments) -> JSONObject:
    fact, new = srv.memory().remember(
        a.text("text"),
        kind=a.text_or("kind", "decision"),
        tags=a.texts("tags"),
        importance=a.number("importance", 3),
        task=a.maybe_text("task"),
        actor=srv.actor,
    )
    return {**_fact(srv, fact), "new": new}


def recall(srv: Server, a: Arguments) -> JSONObject:
    hits = srv.memory().recall(
        a.text("query"), a.number("k", 5), kind=a.maybe_text("kind"), actor=srv.actor
    )
    return {"hints": [h.to_dict() for h in hits]}


def memory_list(srv: Server, a: Arguments) -> JSONObject:
    facts = srv.memory().list_facts(
        active=not a.flag("forgotten"), kind=a.maybe_text("kind"), limit=a.number("limit", 50)
    )
    return {"facts": [_fact(srv, f) for f in facts]}


def memory_stats(srv: Server, a: Arguments) -> JSONObject:
    return srv.memory().stats()


def memory_forget(srv: Server, a: Arguments) -> JSONObject:
    return _fact(srv, srv.memory().forget(a.text("id"), actor=srv.actor))


def memory_restore(srv: Server, a: Arguments) -> JSONObject:
    return _fact(srv, srv.memory().restore(a.text("id"), actor=srv.actor))


def memory_import(srv: Server, a: Arguments) -> JSONObject:
    return dict(srv.memory().import_facts(a.objects("facts"), actor=srv.actor))


__all__ = [
    "backup",
    "children",
    "claim",
    "context",
    "create",
    "fuse_link",
    "fuse_restore",
    "fuse_save",
    "history",
    "inbox",
    "list_tasks",
    "memory_forget",
    "memory_import",
    "memory_list",
    "memory_restore",
    "memory_stats",
    "present",
    "prime",
    "ready",
    "recall",
    "release",
    "remember",
    "restore",
    "search",
    "show",
    "sync",
    "task_result",
    "task_summaries",
    "update",
    "verify",
]
