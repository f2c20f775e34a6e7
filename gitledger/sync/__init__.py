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

Refs other than tasks are created and fast-forwarded the same way; a diverged fuse snapshot, memory
fact, session's judge state or settings document is merged by its kind (``merges.py`` says how).
Any other diverged ref is kept at the local tip, not pushed, and reported in ``unmerged`` (the
CLI exits 3). With ``sync.fuse=false`` (``settings.py``) fuse and memory refs are never pushed.

The package, one concept a module (each importing only those listed before it):

- ``report``: ``SyncReport``, what an operation did ref by ref, and the ``Progress`` callback.
- ``remote``: which remote (``resolve_remote``), its checks, its staging namespace,
  ``setup_remote`` and the ``init`` warning.
- ``merges``: two diverged histories of one ref joined by the ref's kind (``merge_diverged``).
- ``integrate``: the fetched tips checked, then created, fast-forwarded, kept or merged.
- ``exchange``: one round with the remote: fetch into staging, integrate, plan, push, check.
- ``operations``: ``sync``, ``restore``, ``backup``, ``claim``, each rounds of ``exchange``.
"""

from __future__ import annotations

from .exchange import FETCH_BY_NAME_MAX
from .merges import JUDGE_STATE_FILES, SETTINGS_DOCUMENTS
from .operations import MAX_ATTEMPTS, backup, claim, record_sync, restore, sync
from .remote import DEFAULT_REMOTE, init_warning, resolve_remote, setup_remote
from .report import Progress, SyncReport

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
    "record_sync",
    "resolve_remote",
    "restore",
    "setup_remote",
    "sync",
]
