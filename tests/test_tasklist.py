"""``gitledger hook tasklist``: the agent's task list mirrored into subtasks, through the real CLI.

The payloads have the shape Claude Code 2.1.332 sends (captured in tests/e2e, where the real
client runs this hook: tests/e2e/test_e2e_tasklist.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

from gitledger.ledger import Ledger
from gitledger.tasklist import item_label

SESSION = "ce1e972f-21ec-46d7-a2f3-561758cb3f31"


def create(n: int, subject: str, session: str = SESSION) -> dict[str, Any]:
    return {
        "session_id": session,
        "hook_event_name": "PostToolUse",
        "tool_name": "TaskCreate",
        "tool_input": {"subject": subject, "description": subject, "activeForm": subject},
        "tool_response": {"task": {"id": str(n), "subject": subject, "description": subject}},
        "tool_use_id": f"toolu_create{n}",
    }


def update(
    n: int, status: str, session: str = SESSION, moved_from: str = "pending", **extra: Any
) -> dict[str, Any]:
    return {
        "session_id": session,
        "hook_event_name": "PostToolUse",
        "tool_name": "TaskUpdate",
        "tool_input": {"taskId": str(n), "status": status, **extra},
        "tool_response": {
            "success": True,
            "taskId": str(n),
            "updatedFields": ["status"],
            "statusChange": {"from": moved_from, "to": status},
        },
        "tool_use_id": f"toolu_update{n}{status}",
    }


def hook(payload: Any, **env: str) -> None:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    out = run_cli("hook", "tasklist", input=text, env=env or None)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""
    assert "Traceback" not in out.stderr


def refs(ledger: Ledger) -> dict[str, str]:
    return dict(ledger.store.refs("refs/gitledger/"))


def by_goal(ledger: Ledger) -> dict[str, Any]:
    return {t.goal: t for t in ledger.tasks()}


CALLS = [
    create(1, "Write the parser"),
    create(2, "Test the parser"),
    update(1, "in_progress"),
    update(1, "completed", moved_from="in_progress"),
    update(2, "deleted"),
]


def test_items_become_subtasks_and_follow_the_list(ledger: Ledger) -> None:
    for call in CALLS[:3]:
        hook(call)
    tasks = by_goal(ledger)
    parent = tasks[f"Agent session {SESSION[:8]}: its task list"]
    write, test = tasks["Write the parser"], tasks["Test the parser"]
    assert write.parent == test.parent == parent.id
    assert (write.status, test.status) == ("active", "open")
    assert item_label(SESSION, "1") in write.labels
    for call in CALLS[3:]:
        hook(call)
    tasks = by_goal(ledger)
    assert tasks["Write the parser"].status == "done"
    assert "marked it completed" in tasks["Write the parser"].evidence[0].text
    assert tasks["Test the parser"].status == "cancelled"
    assert [t.goal for t in ledger.ready()] == [parent.goal]


def test_replaying_every_call_changes_nothing(ledger: Ledger) -> None:
    for call in CALLS:
        hook(call)
    before = refs(ledger)
    for call in CALLS:  # a hook run twice, a session resumed, a compaction: same calls again
        hook(call)
    assert refs(ledger) == before
    assert len(list(ledger.tasks())) == 3


def test_the_sessions_linked_task_is_the_parent(ledger: Ledger) -> None:
    work = ledger.create("Ship the export feature")
    out = run_cli("fuse", "link", work.id[:8], "--session", SESSION)
    assert out.returncode == 0, out.stderr
    hook(create(1, "Write the parser"))
    task = by_goal(ledger)["Write the parser"]
    assert task.parent == work.id
    assert len(list(ledger.tasks())) == 2  # no session task made


def test_a_second_session_gets_its_own_items(ledger: Ledger) -> None:
    hook(create(1, "Write the parser"))
    hook(create(1, "Write the parser", session="another-session"))
    assert len([t for t in ledger.tasks() if t.goal == "Write the parser"]) == 2


def test_todowrite_lists(ledger: Ledger) -> None:
    todos = [
        {"content": "Serializer", "status": "completed", "activeForm": "x"},
        {"content": "Export button", "status": "in_progress", "activeForm": "x"},
        {"content": "Memo quoting", "status": "pending", "activeForm": "x"},
    ]
    payload = {"session_id": SESSION, "tool_name": "TodoWrite", "tool_input": {"todos": todos}}
    hook(payload)
    hook(payload)
    tasks = by_goal(ledger)
    assert [tasks[n].status for n in ("Serializer", "Export button", "Memo quoting")] == [
        "done",
        "active",
        "open",
    ]
    assert len(tasks) == 4


def test_a_rename_and_a_gate_refusal_never_fail_the_agent(ledger: Ledger) -> None:
    hook(create(1, "Write the parser"))
    hook(update(1, "pending", subject="Write the streaming parser"))
    task = by_goal(ledger)["Write the streaming parser"]
    assert "renamed" in task.decisions[0].text
    blocker = ledger.create("Something else first")
    ledger.update(task.id, add_dependencies=[blocker.id])
    out = run_cli(
        "hook", "tasklist", input=json.dumps(update(1, "completed", moved_from="pending"))
    )
    assert out.returncode == 0 and out.stdout == ""
    assert "gitledger hook tasklist:" in out.stderr
    assert ledger.show(task.id).status == "open"


def test_off_by_a_setting(ledger: Ledger) -> None:
    assert run_cli("config", "tasklist.mirror=false").returncode == 0
    before = refs(ledger)
    hook(create(1, "Write the parser"))
    assert refs(ledger) == before
    hook(create(1, "Write the parser"), GITLEDGER_TASKLIST_MIRROR="true")
    assert "Write the parser" in by_goal(ledger)


@pytest.mark.parametrize(
    "payload",
    [
        "",
        "not json",
        "[1, 2]",
        "{" * 100_000,
        {"tool_name": "TaskCreate"},
        {"session_id": SESSION, "tool_name": "Bash", "tool_input": {"command": "ls"}},
        {"session_id": SESSION, "tool_name": "TaskCreate", "tool_input": "x"},
        {"session_id": SESSION, "tool_name": "TaskCreate", "tool_input": {"subject": 5}},
        {"session_id": 7, "tool_name": "TaskUpdate", "tool_input": {"taskId": "1"}},
        {"session_id": SESSION, "tool_name": "TaskUpdate", "tool_input": {"taskId": ["x"]}},
        {"session_id": SESSION, "tool_name": "TodoWrite", "tool_input": {"todos": [1, None]}},
    ],
)
def test_hostile_payloads_exit_0_and_write_nothing(ledger: Ledger, payload: Any) -> None:
    before = refs(ledger)
    hook(payload)
    assert refs(ledger) == before


def test_no_ledger_in_a_bad_place_is_still_exit_0(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    out = run_cli(
        "hook", "tasklist", input=json.dumps(create(1, "x")), env={"GITLEDGER_DIR": str(blocker)}
    )
    # click refuses the --ledger path before any command runs: as a hook, that is exit 1 (a
    # non-blocking error for Claude Code), never 2 (which feeds stderr back to the model).
    assert out.returncode == 1 and "is a file" in out.stderr
