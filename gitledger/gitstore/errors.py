"""What pygit2 and the git command report, as gitledger's errors: the one place their words are read.

libgit2 reports a failure as a ``GitError`` (or ``OSError``/``KeyError``/``ValueError``) with a
message, the git command as stderr text, and neither has codes for what gitledger must decide: is
an object damaged, is a lock file in the way, did a ref move under us. ``kind_of`` reads those
words once, for every caller: ``map_git_errors`` (local storage), ``remote_failure`` and
``map_remote_errors`` (fetch, push, bundles) and the ref mover's retry loop (``store._move_ref``).
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator
from typing import Literal

import pygit2

from ..errors import CorruptRecord, LedgerError, RemoteError, RemoteMoved, Step, StorageError
from .urls import redact_text, redact_url

Kind = Literal["corrupt", "lock", "moved", "other"]

# Words libgit2 and git use for a damaged or incomplete object ("inflate": a truncated zlib stream).
CORRUPT_WORDS = (
    "hash mismatch",
    "corrupt",
    "did not send all necessary objects",
    "missing blob",
    "missing tree",
    "bad object",
    "inflate",
)
# Words for "the ref is not where you read it": a lost race, locally or on the remote.
MOVED_WORDS = (
    "non-fastforward",
    "non-fast-forward",
    "not present locally",
    "fetch first",
    "stale info",
    "couldn't find remote ref",
    "modified",
    "does not match",
    "not the expected",
    "already exists",
)


class RefMoved(Exception):
    """Internal: the ref was not where the writer read it. Callers retry or report a conflict."""


def strerror(exc: BaseException) -> str:
    return str(exc).strip() or exc.__class__.__name__


def kind_of(text: str) -> Kind:
    """What a libgit2 or git message says happened: a damaged object, a lock file in the way
    (libgit2 reports a held ``<ref>.lock`` as "failed to lock file"), a ref that moved, or other."""
    lower = text.lower()
    if any(word in lower for word in CORRUPT_WORDS) or ("invalid" in lower and "pack" in lower):
        return "corrupt"
    if "lock" in lower:
        return "lock"
    if any(word in lower for word in MOVED_WORDS):
        return "moved"
    return "other"


@contextlib.contextmanager
def map_git_errors(what: str) -> Iterator[None]:
    """Turn whatever pygit2 or the file system raises into a gitledger error naming the fix."""
    try:
        yield
    except (LedgerError, RefMoved):
        raise
    except KeyError as exc:
        raise CorruptRecord(f"{what}: a Git object is missing ({exc}).") from exc
    except (pygit2.GitError, OSError, ValueError) as exc:
        raise storage_failure(what, exc) from exc


_NO_SPACE = ("no space left", "disk is full", "disk quota exceeded")
_READ_ONLY = ("read-only file system", "readonly database", "permission denied")


Trouble = tuple[str | Step, ...]


def disk_trouble(exc: BaseException, where: str = "the ledger") -> Trouble | None:
    """The words for a write that failed because the disk is full or the ledger cannot be
    written (errno, or the message of libgit2 or SQLite), naming what to do, as the parts of an
    error (``errors.Step``: each interface words the step); None otherwise. One rule for the
    store, the flock and the derived caches."""
    code = getattr(exc, "errno", None)
    lower = strerror(exc).lower()
    if code in (errno.ENOSPC, errno.EDQUOT) or any(w in lower for w in _NO_SPACE):
        return (
            f"no space left on the disk holding {where}; nothing was written. Free space on that "
            "disk ('df' on the ledger's folder, which ",
            Step("where"),
            " names, shows how much is left), then retry",
        )
    if code in (errno.EROFS, errno.EACCES, errno.EPERM) or any(w in lower for w in _READ_ONLY):
        return (
            f"{where} cannot be written here ({strerror(exc)}); nothing was written, and reading "
            "it still works. Write as a user who can write it, on a writable mount, or with ",
            Step("name the ledger"),
            " naming a writable copy",
        )
    return None


def storage_failure(what: str, exc: BaseException) -> LedgerError:
    """The gitledger error for a failed local Git operation."""
    text = strerror(exc)
    trouble = disk_trouble(exc)
    if trouble is not None:
        return StorageError(f"{what}: ", *trouble, ".")
    kind = kind_of(text)
    if "packed references" in text.lower():
        return CorruptRecord(
            f"{what}: the ledger's packed-refs file is damaged ({text}), so Git can neither list "
            "nor move refs. Restore that file from a backup, or move it aside (mv packed-refs "
            "packed-refs.damaged, in the ledger's folder, which ",
            Step("where"),
            " names) and put back its readable '<commit id> <ref>' lines with git update-ref.",
        )
    if kind == "corrupt" and isinstance(exc, pygit2.GitError):
        return CorruptRecord(
            f"{what}: Git object is corrupt ({text}). Run ",
            Step("verify"),
            " to list what is damaged, then restore it from a backup.",
        )
    if kind == "lock":
        return StorageError(
            f"{what}: a Git lock file is in the way ({text}). If no other gitledger process "
            "is running, run ",
            Step("repair"),
            " to remove stale locks.",
        )
    if isinstance(exc, pygit2.GitError):
        return StorageError(f"{what}: Git failed ({text}).")
    return StorageError(f"{what}: {text}.")


def remote_failure(what: str, url: str, text: str) -> RemoteError:
    """The gitledger error for a failed fetch, push or bundle, in git's or libgit2's words
    (``text`` already has the URL's credentials masked)."""
    shown = redact_url(url)
    kind = kind_of(text)
    if kind == "moved":
        return RemoteMoved(
            f"{what} {shown}: the remote has changes this ledger does not have yet, or a ref "
            f"moved meanwhile ({text})."
        )
    if kind == "corrupt":
        return RemoteError(
            f"{what} {shown}: the remote sent a corrupt or incomplete object ({text}). Nothing "
            f"was changed here; repair the remote (git fsck there) or use another backup."
        )
    return RemoteError(
        f"{what} {shown} failed: {text}. Check the URL, the network and your access rights; "
        f"nothing was changed here."
    )


@contextlib.contextmanager
def map_remote_errors(what: str, url: str) -> Iterator[None]:
    """Errors of a libgit2 push or fetch as ``RemoteError`` naming the remote (credentials
    redacted)."""
    try:
        yield
    except LedgerError:
        raise
    except (pygit2.GitError, OSError, ValueError, KeyError) as exc:
        text = redact_text(strerror(exc), url)
        raise remote_failure(what, url, text) from exc


__all__ = [
    "CORRUPT_WORDS",
    "Kind",
    "MOVED_WORDS",
    "RefMoved",
    "disk_trouble",
    "kind_of",
    "map_git_errors",
    "map_remote_errors",
    "remote_failure",
    "storage_failure",
    "strerror",
]
