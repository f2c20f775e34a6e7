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
# ``raw`` (packed-refs, loose refs) or ``urls`` does not load pygit2 with ``store``. This block
# is the one list of them, for type checkers and for ``lazy_exports`` alike.
TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from ..refs import LEDGER_PREFIX as LEDGER_PREFIX
    from .documents import Document as Document
    from .documents import load_json as load_json
    from .documents import read_document as read_document
    from .documents import update_document as update_document
    from .documents import write_document as write_document
    from .documents import write_version as write_version
    from .errors import RefMoved as RefMoved
    from .errors import disk_trouble as disk_trouble
    from .errors import map_git_errors as map_git_errors
    from .raw import BulkWriter as BulkWriter
    from .raw import RefsStamp as RefsStamp
    from .raw import read_packed_refs as read_packed_refs
    from .raw import ref_tips as ref_tips
    from .raw import refs_stamp as refs_stamp
    from .signing import SignatureCheck as SignatureCheck
    from .signing import Signer as Signer
    from .signing import signer_from_config as signer_from_config
    from .signing import verify_signature as verify_signature
    from .store import LOCK_FILE as LOCK_FILE
    from .store import LOCK_TIMEOUT_S as LOCK_TIMEOUT_S
    from .store import STALE_REF_LOCK_S as STALE_REF_LOCK_S
    from .store import CommitInfo as CommitInfo
    from .store import GitStore as GitStore
    from .store import commit_exists as commit_exists
    from .store import delete_refs as delete_refs
    from .store import git_identity as git_identity
    from .store import has_object as has_object
    from .store import is_ancestor as is_ancestor
    from .store import merge_base as merge_base
    from .transport import *  # noqa: F403
    from .urls import is_local_url as is_local_url
    from .urls import local_path as local_path
    from .urls import redact_url as redact_url

__getattr__, __dir__ = lazy_exports(globals())
