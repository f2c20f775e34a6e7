"""Everything gitledger asks of Git, and the only module that imports pygit2.

The ledger is a bare repository of its own. A version of a record is a commit whose tree holds a
few small files; a record is a ref pointing at its newest version. This module knows nothing of
tasks: it stores files under refs, moves refs by compare-and-swap, walks history and maps pygit2's
errors into gitledger's (``map_git_errors``), so the layers above never see a ``GitError``.

Why compare-and-swap and a lock both: libgit2 moves a ref only if it still points where the
caller read it (``Reference.set_target`` on a looked-up ref), so a lost update is impossible even
for writers that bypass gitledger. Creating a ref that does not exist yet is not atomic in
libgit2 (its existence check runs before the ref lock), and retrying CAS under contention burns
time, so gitledger writers also take an exclusive ``flock`` on ``gitledger.lock`` in the ledger:
with it, a measured two-process race needed no retries at all.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pygit2

from .errors import CorruptRecord, LedgerError, NoLedger, StorageError

LOCK_FILE = "gitledger.lock"
LOCK_TIMEOUT_S = 60.0
_REF_LOCK_RETRIES = 8


class RefMoved(Exception):
    """Internal: the ref was not where the writer read it. Callers retry or report a conflict."""


@dataclass(frozen=True)
class CommitInfo:
    oid: str
    parents: tuple[str, ...]
    author_name: str
    author_email: str
    time: int
    offset: int
    message: str
    signed: bool


def _strerror(exc: BaseException) -> str:
    return str(exc).strip() or exc.__class__.__name__


@contextlib.contextmanager
def map_git_errors(what: str) -> Iterator[None]:
    """Turn whatever pygit2 or the file system raises into a gitledger error naming the fix."""
    try:
        yield
    except LedgerError:
        raise
    except RefMoved:
        raise
    except pygit2.GitError as exc:
        text = _strerror(exc)
        if "hash mismatch" in text or "corrupt" in text.lower():
            raise CorruptRecord(
                f"{what}: Git object is corrupt ({text}). Run 'gitledger verify' to list what is "
                f"damaged, then restore it from a backup."
            ) from exc
        if "lock" in text.lower():
            raise StorageError(
                f"{what}: a Git lock file is in the way ({text}). If no other gitledger process "
                f"is running, run 'gitledger repair' to remove stale locks."
            ) from exc
        raise StorageError(f"{what}: Git failed ({text}).") from exc
    except KeyError as exc:
        raise CorruptRecord(f"{what}: a Git object is missing ({exc}).") from exc
    except (OSError, ValueError) as exc:
        raise StorageError(f"{what}: {_strerror(exc)}.") from exc


class GitStore:
    """A bare Git repository holding records under refs."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            self.repo = pygit2.Repository(str(self.path), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
        except pygit2.GitError as exc:
            raise NoLedger(
                f"{self.path} is not a gitledger ledger ({_strerror(exc)}). Run 'gitledger init' "
                f"or pass --ledger PATH."
            ) from exc
        if not self.repo.is_bare:
            raise NoLedger(f"{self.path} is a Git work tree, not a ledger; pass the ledger path.")
        if os.environ.get("GITLEDGER_FSYNC") == "1":
            pygit2.settings.enable_fsync_gitdir(True)

    @classmethod
    def init(cls, path: Path) -> GitStore:
        path = Path(path)
        with map_git_errors(f"creating a ledger at {path}"):
            if not (path / "HEAD").exists():
                path.mkdir(parents=True, exist_ok=True)
                repo = pygit2.init_repository(str(path), bare=True)
                # A ledger is never checked out and has no branches; keep git from guessing one.
                repo.config["gitledger.format"] = "1"
                repo.config["core.logAllRefUpdates"] = "false"
                repo.config["gc.auto"] = "0"
                # Ledger writes keep refs loose: packing them makes each ref write rescan the
                # packed-refs file (40 ms at 100,000 refs against 1 ms loose).
                repo.config["gc.packRefs"] = "false"
                description = path / "description"
                description.write_text("gitledger task ledger\n")
        return cls(path)

    # --- locking -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def lock(self, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
        """Hold the ledger's writer lock; the kernel drops it if the holder dies (even kill -9)."""
        fd = os.open(self.path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            deadline = time.monotonic() + timeout
            delay = 0.001
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        raise
                    if time.monotonic() > deadline:
                        raise StorageError(
                            f"Another gitledger process has held the ledger lock for over "
                            f"{timeout:.0f} s; wait for it, or stop it if it hung."
                        ) from exc
                    time.sleep(delay)
                    delay = min(delay * 2, 0.05)
            yield
        finally:
            os.close(fd)  # closing releases the flock

    # --- refs ----------------------------------------------------------------------------------

    def tip(self, refname: str) -> str | None:
        with map_git_errors(f"reading {refname}"):
            try:
                ref = self.repo.references.get(refname)
            except ValueError:
                return None
            if ref is None:
                return None
            return str(ref.target)

    def refs(self, prefix: str) -> list[tuple[str, str]]:
        """Every ref under ``prefix`` with its target, sorted by name."""
        out: list[tuple[str, str]] = []
        with map_git_errors(f"listing {prefix}"):
            for ref in self.repo.references.iterator():
                name = ref.name
                if name.startswith(prefix):
                    try:
                        out.append((name, str(ref.target)))
                    except pygit2.GitError:
                        continue
        out.sort()
        return out

    def ref_names_starting(self, directory: str, leaf_prefix: str) -> list[str]:
        """Names of refs ``directory/<leaf>`` whose leaf starts with ``leaf_prefix``.

        Reads the loose-ref directory and ``packed-refs`` directly: libgit2's iterator has no glob
        through pygit2 and would list every ref in the ledger (about a second at 100,000 loose).
        """
        found: set[str] = set()
        loose = self.path / directory
        try:
            with os.scandir(loose) as entries:
                for entry in entries:
                    if entry.name.startswith(leaf_prefix) and not entry.name.endswith(".lock"):
                        found.add(f"{directory}/{entry.name}")
        except FileNotFoundError:
            pass
        packed = self.path / "packed-refs"
        if packed.exists():
            want = f"{directory}/{leaf_prefix}"
            with open(packed, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    if line.startswith(("#", "^")):
                        continue
                    parts = line.rstrip("\n").split(" ", 1)
                    if len(parts) == 2 and parts[1].startswith(want):
                        found.add(parts[1])
        return sorted(found)

    def delete_ref(self, refname: str, expected_tip: str) -> None:
        with map_git_errors(f"deleting {refname}"):
            ref = self.repo.references.get(refname)
            if ref is None:
                return
            if str(ref.target) != expected_tip:
                raise RefMoved(refname)
            ref.delete()

    # --- objects -------------------------------------------------------------------------------

    def read_files(self, commit: str, names: tuple[str, ...]) -> dict[str, bytes | None]:
        """Read files from a commit's tree; a missing file reads as None."""
        with map_git_errors(f"reading commit {commit[:12]}"):
            obj = self.repo[commit]
            if not isinstance(obj, pygit2.Commit):
                raise CorruptRecord(f"{commit[:12]} is a {obj.type_str}, not a commit.")
            tree = obj.tree
            out: dict[str, bytes | None] = {}
            for name in names:
                try:
                    entry = tree[name]
                except KeyError:
                    out[name] = None
                    continue
                blob = self.repo[entry.id]
                if not isinstance(blob, pygit2.Blob):
                    raise CorruptRecord(f"{commit[:12]}:{name} is not a file.")
                out[name] = blob.data
            return out

    def commit_info(self, commit: str) -> CommitInfo:
        with map_git_errors(f"reading commit {commit[:12]}"):
            obj = self.repo[commit]
            if not isinstance(obj, pygit2.Commit):
                raise CorruptRecord(f"{commit[:12]} is a {obj.type_str}, not a commit.")
            return self._info(obj)

    @staticmethod
    def _info(obj: pygit2.Commit) -> CommitInfo:
        return CommitInfo(
            oid=str(obj.id),
            parents=tuple(str(p) for p in obj.parent_ids),
            author_name=obj.author.name,
            author_email=obj.author.email,
            time=obj.author.time,
            offset=obj.author.offset,
            message=obj.message,
            signed=obj.gpg_signature[0] is not None,
        )

    def walk(self, tip: str) -> Iterator[CommitInfo]:
        """Every commit reachable from ``tip``, newest first (topological)."""
        with map_git_errors(f"walking history from {tip[:12]}"):
            walker = self.repo.walk(
                pygit2.Oid(hex=tip),
                pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME,
            )
            for obj in walker:
                yield self._info(obj)

    def first_parent_chain(self, tip: str) -> Iterator[CommitInfo]:
        with map_git_errors(f"walking history from {tip[:12]}"):
            oid: str | None = tip
            while oid is not None:
                info = self.commit_info(oid)
                yield info
                oid = info.parents[0] if info.parents else None

    def check_objects(self, commit: str) -> None:
        """Read (and so re-hash) a commit, its tree and every blob in it."""
        with map_git_errors(f"checking {commit[:12]}"):
            obj = self.repo[commit]
            if not isinstance(obj, pygit2.Commit):
                raise CorruptRecord(f"{commit[:12]} is a {obj.type_str}, not a commit.")
            obj.read_raw()
            tree = obj.tree
            tree.read_raw()
            for entry in tree:
                self.repo[entry.id].read_raw()

    # --- writing -------------------------------------------------------------------------------

    def write(
        self,
        refname: str,
        files: dict[str, bytes],
        message: str,
        author: tuple[str, str],
        parents: list[str],
        expected_tip: str | None,
    ) -> str:
        """Commit ``files`` as a tree and move ``refname`` to it, only if it is at ``expected_tip``.

        ``expected_tip=None`` means the ref must not exist yet. Raises ``RefMoved`` otherwise.
        """
        with map_git_errors(f"writing {refname}"):
            repo = self.repo
            builder = repo.TreeBuilder()
            for name in sorted(files):
                builder.insert(name, repo.create_blob(files[name]), pygit2.enums.FileMode.BLOB)
            tree = builder.write()
            now = int(time.time())
            offset = _local_offset_minutes()
            signature = pygit2.Signature(author[0], author[1], now, offset)
            commit = repo.create_commit(
                None,
                signature,
                signature,
                message,
                tree,
                [pygit2.Oid(hex=p) for p in parents],
            )
            self._move_ref(refname, commit, expected_tip)
            return str(commit)

    def _move_ref(self, refname: str, target: pygit2.Oid, expected_tip: str | None) -> None:
        # A stale '<ref>.lock' left by a killed writer surfaces as OSError or GitError "locked";
        # another live writer holding it is transient, so back off a little before giving up.
        delay = 0.002
        for attempt in range(_REF_LOCK_RETRIES):
            try:
                if expected_tip is None:
                    if self.repo.references.get(refname) is not None:
                        raise RefMoved(refname)
                    self.repo.references.create(refname, target)
                else:
                    ref = self.repo.references.get(refname)
                    if ref is None or str(ref.target) != expected_tip:
                        raise RefMoved(refname)
                    ref.set_target(target)
                return
            except pygit2.AlreadyExistsError as exc:
                raise RefMoved(refname) from exc
            except (pygit2.GitError, OSError) as exc:
                text = _strerror(exc).lower()
                if "lock" not in text and "exists" not in text:
                    if "modified" in text or "does not match" in text or "not the expected" in text:
                        raise RefMoved(refname) from exc
                    raise
                if attempt == _REF_LOCK_RETRIES - 1:
                    raise
                time.sleep(delay)
                delay *= 2

    def set_ref(self, refname: str, target: str, expected_tip: str | None) -> None:
        """Point ``refname`` at an existing commit, by compare-and-swap."""
        with map_git_errors(f"updating {refname}"):
            self._move_ref(refname, pygit2.Oid(hex=target), expected_tip)

    def stale_ref_locks(self, older_than: float) -> list[Path]:
        cutoff = time.time() - older_than
        out: list[Path] = []
        refs_dir = self.path / "refs"
        for root, _dirs, names in os.walk(refs_dir):
            for name in names:
                if name.endswith(".lock"):
                    p = Path(root) / name
                    with contextlib.suppress(FileNotFoundError):
                        if p.stat().st_mtime < cutoff:
                            out.append(p)
        packed_lock = self.path / "packed-refs.lock"
        if packed_lock.exists() and packed_lock.stat().st_mtime < cutoff:
            out.append(packed_lock)
        return out


def _local_offset_minutes() -> int:
    local = time.localtime()
    return (local.tm_gmtoff or 0) // 60


def git_identity(start: Path | None) -> tuple[str, str] | None:
    """The user's Git identity: GIT_AUTHOR_NAME/EMAIL as Git honours them, else user.name and
    user.email from the project's or the global config."""
    env_name, env_email = os.environ.get("GIT_AUTHOR_NAME"), os.environ.get("GIT_AUTHOR_EMAIL")
    if env_name and env_email:
        return env_name, env_email
    try:
        if start is not None:
            found = pygit2.discover_repository(str(start))
            if found:
                config = pygit2.Repository(found).config
            else:
                config = pygit2.Config.get_global_config()
        else:
            config = pygit2.Config.get_global_config()
        return config["user.name"], config["user.email"]
    except (KeyError, OSError, pygit2.GitError):
        return None


def commit_exists(project_dir: Path, rev: str) -> bool:
    """Whether the project's repository has a commit named ``rev`` (for evidence that cites one)."""
    try:
        found = pygit2.discover_repository(str(project_dir))
        if not found:
            return False
        obj = pygit2.Repository(found).revparse_single(rev)
        return isinstance(obj.peel(pygit2.Commit), pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        return False
