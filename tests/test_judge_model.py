"""The model judge against a stand-in Messages API on 127.0.0.1: what it sends (never tool
output, about 2,000 tokens), how it reads the answer, and that every failure is SAME."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gitledger import judge
from gitledger.cli import cli
from gitledger.judge import NEXT, SAME, Call, Message, Step, StepContext
from gitledger.judge.model import ModelJudge, judge_prompt, parse_answer

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures" / "judge"))
from build import Transcript, bash, edit, read  # noqa: E402


@dataclass
class StandIn:
    """Answers POST /v1/messages with scripted replies and records every request."""

    replies: list[Any] = field(default_factory=list)  # str: answer text; int: HTTP status; "raw:…"
    requests: list[dict[str, Any]] = field(default_factory=list)
    delay: float = 0.0
    url: str = ""

    def reply(self) -> Any:
        return self.replies.pop(0) if self.replies else "No idea.\nSAME"


@pytest.fixture
def standin() -> Iterator[StandIn]:
    state = StandIn()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            body = json.loads(self.rfile.read(length))
            state.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
            if state.delay:
                time.sleep(state.delay)
            answer = state.reply()
            if isinstance(answer, int):
                payload = b'{"type":"error","error":{"type":"overloaded_error"}}'
                self.send_response(answer)
            elif answer.startswith("raw:"):
                payload = answer[4:].encode()
                self.send_response(200)
            else:
                payload = json.dumps(
                    {
                        "id": "msg_standin",
                        "type": "message",
                        "role": "assistant",
                        "model": body.get("model"),
                        "content": [{"type": "text", "text": answer}],
                        "stop_reason": "end_turn",
                        "usage": {"input_tokens": 1800, "output_tokens": 30},
                    }
                ).encode()
                self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def unsure_context() -> StepContext:
    """A piece passes but the step does not say it moves on: the rules are unsure."""
    history = (
        Message("user", "Fix issues 1 and 2 from ISSUES.md."),
        Message("assistant", "Now issue 1.", (Call("Edit", {"file_path": "src/a.py"}),)),
        Message("tool_result", "TOOL-OUTPUT-NEVER-READ"),
    )
    return StepContext(
        history=history,
        step=Step(
            "Issue 1 passes.", (Call("Bash", {"command": "pytest -q", "description": "Run tests"}),)
        ),
        context_tokens=100_000,
    )


def test_verdict_parsing() -> None:
    assert parse_answer("Issue 1 is done and it turns to issue 2.\nNEXT")[0] == NEXT
    assert parse_answer("It keeps checking.\n**SAME**")[0] == SAME
    assert parse_answer("Reasoning.\nVerdict: NEXT")[0] == NEXT
    assert parse_answer("next")[0] == NEXT
    for unclear in ("", "Maybe NEXT, maybe SAME.", "NEXT or SAME\n", "I cannot tell."):
        decision, reason = parse_answer(unclear)
        assert decision == SAME
    assert "unclear" in parse_answer("I cannot tell.")[1]


def test_model_says_next(standin: StandIn) -> None:
    standin.replies = ["Issue 1 is finished and issue 2 is next.\nNEXT"]
    model = ModelJudge("judge-model", base_url=standin.url, api_key="k-test")
    verdict = judge.judge_step(unsure_context(), model=model)
    assert verdict.decision == NEXT and verdict.by == "model"
    assert verdict.reason == "Issue 1 is finished and issue 2 is next."
    (request,) = standin.requests
    assert request["path"] == "/v1/messages"
    headers = {k.lower(): v for k, v in request["headers"].items()}
    assert headers["x-api-key"] == "k-test" and headers["anthropic-version"] == "2023-06-01"
    body = request["body"]
    assert body["model"] == "judge-model" and body["max_tokens"] <= 300
    prompt = body["messages"][0]["content"]
    assert "Issue 1 passes." in prompt and "Fix issues 1 and 2" in prompt and "src/a.py" in prompt
    assert "TOOL-OUTPUT-NEVER-READ" not in json.dumps(body)
    assert model.calls == 1 and model.input_tokens == 1800


@pytest.mark.parametrize(
    "reply",
    [500, 429, "raw:not json at all", 'raw:{"content": "no list"}', "Hmm.\nPROBABLY", ""],
)
def test_every_failure_or_unclear_answer_is_same(standin: StandIn, reply: Any) -> None:
    standin.replies = [reply]
    model = ModelJudge("m", base_url=standin.url, api_key="k")
    verdict = judge.judge_step(unsure_context(), model=model)
    assert verdict.decision == SAME and verdict.by == "model"


def test_timeout_is_same(standin: StandIn) -> None:
    standin.delay = 1.0
    model = ModelJudge("m", base_url=standin.url, api_key="k", timeout=0.2)
    verdict = model(unsure_context())
    assert verdict.decision == SAME and verdict.rule == "model-failed" and model.failures == 1


def test_nothing_listening_is_same() -> None:
    import socket

    with socket.socket() as sock:  # a port that was free a moment ago
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    verdict = ModelJudge("m", base_url=f"http://127.0.0.1:{port}", api_key="k")(unsure_context())
    assert verdict.decision == SAME and "failed" in verdict.reason


def test_the_model_is_asked_only_when_the_rules_are_unsure(standin: StandIn) -> None:
    model = ModelJudge("m", base_url=standin.url, api_key="k")
    sure_next = StepContext(
        history=unsure_context().history,
        step=Step("Issue 1 passes. Now issue 2.", (Call("Bash", {"command": "ls"}),)),
        context_tokens=100_000,
    )
    inside = StepContext(
        history=unsure_context().history,
        step=Step("The parser drops the escape; fixing it.", (Call("Edit", {"file_path": "a"}),)),
        context_tokens=100_000,
    )
    asks = StepContext(
        history=unsure_context().history,
        step=Step("Issue 1 passes. Should I go on with issue 2?", ()),
        context_tokens=100_000,
    )
    below = StepContext(
        history=unsure_context().history, step=unsure_context().step, context_tokens=1
    )
    for ctx in (sure_next, inside, asks, below):
        judge.judge_step(ctx, model=model)
    assert standin.requests == []
    judge.judge_step(unsure_context(), model=model)
    assert len(standin.requests) == 1


def test_prompt_stays_near_2000_tokens_on_a_long_session(tmp_path: Path) -> None:
    from gitledger.tokens import count

    t = Transcript().user("Fix the 40 issues in ISSUES.md. " + "Each one has tests. " * 300)
    for n in range(1, 41):
        t.user(f"Also remember constraint {n}: " + "keep the API stable. " * 40)
        t.step(
            f"Issue {n} passes. Now issue {n + 1}. " + "Details of the fix. " * 60,
            edit(f"src/m{n}.py"),
        )
        t.step("", bash(f"pytest tests/test_{n}.py " + "-k x " * 200, f"Run issue {n} tests"))
        t.step("", read(f"src/m{n}.py"))
    ctx = judge.last_step_context(t.write(tmp_path / "long.jsonl"))
    assert ctx is not None
    prompt = judge_prompt(ctx)
    tokens = count(prompt)
    assert 1_000 < tokens <= 2_300
    assert "Fix the 40 issues" in prompt  # the first request is kept
    assert "constraint 40:" in prompt  # the latest requests whole
    assert "earlier requests left out" in prompt  # the oldest middle ones dropped, and said so
    assert "constraint 39:" in prompt and "constraint 2:" not in prompt
    assert "TOOL-OUTPUT-NEVER-READ" not in prompt
    assert "Run issue 40 tests" in prompt  # a command's description, not the command


def test_step_command_with_a_model(
    standin: StandIn, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", standin.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k-env")
    t = Transcript().user("Fix issues 1 and 2.")
    t.step("Now issue 1.", edit("a.py"), tokens=90_000)
    t.step("Issue 1 passes.", bash("pytest -q"), tokens=91_000)
    path = t.write(tmp_path / "t.jsonl")
    standin.replies = ["Done with 1; 2 remains and nothing says it starts yet.\nSAME"]
    result = CliRunner().invoke(
        cli, ["judge", "step", "--transcript", str(path), "--model", "m1", "--json"]
    )
    data = json.loads(result.output)
    assert data["decision"] == "SAME" and data["by"] == "model"
    headers = {k.lower(): v for k, v in standin.requests[0]["headers"].items()}
    assert headers["x-api-key"] == "k-env"
