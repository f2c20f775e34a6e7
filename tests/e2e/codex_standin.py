"""A stand-in for the OpenAI Responses API, so the real Codex CLI can run in tests.

Codex talks to ``POST {base_url}/responses`` with ``stream: true`` (a custom model provider with
``wire_api = "responses"``). Like the Claude Code stand-in (standin.py) this one answers with
scripted text, answers Codex's compaction request ("CONTEXT CHECKPOINT COMPACTION", sent with no
tools) with a deliberately thin summary, records every request, and reports the usage a reply
asks for, so a large number makes Codex compact by itself (``model_auto_compact_token_limit``).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

THIN_SUMMARY = "The user and the assistant talked about some work."
_COMPACT_MARKER = "context checkpoint compaction"


@dataclass
class CodexReply:
    text: str
    input_tokens: int = 100


@dataclass
class CodexRequest:
    body: dict[str, Any]
    kind: str  # "main" or "compact"

    def text(self) -> str:
        """Every piece of text in the request's input (instructions, messages)."""
        out = [str(self.body.get("instructions") or "")]
        for item in self.body.get("input") or []:
            for part in item.get("content") or []:
                if isinstance(part, dict) and "text" in part:
                    out.append(str(part["text"]))
        return "\n".join(out)


def classify(body: dict[str, Any]) -> str:
    items = body.get("input") or []
    last = json.dumps(items[-1]).lower() if items else ""
    return "compact" if _COMPACT_MARKER in last else "main"


@dataclass
class CodexStandIn:
    requests: list[CodexRequest] = field(default_factory=list)
    summary: str = THIN_SUMMARY
    _script: deque[CodexReply] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    def script(self, *replies: CodexReply | str) -> None:
        with self._lock:
            self._script.extend(r if isinstance(r, CodexReply) else CodexReply(r) for r in replies)

    def of_kind(self, kind: str) -> list[CodexRequest]:
        with self._lock:
            return [r for r in self.requests if r.kind == kind]

    def mark(self) -> int:
        with self._lock:
            return len(self.requests)

    def since(self, mark: int, kind: str | None = None) -> list[CodexRequest]:
        with self._lock:
            return [r for r in self.requests[mark:] if kind is None or r.kind == kind]

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start the stand-in first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def answer(self, body: dict[str, Any]) -> CodexReply:
        kind = classify(body)
        with self._lock:
            self.requests.append(CodexRequest(body=body, kind=kind))
            if kind == "compact":
                return CodexReply(self.summary)
            return self._script.popleft() if self._script else CodexReply("OK.")

    def __enter__(self) -> CodexStandIn:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def _sse(data: dict[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


def stream(reply: CodexReply, model: str) -> Iterator[bytes]:
    response_id = f"resp_{uuid.uuid4().hex}"
    item_id = f"msg_{uuid.uuid4().hex}"
    part = {"type": "output_text", "text": reply.text, "annotations": []}
    item = {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": [part],
    }
    response = {
        "id": response_id,
        "object": "response",
        "status": "in_progress",
        "model": model,
        "output": [],
    }
    yield _sse({"type": "response.created", "response": response})
    yield _sse(
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**item, "status": "in_progress", "content": []},
        }
    )
    yield _sse(
        {
            "type": "response.output_text.delta",
            "item_id": item_id,
            "output_index": 0,
            "content_index": 0,
            "delta": reply.text,
        }
    )
    yield _sse({"type": "response.output_item.done", "output_index": 0, "item": item})
    usage = {
        "input_tokens": reply.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 10,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": reply.input_tokens + 10,
    }
    done = {**response, "status": "completed", "output": [item], "usage": usage}
    yield _sse({"type": "response.completed", "response": done})


def _handler(state: CodexStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            data = json.dumps({"object": "list", "data": [], "models": []}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                body = {}
            reply = state.answer(body)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            for chunk in stream(reply, str(body.get("model", "standin"))):
                self.wfile.write(chunk)
            self.wfile.flush()
            self.close_connection = True

    return Handler
