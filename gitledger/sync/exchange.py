"""One round with a remote: list it, fetch what this ledger lacks into staging, integrate it,
plan the push, push without force, and check what arrived.

The remote is listed first (one connection, no objects), so only refs whose tip object is
missing here are fetched and only refs whose remote tip differs are pushed. The staging
namespace is held (``gitstore.staging_lock``) from the fetch until it is cleared again, so a
second sync of this ledger waits rather than deleting refs this one staged. A push the server
refuses (someone pushed in between) and a remote that moved on after accepting ours are both
``RemoteMoved``: the operations (``operations.py``) fetch and go round again. Which program moves
the objects, the git CLI or libgit2, is ``gitstore``'s business (docs/SYNC.md has the figures).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import gitstore
from ..errors import RemoteError, RemoteMoved, Step
from ..refs import FUSE_PREFIX, LEDGER_PREFIX, MEMORY_CONFIG_REF, MEMORY_PREFIX
from .integrate import integrate
from .remote import is_bundle
from .report import Progress, SyncReport

if TYPE_CHECKING:
    from ..ledger import Ledger

# Above this many refs to fetch, one wildcard refspec (libgit2 matches each advertised ref
# against every refspec, so thousands of named refspecs cost more than the mirror).
FETCH_BY_NAME_MAX = 500

# ref, the tip to push, the remote's tip it replaces (None: a new ref there)
Update = tuple[str, str, str | None]


def fetch(
    ledger: Ledger,
    url: str,
    staging: str,
    progress: Progress | None,
    local: dict[str, str],
    only: list[str] | None = None,
) -> tuple[int, dict[str, str], list[str] | None]:
    """Fetch what the remote has and this ledger lacks; returns objects received, the remote's
    tips, and the staged refs to clear once integrated (``None``: the whole staging namespace).

    The remote is listed first (one connection, no objects) and only refs whose tip object is
    missing here are fetched, by name when they are few: a full mirror into staging rewrote every
    staged ref (10,000 loose-ref writes on the first sync after a backup). When nothing is
    missing, nothing is fetched. The ledger's own tips of those refs are offered as the common
    ground, so the server sends only what is new on top of them.
    """
    store = ledger.store
    callback = (lambda done, total: progress("fetch", done, total)) if progress else None
    if is_bundle(url):
        gitstore.clear_staging(store, staging, None)  # under the staging lock: leftovers only
        gitstore.fetch_bundle(store, gitstore.local_path(url), staging)
        staged = {LEDGER_PREFIX + name[len(staging) :]: tip for name, tip in store.refs(staging)}
        return 0, staged, None
    heads = gitstore.list_remote_refs(store, url)
    if only is not None:
        heads = {ref: tip for ref, tip in heads.items() if ref in only}
    missing = [ref for ref, oid in heads.items() if not gitstore.has_object(store, oid)]
    if not missing:
        return 0, heads, []
    if len(missing) > FETCH_BY_NAME_MAX:
        stats = gitstore.fetch_refs(store, url, staging, callback)
        # Only refs that were listed: a staged ref left by an interrupted run is no news.
        for name, staged_tip in store.refs(staging):
            ref = LEDGER_PREFIX + name[len(staging) :]
            if ref in heads:
                heads[ref] = staged_tip
        return stats.objects, heads, None
    common = [local[ref] for ref in missing if ref in local]
    stats = gitstore.fetch_refs(store, url, staging, callback, only=missing, negotiate=common)
    # A ref that moved on between the listing and the fetch: take the tip that actually arrived.
    names = [staging + ref[len(LEDGER_PREFIX) :] for ref in missing]
    for ref, name in zip(missing, names, strict=True):
        tip = store.tip(name)
        if tip is not None:
            heads[ref] = tip
    return stats.objects, heads, names


def fetch_and_integrate(
    ledger: Ledger,
    url: str,
    staging: str,
    progress: Progress | None,
    report: SyncReport,
    only: str | None = None,
) -> tuple[dict[str, str], dict[str, str]]:
    """One round's fetch and integration; returns the ledger's tips after it and the remote's.

    The staging namespace is held from the fetch until it is cleared again, so a second sync of
    this ledger waits rather than deleting refs this one staged.
    """
    store = ledger.store
    with gitstore.staging_lock(store):
        gitstore.drop_stale_staging_locks(store, staging)  # left by a sync killed mid-fetch
        if only is None:
            local = dict(store.refs(LEDGER_PREFIX))
        else:
            local = {only: tip} if (tip := store.tip(only)) is not None else {}
        wanted = None if only is None else [only]
        staged: list[str] | None = []
        try:
            received, remote_tips, staged = fetch(
                ledger, url, staging, progress, local, only=wanted
            )
            report.fetched_objects += received
            with store.lock():
                local = integrate(ledger, remote_tips, report, local)
        finally:
            gitstore.clear_staging(store, staging, staged)
    return local, remote_tips


def push_plan(
    ledger: Ledger,
    remote_tips: dict[str, str],
    report: SyncReport,
    local: dict[str, str] | None = None,
    only: str | None = None,
) -> list[Update]:
    """Refs whose remote tip differs and which are a fast-forward there.

    ``local``: the ledger's tips as integration left them (read once per round: listing 10,000
    refs through libgit2 costs about 0.1 s); a write made since goes with the next sync.
    """
    store = ledger.store
    updates: list[Update] = []
    from ..settings import sync_fuse

    # sync.fuse=false: transcript-derived refs (snapshots, memory) stay on this machine
    private = () if sync_fuse(store) else (FUSE_PREFIX, MEMORY_PREFIX, MEMORY_CONFIG_REF)
    if only is not None:
        refs = [(only, store.tip(only) or "")]
    elif local is not None:
        refs = sorted(local.items())
    else:
        refs = store.refs(LEDGER_PREFIX)
    for ref, tip in refs:
        if not tip or (private and ref.startswith(private)):
            continue
        theirs = remote_tips.get(ref)
        if theirs == tip:
            continue
        if theirs is None or (
            gitstore.has_object(store, theirs) and gitstore.is_ancestor(store, theirs, tip)
        ):
            updates.append((ref, tip, theirs))
        elif ref not in report.unmerged and ref not in report.remote_ahead:
            report.remote_ahead.append(ref)
    return updates


def push(ledger: Ledger, url: str, updates: list[Update], progress: Progress | None) -> int:
    """Push ``updates`` (never forced); returns the objects sent. ``RemoteMoved`` when the server
    refused a ref that is no longer a fast-forward there."""
    callback = (lambda done, total: progress("push", done, total)) if progress else None
    stats = gitstore.push_refs(ledger.store, url, updates, callback)
    return stats.objects


def check_remote(url: str, ledger: Ledger, updates: list[Update]) -> None:
    """After a push: the remote must hold exactly the tips pushed."""
    heads = gitstore.list_remote_refs(ledger.store, url)
    wrong = [ref for ref, tip, _ in updates if heads.get(ref) != tip]
    gone = [ref for ref in wrong if ref not in heads]
    if wrong and not gone:
        # Each pushed ref is there, at another tip: a push from elsewhere landed after ours was
        # accepted. The caller fetches again (that tip descends from ours, or it is merged).
        raise RemoteMoved(
            f"The remote {gitstore.redact_url(url)} moved on after this push ({len(wrong)} "
            f"ref(s), first {wrong[0]}): another machine pushed on top. Run ",
            Step("sync"),
            " again.",
        )
    if wrong:
        raise RemoteError(
            f"The remote {gitstore.redact_url(url)} does not hold what was pushed ({len(wrong)} "
            f"ref(s), first {wrong[0]}). Run ",
            Step("sync"),
            " again; if it repeats, check the server.",
        )


__all__ = [
    "FETCH_BY_NAME_MAX",
    "Update",
    "check_remote",
    "fetch",
    "fetch_and_integrate",
    "push",
    "push_plan",
]
