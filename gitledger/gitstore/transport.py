"""Remotes: listing, fetching, pushing and bundles (used by sync/).

libgit2 lists remotes (one connection, no objects) and is the storage layer throughout. The
git CLI is the transport fallback docs/ARCHITECTURE.md allows where libgit2 lacks something: it
moves the objects of a fetch or push when it is installed (libgit2's fetch and push cost grows
with the square of the refs; figures below), and it alone writes and reads bundles and pushes
into a repository with a work tree. The CLI runs with hooks disabled (``core.hooksPath`` pointed at
an empty place and ``--no-verify``): a backup must never run the user's pre-push hooks.
libgit2 itself runs no hooks. What either reports goes through ``errors.remote_failure``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pygit2

from ..errors import RemoteError, RemoteMoved, Step
from ..paths import git_work_tree
from ..refs import LEDGER_PREFIX
from .errors import kind_of, map_git_errors, map_remote_errors, remote_failure, strerror
from .raw import read_packed_refs
from .store import GitStore, delete_refs, flock
from .urls import is_local_url, local_path, redact_text, redact_url

# Refspecs per push. A large first backup goes in chunks a hosted server accepts; each libgit2
# push also has a fixed cost that grows with the refs on both sides (measured here at 3,000 tasks:
# 12.2 s in chunks of 500, 6.4 s in chunks of 1,000, 3.0 s in one push), so chunks stay large.
PUSH_CHUNK = 5000
_GIT_DIRECTION_PUSH = 1  # libgit2 git_direction; pygit2 exports no name for it


@dataclass
class TransferStats:
    objects: int = 0
    bytes: int = 0
    refs: int = 0


def init_bare(path: Path) -> None:
    """Create an empty bare repository to back up into (a path that did not exist yet)."""
    with map_git_errors(f"creating a bare repository at {path}"):
        path.mkdir(parents=True, exist_ok=True)
        pygit2.init_repository(str(path), bare=True)


def is_bare_repository(path: Path) -> bool | None:
    """True/False for a repository at ``path``, None when there is none."""
    try:
        repo = pygit2.Repository(str(path), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
    except pygit2.GitError:
        return None
    return bool(repo.is_bare)


def remote_url(store: GitStore, name: str, project_root: Path | None) -> str | None:
    """The URL of remote ``name``: the project's remotes first, then the ledger's own."""
    candidates: list[tuple[pygit2.Repository, Path | None]] = []
    if project_root is not None:
        try:
            found = git_work_tree(project_root)
            if found:
                candidates.append((pygit2.Repository(str(found)), project_root))
        except pygit2.GitError:
            pass
    candidates.append((store.repo, None))
    for repo, root in candidates:
        try:
            url = repo.remotes[name].url
        except (KeyError, pygit2.GitError, ValueError):
            continue
        if url is None:
            continue
        if root is not None and is_local_url(url) and not url.startswith("file://"):
            # A relative path in the project's config is relative to the work tree.
            if not Path(url).expanduser().is_absolute():
                url = str((root / url).resolve())
        return str(url)
    return None


def set_ledger_remote(
    store: GitStore, name: str, url: str, fetch: list[str], push: list[str]
) -> list[str]:
    """Make remote ``name`` of the ledger point at ``url`` with exactly these refspecs.

    Returns the config lines it changed (``key = value``), empty when nothing changed.
    """
    changed: list[str] = []
    with map_git_errors(f"configuring remote {name}"):
        config = store.repo.config
        key = f"remote.{name}.url"
        current = config[key] if key in config else None
        if current != url:
            config[key] = url
            changed.append(f"{key} = {redact_url(url)}")
        for kind, specs in (("fetch", fetch), ("push", push)):
            key = f"remote.{name}.{kind}"
            have = list(config.get_multivar(key)) if key in config else []
            for spec in specs:
                if spec not in have:
                    config.set_multivar(key, "^$", spec)
                    changed.append(f"{key} = {spec}")
    return changed


class _Callbacks(pygit2.RemoteCallbacks):
    def __init__(self, progress: Callable[[int, int], None] | None = None) -> None:
        super().__init__()
        self.progress = progress
        self.rejected: dict[str, str] = {}
        self.accepted: list[str] = []
        self.objects = 0
        self.bytes = 0

    def push_update_reference(self, refname: str, message: str | None) -> None:
        if message:
            self.rejected[refname] = message
        else:
            self.accepted.append(refname)

    def push_transfer_progress(self, objects_pushed: int, total_objects: int, nbytes: int) -> None:
        self.objects = max(self.objects, total_objects)
        self.bytes = max(self.bytes, nbytes)
        if self.progress is not None:
            self.progress(objects_pushed, total_objects)

    def transfer_progress(self, stats: pygit2.remotes.TransferProgress) -> None:
        if self.progress is not None:
            self.progress(stats.received_objects, stats.total_objects)


def list_remote_refs(store: GitStore, url: str, prefix: str = LEDGER_PREFIX) -> dict[str, str]:
    """The remote's refs under ``prefix`` with their tips (one connection, no objects moved)."""
    with map_remote_errors("Listing", url):
        remote = store.repo.remotes.create_anonymous(url)
        heads = remote.list_heads(callbacks=_Callbacks())
        return {h.name: str(h.oid) for h in heads if h.name and h.name.startswith(prefix)}


# --- the git CLI as the transport where it is installed -----------------------------------------
#
# Why the git CLI moves the objects when it is there (docs/ARCHITECTURE.md allows it as a
# transport fallback where libgit2 lacks something): libgit2's fetch negotiation pushes every
# local ref into a revision walk sorted by date with an insertion sort, which is quadratic in the
# number of refs, and its push marks the tree of every remote head as uninteresting before packing. Measured here
# at 10,000 tasks with 100 changed refs (pygit2 1.21 / libgit2 1.9.7, git 2.39, loopback `git
# daemon`): fetching them took libgit2 2.8 s (13 s with 10,000 more staging refs present, 84% of
# it in git_commit_list_insert_by_date) and git 0.66 s; pushing them took libgit2 1.5 s. git's own
# explicit-refspec push is quadratic in refspecs x remote refs (3.7 s for 100 refspecs against
# 10,000 remote refs), so the CLI pushes one wildcard refspec from a scratch repository that
# borrows the ledger's objects (objects/info/alternates) and holds only the refs to push. libgit2
# stays the storage layer and still lists remotes; without git (or with one older than 2.29, which
# lacks `fetch --stdin` and `--no-write-fetch-head`), libgit2 moves the objects as before.

GIT_MIN_VERSION = (2, 29)
# Settings for every git transport command: never the user's hooks, no automatic gc or
# maintenance in the ledger (it is packed on its own schedule: packed refs make every ref write
# slower), no pruning, no tags, no push signing, and protocol v2 so a fetch by name is told only
# the refs it asked for (a server that lacks v2 answers in v0).
_GIT_SETTINGS = (
    f"core.hooksPath={os.devnull}",
    "gc.auto=0",
    "maintenance.auto=false",
    "fetch.prune=false",
    "fetch.pruneTags=false",
    "fetch.writeCommitGraph=false",
    "fetch.recurseSubmodules=false",
    "push.followTags=false",
    "push.gpgSign=false",
    "protocol.version=2",
    # Keep what a fetch receives as one pack, as libgit2 did, rather than thousands of loose
    # objects (16 KB of disk each here); git also reports progress only when it keeps the pack.
    "fetch.unpackLimit=1",
)
# Variables that would point git at another repository than the one named by --git-dir (they are
# set when gitledger runs inside a Git hook, for example).
_GIT_ENV_DROP = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_QUARANTINE_PATH",
)
_PROGRESS = re.compile(r"(Receiving|Unpacking|Writing) objects:\s+\d+% \((\d+)/(\d+)\)")
_TOTAL = re.compile(r"Total (\d+)")


@functools.lru_cache(maxsize=8)
def _git_version(executable: str) -> tuple[int, ...] | None:
    try:
        out = subprocess.run(
            [executable, "--version"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"(\d+)\.(\d+)", out)
    return (int(found.group(1)), int(found.group(2))) if found else None


def git_transport() -> str | None:
    """The git executable that moves objects, or None when libgit2 has to (no git, or too old)."""
    executable = shutil.which("git")
    if executable is None:
        return None
    version = _git_version(executable)
    return executable if version is not None and version >= GIT_MIN_VERSION else None


def _run_git(
    argv: list[str],
    what: str,
    url: str,
    *,
    stdin: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[int, str, str]:
    """Run a git transport command; returns exit code, stdout and stderr (credentials redacted).

    With ``progress``, stderr is read as it comes and git's "Receiving/Writing objects" counts
    are passed on (git prints them when asked with --progress, even to a pipe).
    """
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROP}
    env["GIT_TERMINAL_PROMPT"] = "0"  # a missing credential is an error, never a hidden prompt
    argv = [argv[0], *(a for s in _GIT_SETTINGS for a in ("-c", s)), *argv[1:]]
    try:
        if progress is None:
            done = subprocess.run(
                argv, input=stdin, capture_output=True, text=True, env=env, timeout=3600
            )
            return done.returncode, done.stdout, redact_text(done.stderr, url)
        with subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        ) as proc:
            assert proc.stdout is not None and proc.stderr is not None
            out: list[bytes] = []
            reader = threading.Thread(target=_drain, args=(proc.stdout, out))
            reader.start()
            if stdin is not None and proc.stdin is not None:
                writer = threading.Thread(target=_feed, args=(proc.stdin, stdin.encode()))
                writer.start()
            err = bytearray()
            pending = b""
            while chunk := os.read(proc.stderr.fileno(), 4096):
                err += chunk
                *lines, pending = re.split(rb"[\r\n]", pending + chunk)
                for line in lines:
                    found = _PROGRESS.search(line.decode("utf-8", "replace"))
                    if found:
                        progress(int(found.group(2)), int(found.group(3)))
            proc.wait()
            reader.join()
            if stdin is not None:
                writer.join()
            text = err.decode("utf-8", "replace")
            return (
                proc.returncode,
                b"".join(out).decode("utf-8", "replace"),
                redact_text(text, url),
            )
    except (OSError, subprocess.SubprocessError) as exc:
        raise RemoteError(f"{what} {redact_url(url)}: could not run git ({exc}).") from exc


def _drain(pipe: IO[bytes], into: list[bytes]) -> None:
    into.append(pipe.read())


def _feed(pipe: IO[bytes], data: bytes) -> None:
    try:
        pipe.write(data)
        pipe.close()
    except OSError:  # git exited early; its exit code and stderr say why
        pass


def _git_message(stderr: str) -> str:
    """git's stderr without its progress lines: what went wrong, in git's words."""
    lines = re.split(r"[\r\n]", stderr)
    kept = [
        ln.strip()
        for ln in lines
        if ln.strip()
        and not _PROGRESS.search(ln)
        and "Counting objects" not in ln
        and "Compressing objects" not in ln
        and "Enumerating objects" not in ln
        and "Resolving deltas" not in ln
        and not _TOTAL.search(ln)
    ]
    return " ".join(kept)[:2000] or "git gave no reason"


def _objects_moved(stderr: str) -> int:
    counts = [int(m.group(3)) for m in _PROGRESS.finditer(stderr)]
    if counts:
        return max(counts)
    totals = [int(t) for t in _TOTAL.findall(stderr)]
    return max(totals) if totals else 0


def _drop_staged(store: GitStore, staged: list[str]) -> None:
    with map_git_errors("clearing the staging refs"):
        for name in staged:
            old = store.repo.references.get(name)
            if old is not None:
                old.delete()


def fetch_refs(
    store: GitStore,
    url: str,
    staging: str,
    progress: Callable[[int, int], None] | None = None,
    only: list[str] | None = None,
    negotiate: list[str] | None = None,
) -> TransferStats:
    """Fetch every ledger ref of ``url`` (or ``only`` these) into the ``staging`` namespace.

    Staging refs mirror the remote, so they are forced; the ledger's own refs move only after
    sync has decided (fast-forward or merge) under the ledger lock. ``negotiate``: commits here
    that the remote probably has (this ledger's tips of the refs asked for); the git CLI offers
    only these as common ground, so the server sends just what is new on top of them.
    """
    staged = [staging + ref[len(LEDGER_PREFIX) :] for ref in only or []]
    # A ref the remote lacks is simply not fetched; drop its stale staged copy first.
    _drop_staged(store, staged)
    git = git_transport()
    if git is None:
        return _fetch_libgit2(store, url, staging, progress, only)
    if only is None:
        specs = [f"+{LEDGER_PREFIX}*:{staging}*"]
    else:
        specs = [f"+{ref}:{name}" for ref, name in zip(only, staged, strict=True)]
    argv = [git, "--git-dir", str(store.path), "fetch", "--no-tags", "--no-write-fetch-head"]
    argv += ["--progress", "--stdin", *(f"--negotiation-tip={oid}" for oid in negotiate or [])]
    code, _out, err = _run_git(
        [*argv, url],
        "Fetching from",
        url,
        stdin="".join(s + "\n" for s in specs),
        progress=progress,
    )
    if code != 0:
        raise remote_failure("Fetching from", url, _git_message(err))
    return TransferStats(objects=_objects_moved(err), refs=len(specs))


def _fetch_libgit2(
    store: GitStore,
    url: str,
    staging: str,
    progress: Callable[[int, int], None] | None,
    only: list[str] | None,
) -> TransferStats:
    with map_remote_errors("Fetching from", url):
        remote = store.repo.remotes.create_anonymous(url)
        if only is None:
            specs = [f"+{LEDGER_PREFIX}*:{staging}*"]
        else:
            specs = [f"+{ref}:{staging}{ref[len(LEDGER_PREFIX) :]}" for ref in only]
        # No libgit2 prune: it cost 2.2 s of a 2.6 s no-op fetch at 3,000 tasks. The heads the
        # fetch saw stay readable after it, so staged refs the remote no longer has go here.
        stats = remote.fetch(specs, callbacks=_Callbacks(progress))
        if only is None:
            seen = {
                staging + h.name[len(LEDGER_PREFIX) :]
                for h in remote.list_heads(connect=False)
                if h.name and h.name.startswith(LEDGER_PREFIX)
            }
            for name, _tip in store.refs(staging):
                if name not in seen:
                    gone = store.repo.references.get(name)
                    if gone is not None:
                        gone.delete()
        return TransferStats(objects=stats.received_objects, bytes=stats.received_bytes, refs=0)


_NO_GIT_FOR_BUNDLES = (
    "{what} {where}: this needs the git command, which is not installed (libgit2 cannot read or "
    "write bundles). Install git, or use a remote or a path instead."
)


def _git_cli(args: list[str], what: str, url: str) -> subprocess.CompletedProcess[str]:
    """Run git for a bundle (libgit2 has none); a refusal to move a ref is ``RemoteMoved``."""
    git = shutil.which("git")
    if git is None:
        raise RemoteError(_NO_GIT_FOR_BUNDLES.format(what=what, where=redact_url(url)))
    code, out, err = _run_git([git, *args], what, url)
    if code != 0:
        raise remote_failure(what, url, _git_message(err or out))
    return subprocess.CompletedProcess(args, code, out, err)


@contextlib.contextmanager
def _scratch_repository(store: GitStore, refs: list[tuple[str, str]]) -> Iterator[Path]:
    """A throwaway bare repository holding only ``refs`` and borrowing the ledger's objects.

    Pushing one wildcard refspec from it sends exactly these refs, without git matching each of
    many explicit refspecs against every remote ref. Nothing is written into the ledger.
    """
    root = Path(tempfile.mkdtemp(prefix="gitledger-push-"))
    try:
        (root / "objects" / "info").mkdir(parents=True)
        (root / "objects" / "pack").mkdir()
        (root / "refs" / "heads").mkdir(parents=True)
        (root / "HEAD").write_text("ref: refs/heads/main\n")
        (root / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tbare = true\n")
        objects = (store.path / "objects").resolve()
        (root / "objects" / "info" / "alternates").write_text(f"{objects}\n")
        lines = "".join(f"{oid} {ref}\n" for ref, oid in sorted(refs))
        (root / "packed-refs").write_text("# pack-refs with: peeled fully-peeled sorted \n" + lines)
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def push_refs(
    store: GitStore,
    url: str,
    updates: list[tuple[str, str, str | None]],
    progress: Callable[[int, int], None] | None = None,
    chunk: int = PUSH_CHUNK,
) -> TransferStats:
    """Push ``(ref, new_tip, expected_remote_tip)`` updates without force, in chunks.

    Nothing is forced: a ref whose remote tip is not an ancestor of the new one is refused
    (``RemoteMoved``: fetch, merge, push again), and the server compares each old tip again under
    its ref lock when it updates, so of two racing pushers exactly one wins a ref. libgit2, which
    pushes when git is missing, also checks on the push connection that each remote ref is still
    where the caller listed it.
    """
    stats = TransferStats()
    if not updates:
        return stats
    outside = [ref for ref, _new, _old in updates if not ref.startswith(LEDGER_PREFIX)]
    if outside:
        raise ValueError(f"push_refs moves ledger refs only, not {outside[0]}")
    git = git_transport()
    for start in range(0, len(updates), chunk):
        part = updates[start : start + chunk]
        if git is not None:
            _push_git(store, git, url, part, progress, stats)
        elif is_local_url(url) and is_bare_repository(local_path(url)) is False:
            raise RemoteError(
                f"Pushing to {redact_url(url)}: a repository with a work tree needs the git "
                f"command (libgit2 cannot push into one), which is not installed. Install git, "
                f"or push to a bare repository."
            )
        else:
            _push_libgit2(store, url, part, progress, stats)
    return stats


def _push_git(
    store: GitStore,
    git: str,
    url: str,
    part: list[tuple[str, str, str | None]],
    progress: Callable[[int, int], None] | None,
    stats: TransferStats,
) -> None:
    spec = f"{LEDGER_PREFIX}*:{LEDGER_PREFIX}*"
    with _scratch_repository(store, [(ref, new) for ref, new, _old in part]) as scratch:
        argv = [git, "--git-dir", str(scratch), "push", "--porcelain", "--no-verify", "--progress"]
        code, out, err = _run_git([*argv, url, spec], "Pushing to", url, progress=progress)
    # --porcelain: "<flag>\t<from>:<to>\t<summary>" per ref; "!" is a refusal.
    status: dict[str, tuple[str, str]] = {}
    for line in out.splitlines():
        flag, tab, rest = line.partition("\t")
        if tab and len(flag) == 1:
            refs, _, summary = rest.partition("\t")
            status[refs.partition(":")[2]] = (flag, summary)
    refused = {ref: summary for ref, (flag, summary) in status.items() if flag == "!"}
    if not status and code != 0:
        raise remote_failure("Pushing to", url, _git_message(err))
    if refused:
        _raise_refused(store, url, part, refused)
    unreported = [ref for ref, _new, _old in part if ref not in status]
    if code != 0 or unreported:
        raise RemoteError(
            f"Pushing to {redact_url(url)}: the server did not confirm {len(unreported)} ref(s) "
            f"({_git_message(err)}). Run ",
            Step("sync"),
            " again; if it repeats, check the server.",
        )
    stats.objects += _objects_moved(err)
    stats.refs += len(part)


def _raise_refused(
    store: GitStore,
    url: str,
    part: list[tuple[str, str, str | None]],
    refused: dict[str, str],
) -> None:
    ref, why = next(iter(sorted(refused.items())))
    if kind_of(why) in ("moved", "lock") or "fast-forward" in why.lower():
        raise RemoteMoved(f"Pushing to {redact_url(url)}: {ref} was refused ({why}).")
    # A server reports a lost race as a bare "failed to update ref": look again, and call it a
    # move only if the refused ref really is somewhere else now.
    expected_tips = {r: e for r, _n, e in part}
    now = list_remote_refs(store, url)
    if any(now.get(r) != expected_tips.get(r) for r in refused):
        raise RemoteMoved(f"Pushing to {redact_url(url)}: {ref} moved meanwhile ({why}).")
    raise RemoteError(
        f"The remote {redact_url(url)} refused {len(refused)} ref(s) (first: {ref}: {why}). "
        f"Check your access rights or the server's hooks."
    )


def _push_libgit2(
    store: GitStore,
    url: str,
    part: list[tuple[str, str, str | None]],
    progress: Callable[[int, int], None] | None,
    stats: TransferStats,
) -> None:
    with map_remote_errors("Pushing to", url):
        remote = store.repo.remotes.create_anonymous(url)
        callbacks = _Callbacks(progress)
        # List in the push direction on the same connection: the push then reuses it, and the
        # tips seen are the ones the server will compare against.
        remote.connect(callbacks=callbacks, direction=_GIT_DIRECTION_PUSH)
        heads = {h.name: str(h.oid) for h in remote.list_heads(connect=False)}
        moved = [ref for ref, _new, expected in part if heads.get(ref) != expected]
        if moved:
            raise RemoteMoved(
                f"Pushing to {redact_url(url)}: {len(moved)} ref(s) moved since they were "
                f"listed (first: {moved[0]})."
            )
        remote.push([f"{new}:{ref}" for ref, new, _expected in part], callbacks=callbacks)
    if callbacks.rejected:
        _raise_refused(store, url, part, callbacks.rejected)
    stats.objects += callbacks.objects
    stats.bytes += callbacks.bytes
    stats.refs += len(part)


STAGING_LOCK_FILE = "gitledger-staging.lock"
STAGING_LOCK_TIMEOUT_S = 600.0


@contextlib.contextmanager
def staging_lock(store: GitStore, timeout: float = STAGING_LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the staging namespace from fetch to cleared: two syncs of one ledger (an agent's
    and a person's, say) would otherwise delete each other's staged refs mid-fetch. The kernel
    drops the lock if the holder dies; a long fetch may hold it for minutes, hence the timeout.
    """
    busy = (
        f"Another gitledger sync of this ledger has been fetching for over {timeout:.0f} s; wait "
        f"for it, or stop it if it hung."
    )
    with flock(store.path / STAGING_LOCK_FILE, timeout, busy, max_delay=0.1):
        yield


def drop_stale_staging_locks(store: GitStore, staging: str) -> int:
    """Remove ``*.lock`` files under ``staging``; call it holding ``staging_lock``.

    A fetch killed while writing a staged ref leaves ``<ref>.lock`` behind, and every later fetch
    of that ref would fail on it until a repair. Under the staging lock no other sync of this
    ledger is inside the namespace, so any lock file there belongs to a process that died.
    """
    removed = 0
    for folder, _subdirs, files in os.walk(store.path / staging):
        for name in files:
            if name.endswith(".lock"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(folder, name))
                    removed += 1
    return removed


def clear_staging(store: GitStore, staging: str, names: list[str] | None) -> None:
    """Delete staged refs once sync has integrated them: ``names`` (what one fetch staged), and
    anything else under ``staging`` (left by an interrupted run), or all of it for ``None``.

    Staging refs are only a landing place; left in place, every later fetch, push and listing
    pays for them (10,000 of them left by a restore made libgit2's next fetch of 100 refs take 13 s
    instead of 2.8 s at 10,000 tasks).
    """
    if names is not None:
        _drop_staged(store, names)
        leftover = any(files for _dir, _subdirs, files in os.walk(store.path / staging))
        if not leftover:
            leftover = any(name.startswith(staging) for name in read_packed_refs(store.path))
        if not leftover:
            return
    delete_refs(store, staging)


def bundle_create(store: GitStore, file: Path, refs: list[str]) -> None:
    """Write a Git bundle of ``refs`` atomically (libgit2 has no bundles: the git CLI writes it)."""
    if not refs:
        raise RemoteError("Nothing to bundle: the ledger has no refs yet.")
    if shutil.which("git") is None:
        raise RemoteError(_NO_GIT_FOR_BUNDLES.format(what="Writing bundle", where=file.name))
    tmp = file.with_name(file.name + ".tmp")
    try:
        done = subprocess.run(
            ["git", "--git-dir", str(store.path), "bundle", "create", "-q", str(tmp), "--stdin"],
            input="\n".join(refs) + "\n",
            capture_output=True,
            text=True,
            timeout=3600,
        )
        if done.returncode != 0:
            raise RemoteError(f"Writing bundle {file.name} failed: {done.stderr.strip()}")
        os.replace(tmp, file)
    except (OSError, subprocess.SubprocessError) as exc:
        raise RemoteError(f"Writing bundle {file.name}: {strerror(exc)}.") from exc
    finally:
        tmp.unlink(missing_ok=True)


def bundle_heads(file: Path) -> dict[str, str]:
    """The refs a bundle holds (checked with ``git bundle list-heads``)."""
    done = _git_cli(["bundle", "list-heads", str(file)], "Reading bundle", str(file))
    out: dict[str, str] = {}
    for line in done.stdout.splitlines():
        oid, _, name = line.partition(" ")
        if name.startswith(LEDGER_PREFIX):
            out[name] = oid
    return out


def fetch_bundle(store: GitStore, file: Path, staging: str) -> TransferStats:
    """Fetch a bundle's ledger refs into ``staging`` (the git CLI reads bundles; libgit2 cannot)."""
    _git_cli(
        [
            "--git-dir",
            str(store.path),
            "fetch",
            "--no-write-fetch-head",
            "--quiet",
            str(file),
            f"+{LEDGER_PREFIX}*:{staging}*",
        ],
        "Reading bundle",
        str(file),
    )
    return TransferStats()


__all__ = [
    "GIT_MIN_VERSION",
    "PUSH_CHUNK",
    "STAGING_LOCK_FILE",
    "STAGING_LOCK_TIMEOUT_S",
    "TransferStats",
    "bundle_create",
    "bundle_heads",
    "clear_staging",
    "drop_stale_staging_locks",
    "fetch_bundle",
    "fetch_refs",
    "git_transport",
    "init_bare",
    "is_bare_repository",
    "list_remote_refs",
    "push_refs",
    "remote_url",
    "set_ledger_remote",
    "staging_lock",
]
