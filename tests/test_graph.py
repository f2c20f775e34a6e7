"""gitledger graph: a diamond of dependencies, a refused cycle, a cycle written behind the gates'
back, all open work, and SVG with and without Graphviz."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import run_cli

from gitledger.cli import cli as gitledger_cli
from gitledger.errors import GateRefused
from gitledger.graph import graph_dot, graph_mermaid, task_graph
from gitledger.ledger import Ledger
from gitledger.refs import task_ref


def invoke(*args: str) -> tuple[int, str]:
    out = CliRunner().invoke(gitledger_cli, list(args))
    return out.exit_code, out.output


@pytest.fixture
def diamond(ledger: Ledger) -> dict[str, str]:
    """top needs left and right; both need bottom. top is the parent of left."""
    bottom = ledger.create("bottom: shared base")
    left = ledger.create("left branch", dependencies=[bottom.id])
    right = ledger.create("right branch", dependencies=[bottom.id])
    top = ledger.create("top of the diamond", dependencies=[left.id, right.id])
    ledger.update(left.id, parent=top.id)
    ledger.update(bottom.id, status="active")
    return {"top": top.id, "left": left.id, "right": right.id, "bottom": bottom.id}


def needs(graph_edges: list[tuple[str, str, str]]) -> set[tuple[str, str]]:
    return {(a, b) for a, b, kind in graph_edges if kind == "needs"}


def test_diamond_graph(ledger: Ledger, diamond: dict[str, str]) -> None:
    d = diamond
    graph = task_graph(ledger, d["top"])
    assert set(graph.nodes) == set(d.values())
    assert needs(graph.edges) == {
        (d["top"], d["left"]),
        (d["top"], d["right"]),
        (d["left"], d["bottom"]),
        (d["right"], d["bottom"]),
    }
    assert (d["top"], d["left"], "parent") in graph.edges
    assert graph.nodes[d["bottom"]] == ("active", "bottom: shared base")
    text = graph_mermaid(graph)
    short = graph.shorts
    assert text.startswith("graph TD\n")
    assert f"t_{short[d['left']]} -.->|needs| t_{short[d['bottom']]}" in text
    assert f"t_{short[d['top']]} --> t_{short[d['left']]}" in text
    assert text.count("-.->|needs|") == 4
    assert ":::active" in text
    dot = graph_dot(graph)
    assert dot.count("->") == 5 and dot.count('style=dashed, label="needs"') == 4
    # From the bottom, only the bottom itself is drawn: nothing it needs, no children.
    assert set(task_graph(ledger, d["bottom"]).nodes) == {d["bottom"]}
    # From the left branch: its parent (top) above it and what it needs below.
    assert set(task_graph(ledger, d["left"]).nodes) == {d["left"], d["top"], d["bottom"]}


def test_cycle_attempt_is_refused_and_the_graph_unchanged(
    ledger: Ledger, diamond: dict[str, str]
) -> None:
    d = diamond
    before = task_graph(ledger, d["top"]).to_dict()
    with pytest.raises(GateRefused, match="cycle"):
        ledger.update(d["bottom"], add_dependencies=[d["top"]])
    code, out = invoke("task", "update", d["bottom"], "--dependency", d["top"])
    assert code == 1 and "cycle" in out
    assert task_graph(ledger, d["top"]).to_dict() == before


def test_a_cycle_written_behind_the_gates_is_drawn_not_followed(
    ledger: Ledger, diamond: dict[str, str]
) -> None:
    """A merge or a foreign writer can leave a cycle the gates never saw: drawing terminates and
    shows the edge that closes it."""
    d = diamond
    bottom = ledger.show(d["bottom"])
    forged = bottom.replace(**{"version": bottom.version + 1, "dependencies": [d["top"]]})
    tip = ledger.store.tip(task_ref(d["bottom"]))
    assert tip is not None
    ledger.store.write(
        task_ref(d["bottom"]),
        ledger.record_files(forged),
        "forged\n",
        ("x", "x@example.com"),
        [tip],
        tip,
    )
    graph = task_graph(ledger, d["top"])
    assert (d["bottom"], d["top"]) in needs(graph.edges)
    assert len(graph.nodes) == 4
    code, out = invoke("graph", d["bottom"][:8])
    assert code == 0 and out.count("-.->|needs|") == 5


def test_all_open_work(ledger: Ledger, diamond: dict[str, str]) -> None:
    d = diamond
    finished = ledger.create("already finished", criteria="c")
    ledger.update(finished.id, evidence=["ok"], status="done")
    alone = ledger.create("unrelated open task")
    graph = task_graph(ledger)
    assert set(graph.nodes) == {*d.values(), alone.id}
    code, out = invoke("graph", "--json")
    assert code == 0
    data = json.loads(out)
    assert {n["id"] for n in data["nodes"]} == set(graph.nodes)
    assert not data["truncated"]
    code, out = invoke("graph", "--limit", "2", "--json")
    assert code == 0 and json.loads(out)["truncated"] is True


def test_graph_of_unknown_task_is_an_error(ledger: Ledger) -> None:
    code, out = invoke("graph", "zzzzzz")
    assert code == 1 and "No task id starts with" in out


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_svg_through_graphviz(ledger: Ledger, diamond: dict[str, str], tmp_path: Path) -> None:
    target = tmp_path / "g.svg"
    code, out = invoke("graph", diamond["top"], "--format", "svg", "-o", str(target))
    assert code == 0, out
    svg = target.read_text()
    assert "<svg" in svg and "top of the diamond" in svg


def test_svg_without_graphviz_says_how_to_get_it(
    ledger: Ledger, diamond: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "no-tools"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    code, out = invoke("graph", "--format", "svg")
    assert code == 1
    assert "Graphviz" in out and "apt install graphviz" in out and "--format mermaid" in out
    code, out = invoke("graph", "--format", "dot")
    assert code == 0 and out.startswith("digraph")


def test_tree_draws_parents_and_needs_with_status_and_owner(
    ledger: Ledger, diamond: dict[str, str]
) -> None:
    d = diamond
    ledger.update(d["right"], owner="ann")
    out = run_cli("graph", d["top"][:8], "--format", "tree")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    short = {k: ledger.short_id(v) for k, v in d.items()}
    assert lines[0].startswith(short["top"]) and "top of the diamond" in lines[0]
    # left is top's child (drawn first), and both are needs of top as well
    assert lines[1].startswith(f"├── {short['left']}")
    text = out.stdout
    assert f"needs {short['right']}" in text and "ann" in text
    assert f"needs {short['bottom']}" in text and "active" in text
    assert f"{short['bottom']} (shown above)" in text  # the diamond's base is drawn once
    assert text.count("bottom: shared base") == 1
    data = json.loads(run_cli("graph", d["top"][:8], "--json").stdout)
    assert {n["owner"] for n in data["nodes"]} == {None, "ann"}


def test_tree_of_all_open_work_and_of_nothing(ledger: Ledger) -> None:
    out = run_cli("graph", "--format", "tree")
    assert out.returncode == 0 and out.stdout == "No tasks to draw.\n"
    ledger.create("alone")
    out = run_cli("graph", "--format", "tree")
    assert "alone" in out.stdout and "open" in out.stdout


def test_task_show_lists_what_depends_on_it(ledger: Ledger, diamond: dict[str, str]) -> None:
    d = diamond
    out = run_cli("task", "show", d["bottom"][:8])
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if x.strip().startswith("needed by:"))
    short = ledger.short_id(d["left"])
    assert f"{d['left'][: len(short)]} (open)" in line and d["right"][:6] in line
    # oldest first, ties (two creates in one millisecond) by id
    both = sorted(
        (ledger.show(d["left"]), ledger.show(d["right"])), key=lambda t: (t.created_at, t.id)
    )
    assert [t.id for t in ledger.dependents(d["bottom"])] == [t.id for t in both]
    out = run_cli("task", "show", d["top"][:8])
    assert "needed by:" not in out.stdout
    env = dict(os.environ, GITLEDGER_NO_INDEX="1")  # an index built in memory agrees
    out = run_cli("task", "show", d["bottom"][:8], env=env)
    assert line in out.stdout
