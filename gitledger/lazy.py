"""Names a package exports on first use (PEP 562), so importing the package stays cheap.

A lazy package lists what it exports once, in its ``if TYPE_CHECKING:`` block, in the forms type
checkers read as re-exports: ``from .module import Name as Name`` for a name picked from a module,
``from .module import *`` for the whole of a module's ``__all__``. ``lazy_exports`` reads that
same block from the package's source (lazy_loader's stub files do this for scientific Python),
so the names a type checker sees and the names the package hands out at run time cannot drift,
and a hook or a CLI command still pays only for the modules it touches: nothing is read until a
name is first asked for, and a ``*`` module's ``__all__`` is read from its source, not imported.
``import_spec`` finds a ``"module:attr"`` name the same way for the CLI's command groups and the
MCP server's optional services.
"""

from __future__ import annotations

import importlib
import os

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

# ``re`` is imported only when a name is first asked for, and paths are ``os.path``'s: a bare
# ``import gitledger`` loads neither ``re`` nor ``pathlib`` (about 2 ms of a whole process).
_BLOCK = r"^if TYPE_CHECKING:[^\n]*\n((?:[ \t]+[^\n]*\n|[ \t]*\n)*)"  # at the left margin
_IMPORT = r"from\s+(\.+)([\w.]*)\s+import\s+(\*|\(([^)]*)\)|[^\n]+)"
_COMMENT = r"#[^\n]*"
_ALL = r"^__all__\s*=\s*\[([^\]]*)\]"
_QUOTED = r"[\"'](\w+)[\"']"


def exports_of(source: str, package: str, folder: str) -> dict[str, tuple[str, str]]:
    """Exported name -> (module, the name there), read from the ``if TYPE_CHECKING:`` block of a
    package's source. ``package`` is the package's name and ``folder`` its directory, to resolve
    relative imports; a ``*`` import stands for its module's ``__all__``."""
    import re

    parts = package.split(".")
    table: dict[str, tuple[str, str]] = {}
    for block in re.findall(_BLOCK, source, re.MULTILINE):
        for dots, rest, what, inside in re.findall(_IMPORT, re.sub(_COMMENT, "", block)):
            module = ".".join([*parts[: len(parts) - len(dots) + 1], *([rest] if rest else [])])
            if what == "*":
                base = os.path.join(folder, *[os.pardir] * (len(dots) - 1), *rest.split("."))
                for name in module_all(module, base):
                    table[name] = (module, name)
                continue
            for item in (inside or what).split(","):
                words = item.split()
                if words:  # "Name" or "Name as Alias"
                    table[words[-1]] = (module, words[0])
    return table


def module_all(module: str, base: str) -> list[str]:
    """A module's ``__all__``, read from its source (``base`` is its path without ``.py``) when it
    is a literal list there, else from the imported module."""
    import re

    for file in (base + ".py", os.path.join(base, "__init__.py")):
        try:
            with open(file, encoding="utf-8") as handle:
                found = re.search(_ALL, handle.read(), re.MULTILINE)
        except OSError:
            continue
        if found:
            return re.findall(_QUOTED, found.group(1))
    return list(importlib.import_module(module).__all__)


def lazy_exports(
    namespace: dict[str, Any], also: Iterable[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the package whose ``globals()`` is ``namespace``.
    A name its ``if TYPE_CHECKING:`` block imports is imported from its module when first asked
    for and kept in the package's namespace, so the next look-up costs nothing; the name of one
    of the package's modules is left to the import system. Without an
    ``__all__`` of its own, the package's ``__all__`` is those names and ``also`` (names the
    package defines itself); ``__dir__`` lists ``__all__``."""
    package = namespace["__name__"]
    file = namespace["__file__"]
    folder = os.path.dirname(file)
    table: dict[str, tuple[str, str]] = {}

    def exports() -> dict[str, tuple[str, str]]:
        if not table:
            with open(file, encoding="utf-8") as handle:
                table.update(exports_of(handle.read(), package, folder))
        return table

    def __getattr__(name: str) -> Any:
        if name == "__all__":
            value: Any = sorted({*exports(), *also})
        elif os.path.isfile(os.path.join(folder, name + ".py")) or os.path.isdir(
            os.path.join(folder, name)
        ):
            # ``from package import module`` asks here first; the import system then loads the
            # module (no export shares a module's name), and the hook path reads no source.
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        else:
            found = exports().get(name)
            if found is None:
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            value = getattr(importlib.import_module(found[0]), found[1])
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return list(namespace["__all__"] if "__all__" in namespace else __getattr__("__all__"))

    return __getattr__, __dir__


def import_spec(spec: str) -> object | None:
    """What ``"module:attr"`` names, or None when that module itself is not there (a command
    group or a service not written yet is simply absent). Any other import error is raised: a
    module that is there but does not import is a bug, and the caller decides how loud it is."""
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            return None
        raise
    return getattr(module, attr, None)


__all__ = ["exports_of", "import_spec", "lazy_exports", "module_all"]
