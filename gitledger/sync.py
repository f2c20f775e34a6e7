"""Backup, restore and sync of a ledger through any Git remote, and claims that count at the server.

A ledger is a bare Git repository whose refs are ``refs/gitledger/…``, so moving it between
machines is moving refs: an ordinary Git server (GitHub, GitLab, Gitea, a bare repository over ssh
or on a USB disk) is the meeting point, and the server's refusal of a non-fast-forward is the one
serialization point every machine agrees on. Nothing here forces a ref, anywhere.

- ``backup``: push every ledger ref whose remote tip differs (the remote is listed first: pushing
  every refspec costs 7x more when one ref changed), in chunks, then list the remote again and
  check it holds exactly the tips pushed. A ``--bundle FILE`` is the offline variant.
- ``sync``: list the remote once, fetch only the refs whose tips are missing here into a staging
  namespace (``refs/gitledger-staging/<remote>/…``, outside ``refs/gitledger/`` so no listing
  sees them), check every incoming tip (objects re-hash, records validate), then per ref under
  the ledger lock: create, fast-forward, keep (local is ahead) or, for a task whose histories
  diverged, write a merge commit with both tips as parents (``merge.merge_tasks``); the staged
  refs are then deleted. Then push, without force, what the remote lacks; when someone pushed in
  between, the push is refused and sync fetches and goes again. (Which program moves the
  objects, the git CLI or libgit2, is ``gitstore``'s business; docs/SYNC.md has the figures.)
- ``restore``: sync without the push, into a ledger that may be new, then ``verify``.
- ``claim``: bring one task up to date, claim it locally, push: the claim counts only once the
  server accepted the push. If another machine's push landed first, the local claim commit (which
  never counted) is dropped, the remote's version comes in and the claim fails as a conflict.

Refs other than tasks are created and fast-forwarded the same way; a diverged fuse snapshot is
merged by ``fuse.store.merge_saved``, a diverged memory fact by ``memory.merge_facts``, a session's
judge state by keeping the newer save (``_merge_newest``: it is one session's counters, and the
newer save has seen more of the session), and a settings document (``refs/gitledger/config/judge``,
``refs/gitledger/config/memory``) key by key by ``merge.merge_settings`` (a key both machines
changed goes to the later write, and ``ref_rules`` says so). Any other diverged ref is kept at the
local tip, not pushed, and reported in ``unmerged`` (the CLI exits 3).
With ``sync.fuse=false`` (``settings.py``) fuse and memory refs are never pushed.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import gitstore, settings
from .changes import version_message
from .errors import (
    CorruptRecord,
    Fix,
    InvalidInput,
    LedgerError,
    RemoteError,
    RemoteMoved,
    Step,
    TaskNotFound,
)
from .gitstore import RefMoved
from .gitstore.documents import decode, encode
from .judge.state import STATE_FILE as JUDGE_STATE_FILE
from .ledger import Ledger
from .memory.config import CONFIG_FILE as MEMORY_CONFIG_FILE
from .merge import merge_settings, merge_tasks, new_conflicts
from .model import ID_PATTERN, PREFIX_PATTERN, Task, now_iso, read_record
from .refs import (
    FUSE_PREFIX,
    JUDGE_CONFIG_REF,
    JUDGE_PREFIX,
    LEDGER_PREFIX,
    LEDGER_REFSPEC,
    MEMORY_CONFIG_REF,
    MEMORY_PREFIX,
    STAGING_ROOT,
    TASKS_PREFIX,
    task_ref,
)

DEFAULT_REMOTE = "origin"
MAX_ATTEMPTS = 8
# Above this many refs to fetch, one wildcard refspec (libgit2 matches each advertised ref
# against every refspec, so thousands of named refspecs cost more than the mirror).
FETCH_BY_NAME_MAX = 500

# Settings documents merged key by key: ref -> the JSON file with the keys, and the files beside
# it (taken from the newer side).
SETTINGS_DOCUMENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    JUDGE_CONFIG_REF: (JUDGE_STATE_FILE, ("FORMAT",)),
    MEMORY_CONFIG_REF: (MEMORY_CONFIG_FILE, ()),
}
JUDGE_STATE_FILES = ("FORMAT", JUDGE_STATE_FILE)

# phase ("fetch", "push"), done, total
Progress = Callable[[str, int, int], None]


@dataclass
class SyncReport:
    """What a sync, restore or backup did, ref by ref, and what moved over the wire."""

    remote: str
    created: list[str] = field(default_factory=list)
    fast_forwarded: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    conflicts: dict[str, list[str]] = field(default_factory=dict)  # task id -> fields
    # task id -> field -> the rule that decided it ("the earlier claim won", ...)
    conflict_rules: dict[str, dict[str, str]] = field(default_factory=dict)
    unmerged: list[str] = field(default_factory=list)  # diverged non-task refs, kept local
    # a merged judge-state or settings ref -> what decided it (per key, for settings)
    ref_rules: dict[str, dict[str, str]] = field(default_factory=dict)
    pushed: list[str] = field(default_factory=list)
    remote_ahead: list[str] = field(default_factory=list)  # backup only: needs a sync first
    fetched_objects: int = 0
    pushed_objects: int = 0
    attempts: int = 0
    seconds: float = 0.0
    verified: bool | None = None
    problems: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # backup: refs whose file names no commit

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def quiet(self) -> bool:
        """Nothing changed on either side."""
        return not (self.created or self.fast_forwarded or self.merged or self.pushed)


# --- finding the remote ------------------------------------------------------------------------


def resolve_remote(ledger: Ledger, remote: str | None) -> str:
    """A remote name, URL or path → a URL (names: the project's remotes, then the ledger's)."""
    name = remote or DEFAULT_REMOTE
    if "\x00" in name or not name.strip():
        raise InvalidInput("A remote is a name, a URL or a path, not blank text.")
    if not gitstore.is_local_url(name):
        return name  # a URL (scheme://…, or scp-like [user@]host:path, as git reads it)
    if name.startswith("file://"):
        return str(gitstore.local_path(name))
    url = gitstore.remote_url(ledger.store, name, ledger.project_root)
    if url is not None:
        return url
    looks_like_path = "/" in name or name.startswith(".") or name.endswith((".git", ".bundle"))
    if looks_like_path or Path(name).expanduser().exists():
        return str(Path(name).expanduser().absolute())
    raise InvalidInput(
        f"No remote named '{name}' in this project or ledger. Pass a URL or a path, add one with "
        f"'git remote add {name} URL', or run 'gitledger remote setup {name} URL'."
    )


def _check_local(url: str, *, create: bool) -> None:
    """A local path must be a repository or a bundle; a missing one is created only to push to."""
    if not gitstore.is_local_url(url):
        return
    path = gitstore.local_path(url)
    if not path.exists():
        if not create:
            raise InvalidInput(f"Nothing to restore at {path}: no such file or repository.")
        gitstore.init_bare(path)
    elif not _is_bundle(url) and gitstore.is_bare_repository(path) is None:
        raise InvalidInput(
            f"{path} exists and is not a Git repository or bundle; name a repository, a bundle, "
            f"or a new path."
        )


def _staging(url: str) -> str:
    digest = hashlib.sha256(gitstore.redact_url(url).encode()).hexdigest()[:12]
    return f"{STAGING_ROOT}{digest}/"


def _is_bundle(url: str) -> bool:
    if not gitstore.is_local_url(url):
        return False
    path = gitstore.local_path(url)
    if path.is_file():
        with path.open("rb") as fh:
            return fh.read(16) in (b"# v2 git bundle\n", b"# v3 git bundle\n")
    return False


# --- reading records ---------------------------------------------------------------------------


def _task_id(ref: str) -> str | None:
    if not ref.startswith(TASKS_PREFIX):
        return None
    leaf = ref[len(TASKS_PREFIX) :]
    return leaf if ID_PATTERN.match(leaf) else None


# --- integrating fetched refs ------------------------------------------------------------------


def _integrate(
    ledger: Ledger,
    remote_tips: dict[str, str],
    report: SyncReport,
    local: dict[str, str] | None = None,
) -> dict[str, str]:
    """Bring the remote's tips (their objects already fetched) into the ledger, under its lock.

    Every incoming tip is checked first (its objects re-hash, a task's record validates and names
    its ref); if any fails, nothing moves and ``RemoteError`` says which. ``local``: the ledger's
    tips as read this round (every move is a compare-and-swap, so a tip that changed since is
    left alone, not overwritten). Returns the ledger's tips after integrating.
    """
    store = ledger.store
    local = dict(store.refs(LEDGER_PREFIX)) if local is None else local
    plan: list[tuple[str, str | None, str, str]] = []  # ref, ours, theirs, action
    damaged: list[str] = []
    incoming: dict[str, tuple[Task, bytes]] = {}  # task records checked here, for the index
    for ref, theirs in sorted(remote_tips.items()):
        ours = local.get(ref)
        if ours == theirs:
            continue
        try:
            if ours is not None and gitstore.is_ancestor(store, theirs, ours):
                report.kept.append(ref)
                continue
            store.check_objects(theirs)
            task_id = _task_id(ref)
            if task_id is not None:
                record, raw = read_record(store, theirs, ref)
                incoming[ref] = (record, raw)
                if record.id != task_id:
                    raise CorruptRecord(f"{ref}: the record says id {record.id}")
            if ours is None or gitstore.is_ancestor(store, ours, theirs):
                action = "create" if ours is None else "forward"
            else:
                mergeable = (
                    task_id is not None
                    or ref.startswith((MEMORY_PREFIX, FUSE_PREFIX, JUDGE_PREFIX))
                    or ref in SETTINGS_DOCUMENTS
                )
                action = "merge" if mergeable else "diverged"
        except LedgerError as exc:
            damaged.append(exc.message)
            continue
        plan.append((ref, ours, theirs, action))
    if damaged:
        raise RemoteError(
            f"The remote {report.remote} holds {len(damaged)} damaged or invalid record(s) (first: "
            f"{damaged[0].rstrip('.')}). Nothing was changed here; repair the remote (run git fsck there) or "
            f"restore from another backup."
        )
    stamp_before = gitstore.refs_stamp(store.path, TASKS_PREFIX.rstrip("/")).encode()
    written: list[tuple[Task, bytes, str]] = []  # task versions now at their refs' tips
    for ref, ours, theirs, action in plan:
        try:
            if action in ("create", "forward"):
                store.set_ref(ref, theirs, ours)
                (report.created if ours is None else report.fast_forwarded).append(ref)
                local[ref] = theirs
                if ref in incoming:
                    written.append((*incoming[ref], theirs))
            elif action == "merge" and ours is not None and ref.startswith(FUSE_PREFIX):
                from .fuse.store import merge_saved

                local[ref] = merge_saved(ledger, ref[len(FUSE_PREFIX) :], ours, theirs)
                report.merged.append(ref)
            elif action == "merge" and ours is not None and ref.startswith(MEMORY_PREFIX):
                _merge_fact_ref(ledger, ref, ours, theirs, report)
                local[ref] = store.tip(ref) or ours
            elif action == "merge" and ours is not None and ref.startswith(JUDGE_PREFIX):
                local[ref] = _merge_newest(ledger, ref, ours, theirs, report)
            elif action == "merge" and ours is not None and ref in SETTINGS_DOCUMENTS:
                local[ref] = _merge_settings_ref(ledger, ref, ours, theirs, report)
            elif action == "merge" and ours is not None:
                merged, raw, commit = _merge_ref(
                    ledger, ref, ref[len(TASKS_PREFIX) :], ours, theirs, report
                )
                local[ref] = commit
                written.append((merged, raw, commit))
            else:
                report.unmerged.append(ref)
        except RefMoved:
            # A writer outside gitledger's lock moved it just now: leave it for the next round
            # (its push is planned from the tip as it is then, so nothing is lost).
            report.kept.append(ref)
    if written:
        # so the next command costs what this sync changed, not a full pass
        ledger.index().wrote_many(written, stamp_before)
    return local


def _merge_fact_ref(
    ledger: Ledger, ref: str, ours_tip: str, theirs_tip: str, report: SyncReport
) -> None:
    """A remembered fact changed on both sides: merged by ``memory.merge_facts``."""
    from .memory import fact_files, merge_facts, read_fact

    store = ledger.store
    base_tip = gitstore.merge_base(store, ours_tip, theirs_tip)
    merged = merge_facts(
        read_fact(store, base_tip, ref) if base_tip else None,
        read_fact(store, ours_tip, ref),
        read_fact(store, theirs_tip, ref),
    )
    store.write(
        ref,
        fact_files(merged),
        "merge: a fact changed on two machines\n",
        ledger.author(),
        [ours_tip, theirs_tip],
        ours_tip,
    )
    report.merged.append(ref)


def _later(ledger: Ledger, ours_tip: str, theirs_tip: str) -> bool:
    """Whether our tip is the later write (commit time, then the commit id: every machine picks
    the same side)."""
    ours, theirs = (ledger.store.commit_info(t) for t in (ours_tip, theirs_tip))
    return (ours.time, ours_tip) > (theirs.time, theirs_tip)


def _merge_newest(
    ledger: Ledger, ref: str, ours_tip: str, theirs_tip: str, report: SyncReport
) -> str:
    """A session's judge state saved on two machines: a merge commit holding the newer save."""
    ours_later = _later(ledger, ours_tip, theirs_tip)
    newer = ours_tip if ours_later else theirs_tip
    files = {k: v for k, v in ledger.store.read_files(newer, JUDGE_STATE_FILES).items() if v}
    side = "this machine's" if ours_later else "the remote's"
    commit = ledger.store.write(
        ref,
        files,
        f"merge: judge state saved on two machines, kept the newer ({side})\n",
        ledger.author(),
        [ours_tip, theirs_tip],
        ours_tip,
    )
    report.merged.append(ref)
    report.ref_rules[ref] = {"state": f"the newer save won ({side})"}
    return commit


def _merge_settings_ref(
    ledger: Ledger, ref: str, ours_tip: str, theirs_tip: str, report: SyncReport
) -> str:
    """A settings document changed on two machines, merged key by key (``merge_settings``)."""
    store = ledger.store
    name, beside = SETTINGS_DOCUMENTS[ref]
    base_tip = gitstore.merge_base(store, ours_tip, theirs_tip)
    ours_later = _later(ledger, ours_tip, theirs_tip)

    def doc(tip: str | None) -> tuple[dict[str, Any], bool]:
        return decode(store.read_files(tip, (name,))[name]) if tip else ({}, False)

    base, ours, theirs = doc(base_tip)[0], doc(ours_tip), doc(theirs_tip)
    rules: dict[str, str] = {}
    if ours[1] or theirs[1]:  # a damaged side holds nothing to keep: the other side stands
        merged = theirs[0] if ours[1] else ours[0]
    else:
        merged, rules = merge_settings(base, ours[0], theirs[0], ours_later=ours_later)
    newer = ours_tip if ours_later else theirs_tip
    files = {k: v for k, v in store.read_files(newer, beside).items() if v} if beside else {}
    files[name] = encode(merged)
    said = "; ".join(f"{key}: {rule}" for key, rule in rules.items())
    commit = store.write(
        ref,
        files,
        "merge: settings changed on two machines, joined key by key\n"
        + (f"\n{said}\n" if said else ""),
        ledger.author(),
        [ours_tip, theirs_tip],
        ours_tip,
    )
    report.merged.append(ref)
    if rules:
        report.ref_rules[ref] = rules
    return commit


def _merge_ref(
    ledger: Ledger, ref: str, task_id: str, ours_tip: str, theirs_tip: str, report: SyncReport
) -> tuple[Task, bytes, str]:
    """Join two diverged histories of a task in a merge commit; returns its record, the record's
    bytes and the commit."""
    store = ledger.store
    ours = read_record(store, ours_tip, ref)[0]
    theirs = read_record(store, theirs_tip, ref)[0]
    base_tip = gitstore.merge_base(store, ours_tip, theirs_tip)
    base = read_record(store, base_tip, ref)[0] if base_tip else None
    name, email = ledger.author()
    # theirs is what the remote holds: a claim it accepted counted first (finding S3)
    rules: dict[str, str] = {}
    merged = merge_tasks(
        base, ours, theirs, at=now_iso(), actor=name, theirs_is_remote=True, reasons=rules
    )
    fresh = new_conflicts(ours, merged)
    fresh = [c for c in fresh if c not in theirs.conflicts]
    subject = "merge: diverged histories joined"
    if fresh:
        subject += f", {len(fresh)} conflicting field(s): " + ", ".join(c.field for c in fresh)
        report.conflicts[task_id] = [c.field for c in fresh]
        report.conflict_rules[task_id] = {
            c.field: rules.get(c.field, "the later write won") for c in fresh
        }
    body = "\n".join(f"- {c.field}: kept {c.kept!r}, dropped {c.dropped!r}" for c in fresh)
    message = version_message(subject, body, merged)
    files = ledger.record_files(merged)
    commit = store.write(ref, files, message, (name, email), [ours_tip, theirs_tip], ours_tip)
    report.merged.append(ref)
    return merged, files["task.json"], commit


# --- fetching and pushing ----------------------------------------------------------------------


def _fetch(
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
    if _is_bundle(url):
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


def _fetch_and_integrate(
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
            received, remote_tips, staged = _fetch(
                ledger, url, staging, progress, local, only=wanted
            )
            report.fetched_objects += received
            with store.lock():
                local = _integrate(ledger, remote_tips, report, local)
        finally:
            gitstore.clear_staging(store, staging, staged)
    return local, remote_tips


def _push_plan(
    ledger: Ledger,
    remote_tips: dict[str, str],
    report: SyncReport,
    local: dict[str, str] | None = None,
    only: str | None = None,
) -> list[tuple[str, str, str | None]]:
    """Refs whose remote tip differs and which are a fast-forward there.

    ``local``: the ledger's tips as integration left them (read once per round: listing 10,000
    refs through libgit2 costs about 0.1 s); a write made since goes with the next sync.
    """
    store = ledger.store
    updates: list[tuple[str, str, str | None]] = []
    from .settings import sync_fuse

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


def _push(
    ledger: Ledger, url: str, updates: list[tuple[str, str, str | None]], progress: Progress | None
) -> int:
    callback = (lambda done, total: progress("push", done, total)) if progress else None
    stats = gitstore.push_refs(ledger.store, url, updates, callback)
    return stats.objects


def _check_remote(url: str, ledger: Ledger, updates: list[tuple[str, str, str | None]]) -> None:
    """After a push: the remote must hold exactly the tips pushed."""
    heads = gitstore.list_remote_refs(ledger.store, url)
    wrong = [ref for ref, tip, _ in updates if heads.get(ref) != tip]
    gone = [ref for ref in wrong if ref not in heads]
    if wrong and not gone:
        # Each pushed ref is there, at another tip: a push from elsewhere landed after ours was
        # accepted. The caller fetches again (that tip descends from ours, or it is merged).
        raise RemoteMoved(
            f"The remote {gitstore.redact_url(url)} moved on after this push ({len(wrong)} "
            f"ref(s), first {wrong[0]}): another machine pushed on top. Run 'gitledger sync' "
            f"again."
        )
    if wrong:
        raise RemoteError(
            f"The remote {gitstore.redact_url(url)} does not hold what was pushed ({len(wrong)} "
            f"ref(s), first {wrong[0]}). Run 'gitledger sync' again; if it repeats, check the "
            f"server."
        )


# --- the operations ----------------------------------------------------------------------------


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
    staging = _staging(url)
    if push and _is_bundle(url):
        raise InvalidInput("A bundle is read-only: restore from it, or sync with a remote.")
    _check_local(url, create=push)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        report.attempts = attempt
        try:
            local, remote_tips = _fetch_and_integrate(ledger, url, staging, progress, report)
        except RemoteMoved:  # a ref went away between the listing and the fetch
            if attempt == MAX_ATTEMPTS:
                raise
            continue
        if not push:
            break
        report.remote_ahead = []
        updates = _push_plan(ledger, remote_tips, report, local)
        try:
            report.pushed_objects += _push(ledger, url, updates, progress)
        except RemoteMoved:
            if attempt == MAX_ATTEMPTS:
                raise
            time.sleep(min(0.05 * attempt, 0.5))
            continue
        report.pushed = sorted(set(report.pushed) | {ref for ref, _, _ in updates})
        if updates:
            try:
                _check_remote(url, ledger, updates)
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
    if _is_bundle(url):
        raise InvalidInput(
            "A bundle is not a remote; to write one, name it with ",
            Fix("bundle"),
            ".",
            field="remote",
        )
    _check_local(url, create=True)
    report.attempts = 1
    remote_tips = gitstore.list_remote_refs(store, url)
    updates = _push_plan(ledger, remote_tips, report)
    report.pushed_objects = _push(ledger, url, updates, progress)
    if updates:
        _check_remote(url, ledger, updates)
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
    if _is_bundle(url):
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
                f"{gitstore.redact_url(url)} failed: {exc.message}"
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
    staging = _staging(url)
    report = SyncReport(remote=gitstore.redact_url(url))
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            _local, remote_tips = _fetch_and_integrate(ledger, url, staging, None, report, ref)
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
        updates = _push_plan(ledger, remote_tips, report, only=ref)
        try:
            if not updates and remote_tips.get(ref) != after:
                # Nothing to push, yet the remote does not hold this claim: its version of the
                # task is not under ours (integration left it for the next round). The claim has
                # not counted, so it must not be reported as won.
                raise RemoteMoved(
                    f"The remote's version of task {full[:8]} changed while claiming it; try again."
                )
            _push(ledger, url, updates, None)
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
                _check_remote(url, ledger, updates)
            except RemoteMoved:  # ours was accepted, then built on: the next round confirms it
                if attempt == MAX_ATTEMPTS:
                    raise
                continue
        return task
    raise RemoteError("The remote kept moving while claiming; try again.")  # pragma: no cover


# --- remote setup and the init warning ----------------------------------------------------------


def setup_remote(ledger: Ledger, name: str, url: str | None = None) -> list[str]:
    """Give the ledger a remote ``name`` whose plain ``git fetch``/``git push`` carry ledger refs.

    The refspecs go into the ledger's own repository, not the project's: a push refspec in the
    project's config would change what a bare ``git push`` of the code pushes. Fetch is not
    forced, so a diverged task is refused by git rather than overwritten ('gitledger sync' merges
    it). Returns the config lines changed (empty: nothing to do).
    """
    if not name or not all(ch.isalnum() or ch in "-_." for ch in name):
        raise InvalidInput(f"'{name}' is not a remote name (letters, digits, '-', '_', '.').")
    target = url or gitstore.remote_url(ledger.store, name, ledger.project_root)
    if target is None:
        raise InvalidInput(
            f"No remote '{name}' in this project; give its URL: 'gitledger remote setup {name} URL'."
        )
    if gitstore.is_local_url(target):
        target = str(gitstore.local_path(target).absolute())
    return gitstore.set_ledger_remote(
        ledger.store, name, target, fetch=[LEDGER_REFSPEC], push=[LEDGER_REFSPEC]
    )


def init_warning(ledger: Ledger, remote: str = DEFAULT_REMOTE) -> str | None:
    """For ``init`` in a fresh clone: a warning when the project's remote has ledger refs not here.

    Never raises: a warning must not make ``init`` fail (an offline remote says nothing).
    """
    if ledger.project_root is None:
        return None
    try:
        url = gitstore.remote_url(ledger.store, remote, ledger.project_root)
        if url is None:
            return None
        heads = gitstore.list_remote_refs(ledger.store, url)
    except LedgerError:
        return None
    local = dict(ledger.store.refs(LEDGER_PREFIX))
    missing = [ref for ref, tip in heads.items() if local.get(ref) != tip]
    if not missing:
        return None
    tasks = sum(1 for ref in missing if ref.startswith(TASKS_PREFIX))
    return (
        f"{remote} has {len(missing)} ledger ref(s) ({tasks} task(s)) that are not here yet: "
        f"run 'gitledger restore {remote}' to bring them in."
    )


__all__ = [
    "DEFAULT_REMOTE",
    "FETCH_BY_NAME_MAX",
    "JUDGE_STATE_FILES",
    "MAX_ATTEMPTS",
    "Progress",
    "SETTINGS_DOCUMENTS",
    "SyncReport",
    "backup",
    "claim",
    "init_warning",
    "resolve_remote",
    "restore",
    "setup_remote",
    "sync",
]
