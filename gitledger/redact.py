"""Secrets out of what leaves the machine: redaction of fuse snapshots and memory facts.

Fuse snapshots and memory facts copy text from transcripts, and tool output in a transcript can
hold tokens and keys; sync pushes both to the code's remote. So every string of a snapshot and
every fact's text passes through ``redact`` before it is committed, and what looks like a secret
is replaced by ``[redacted: KIND]``:

- provider keys and tokens by their documented shapes: AWS access key ids (``AKIA…``), GitHub
  tokens (``ghp_``, ``gho_``, ``ghu_``, ``ghs_``, ``ghr_``, ``github_pat_``), Slack (``xox?-``),
  Stripe (``sk_live_``…), Google API keys (``AIza…``), OpenAI/Anthropic-style ``sk-…`` keys,
  JSON web tokens;
- private key blocks (``-----BEGIN … PRIVATE KEY-----`` to its end line, or to the end of the
  text when the end was cut off);
- the password of a URL (``https://user:PASSWORD@host``; the user and host stay);
- the value of an assignment whose name says secret (``password=…``, ``api_key: …``,
  ``AWS_SECRET_ACCESS_KEY=…``, ``Authorization: Bearer …``);
- any other long high-entropy token (24+ characters of letters, digits and ``+/_=-`` mixing upper
  case, lower case and digits, Shannon entropy at least 4.3 bits a character). Hexadecimal
  strings are left alone: commit ids and hashes are what evidence cites.

Why a focused detector and not ``detect-secrets``: measured in ``benchmarks/redact_cost.py``
(docs/FUSE.md has the figures), detect-secrets 1.5 costs two orders of magnitude more per
snapshot, because it runs each of its ~25 plugins' regexes and entropy checks line by line and
builds its settings and plugin objects per scan; a save runs in a PreCompact hook with a time
budget. The shapes above are the ones its plugins look for that occur in coding transcripts.
Redaction errs toward removing: a false positive costs a token of a snapshot, a miss a leaked key.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "private-key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.S,
        ),
    ),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b")),
    (
        "github-token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})"),
    ),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("stripe-key", re.compile(r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("api-key", re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
]
# scheme://user:password@host -> keep the scheme, the user and the host
_URL_CREDENTIALS = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://[^\s/:@'\"]*):([^\s/@'\"]+)@")
_ASSIGNMENT = re.compile(
    r"(?i)\b([A-Z0-9_.-]*(?:passw(?:or)?d|passphrase|secret|token|api[_-]?key|access[_-]?key"
    r"|private[_-]?key|client[_-]?secret|auth(?:orization)?)[A-Z0-9_.-]*)"
    r"(\s*[:=]\s*)(['\"]?)(bearer\s+|basic\s+|token\s+)?([^\s'\",;]{8,})"
)
_TOKEN = re.compile(r"[A-Za-z0-9+/_=-]{24,}")
_HEX = re.compile(r"^[0-9a-fA-F]+$")
MIN_ENTROPY = 4.3


def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def _high_entropy(token: str) -> bool:
    if _HEX.match(token) or "/" in token.strip("/") and token.count("/") > 2:
        return False  # hashes and commit ids; paths
    if not (re.search(r"[a-z]", token) and re.search(r"[A-Z]", token) and re.search(r"\d", token)):
        return False
    return entropy(token) >= MIN_ENTROPY


def _looks_secret(value: str) -> bool:
    """An assigned value worth hiding: not a plain word, a placeholder or a variable."""
    if value.startswith(("$", "<", "{", "[redacted")) or value.lower() in (
        "none",
        "null",
        "true",
        "false",
        "required",
        "optional",
    ):
        return False
    return not re.fullmatch(r"[A-Z_]+|[a-z]+(?:_[a-z]+)+", value)  # an env name, an identifier


def redact(text: str) -> str:
    """``text`` with every secret-looking part replaced by ``[redacted: KIND]``."""
    if not text:
        return text
    for kind, pattern in _PATTERNS:
        text = pattern.sub(f"[redacted: {kind}]", text)
    text = _URL_CREDENTIALS.sub(r"\1:[redacted: password]@", text)

    def assignment(m: re.Match[str]) -> str:
        if not _looks_secret(m.group(5)):
            return m.group(0)
        return f"{m.group(1)}{m.group(2)}{m.group(3)}{m.group(4) or ''}[redacted: secret]"

    text = _ASSIGNMENT.sub(assignment, text)
    return _TOKEN.sub(
        lambda m: "[redacted: high-entropy]" if _high_entropy(m.group(0)) else m.group(0), text
    )


def redact_value(value: Any, redactor: Callable[[str], str] = redact) -> Any:
    """Every string inside a JSON-like value redacted (dicts, lists, strings; the rest as is)."""
    if isinstance(value, str):
        return redactor(value)
    if isinstance(value, list):
        return [redact_value(v, redactor) for v in value]
    if isinstance(value, dict):
        return {k: redact_value(v, redactor) for k, v in value.items()}
    return value


__all__ = ["entropy", "redact", "redact_value"]
