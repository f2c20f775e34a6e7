"""The README's first command: the demo tour runs every part for real, honestly and briefly."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from conftest import run_cli

from gitledger.ledger import Ledger


def outputs(text: str) -> dict[str, str]:
    """Each shown command ('$ gitledger …') and what it printed."""
    shown: dict[str, str] = {}
    for block in re.split(r"^\$ gitledger ", text, flags=re.M)[1:]:
        command, _, rest = block.partition("\n")
        shown[command] = rest.split("\n== ", 1)[0]
    return shown


def test_demo_tour_completes_and_shows_every_part() -> None:
    result = run_cli("demo")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    out = result.stdout
    assert "Tour complete" in out and "refused as it should be: exit 3" in out
    shown = outputs(out)
    commands = list(shown)
    for part in ("backup", "sync", "task search", "graph", "judge step", "fuse save"):
        assert any(c.startswith(part) or f" {part}" in c for c in commands), part
    assert any(c.startswith("fuse restore") for c in commands)
    # The two byte budgets give two different handoffs, and the token budget shows its output.
    small = next(
        v for c, v in shown.items() if c.startswith("task context") and c.endswith(" 1024")
    )
    large = next(
        v for c, v in shown.items() if c.startswith("task context") and c.endswith(" 2048")
    )
    assert small != large and small.count("\n") < large.count("\n")
    tokens = next(v for c, v in shown.items() if "--unit tokens" in c)
    assert tokens.startswith("gitledger handoff")
    assert "NEXT" in next(v for c, v in shown.items() if c.startswith("judge step"))
    # Nothing suggests a command on a workspace that is gone; --keep is offered instead.
    assert "git --git-dir" not in out and "git log" not in out
    assert "gitledger demo --keep" in out


def test_demo_json_is_one_document_and_keep_keeps_the_workspace() -> None:
    result = run_cli("demo", "--json", "--keep")
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads(result.stdout)  # nothing but the JSON on stdout
    try:
        assert summary["ok"] is True and summary["failures"] == []
        assert all(step["ok"] for step in summary["steps"])
        assert {s["exit_code"] for s in summary["steps"]} == {0, 1, 3}
        workspace = Path(summary["workspace"])
        ledger = Ledger.open(workspace / "project" / ".git" / "gitledger")
        done = [t for t in ledger.tasks() if t.status == "done"]
        assert len(done) == 2
        assert all(not t.next for t in done), [t.next for t in done]  # finished work has no next
    finally:
        shutil.rmtree(summary["workspace"], ignore_errors=True)


def test_without_keep_the_workspace_is_deleted() -> None:
    result = run_cli("demo", "--json")
    summary = json.loads(result.stdout)
    assert summary["ok"] and summary["workspace"] is None
    first = summary["steps"][0]["command"]
    workspace = Path(first.split()[-1]).parent
    assert not workspace.exists()


def test_memory_export_takes_json(ledger: Ledger) -> None:
    assert run_cli("remember", "Deploys need the VPN", "--kind", "constraint").returncode == 0
    lines = run_cli("memory", "export")
    assert [json.loads(x)["text"] for x in lines.stdout.splitlines()] == ["Deploys need the VPN"]
    as_json = run_cli("memory", "export", "--json")
    assert as_json.returncode == 0
    assert [f["text"] for f in json.loads(as_json.stdout)] == ["Deploys need the VPN"]
