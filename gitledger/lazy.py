"""Names a package exports on first use (PEP 562), so importing the package stays cheap.

``gitledger`` and ``gitledger.judge`` each map a public name to the module that defines it; a
hook or a CLI command then pays only for the modules it touches. The package keeps the same
names under ``if TYPE_CHECKING:`` for type checkers; ``tests/test_layers.py`` checks both lists
agree. ``import_spec`` finds a ``"module:attr"`` name the same way for the CLI's command groups
and the MCP server's optional services.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from typing import Any


def lazy_exports(
    namespace: dict[str, Any], exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the package whose ``globals()`` is ``namespace``:
    a name in ``exports`` is imported from its module when first asked for and kept in the
    package's namespace, so the next look-up costs nothing. ``__dir__`` lists ``__all__``."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return list(namespace.get("__all__", sorted(exports)))

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


__all__ = ["import_spec", "lazy_exports"]
