"""The MCP tools' typed arguments (``mcp_server/shapes.py``): what a handler reads is what the
schema let through, with its type; a call that skips the schema gets InvalidInput, not a
traceback."""

from __future__ import annotations

import pytest

from gitledger.edits import UPDATE_EDITS
from gitledger.errors import InvalidInput
from gitledger.mcp_server import CORE_TOOLS, Arguments, Server, UpdateEdits
from gitledger.mcp_server.shapes import coerce
from gitledger.model import Task


def test_update_edits_name_the_same_edits_as_the_ledger() -> None:
    assert list(UpdateEdits.__annotations__) == list(UPDATE_EDITS)
    update = next(t for t in CORE_TOOLS if t.name == "task_update")
    assert set(UPDATE_EDITS) <= set(update.properties)


def test_arguments_read_each_type_and_refuse_the_wrong_one() -> None:
    a = Arguments({"goal": "g", "n": 3, "yes": True, "tags": ["a", "b"], "rows": [{"k": 1}]})
    assert a.text("goal") == "g" and a.maybe_text("other") is None
    assert a.text_or("other", "x") == "x"
    assert a.number("n", 0) == 3 and a.number("other", 7) == 7
    assert a.flag("yes") is True and a.flag("other") is False
    assert a.texts("tags") == ["a", "b"] and a.texts("other") == []
    assert a.objects("rows") == [{"k": 1}]
    with pytest.raises(InvalidInput, match="'goal' is a required string"):
        Arguments({}).text("goal")
    with pytest.raises(InvalidInput, match="'n' is an integer"):
        Arguments({"n": True}).number("n", 0)  # a boolean is not a number here
    with pytest.raises(InvalidInput, match="'tags' is a list of strings"):
        Arguments({"tags": ["a", 1]}).texts("tags")
    with pytest.raises(InvalidInput, match="'yes' is true or false"):
        Arguments({"yes": "no"}).flag("yes")


def test_edits_carry_only_the_update_edits_given() -> None:
    a = Arguments({"id": "x", "next": "n", "notes": ["one"], "expect_version": 2})
    assert a.edits() == {"next": "n", "notes": ["one"]}


def test_a_lone_string_for_a_list_is_forgiven() -> None:
    update = next(t for t in CORE_TOOLS if t.name == "task_update")
    assert coerce(update, {"id": "x", "notes": "one"}) == {"id": "x", "notes": ["one"]}


def test_a_typed_update_through_the_server_writes_what_was_given(ledger: object) -> None:
    srv = Server()
    created, failed = srv.call("task_create", {"goal": "Ship it", "labels": "release"})
    assert not failed, created
    result, failed = srv.call(
        "task_update", {"id": created["id"], "next": "Tag it", "add_labels": ["x"]}
    )
    assert not failed, result
    task = Task.from_dict({**result, "clock": {}, "request_hash": None})
    assert task.next == "Tag it" and task.labels == ["release", "x"]
    refused, failed = srv.call("task_update", {"id": created["id"], "priority": "high"})
    assert failed and refused["error"] == "invalid_input"
    assert srv.call("task_show", {"id": created["id"]})[0]["version"] == 2  # nothing written
