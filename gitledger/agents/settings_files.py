"""A user's settings file read and written without losing anything of theirs (the rules of
``agents/settings.py``'s docstring that concern the file itself, each kept here once):

- **Read only what is a settings file** (``read_config``): a regular file of at most
  ``MAX_SETTINGS_BYTES``, in UTF-8; for the project's files, a path that resolves outside the
  project is refused (``check_inside``).
- **Write back what was read**: JSON numbers keep their text (``RawNumber``, ``parse_json``,
  ``dump_json``), a CRLF file stays CRLF, a lone surrogate is refused before anything is written.
- **Write atomically, never through a planted link** (``write_atomic``,
  ``replace_settings_file``); a read-only file is refused (``check_settings_writable``).
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import stat
from pathlib import Path
from typing import Any

from ..errors import InvalidInput

MAX_SETTINGS_BYTES = 8 << 20


# --- reading a settings file --------------------------------------------------------------------


def check_inside(path: Path, root: Path | None) -> None:
    """Refuse a project file that resolves outside the project (a committed symlink)."""
    if root is None:
        return
    real = Path(os.path.realpath(path))
    top = Path(os.path.realpath(root))
    if real != top and top not in real.parents:
        raise InvalidInput(
            f"{path} resolves to {real}, outside the project {root}; nothing was written. "
            "Remove the link, or set the file up by hand."
        )


def read_config(path: Path, *, root: Path | None = None) -> bytes | None:
    """The bytes of a settings file, or None when there is none (a dangling link is none).

    Refuses what is no settings file (see the module's rules) with ``InvalidInput``.
    """
    check_inside(path, root)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InvalidInput(f"{path} is a symlink loop; nothing was written.") from exc
        raise InvalidInput(f"Cannot read {path} ({exc.strerror}); nothing was written.") from exc
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO or device, not a file"
        raise InvalidInput(f"{path} is {kind}; nothing was written. Point setup at a file.")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InvalidInput(f"Cannot read {path} ({exc.strerror}); nothing was written.") from exc
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped since the stat above
            raise InvalidInput(f"{path} is not a regular file; nothing was written.")
        data = handle.read(MAX_SETTINGS_BYTES + 1)
    if len(data) > MAX_SETTINGS_BYTES:
        raise InvalidInput(
            f"{path} is larger than {MAX_SETTINGS_BYTES:,} bytes: not a settings file; "
            "nothing was written."
        )
    return data


def decode(path: Path, data: bytes | None) -> str:
    """The text of a settings file, "" when absent; not UTF-8 is refused. Newlines are kept
    as they are (no universal-newline translation), so a CRLF file round-trips."""
    if data is None:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"Cannot read {path}: it is not UTF-8 (byte {exc.start}); fix it by hand; "
            "nothing was written."
        ) from exc


# --- JSON that round-trips ----------------------------------------------------------------------


class RawNumber:
    """A JSON number kept as written (``1e400``, ``1.50``): parsed to a float it would be
    written back as ``Infinity`` or ``1.5``."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RawNumber) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"RawNumber({self.text!r})"

    def __deepcopy__(self, memo: dict[int, Any]) -> RawNumber:
        return self


def _lone_surrogate(value: Any, where: str = "") -> str | None:
    """Where the first string with a lone surrogate is (JSON allows "\\ud800"; UTF-8 does not)."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return at or "a string"
        elif isinstance(item, dict):
            for key, sub in item.items():
                stack.append((key, f"{at}/{key!a}"))
                stack.append((sub, f"{at}/{key!a}"))
        elif isinstance(item, list):
            stack.extend((sub, f"{at}[{i}]") for i, sub in enumerate(item))
    return None


JSON_SPACE = " \t\n\r"  # the whitespace RFC 8259 allows around a value


def parse_json(path: Path, text: str, what: str = "settings") -> dict[str, Any]:
    """A settings file's JSON object ({} for an empty file), numbers kept as written. Empty means
    JSON's own whitespace only: other characters Python counts as space (\\x1f, U+2028) are not
    JSON, so such a file is refused rather than overwritten."""
    if not text.strip(JSON_SPACE):
        return {}
    try:
        value = json.loads(text, parse_float=RawNumber, parse_constant=RawNumber)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}). "
            "fix it by hand; nothing was written."
        ) from exc
    except RecursionError as exc:
        raise InvalidInput(
            f"{path} nests JSON too deeply to read; fix it by hand; nothing was written."
        ) from exc
    if not isinstance(value, dict):
        raise InvalidInput(
            f"{path} holds a JSON {type(value).__name__}, not an object; fix it by hand; "
            "nothing was written."
        )
    where = _lone_surrogate(value)
    if where is not None:
        raise InvalidInput(
            f"{path} has a lone surrogate (an unpaired \\ud800-\\udfff escape) at {where}: "
            "not text. Fix it by hand; nothing was written."
        )
    return value


def dump_json(value: Any, like: str = "") -> str:
    """``value`` as JSON text (indent 2), raw numbers as written, newlines as in ``like``."""
    nonce = secrets.token_hex(8)
    raws: dict[str, str] = {}

    def swap(item: Any) -> Any:
        if isinstance(item, RawNumber):
            key = f"{nonce}:{len(raws)}"
            raws[key] = item.text
            return key
        if isinstance(item, dict):
            return {k: swap(v) for k, v in item.items()}
        if isinstance(item, list):
            return [swap(v) for v in item]
        return item

    text = json.dumps(swap(value), indent=2, ensure_ascii=False) + "\n"
    if raws:
        text = re.sub(f'"({nonce}:\\d+)"', lambda m: raws[m.group(1)], text)
    if "\r\n" in like:
        text = text.replace("\n", "\r\n")
    return text


# --- writing ------------------------------------------------------------------------------------


def check_settings_writable(path: Path) -> None:
    """Refuse a settings file the user made read-only: its mode says "do not edit", and an
    atomic replace (which needs only the directory writable) would silently override it."""
    target = Path(os.path.realpath(path))
    if target.exists():
        mode = target.stat().st_mode
        if not os.access(target, os.W_OK) or not mode & 0o222:
            raise InvalidInput(
                f"{path} is read-only; nothing was written. Make it writable (chmod u+w) and "
                f"run again, or add the entry by hand."
            )


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Put ``data`` at ``path``: a random temporary name in the same folder, created
    ``O_EXCL|O_NOFOLLOW`` (so nothing planted there is followed), then renamed over ``path``
    (a link at ``path`` itself is replaced, not written through)."""
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidInput(
            f"Cannot create {folder} ({exc.strerror}); nothing was written."
        ) from exc
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    flags |= getattr(os, "O_CLOEXEC", 0)
    tmp = folder / f".{path.name}.{secrets.token_hex(6)}.gitledger-tmp"
    try:
        fd = os.open(tmp, flags, 0o600)
    except OSError as exc:
        raise InvalidInput(
            f"Cannot write in {folder} ({exc.strerror}); nothing was written."
        ) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            os.fchmod(handle.fileno(), (0o666 & ~_umask()) if mode is None else mode)
        os.replace(tmp, path)  # a crash leaves the old file or the new one, never half of one
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InvalidInput(f"Cannot write {path} ({exc.strerror}); nothing was written.") from exc


def replace_settings_file(path: Path, text: str, *, backup: bytes | None = None) -> Path | None:
    """Write ``text`` to ``path`` atomically, keeping the file's mode; with ``backup`` the old
    bytes go to ``<name>.bak`` first. A symlinked file (a dotfiles repository) is written
    through: its target is replaced and the link stays a link. Returns the backup's path."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:  # never write half a file for text that is not text
        raise InvalidInput(
            f"Cannot write {path}: the new text is not UTF-8; nothing was written."
        ) from exc
    check_settings_writable(path)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    mode = None
    with_mode = target.exists()
    if with_mode:
        mode = target.stat().st_mode & 0o7777
    saved = None
    if backup is not None:
        saved = target.with_name(target.name + ".bak")
        write_atomic(saved, backup, mode=mode)
    write_atomic(target, data, mode=mode)
    return saved


__all__ = [
    "MAX_SETTINGS_BYTES",
    "RawNumber",
    "check_inside",
    "check_settings_writable",
    "decode",
    "dump_json",
    "parse_json",
    "read_config",
    "replace_settings_file",
    "write_atomic",
]
