"""A stand-in for the Anthropic Messages API, so the real Claude Code CLI can run in tests.

Claude Code talks to ``POST /v1/messages?beta=true`` with ``stream: true`` and reads server-sent
events. This server answers on 127.0.0.1 with a scripted reply per request and records every
request it receives, so a test can read exactly what reached the model.

How requests are told apart:

- **compaction**: Claude Code summarises a conversation by sending it again with a final user
  message asking for a summary (its prompt says "create a detailed summary of the conversation").
  The stand-in answers with a deliberately thin summary (``THIN_SUMMARY``), so whatever survives a
  compaction survives because something else (the fuse) carried it, not because the stand-in wrote
  a good summary.
- **main**: a request that offers tools is the agent loop; it consumes the next scripted reply.
  A scripted reply is a list of content blocks (``text(...)``, ``tool_use(...)``); a ``tool_use``
  reply makes Claude Code run the tool and send the result back, which consumes the next reply.
  When the script runs out the stand-in answers ``"OK."``.
- **judge**: gitledger's model judge asking about one step (its system prompt opens with
  ``JUDGE_MARKER``); answered with ``StandIn.judge_answer``, never from the script.
- **side**: anything else (titles, topic detection, quota probes) gets a short text answer and never
  consumes the script.

Scripts are kept per session (Claude Code puts its session id in ``metadata.user_id``); a reply
queued with ``session=None`` serves any session that has none of its own.

``Reply(..., input_tokens=N)`` reports usage of ``N`` input tokens on that reply; reporting a number
near the model's context window is what makes Claude Code compact on its own.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# Claude Code expects an <analysis> block and a <summary> block; without them it asks again.
THIN_SUMMARY = (
    "<analysis>Short.</analysis>\n"
    "<summary>The user and the assistant worked on some files.</summary>"
)

# How gitledger's model judge (gitledger/judge/model.py SYSTEM) opens its system prompt.
JUDGE_MARKER = "You judge one step of an AI coding assistant's work"

_COMPACT_MARKERS = (
    "create a detailed summary of the conversation",
    "detailed summary of the conversation so far",
    "summary of the conversation",
)


def text(value: str) -> dict[str, Any]:
    """A text content block."""
    return {"type": "text", "text": value}


def tool_use(name: str, input: dict[str, Any]) -> dict[str, Any]:
    """A tool_use content block (its id is filled in when it is sent)."""
    return {"type": "tool_use", "name": name, "input": input}


@dataclass
class Reply:
    """One scripted model turn."""

    blocks: list[dict[str, Any]]
    input_tokens: int = 50
    output_tokens: int = 20


@dataclass
class Request:
    """One request as it reached the stand-in."""

    path: str
    body: dict[str, Any]
    kind: str  # "main", "compact", "judge" or "side"
    session: str | None

    def texts(self) -> list[str]:
        """Every piece of text the model would read: system prompt, messages, tool results."""
        out: list[str] = []
        system = self.body.get("system")
        if isinstance(system, str):
            out.append(system)
        elif isinstance(system, list):
            out.extend(b.get("text", "") for b in system if isinstance(b, dict))
        for message in self.body.get("messages", []):
            out.extend(_texts_of(message.get("content")))
        return out

    def text(self) -> str:
        return "\n".join(self.texts())

    def messages_text(self) -> str:
        """The text of the messages only (no system prompt)."""
        out: list[str] = []
        for message in self.body.get("messages", []):
            out.extend(_texts_of(message.get("content")))
        return "\n".join(out)


def _texts_of(content: Any) -> Iterator[str]:
    if isinstance(content, str):
        yield content
        return
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            yield block.get("text", "")
        elif kind == "tool_use":
            yield json.dumps(block.get("input", {}))
        elif kind == "tool_result":
            yield from _texts_of(block.get("content"))


def _session_of(body: dict[str, Any]) -> str | None:
    user_id = (body.get("metadata") or {}).get("user_id")
    if not isinstance(user_id, str):
        return None
    try:
        parsed = json.loads(user_id)
        if isinstance(parsed, dict) and isinstance(parsed.get("session_id"), str):
            return parsed["session_id"]
    except ValueError:
        pass
    found = re.search(r"session_([0-9a-f-]{36})", user_id)
    return found.group(1) if found else None


def classify(body: dict[str, Any]) -> str:
    system = body.get("system")
    system_text = (
        system
        if isinstance(system, str)
        else "\n".join(b.get("text", "") for b in system or [] if isinstance(b, dict))
    )
    if JUDGE_MARKER in system_text:
        return "judge"
    messages = body.get("messages") or []
    if messages:
        last = "\n".join(_texts_of(messages[-1].get("content"))).lower()
        if messages[-1].get("role") == "user" and any(m in last for m in _COMPACT_MARKERS):
            return "compact"
    if body.get("tools"):
        return "main"
    return "side"


@dataclass
class StandIn:
    """The server's state: scripts in, requests out. Use as a context manager."""

    host: str = "127.0.0.1"
    port: int = 0
    requests: list[Request] = field(default_factory=list)
    summary: str = THIN_SUMMARY
    judge_answer: str = "Unsure.\nSAME"
    _scripts: dict[str | None, deque[Reply]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    # --- scripting -------------------------------------------------------------------------
    def script(self, *replies: Reply | list[dict[str, Any]], session: str | None = None) -> None:
        """Queue replies for the main loop of ``session`` (or of any session)."""
        with self._lock:
            queue = self._scripts.setdefault(session, deque())
            for reply in replies:
                queue.append(reply if isinstance(reply, Reply) else Reply(list(reply)))

    def pending(self, session: str | None = None) -> int:
        with self._lock:
            return len(self._scripts.get(session, ()))

    def _next_reply(self, session: str | None) -> Reply:
        with self._lock:
            for key in (session, None):
                queue = self._scripts.get(key)
                if queue:
                    return queue.popleft()
        return Reply([text("OK.")])

    # --- reading what arrived ---------------------------------------------------------------
    def of_kind(self, kind: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.kind == kind]

    def mark(self) -> int:
        """The number of requests so far; pass it to ``since`` to read only later ones."""
        with self._lock:
            return len(self.requests)

    def since(self, mark: int, kind: str | None = None) -> list[Request]:
        with self._lock:
            return [r for r in self.requests[mark:] if kind is None or r.kind == kind]

    # --- serving -----------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        assert self._server is not None, "start the stand-in first"
        return f"http://{self.host}:{self._server.server_address[1]}"

    def start(self) -> StandIn:
        handler = _make_handler(self)
        self._server = ThreadingHTTPServer((self.host, self.port), handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> StandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def answer(self, path: str, body: dict[str, Any]) -> Reply:
        kind = classify(body)
        session = _session_of(body)
        with self._lock:
            self.requests.append(Request(path=path, body=body, kind=kind, session=session))
        if kind == "compact":
            return Reply([text(self.summary)])
        if kind == "main":
            return self._next_reply(session)
        if kind == "judge":
            return Reply([text(self.judge_answer)], input_tokens=321, output_tokens=7)
        return Reply([text("OK.")], input_tokens=10, output_tokens=2)


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def stream_events(reply: Reply, model: str) -> Iterator[bytes]:
    """The server-sent events of one streamed Messages API response."""
    usage = {
        "input_tokens": reply.input_tokens,
        "output_tokens": 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    message = {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    yield _sse("message_start", {"type": "message_start", "message": message})
    stop_reason = "end_turn"
    for index, block in enumerate(reply.blocks):
        if block["type"] == "text":
            yield _sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": text("")},
            )
            yield _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": block["text"]},
                },
            )
        else:
            stop_reason = "tool_use"
            start = {
                "type": "tool_use",
                "id": f"toolu_{uuid.uuid4().hex[:24]}",
                "name": block["name"],
                "input": {},
            }
            yield _sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
            yield _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {
                        "type": "input_json_delta",
                        "partial_json": json.dumps(block["input"]),
                    },
                },
            )
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
    yield _sse(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": reply.output_tokens},
        },
    )
    yield _sse("message_stop", {"type": "message_stop"})


def full_message(reply: Reply, model: str) -> dict[str, Any]:
    """The same reply as one non-streamed JSON body."""
    content = []
    stop_reason = "end_turn"
    for block in reply.blocks:
        if block["type"] == "tool_use":
            stop_reason = "tool_use"
            content.append({**block, "id": f"toolu_{uuid.uuid4().hex[:24]}"})
        else:
            content.append(block)
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
    }


def _make_handler(state: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            self._json(200, {"data": [], "has_more": False})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                self._json(400, {"type": "error", "error": {"type": "invalid_request_error"}})
                return
            path = self.path.split("?", 1)[0]
            if path.endswith("/count_tokens"):
                self._json(200, {"input_tokens": max(1, len(raw) // 4)})
                return
            if not path.endswith("/v1/messages"):
                self._json(404, {"type": "error", "error": {"type": "not_found_error"}})
                return
            reply = state.answer(path, body)
            model = str(body.get("model", "claude-standin"))
            if not body.get("stream"):
                self._json(200, full_message(reply, model))
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            for chunk in stream_events(reply, model):
                self.wfile.write(chunk)
            self.wfile.flush()
            self.close_connection = True

    return Handler
