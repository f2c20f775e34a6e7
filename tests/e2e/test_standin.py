"""The Messages API stand-in on its own, over real HTTP on loopback: no Claude Code needed."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from standin import Reply, StandIn, classify, text, tool_use


def post(server: StandIn, body: dict[str, Any]) -> list[dict[str, Any]]:
    request = urllib.request.Request(
        f"{server.base_url}/v1/messages?beta=true",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        raw = response.read().decode()
    return [json.loads(line[6:]) for line in raw.splitlines() if line.startswith("data: ")]


def session_body(session: str, prompt: str, *, tools: bool = True) -> dict[str, Any]:
    user_id = json.dumps({"device_id": "d", "account_uuid": "", "session_id": session})
    body: dict[str, Any] = {
        "model": "claude-test",
        "stream": True,
        "metadata": {"user_id": user_id},
        "messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]}],
    }
    if tools:
        body["tools"] = [{"name": "Write", "input_schema": {"type": "object"}}]
    return body


def test_streams_text_and_tool_use_blocks_and_records_the_request() -> None:
    with StandIn() as server:
        server.script(Reply([text("Writing."), tool_use("Write", {"file_path": "a.txt"})]))
        events = post(server, session_body("s1", "write a.txt"))
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    starts = [e["content_block"] for e in events if e["type"] == "content_block_start"]
    assert [b["type"] for b in starts] == ["text", "tool_use"]
    assert starts[1]["name"] == "Write" and starts[1]["id"].startswith("toolu_")
    deltas = [e["delta"] for e in events if e["type"] == "content_block_delta"]
    assert deltas[0] == {"type": "text_delta", "text": "Writing."}
    assert json.loads(deltas[1]["partial_json"]) == {"file_path": "a.txt"}
    stop = next(e for e in events if e["type"] == "message_delta")
    assert stop["delta"]["stop_reason"] == "tool_use"
    [request] = server.requests
    assert request.kind == "main" and request.session == "s1"
    assert "write a.txt" in request.messages_text()


def test_scripts_are_per_session_and_side_requests_leave_them_alone() -> None:
    with StandIn() as server:
        server.script(Reply([text("for s2")]), session="s2")
        server.script(Reply([text("for anyone")]))
        side = post(server, session_body("s2", "a title please", tools=False))
        mine = post(server, session_body("s2", "go"))
        other = post(server, session_body("s3", "go"))
        empty = post(server, session_body("s3", "go"))

    def said(events: list[dict[str, Any]]) -> str:
        return "".join(
            e["delta"].get("text", "") for e in events if e["type"] == "content_block_delta"
        )

    assert said(side) == "OK."
    assert said(mine) == "for s2"
    assert said(other) == "for anyone"
    assert said(empty) == "OK."
    assert [r.kind for r in server.requests] == ["side", "main", "main", "main"]


def test_compaction_gets_the_thin_summary_and_usage_is_reported_as_scripted() -> None:
    with StandIn() as server:
        server.script(Reply([text("big")], input_tokens=990_000))
        big = post(server, session_body("s", "go"))
        body = session_body(
            "s", "Your task is to create a detailed summary of the conversation so far"
        )
        summary = post(server, body)
    assert big[0]["message"]["usage"]["input_tokens"] == 990_000
    said = "".join(e["delta"]["text"] for e in summary if e["type"] == "content_block_delta")
    assert "<summary>" in said and said == server.summary
    assert server.of_kind("compact")[0].session == "s"
    assert server.pending() == 0


def test_classify() -> None:
    assert classify(session_body("s", "hello")) == "main"
    assert classify(session_body("s", "hello", tools=False)) == "side"
    assert (
        classify(session_body("s", "Create a detailed summary of the conversation.")) == "compact"
    )
