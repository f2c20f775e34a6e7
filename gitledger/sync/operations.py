"""The operations: ``sync``, ``restore``, ``backup`` and ``claim``, each rounds of
``exchange.py`` until the remote agrees.

- ``sync``: fetch and integrate, then push what the remote lacks; when someone pushed in
  between (the push is refused, or the remote moved on after accepting it), fetch and go again,
  up to ``MAX_ATTEMPTS`` rounds.
- ``restore``: sync without the push, into a ledger that may be new, then ``verify``.
- ``backup``: push every ledger ref whose remote tip differs, then list the remote again and
  check it holds exactly the tips pushed; a remote with newer work on a ref is not pushed to
  (``remote_ahead``: it needs a sync). With ``bundle`` it writes a Git bundle file instead.
- ``claim``: bring one task up to date, claim it locally, push: the claim counts only once the
  server accepted the push. If another machine's push landed first, the local claim commit
  (which never counted) is dropped, the remote's version comes in and the claim fails as a
  conflict.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

from .. import gitstore, settings
from ..errors import (
    Fix,
    InvalidInput,
    LedgerError,
    RemoteError,
    RemoteMoved,
    Step,
    TaskNotFound,
)
from ..ledger import Ledger
from ..model import PREFIX_PATTERN, Task
from ..refs import LEDGER_PREFIX, task_ref
from . import exchange
from .remote import check_local, is_bundle, resolve_remote, staging_namespace
from .report import Progress, SyncReport

MAX_ATTEMPTS = 8


def sync(
    ledger: Ledger,
    remote: str | None = None,
    *,
    push: bool = True,
    progress: Progress | None = None,
    url: str | None = None,
) -> SyncReport:
    """Fetch, integrate (create, fast-forward, keep, merge) and push until the remote agrees."""
    started = time.perf_counter()
    url = url or resolve_remote(ledger, remote)
    report = SyncReport(remote=gitstore.redact_url(url))
    staging = staging_namespace(url)
    if push and is_bundle(url):
        raise InvalidInput("A bundle is read-only: restore from it, or sync with a remote.")
    check_local(url, create=push)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        report.attempts = attempt
        try:
            local, remote_tips = exchange.fetch_and_integrate(
                ledger, url, staging, progress, report
            )
        except RemoteMoved:  # a ref went away between the listing and the fetch
            if attempt == MAX_ATTEMPTS:
                raise
            continue
        if not push:
            break
        report.remote_ahead = []
        updates = exchange.push_plan(ledger, remote_tips, report, local)
        try:
            report.pushed_objects += exchange.push(ledger, url, updates, progress)
        except RemoteMoved:
            if attempt == MAX_ATTEMPTS:
                raise
            time.sleep(min(0.05 * attempt, 0.5))
            continue
        report.pushed = sorted(set(report.pushed) | {ref for ref, _, _ in updates})
        if updates:
            try:
                exchange.check_remote(url, ledger, updates)
            except RemoteMoved:  # accepted, then another machine pushed on top: go round again
                if attempt == MAX_ATTEMPTS:
                    raise
                continue
        break
    report.seconds = time.perf_counter() - started
    record_sync(ledger, report.remote)
    return report


def record_sync(ledger: Ledger, remote: str) -> None:
    """Note when this ledger last synced, and with which remote (redacted), so ``prime`` can say
    how fresh what a session sees is (``settings.last_sync``)."""
    with contextlib.suppress(LedgerError):  # a ledger we may not write: the sync still happened
        settings.record_last_sync(ledger.store, int(time.time()), remote)


def restore(ledger: Ledger, source: str, *, progress: Progress | None = None) -> SyncReport:
    """Fetch a remote's, a path's or a bundle's ledger refs, merge them in, and verify."""
    url = resolve_remote(ledger, source)
    report = sync(ledger, push=False, progress=progress, url=url)
    started = time.perf_counter()
    result = ledger.verify()
    report.verified = result.ok
    report.problems = [f"{p.ref}: {p.message}" for p in result.problems]
    report.seconds += time.perf_counter() - started
    return report


def backup(
    ledger: Ledger,
    remote: str | None = None,
    *,
    bundle: Path | None = None,
    progress: Progress | None = None,
) -> SyncReport:
    """Push every ledger ref the remote lacks (or write a bundle), then check what arrived."""
    started = time.perf_counter()
    store = ledger.store
    left_out = [f"{ref} ({what})" for ref, what in sorted(store.broken_refs(LEDGER_PREFIX).items())]
    if bundle is not None:
        refs = dict(store.refs(LEDGER_PREFIX))
        gitstore.bundle_create(store, bundle, sorted(refs))
        held = gitstore.bundle_heads(bundle)
        if held != refs:
            raise RemoteError(
                f"The bundle {bundle} does not hold exactly the ledger's refs ({len(held)} of "
                f"{len(refs)}); write it again."
            )
        report = SyncReport(remote=str(bundle), pushed=sorted(refs), verified=True)
        report.left_out = left_out
        report.seconds = time.perf_counter() - started
        return report
    url = resolve_remote(ledger, remote)
    report = SyncReport(remote=gitstore.redact_url(url))
    if is_bundle(url):
        raise InvalidInput(
            "A bundle is not a remote; to write one, name it with ",
            Fix("bundle"),
            ".",
            field="remote",
        )
    check_local(url, create=True)
    report.attempts = 1
    remote_tips = gitstore.list_remote_refs(store, url)
    updates = exchange.push_plan(ledger, remote_tips, report)
    report.pushed_objects = exchange.push(ledger, url, updates, progress)
    if updates:
        exchange.check_remote(url, ledger, updates)
    report.pushed = [ref for ref, _, _ in updates]
    report.verified = True
    report.left_out = left_out
    report.seconds = time.perf_counter() - started
    return report


def claim(
    ledger: Ledger,
    task_id: str,
    remote: str | None,
    *,
    actor: str | None = None,
    agent: str | None = None,
    steal: bool = False,
    decision: str | None = None,
) -> Task:
    """Claim a task so that it counts only once the remote accepted it: one winner across machines.

    Raises ``ClaimConflict`` when another claimant's push (or an earlier claim) holds the task;
    ``agent``, ``steal`` and ``decision`` as in ``Ledger.claim`` (``ledger.last_claim`` says
    what happened).
    """
    url = resolve_remote(ledger, remote)
    if is_bundle(url):
        raise InvalidInput("A claim needs a live remote, not a bundle.")
    try:
        full = ledger.resolve(task_id)
    except TaskNotFound:
        if not PREFIX_PATTERN.match(task_id.strip().lower()):
            raise  # not an id at all: nothing the remote could have
        # A task created on another machine: bring the remote's ledger in, then look again.
        try:
            sync(ledger, push=False, url=url)
        except RemoteError as exc:
            raise TaskNotFound(
                f"No task {task_id.strip()} here, and looking for it on "
                f"{gitstore.redact_url(url)} failed: ",
                *exc.parts,
            ) from exc
        try:
            full = ledger.resolve(task_id)
        except TaskNotFound as exc:
            raise TaskNotFound(
                f"No task {task_id.strip()} here, nor on {gitstore.redact_url(url)} (its ledger "
                f"was fetched to look). List tasks with ",
                Step("task list"),
                ".",
            ) from exc
    ref = task_ref(full)
    store = ledger.store
    staging = staging_namespace(url)
    report = SyncReport(remote=gitstore.redact_url(url))
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            _local, remote_tips = exchange.fetch_and_integrate(
                ledger, url, staging, None, report, ref
            )
        except RemoteMoved:
            if attempt == MAX_ATTEMPTS:
                raise
            continue
        before = store.tip(ref)
        # ClaimConflict if the remote's holder is another person or another agent
        task = ledger.claim(full, actor=actor, agent=agent, steal=steal, decision=decision)
        after = store.tip(ref)
        if after is None:  # pragma: no cover - the task exists: resolve() found it
            raise RemoteError(f"Task {full} vanished while claiming it.")
        updates = exchange.push_plan(ledger, remote_tips, report, only=ref)
        try:
            if not updates and remote_tips.get(ref) != after:
                # Nothing to push, yet the remote does not hold this claim: its version of the
                # task is not under ours (integration left it for the next round). The claim has
                # not counted, so it must not be reported as won.
                raise RemoteMoved(
                    f"The remote's version of task {full[:8]} changed while claiming it; try again."
                )
            exchange.push(ledger, url, updates, None)
        except RemoteMoved:
            # Someone pushed this task first, so this claim never counted: drop the local claim
            # commit (it is ours alone, not yet anywhere else) and let the next round see theirs.
            if after != before and before is not None:
                with store.lock():
                    if store.tip(ref) == after:
                        store.set_ref(ref, before, after)
            if attempt == MAX_ATTEMPTS:
                raise
            continue
        if updates:
            try:
                exchange.check_remote(url, ledger, updates)
            except RemoteMoved:  # ours was accepted, then built on: the next round confirms it
                if attempt == MAX_ATTEMPTS:
                    raise
                continue
        return task
    raise RemoteError("The remote kept moving while claiming; try again.")  # pragma: no cover


__all__ = ["MAX_ATTEMPTS", "backup", "claim", "record_sync", "restore", "sync"]
