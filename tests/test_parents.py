"""Parents (epics) and their children: not ready while a child is open, not done before every
child is finished, and `task show` lists the children with progress."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from gitledger.errors import GateRefused
from gitledger.ledger import Ledger


def finish(ledger: Ledger, task_id: str) -> None:
    ledger.update(task_id, criteria="it works", decisions=["criteria set"])
    ledger.update(task_id, status="done", evidence=["tests pass"])


@pytest.mark.parametrize("indexed", [True, False])
def test_parent_waits_for_its_children(
    ledger: Ledger, indexed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not indexed:  # the index in memory, as a read-only ledger has it
        monkeypatch.setenv("GITLEDGER_NO_INDEX", "1")
    assert ledger.index().in_memory is not indexed
    epic = ledger.create("Epic: the new parser", priority=0)
    kids = [ledger.create(f"child {i}", parent=epic.id, priority=2) for i in range(3)]
    ready = [t.id for t in ledger.ready(10)]
    assert epic.id not in ready and set(ready) == {k.id for k in kids}
    # done with open children is refused, naming them, and writes nothing
    ledger.update(epic.id, criteria="every child done", decisions=["an epic"])
    with pytest.raises(GateRefused, match="every child finished") as refused:
        ledger.update(epic.id, status="done", evidence=["looked"])
    assert kids[0].id[:6] in str(refused.value)
    assert ledger.show(epic.id).status == "open"
    finish(ledger, kids[0].id)
    finish(ledger, kids[1].id)
    ledger.update(kids[2].id, status="cancelled", decisions=["not needed"])
    assert epic.id in [t.id for t in ledger.ready(10)]
    assert ledger.update(epic.id, status="done", evidence=["all children done"]).status == "done"


def test_cancel_a_parent_needs_a_decision_as_before(ledger: Ledger) -> None:
    epic = ledger.create("Epic")
    ledger.create("child", parent=epic.id)
    with pytest.raises(GateRefused, match="decision"):
        ledger.update(epic.id, status="cancelled")
    assert ledger.update(epic.id, status="cancelled", decisions=["dropped"]).status == "cancelled"


def test_show_lists_children_with_progress(ledger: Ledger, tmp_path: Path) -> None:
    epic = ledger.create("Epic: ship it")
    kids = [ledger.create(f"part {i}", parent=epic.id) for i in range(5)]
    for kid in kids[:3]:
        finish(ledger, kid.id)
    out = run_cli("task", "show", epic.id[:8])
    assert out.returncode == 0, out.stderr
    assert "children: 3/5 done" in out.stdout
    for kid in kids:
        assert kid.id[:6] in out.stdout
    assert "part 4" in out.stdout
    # the CLI refuses done with exit 1 and a message naming the open children
    ledger.update(epic.id, criteria="all parts", decisions=["epic"])
    done = run_cli("task", "update", epic.id[:8], "--status", "done", "--evidence", "x", "--json")
    assert done.returncode == 1
    assert "every child finished" in json.loads(done.stderr)["message"]
    ready = run_cli("task", "ready", "--json")
    assert epic.id not in [t["id"] for t in json.loads(ready.stdout)]
