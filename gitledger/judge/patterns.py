"""The rules' regular expressions: compiled on first use, and from a kept compiled form where the
judge keeps its read cache.

A hook's ``judge step`` is a new process each time, and Python's ``re`` parses and compiles a
pattern in Python code: the 18 or so patterns a judged step needs cost it about 6 ms, as much as
reading and judging the step. ``Lazy`` compiles a pattern only when a rule first uses it. With
``keep_in(folder)`` (the judge's cache folder in the ledger, ``judge/cache.py``) the compiled
programs ``re`` produced are kept in a file there and a later process builds each pattern from
its program directly (``_sre.compile``, what ``re.compile`` itself ends with) instead of parsing
it again.

The kept programs belong to one interpreter: the file is named by its cache tag and the regular
expression engine's ``MAGIC``, and holds ``sys.version`` and a checksum; a pattern is looked up by
its text and flags. Anything unexpected — another Python, a file that does not read, a program
the engine refuses, ``re``'s internals not where they are in CPython 3.11 and later — and the
pattern is compiled by ``re.compile`` as always, so the rules see the same pattern either way.
"""

from __future__ import annotations

import re
import sys

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

# (pattern, flags) -> the arguments of _sre.compile after the pattern
_kept: dict[tuple[str, int], tuple[Any, ...]] = {}
_made: dict[tuple[str, int], tuple[Any, ...]] = {}
_folder: list[Path] = []  # where they are kept, once keep_in has found it
_CAP = 256  # programs kept at most (patterns of earlier versions fall out)


def _file_name() -> str:
    import _sre

    return f"patterns.{sys.implementation.cache_tag}-{_sre.MAGIC}.bin"


def keep_in(folder: Path | None) -> None:
    """Keep the compiled programs in ``folder`` (created when they are saved) and read the ones
    kept there. None: compile as ``re`` does, keep nothing."""
    _folder.clear()
    _kept.clear()
    if folder is None:
        return
    _folder.append(folder)
    import marshal
    import zlib

    try:
        raw = (folder / _file_name()).read_bytes()
        checksum, body = int.from_bytes(raw[:4], "big"), raw[4:]
        if zlib.crc32(body) != checksum:
            return
        data = marshal.loads(body)
        if not isinstance(data, dict) or data.get("version") != sys.version:
            return
        programs = data.get("programs")
        if isinstance(programs, dict):
            _kept.update(programs)
    except (OSError, ValueError, EOFError, TypeError):
        return


def save() -> None:
    """Write the programs compiled in this process, with those kept, where ``keep_in`` said;
    nothing when no new pattern was compiled. A failure to write changes nothing."""
    if not _folder or not _made:
        return
    import contextlib
    import marshal
    import os
    import zlib

    programs = {**_kept, **_made}
    if len(programs) > _CAP:
        programs = dict(list(programs.items())[-_CAP:])
    body = marshal.dumps({"version": sys.version, "programs": programs})
    folder = _folder[0]
    temporary = folder / f"{_file_name()}.{os.getpid()}.tmp"
    try:
        folder.mkdir(exist_ok=True)
        temporary.write_bytes(zlib.crc32(body).to_bytes(4, "big") + body)
        os.replace(temporary, folder / _file_name())
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            temporary.unlink()  # a half-written file is not left beside the kept one
        return
    _kept.update(_made)
    _made.clear()


def forget(folder: Path | None) -> None:
    """Remove the programs kept in ``folder`` (a disabled judge keeps nothing)."""
    _kept.clear()
    _made.clear()
    if folder is not None:
        import contextlib

        with contextlib.suppress(OSError):
            (folder / _file_name()).unlink()


def compile_pattern(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(pattern, flags)``, from the kept program when there is one."""
    import _sre

    flags = int(flags)
    key = (pattern, flags)
    kept = _kept.get(key)
    if kept is not None:
        try:
            compiled: re.Pattern[str] = _sre.compile(pattern, *kept)
            return compiled
        except Exception:  # noqa: BLE001 - a program this engine refuses: compile it anew
            _kept.pop(key, None)
    if _folder:
        made = _program(pattern, flags)
        if made is not None:
            _made[key] = made[1]
            return made[0]
    return re.compile(pattern, flags)


def _program(pattern: str, flags: int) -> tuple[re.Pattern[str], tuple[Any, ...]] | None:
    """The pattern compiled as ``re._compiler.compile`` does it, with the arguments it gave
    ``_sre.compile``; None where ``re``'s internals are not those of CPython 3.11+."""
    try:
        import _sre
        from re import _compiler, _parser  # type: ignore[attr-defined]

        parsed = _parser.parse(pattern, flags)
        code = _compiler._code(parsed, flags)
        groupindex = dict(parsed.state.groupdict)
        indexgroup: list[str | None] = [None] * parsed.state.groups
        for name, index in groupindex.items():
            indexgroup[index] = name
        args = (
            int(flags | parsed.state.flags),
            [int(op) for op in code],  # named constants as plain ints (marshal)
            parsed.state.groups - 1,
            groupindex,
            tuple(indexgroup),
        )
        compiled: re.Pattern[str] = _sre.compile(pattern, *args)
        return compiled, args
    except Exception:  # noqa: BLE001 - any surprise: re.compile, as always
        return None


class Lazy:
    """A pattern compiled on first use: compiling them all costs a process several ms, and most
    steps (the gate skips them, or they are below the floor) never need one."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        if self._compiled is None:
            self._compiled = compile_pattern(self.pattern, self.flags)
        value = getattr(self._compiled, name)
        setattr(self, name, value)  # the next lookup finds the compiled pattern's own method
        return value


__all__ = ["Lazy", "compile_pattern", "forget", "keep_in", "save"]
