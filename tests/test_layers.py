"""The package's layering, read from its source: pygit2 only in storage, no module importing a
layer above its own, no import cycles, and an explicit public API (``__all__``) that the lazy
exports of ``gitledger/__init__.py`` match.

The layers, lowest first, are docs/ARCHITECTURE.md's; a module may import its own layer and the
ones below. Imports under ``if TYPE_CHECKING:`` do not count (they never run).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

import gitledger
from gitledger import lazy

PACKAGE = Path(gitledger.__file__).resolve().parent

LAYERS: list[set[str]] = [
    # foundations: no state, no storage
    {"errors", "edits", "text", "redact", "refs", "paths", "tokens", "settings", "lazy", "structs"},
    {"budget"},  # the packer core of budgeted texts (on text and tokens)
    {"transcripts", "agents"},
    {"gitstore"},  # the only pygit2 importer
    {"model", "merge"},  # records and their format; the three-way merge
    {"changes", "gates", "updates", "queries"},  # diffs, messages, clocks; gates; edits; query args
    {"derived", "index_schema", "index"},  # disposable SQLite caches; the task index, its tables
    {"ledger", "claims", "keys", "verify"},  # the Ledger; claims, idempotency keys, verify
    # services on the ledger
    {"memory", "context", "transfer", "trackers", "graph", "changelog"},
    # the agent-facing machinery, and sync, which moves every kind of ref (it merges fuse refs)
    {"fuse", "judge", "hooks", "tasklist", "sync", "handoff"},
    # interfaces: parse, one call, render (agents.install writes agents' settings for setup)
    {"mcp_server", "mcp_stdio", "cli", "agents.install", "__main__", "__init__"},
]
LAYER = {name: i for i, names in enumerate(LAYERS) for name in names}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(name: str) -> set[str]:
    """The modules ``name`` imports at run time (anywhere in the file), as full names."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[: len(package.split(".")) - child.level + 1]
                    target = ".".join([*base, *([child.module] if child.module else [])])
                else:
                    target = child.module or ""
                for alias in child.names:
                    sub = f"{target}.{alias.name}"
                    found.add(sub if sub in MODULES else target)
            elif isinstance(child, ast.Import):
                found.update(alias.name for alias in child.names)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found - {name}


def area(name: str) -> str:
    """``gitledger.fuse.store`` -> ``fuse``: the layer table names top-level modules (and a
    submodule where it sits in another layer than its package, ``agents.install``)."""
    parts = name.split(".")
    if len(parts) > 2 and ".".join(parts[1:3]) in LAYER:
        return ".".join(parts[1:3])
    return parts[1] if len(parts) > 1 else "__init__"


GRAPH = {name: {i for i in imports(name) if i.split(".")[0] == "gitledger"} for name in MODULES}


def test_every_module_has_a_layer() -> None:
    assert {area(name) for name in MODULES} - set(LAYER) == set()


def test_pygit2_only_in_storage() -> None:
    users = {n for n in MODULES if "pygit2" in {i.split(".")[0] for i in imports(n)}}
    assert users, "the storage package imports pygit2"
    assert {area(n) for n in users} == {"gitstore"}, sorted(users)


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = sorted(
        f"{name} -> {target}"
        for name, targets in GRAPH.items()
        for target in targets
        if LAYER.get(area(target), 0) > LAYER.get(area(name), len(LAYERS))
    )
    assert upward == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_import_cycles() -> None:
    between_areas: dict[str, set[str]] = {}
    for name, targets in GRAPH.items():
        between_areas.setdefault(area(name), set()).update(
            area(t) for t in targets if area(t) != area(name)
        )
    # A package importing its own __init__ (``from . import x``) is not a cycle of modules.
    within = {
        name: {t for t in targets if t in MODULES and not name.startswith(t + ".")}
        for name, targets in GRAPH.items()
    }
    assert _cycles(between_areas) == []
    assert _cycles(within) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# --- the public API ----------------------------------------------------------------------------

PUBLIC = sorted(
    name
    for name, path in MODULES.items()
    if not any(part.startswith("_") for part in name.split(".")[1:]) and name != "gitledger"
)


@pytest.mark.parametrize("name", PUBLIC)
def test_each_module_says_what_it_exports(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{name} has no __all__"
    missing = [n for n in exported if not hasattr(module, n)]
    assert missing == [], f"{name}.__all__ names what it does not have"
    assert len(set(exported)) == len(exported)


LAZY_PACKAGES = [
    "gitledger",
    "gitledger.judge",
    "gitledger.cli",
    "gitledger.fuse",
    "gitledger.gitstore",
]


def _type_checking_exports(package: str) -> dict[str, tuple[str, str]]:
    """The oracle for ``lazy.exports_of``: the package's ``if TYPE_CHECKING:`` imports read with
    ``ast``, a ``*`` import expanded from the imported module's ``__all__``."""
    init = Path(importlib.import_module(package).__file__ or "")
    table: dict[str, tuple[str, str]] = {}
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and _type_checking(node):
            for statement in ast.walk(node):
                if isinstance(statement, ast.ImportFrom):
                    module = importlib.util.resolve_name(
                        "." * statement.level + (statement.module or ""), package
                    )
                    for alias in statement.names:
                        if alias.name == "*":
                            names = importlib.import_module(module).__all__
                            table.update({name: (module, name) for name in names})
                        else:
                            table[alias.asname or alias.name] = (module, alias.name)
    return table


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_lazy_exports_are_the_type_checking_names(package: str) -> None:
    """What a type checker sees and what the package hands out are one list: the names, the
    modules they come from and the objects they are."""
    module = importlib.import_module(package)
    init = Path(module.__file__ or "")
    oracle = _type_checking_exports(package)
    assert oracle
    assert lazy.exports_of(init.read_text(encoding="utf-8"), package, str(init.parent)) == oracle
    if package == "gitledger.fuse":  # most of its names are imported eagerly, a few lazily
        assert set(oracle) <= set(module.__all__)
    else:
        own = {"__version__", "main"}  # defined in the package itself
        assert set(module.__all__) - own == set(oracle)
    assert dir(module) == sorted(module.__all__)
    for name, (source, attr) in oracle.items():
        assert getattr(module, name) is getattr(importlib.import_module(source), attr)
    folder = init.parent
    assert not [n for n in oracle if (folder / f"{n}.py").is_file() or (folder / n).is_dir()]
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'nothing'"):
        module.nothing  # noqa: B018


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_lazy_exports_come_from_their_modules_public_names(package: str) -> None:
    """A package re-exports what its modules offer: each name is in the ``__all__`` of the
    module it comes from."""
    outside = sorted(
        f"{module}.{attr}"
        for module, attr in _type_checking_exports(package).values()
        if attr not in importlib.import_module(module).__all__
    )
    assert outside == []


def test_a_star_exports_module_all_is_read_from_its_source(tmp_path: Path) -> None:
    """``from .module import *`` stands for the module's literal ``__all__``, read without
    importing it; a module whose ``__all__`` is not a literal list is imported to learn it."""
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "plain.py").write_text('raise RuntimeError("imported")\n__all__ = ["a", \'b\']\n')
    source = (
        "if TYPE_CHECKING:  # a comment\n"
        "    from .plain import *  # noqa: F403\n"
        "    from .other import (  # names\n"
        "        c as c,\n"
        "        d as e,\n"
        "    )\n"
        "    from ..up import f as f\n"
        "x = 1\n"
        "    from .after import g\n"
    )
    table = lazy.exports_of(source, "top.pkg", str(folder))
    assert table == {
        "a": ("top.pkg.plain", "a"),
        "b": ("top.pkg.plain", "b"),
        "c": ("top.pkg.other", "c"),
        "e": ("top.pkg.other", "d"),
        "f": ("top.up", "f"),
    }
    assert (
        lazy.module_all("json", str(tmp_path / "json")) == importlib.import_module("json").__all__
    )


@pytest.mark.parametrize(
    ("package", "heavy"),
    [
        ("gitledger", "gitledger.ledger"),
        ("gitledger.gitstore", "pygit2"),
        ("gitledger.judge", "gitledger.judge.step"),
        ("gitledger.cli", "click"),
    ],
)
def test_importing_a_lazy_package_loads_none_of_its_modules(package: str, heavy: str) -> None:
    """Importing the package, and asking it for ``__all__``, imports none of what it exports."""
    probe = f"import sys, {package} as p; p.__all__; print({heavy!r} in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "False"


def test_a_typed_user_can_import_every_public_name(tmp_path: Path) -> None:
    """``mypy --strict`` on a user's module that imports every name each lazy package exports:
    each is an explicit re-export with its real type (the names only a ``__getattr__`` hands
    out would be errors or ``Any``)."""
    users = []
    for package in LAZY_PACKAGES:  # a module each: two packages may export one name
        names = sorted(importlib.import_module(package).__all__)
        user = tmp_path / f"user_{package.replace('.', '_')}.py"
        user.write_text(f"from {package} import {', '.join(names)}  # noqa\n", encoding="utf-8")
        users.append(str(user))
    (tmp_path / "user_types.py").write_text(
        "from gitledger import Ledger\nreveal_type(Ledger.open)\n", encoding="utf-8"
    )
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=silent"]
        + ["--ignore-missing-imports", *users, str(tmp_path / "user_types.py")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(PACKAGE.parent)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "gitledger.ledger.Ledger" in result.stdout
