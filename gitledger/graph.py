"""Graphs of tasks: the parent tree and the dependencies, as Mermaid, Graphviz DOT or SVG.

SVG runs Graphviz's ``dot`` as a subprocess; it is the only part of gitledger that needs it, and a
missing ``dot`` is a ``MissingTool`` error naming how to install it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import Fix, InvalidInput, MissingTool, StorageError
from .index import OPEN_STATUSES
from .model import short_ids
from .text import one_line

if TYPE_CHECKING:
    from .ledger import Ledger

__all__ = [
    "GRAPH_FORMATS",
    "Graph",
    "graph_dot",
    "graph_mermaid",
    "graph_svg",
    "graph_tree",
    "render_graph",
    "task_graph",
]


GRAPH_FORMATS = ("mermaid", "dot", "svg", "tree")


@dataclass
class Graph:
    nodes: dict[str, tuple[str, str]]  # id -> (status, goal)
    edges: list[tuple[str, str, str]]  # (from, to, "parent" | "needs")
    shorts: dict[str, str]
    truncated: bool = False
    owners: dict[str, str | None] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "nodes": [
                {
                    "id": i,
                    "short_id": self.shorts[i],
                    "status": s,
                    "goal": g,
                    "owner": self.owners.get(i),
                }
                for i, (s, g) in sorted(self.nodes.items())
            ],
            "edges": [{"from": a, "to": b, "kind": k} for a, b, k in self.edges],
            "truncated": self.truncated,
        }


def task_graph(ledger: Ledger, task_id: str | None = None, *, limit: int = 300) -> Graph:
    """The parent tree and dependencies of one task (its ancestors, its descendants and everything
    those descendants need), or of all unfinished work. Walks with a seen-set, so a cycle (which the ledger's gates
    refuse, but a merge or foreign writer could make) is drawn, never followed forever."""
    idx = ledger.index()
    rows = idx.graph_rows()
    children: dict[str, list[str]] = {}
    for tid, (_s, _g, parent, _d) in rows.items():
        if parent:
            children.setdefault(parent, []).append(tid)
    chosen: list[str] = []
    seen: set[str] = set()

    def add(tid: str) -> None:
        if tid not in seen:
            seen.add(tid)
            chosen.append(tid)

    if task_id is not None:
        root = ledger.resolve(task_id)
        current: str | None = rows[root][2] if root in rows else None
        while current is not None and current not in seen:
            add(current)
            current = rows[current][2] if current in rows else None
        subtree: list[str] = []
        stack = [root]
        while stack:
            tid = stack.pop()
            if tid in seen and tid != root:
                continue
            add(tid)
            subtree.append(tid)
            stack.extend(sorted(children.get(tid, []), reverse=True))
        # What the task and its descendants need, transitively; not what its ancestors need.
        queue = subtree
        while queue:
            tid = queue.pop(0)
            for dep in rows.get(tid, ("", "", None, []))[3]:
                if dep not in seen:
                    add(dep)
                    queue.append(dep)
    else:
        for tid in sorted(rows, key=lambda i: (rows[i][0] not in OPEN_STATUSES, i)):
            if rows[tid][0] in OPEN_STATUSES:
                add(tid)
                for other in [rows[tid][2], *rows[tid][3]]:
                    if other:
                        add(other)
    truncated = len(chosen) > limit
    chosen = chosen[:limit]
    keep = set(chosen)
    nodes = {
        tid: (rows[tid][0], rows[tid][1]) if tid in rows else ("missing", "(no such task)")
        for tid in chosen
    }
    edges: list[tuple[str, str, str]] = []
    for tid in chosen:
        if tid not in rows:
            continue
        parent = rows[tid][2]
        if parent and parent in keep:
            edges.append((parent, tid, "parent"))
        edges += [(tid, dep, "needs") for dep in rows[tid][3] if dep in keep]
    owners = {t.id: t.owner for t in idx.tasks_by_id(chosen)}
    return Graph(nodes, edges, short_ids(nodes), truncated, owners)


_COLORS = {
    "open": "#ffffff",
    "active": "#cfe8ff",
    "blocked": "#ffd6d6",
    "done": "#d6f5d6",
    "cancelled": "#e6e6e6",
    "missing": "#fff3c4",
}


def _label(text: str, width: int = 48) -> str:
    return one_line(text, width)


def graph_mermaid(graph: Graph) -> str:
    out = ["graph TD"]
    for tid, (status, goal) in graph.nodes.items():
        text = _label(goal).replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")
        out.append(
            f'  t_{graph.shorts[tid]}["{graph.shorts[tid]} · {status}<br/>{text}"]:::{status}'
        )
    for a, b, kind in graph.edges:
        arrow = "-->" if kind == "parent" else "-.->|needs|"
        out.append(f"  t_{graph.shorts[a]} {arrow} t_{graph.shorts[b]}")
    for status, color in _COLORS.items():
        out.append(f"  classDef {status} fill:{color},stroke:#555")
    return "\n".join(out) + "\n"


def graph_dot(graph: Graph) -> str:
    def q(text: str) -> str:
        escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return '"' + escaped + '"'

    out = [
        "digraph gitledger {",
        "  rankdir=TB;",
        '  node [shape=box, style="rounded,filled", fontname="sans-serif"];',
    ]
    for tid, (status, goal) in graph.nodes.items():
        label = f"{graph.shorts[tid]} · {status}\n{_label(goal)}"
        out.append(f"  {q(tid)} [label={q(label)}, fillcolor={q(_COLORS.get(status, '#fff'))}];")
    for a, b, kind in graph.edges:
        style = "" if kind == "parent" else ' [style=dashed, label="needs"]'
        out.append(f"  {q(a)} -> {q(b)}{style};")
    out.append("}")
    return "\n".join(out) + "\n"


def graph_svg(graph: Graph) -> str:
    import shutil
    import subprocess

    dot = shutil.which("dot")
    if dot is None:
        raise MissingTool(
            "SVG needs Graphviz's 'dot', which is not installed. Install Graphviz (Debian/Ubuntu: "
            "apt install graphviz; macOS: brew install graphviz), or draw another format: ",
            Fix("format", "mermaid"),
            " or dot.",
            field="format",
        )
    done = subprocess.run(
        [dot, "-Tsvg"], input=graph_dot(graph), capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        raise StorageError(f"Graphviz failed: {done.stderr.strip()[:300]}")
    return done.stdout


def graph_tree(graph: Graph) -> str:
    """The graph as a tree for the terminal: each task under its parent, then what it needs
    ("needs" lines), with status and owner. A task met a second time (two tasks need it, or a
    cycle a merge made) is named, not drawn again."""
    children: dict[str, list[str]] = {}
    needs: dict[str, list[str]] = {}
    has_parent: set[str] = set()
    for a, b, kind in graph.edges:
        if kind == "parent":
            children.setdefault(a, []).append(b)
            has_parent.add(b)
        else:
            needs.setdefault(a, []).append(b)
    width = max((len(s) for s in graph.shorts.values()), default=6)

    def line(tid: str) -> str:
        status, goal = graph.nodes[tid]
        owner = one_line(graph.owners.get(tid) or "", 16) or "—"
        return f"{graph.shorts[tid]:<{width}}  {status:<9} {owner:<16} {_label(goal, 60)}"

    out: list[str] = []
    drawn: set[str] = set()

    def walk(tid: str, prefix: str) -> None:
        below = [("", c) for c in children.get(tid, [])] + [
            ("needs ", d) for d in needs.get(tid, [])
        ]
        for n, (tag, other) in enumerate(below):
            last = n == len(below) - 1
            branch = "└── " if last else "├── "
            if other in drawn:
                out.append(f"{prefix}{branch}{tag}{graph.shorts[other]} (shown above)")
                continue
            drawn.add(other)
            out.append(f"{prefix}{branch}{tag}{line(other)}")
            walk(other, prefix + ("    " if last else "│   "))

    roots = [t for t in graph.nodes if t not in has_parent]
    for tid in [*roots, *graph.nodes]:  # then whatever only a cycle of parents reaches
        if tid not in drawn:
            drawn.add(tid)
            out.append(line(tid))
            walk(tid, "")
    return "\n".join(out) + "\n" if out else "No tasks to draw.\n"


def render_graph(graph: Graph, fmt: str) -> str:
    renderers = {"mermaid": graph_mermaid, "dot": graph_dot, "svg": graph_svg, "tree": graph_tree}
    if fmt not in renderers:
        raise InvalidInput(f"Unknown graph format '{fmt}'. Use one of: {', '.join(GRAPH_FORMATS)}.")
    return renderers[fmt](graph)
