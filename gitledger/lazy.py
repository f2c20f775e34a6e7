"""Names a package exports on first use (PEP 562), so importing the package stays cheap.

``gitledger`` and ``gitledger.judge`` each map a public name to the module that defines it; a
hook or a CLI command then pays only for the modules it touches. The package keeps the same
names under ``if TYPE_CHECKING:`` for type checkers; ``tests/test_layers.py`` checks both lists
agree.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
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


__all__ = ["lazy_exports"]
