"""Which remote a sync talks to, and the remote's place in this ledger.

``resolve_remote`` turns what the caller named (a remote of the project, then of the ledger, a
URL, a path, a bundle) into the URL every other step uses; ``check_local`` refuses a local path
that is neither a repository nor a bundle (and creates a bare repository where a push may);
``staging_namespace`` is where that remote's fetched refs wait to be integrated, one namespace per remote
(the digest of its redacted URL), outside ``refs/gitledger/`` so no listing sees them.
``setup_remote`` gives the ledger a remote whose plain ``git fetch``/``git push`` carry ledger
refs, and ``init_warning`` tells ``init`` in a fresh clone that the project's remote holds work
not here yet.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from .. import gitstore
from ..edits import Interface, word_command
from ..errors import InvalidInput, LedgerError, Step
from ..ledger import Ledger
from ..refs import LEDGER_PREFIX, LEDGER_REFSPEC, STAGING_ROOT, TASKS_PREFIX

DEFAULT_REMOTE = "origin"


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
        f"'git remote add {name} URL', or run ",
        Step("remote setup", name),
        ".",
    )


def check_local(url: str, *, create: bool) -> None:
    """A local path must be a repository or a bundle; a missing one is created only to push to."""
    if not gitstore.is_local_url(url):
        return
    path = gitstore.local_path(url)
    if not path.exists():
        if not create:
            raise InvalidInput(f"Nothing to restore at {path}: no such file or repository.")
        gitstore.init_bare(path)
    elif not is_bundle(url) and gitstore.is_bare_repository(path) is None:
        raise InvalidInput(
            f"{path} exists and is not a Git repository or bundle; name a repository, a bundle, "
            f"or a new path."
        )


def staging_namespace(url: str) -> str:
    """The namespace where refs fetched from ``url`` wait to be integrated."""
    digest = hashlib.sha256(gitstore.redact_url(url).encode()).hexdigest()[:12]
    return f"{STAGING_ROOT}{digest}/"


def is_bundle(url: str) -> bool:
    """Whether ``url`` is a Git bundle file (read-only: restore from it, never push to it)."""
    if not gitstore.is_local_url(url):
        return False
    path = gitstore.local_path(url)
    if path.is_file():
        with path.open("rb") as fh:
            return fh.read(16) in (b"# v2 git bundle\n", b"# v3 git bundle\n")
    return False


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
            f"No remote '{name}' in this project; give its URL: ",
            Step("remote setup", name),
            ".",
        )
    if gitstore.is_local_url(target):
        target = str(gitstore.local_path(target).absolute())
    return gitstore.set_ledger_remote(
        ledger.store, name, target, fetch=[LEDGER_REFSPEC], push=[LEDGER_REFSPEC]
    )


def init_warning(
    ledger: Ledger, remote: str = DEFAULT_REMOTE, interface: Interface = "python"
) -> str | None:
    """For ``init`` in a fresh clone: a warning when the project's remote has ledger refs not here,
    naming the restore as ``interface`` offers it.

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
        f"run {word_command('restore', interface, remote)} to bring them in."
    )


__all__ = [
    "DEFAULT_REMOTE",
    "check_local",
    "init_warning",
    "is_bundle",
    "resolve_remote",
    "setup_remote",
    "staging_namespace",
]
