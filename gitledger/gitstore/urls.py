"""Remote URLs: which are paths on this machine, and how to print one without its secrets.

Local or not is decided as Git decides it (``url_is_local_not_ssh`` in git's connect.c), so
gitledger never treats as a folder what git would dial: ``scheme://…`` is a URL (``file://`` a
path), ``host:path`` and ``user@host:path`` are SSH, and anything with a ``/`` before its first
``:`` (or no ``:`` at all) is a path. Secrets travel in the userinfo (``user:token@``), the query
(``?access_token=…``) and the fragment; ``redact_url`` masks all three wherever a URL is shown.

No pygit2 here: ``sync`` and the CLI call these to word a message before any Git work starts.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..errors import InvalidInput

_URL_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/@]*)@")
_ANY_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]*:[^/@\s]*@")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_MIN_SECRET = 4  # shorter query values are not masked inside git's free text (too many matches)


def redact_url(url: str) -> str:
    """The URL with any password or token replaced by ``***`` (safe to print or log): the
    password of its userinfo (all of it when there is no user name), every query value and the
    fragment."""
    shown = url
    match = _URL_USERINFO.match(url)
    if match:
        userinfo = match.group(2)
        user = userinfo.split(":", 1)[0] if ":" in userinfo else "***"
        masked = f"{user}:***" if ":" in userinfo else "***"
        shown = match.group(1) + masked + "@" + url[match.end() :]
    if is_local_url(url) and not url.startswith("file://"):
        return shown  # a path: '?' and '#' are only characters of a file name
    base, hashmark, fragment = shown.partition("#")
    path, question, query = base.partition("?")
    if question:
        query = "&".join(
            (p.split("=", 1)[0] + "=***") if "=" in p else ("***" if p else "")
            for p in query.split("&")
        )
    return path + question + query + (hashmark + "***" if fragment else hashmark)


def _secrets(url: str) -> list[str]:
    """The secret parts of ``url`` as they appear in it (for masking them in git's words)."""
    found: list[str] = []
    match = _URL_USERINFO.match(url)
    if match and match.group(2):
        userinfo = match.group(2)
        found.append(userinfo.split(":", 1)[1] if ":" in userinfo else userinfo)
    if not is_local_url(url) or url.startswith("file://"):
        base, _hash, fragment = url.partition("#")
        query = base.partition("?")[2]
        found += [p.split("=", 1)[1] for p in query.split("&") if "=" in p]
        found.append(fragment)
    return sorted((s for s in found if s and len(s) >= _MIN_SECRET), key=len, reverse=True)


def redact_text(text: str, url: str) -> str:
    """git's words with the URL's secrets masked wherever git repeats them (it quotes the URL,
    or only its host part, as in "unable to look up user:token@host")."""
    text = _ANY_USERINFO.sub(r"\1***@", text.replace(url, redact_url(url)))
    for secret in _secrets(url):
        text = text.replace(secret, "***")
    return text


def is_local_url(url: str) -> bool:
    """Whether ``url`` names a path on this machine (a plain path or file://), as git decides:
    ``host:path`` without a slash before the colon is SSH, not a folder."""
    if url.startswith("file://"):
        return True
    if _SCHEME.match(url):
        return False
    colon = url.find(":")
    if colon == -1:
        return True
    slash = url.find("/")
    return slash != -1 and slash < colon


def local_path(url: str) -> Path:
    """The path a local URL names: ``file:///a%20b`` is ``/a b`` (``file://localhost/…`` too);
    a ``file://`` URL naming another host, or carrying a query, is refused."""
    if not url.startswith("file://"):
        return Path(url).expanduser()
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost") or parts.query or parts.fragment:
        raise InvalidInput(
            f"{redact_url(url)} is not a path on this machine: a file:// URL is file:///PATH "
            f"(or file://localhost/PATH), without a host, query or fragment."
        )
    path = unquote(parts.path)
    if not path.startswith("/") or "\x00" in path:
        raise InvalidInput(f"{redact_url(url)} does not name an absolute path.")
    return Path(path)


__all__ = [
    "is_local_url",
    "local_path",
    "redact_text",
    "redact_url",
]
