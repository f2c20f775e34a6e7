"""Remote URLs: which are paths on this machine, and how to print one without its secrets.

No pygit2 here: ``sync`` and the CLI call these to word a message before any Git work starts.
"""

from __future__ import annotations

import re
from pathlib import Path

_SCP_LIKE = re.compile(r"^[A-Za-z0-9._-]+@[^/:]+:")
_URL_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/@]*)@")
_ANY_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]*:[^/@\s]*@")


def redact_url(url: str) -> str:
    """The URL with any password or token replaced by ``***`` (safe to print or log)."""
    match = _URL_USERINFO.match(url)
    if not match:
        return url
    userinfo = match.group(2)
    user = userinfo.split(":", 1)[0] if ":" in userinfo else "***"
    shown = f"{user}:***" if ":" in userinfo else "***"
    return match.group(1) + shown + "@" + url[match.end() :]


def is_local_url(url: str) -> bool:
    """Whether ``url`` names a path on this machine (a plain path or file://)."""
    if url.startswith("file://"):
        return True
    if "://" in url or _SCP_LIKE.match(url):
        return False
    return True


def local_path(url: str) -> Path:
    return Path(url[len("file://") :] if url.startswith("file://") else url).expanduser()


def redact_text(text: str, url: str) -> str:
    """git's words with the URL's password or token masked wherever git repeats it (it quotes
    the URL, or only its host part, as in "unable to look up user:token@host")."""
    text = _ANY_USERINFO.sub(r"\1***@", text.replace(url, redact_url(url)))
    match = _URL_USERINFO.match(url)
    if match and match.group(2):
        userinfo = match.group(2)
        secret = userinfo.split(":", 1)[1] if ":" in userinfo else userinfo
        if secret:
            text = text.replace(secret, "***")
    return text
