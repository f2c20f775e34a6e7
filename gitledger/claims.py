"""Claims: who holds a task, for how long, and how a claim is taken, renewed, released or
stolen.

A claim is held by a person's agent (``Ledger.agent_id``): owner, agent and ``held_at``, the
holder's last write. It lapses after ``claim.lease`` (``settings.py``) without one
(``claim_state``); the next claimant takes a lapsed claim, a live one only with ``steal`` and a
decision. ``claim``/``release`` write through ``Ledger.update`` (its ``_hold``), so every gate
and the compare-and-swap apply; ``hold_claim`` sets the claim fields of a new version,
``reassign`` checks an assignment that drops a claim. With a remote, ``sync.claim`` makes a claim
count once the push landed.
"""

from __future__ import annotations

import dataclasses
import os
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from .errors import (
    ClaimConflict,
    Fix,
    GateRefused,
    InvalidInput,
    Step,
    StorageError,
    VersionConflict,
)
from .gates import check_reassign
from .model import (
    MIN_SHORT_ID,
    HybridClock,
    Task,
    check_text,
)
from .refs import task_ref
from .updates import WRITE_ATTEMPTS, UpdateEdits

if TYPE_CHECKING:
    from .ledger import Ledger


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
    held = epoch_of(task.held_at)
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


def since(task: Task) -> str:
    return f" since {task.held_at[:16].replace('T', ' ')}" if task.held_at else ""


SESSION_SUFFIX = "_SESSION_ID"


def named_agent(explicit: str | None = None) -> str | None:
    """The agent a write names when one is named: ``explicit`` (``--agent``), else
    GITLEDGER_AGENT, else the agent session this process runs in (``agents.session_from_env``:
    Claude Code gives its Bash tool's commands and its stdio MCP servers the session id its hooks
    get); None when nothing names one (the caller picks ``cli@HOST`` or an MCP server's own)."""
    chosen = explicit or os.environ.get("GITLEDGER_AGENT")
    if chosen:
        return chosen
    # Every agent's session variable ends so (the registry's test holds it to that): a write
    # outside any agent session need not load the registry (about 5 ms per command).
    if not any(name.endswith(SESSION_SUFFIX) for name in os.environ):
        return None
    from .agents import session_from_env

    return session_from_env()


def claimant_agent(explicit: str | None = None) -> str:
    """The agent a write is by (``Ledger.agent_id``): the one ``named_agent`` finds, spaces
    folded, else this machine's command line, ``cli@HOST``."""
    chosen = named_agent(explicit)
    if chosen:
        check_text(chosen, "agent", limit=256)
        text = " ".join(chosen.split())
        if text:
            return text
    return f"cli@{machine_name()}"


def held_stamp(epoch: float) -> str:
    """A time as ``held_at`` stamps are written (``model.now_iso``), so stamps compare as text."""
    stamp = datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def epoch_of(stamp: str) -> float | None:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def hold_claim(
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


def reassign(
    current: Task, edit: UpdateEdits, owner: str, name: str, writer: str, lease: float
) -> UpdateEdits:
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


def claim(
    ledger: Ledger,
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
    full = ledger.resolve(task_id)
    name, _email = ledger.author(actor)
    holder = ledger.agent_id(agent)
    if steal and not (decision and decision.strip()):
        raise GateRefused(
            "Taking a live claim needs a decision saying why: add ",
            Fix("decision"),
            ".",
            rule="steal-needs-decision",
            field="decision",
        )
    if decision is not None and not steal:
        raise InvalidInput(
            Fix("decision"),
            " goes with ",
            Fix("steal"),
            "; to record a decision without taking a claim, add it to an update (",
            Fix("decisions"),
            ").",
            rule="decision-needs-steal",
            field="decision",
        )
    lease = ledger.claim_lease()
    for _ in range(WRITE_ATTEMPTS):
        current = ledger._read(ledger._tip(full), task_ref(full))
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
            ledger.last_claim = "already yours"
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
                f"{since(current)}; pick another from ",
                Step("task ready"),
                f", wait for its lease "
                f"({format_duration(lease)} without a write) to lapse, or take it with ",
                Fix("steal"),
                " and ",
                Fix("decision"),
                " saying why.",
                rule="claim-held",
                field="owner",
            )
        try:
            # expect_version makes the claim a compare-and-swap: of two racing claimants,
            # one writes and the other re-reads, sees the holder and gets ClaimConflict.
            task = ledger.update(
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
        ledger.last_claim = outcome
        return task
    raise StorageError(f"Task {full} kept changing while claiming it; try again.")


def release(
    ledger: Ledger, task_id: str, *, actor: str | None = None, agent: str | None = None
) -> Task:
    """Hand a claim back: owner and agent cleared, an active task open again.

    Only the holder releases a live claim (another agent takes one with ``claim(steal=True)``);
    a lapsed claim anyone may release. Releasing an unclaimed task writes nothing
    (``last_claim`` says "not claimed").
    """
    full = ledger.resolve(task_id)
    name, _email = ledger.author(actor)
    holder = ledger.agent_id(agent)
    current = ledger.show(full)
    state = claim_state(current, ledger.claim_lease())
    if state == "free":
        ledger.last_claim = "not claimed"
        return current
    mine = current.owner == name and (current.agent == holder or current.agent is None)
    if not mine and state != "lapsed":
        raise ClaimConflict(
            f"Task {full[:MIN_SHORT_ID]} is claimed by {holder_text(current)}, not by "
            f"{name} ({holder}); only its holder releases it. To take it over, claim it with ",
            Fix("steal"),
            " and ",
            Fix("decision"),
            " saying why.",
            rule="release-needs-holder",
            field="owner",
        )
    task = ledger.update(
        full,
        status="open" if current.status == "active" else None,
        expect_version=current.version,
        actor=actor,
        agent=holder,
        _hold="release",
    )
    ledger.last_claim = "released"
    return task


__all__ = [
    "SESSION_SUFFIX",
    "claim",
    "claim_state",
    "claimant_agent",
    "epoch_of",
    "format_duration",
    "held_stamp",
    "hold_claim",
    "holder_text",
    "machine_name",
    "named_agent",
    "reassign",
    "release",
    "since",
]
