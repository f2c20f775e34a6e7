"""Everything gitledger asks of Git, and the only package that imports pygit2.

- ``store``: the ledger's bare repository (files under refs, compare-and-swap, history, locks).
- ``errors``: the one reading of pygit2's and git's error words into gitledger's errors.
- ``signing``: commit signing and checking with the user's ssh-keygen or gpg.
- ``urls``: remote URLs (local or not, printed without secrets); ``transport``: fetch, push,
  bundles, through the git command where it is installed and libgit2 otherwise.
- ``raw``: Git's on-disk formats read and written directly (loose refs, packed-refs, packs).
- ``documents``: a small JSON document on a ref, written under the lock.

The layers above import from here (``from .gitstore import GitStore``); the names below are the
package's interface.
"""

from __future__ import annotations

from ..lazy import lazy_exports

# Each name is imported from its module on first use (PEP 562): a caller that needs only
# ``raw`` (packed-refs, loose refs) or ``urls`` does not load pygit2 with ``store``.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["LEDGER_PREFIX"], "gitledger.refs"),
    **dict.fromkeys(
        [
            "Document",
            "load_json",
            "read_document",
            "update_document",
            "write_document",
            "write_version",
        ],
        "gitledger.gitstore.documents",
    ),
    **dict.fromkeys(["RefMoved", "disk_trouble", "map_git_errors"], "gitledger.gitstore.errors"),
    **dict.fromkeys(
        ["BulkWriter", "RefsStamp", "read_packed_refs", "ref_tips", "refs_stamp"],
        "gitledger.gitstore.raw",
    ),
    **dict.fromkeys(
        ["SignatureCheck", "Signer", "signer_from_config", "verify_signature"],
        "gitledger.gitstore.signing",
    ),
    **dict.fromkeys(
        [
            "CommitInfo",
            "GitStore",
            "LOCK_FILE",
            "LOCK_TIMEOUT_S",
            "STALE_REF_LOCK_S",
            "commit_exists",
            "delete_refs",
            "git_identity",
            "has_object",
            "is_ancestor",
            "merge_base",
        ],
        "gitledger.gitstore.store",
    ),
    **dict.fromkeys(
        [
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
        ],
        "gitledger.gitstore.transport",
    ),
    **dict.fromkeys(["is_local_url", "local_path", "redact_url"], "gitledger.gitstore.urls"),
}

__all__ = [
    "GIT_MIN_VERSION",
    "LEDGER_PREFIX",
    "LOCK_FILE",
    "LOCK_TIMEOUT_S",
    "PUSH_CHUNK",
    "STAGING_LOCK_FILE",
    "STAGING_LOCK_TIMEOUT_S",
    "STALE_REF_LOCK_S",
    "BulkWriter",
    "CommitInfo",
    "Document",
    "GitStore",
    "RefMoved",
    "RefsStamp",
    "SignatureCheck",
    "Signer",
    "TransferStats",
    "bundle_create",
    "bundle_heads",
    "clear_staging",
    "commit_exists",
    "delete_refs",
    "disk_trouble",
    "drop_stale_staging_locks",
    "fetch_bundle",
    "fetch_refs",
    "git_identity",
    "git_transport",
    "has_object",
    "init_bare",
    "is_ancestor",
    "is_bare_repository",
    "is_local_url",
    "list_remote_refs",
    "load_json",
    "local_path",
    "map_git_errors",
    "merge_base",
    "push_refs",
    "read_document",
    "read_packed_refs",
    "redact_url",
    "ref_tips",
    "refs_stamp",
    "remote_url",
    "set_ledger_remote",
    "signer_from_config",
    "staging_lock",
    "update_document",
    "verify_signature",
    "write_document",
    "write_version",
]

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:  # for type checkers: the names above, statically
    from ..refs import LEDGER_PREFIX
    from .documents import (
        Document,
        load_json,
        read_document,
        update_document,
        write_document,
        write_version,
    )
    from .errors import RefMoved, disk_trouble, map_git_errors
    from .raw import BulkWriter, RefsStamp, read_packed_refs, ref_tips, refs_stamp
    from .signing import SignatureCheck, Signer, signer_from_config, verify_signature
    from .store import (
        LOCK_FILE,
        LOCK_TIMEOUT_S,
        STALE_REF_LOCK_S,
        CommitInfo,
        GitStore,
        commit_exists,
        delete_refs,
        git_identity,
        has_object,
        is_ancestor,
        merge_base,
    )
    from .transport import (
        GIT_MIN_VERSION,
        PUSH_CHUNK,
        STAGING_LOCK_FILE,
        STAGING_LOCK_TIMEOUT_S,
        TransferStats,
        bundle_create,
        bundle_heads,
        clear_staging,
        drop_stale_staging_locks,
        fetch_bundle,
        fetch_refs,
        git_transport,
        init_bare,
        is_bare_repository,
        list_remote_refs,
        push_refs,
        remote_url,
        set_ledger_remote,
        staging_lock,
    )
    from .urls import is_local_url, local_path, redact_url
