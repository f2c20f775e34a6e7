"""The MCP server's stdio transport, with every line screened before the SDK reads it.

The SDK's stdio transport answers nothing to a line it cannot parse: a request whose params nest
100,000 deep, or whose arguments hold a lone surrogate (``"\\ud800"``, valid JSON, not text), got
no response at all, and the client waited forever. JSON-RPC 2.0 wants an error for each, so the
server reads stdin through ``screen()``: a line that is not UTF-8, not JSON, nested too deeply,
too long, not a JSON-RPC message or carrying a lone surrogate is answered here with a JSON-RPC
error (-32700 parse error, -32600 invalid request, -32602 invalid params) naming the request's id
when it can be read, and never reaches the SDK. Everything else goes on unchanged.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import AsyncIterator
from typing import Any

MAX_LINE_BYTES = 16 << 20
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

_ID_RE = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\\n]|\\.){0,200}")')


def _find_id(raw: bytes) -> int | str | None:
    """The request's id read from the text, for a line that does not parse."""
    match = _ID_RE.search(raw[:4096])
    if match is None:
        return None
    try:
        value = json.loads(match.group(1).decode("utf-8", "replace"))
    except ValueError:
        return None
    return value if isinstance(value, int | str) else None


def _lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def screen(raw: bytes) -> tuple[str | None, dict[str, Any] | None]:
    """(the line for the SDK, None) or (None, the JSON-RPC error to answer instead)."""

    def error(id_: int | str | None, code: int, message: str) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}

    if len(raw) > MAX_LINE_BYTES:
        return None, error(_find_id(raw), INVALID_REQUEST, "Request too large.")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, error(
            _find_id(raw), PARSE_ERROR, f"Parse error: not UTF-8 (byte {exc.start})."
        )
    if not text.strip():
        return None, None
    try:
        value = json.loads(text)
    except RecursionError:
        return None, error(_find_id(raw), PARSE_ERROR, "Parse error: nested too deeply.")
    except ValueError as exc:
        return None, error(_find_id(raw), PARSE_ERROR, f"Parse error: {str(exc)[:100]}.")
    id_ = value.get("id") if isinstance(value, dict) else None
    id_ = id_ if isinstance(id_, int | str) and not isinstance(id_, bool) else None
    if not isinstance(value, dict):
        return None, error(None, INVALID_REQUEST, "Invalid request: not a JSON object.")
    if _lone_surrogate(value):
        return None, error(id_, INVALID_PARAMS, "Invalid params: a string holds a lone surrogate.")
    from mcp_types import jsonrpc_message_adapter

    try:
        jsonrpc_message_adapter.validate_json(text, by_name=False)
    except Exception:  # noqa: BLE001 - pydantic's ValidationError, or its recursion limit
        return None, error(id_, INVALID_REQUEST, "Invalid request: not a JSON-RPC message.")
    return text, None


class ScreenedStdin:
    """An async line source for the SDK's stdio transport that answers bad lines itself."""

    def __init__(self, source: Any) -> None:
        self.source = source  # the binary stdin
        self.write_stream: Any = None  # set once the transport is up

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _read_line(self) -> bytes:
        from anyio.to_thread import run_sync

        line: bytes = await run_sync(self.source.readline, MAX_LINE_BYTES + 1)
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while True:  # drop the rest of an oversized line, a chunk at a time
                rest: bytes = await run_sync(self.source.readline, 1 << 20)
                if not rest or rest.endswith(b"\n"):
                    break
        return line

    async def _lines(self) -> AsyncIterator[str]:
        import anyio
        import mcp_types as types
        from mcp.shared.message import SessionMessage

        while True:
            raw = await self._read_line()
            if not raw:
                return
            text, answer = screen(raw)
            if text is not None:
                yield text
                continue
            if answer is None:
                continue
            while self.write_stream is None:
                await anyio.sleep(0.01)
            message = types.JSONRPCError.model_validate(answer)
            await self.write_stream.send(SessionMessage(message))


@contextlib.asynccontextmanager
async def guarded_stdio_server() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's ``stdio_server()`` reading stdin through ``ScreenedStdin``."""
    from mcp.server import stdio

    restore = None
    try:
        # Keep the SDK's guard of fd 0 (children read EOF, not the protocol) where it exists.
        buffer, restore = stdio._claim_fd(0, sys.stdin, "rb", stdio._open_stdin_diversion)
    except (AttributeError, TypeError, OSError, RuntimeError):
        buffer = sys.stdin.buffer
    screened = ScreenedStdin(buffer)
    try:
        async with stdio.stdio_server(stdin=screened) as (read_stream, write_stream):  # type: ignore[arg-type]
            screened.write_stream = write_stream
            yield read_stream, write_stream
    finally:
        if restore is not None:
            restore()


__all__ = [
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MAX_LINE_BYTES",
    "PARSE_ERROR",
    "ScreenedStdin",
    "guarded_stdio_server",
    "screen",
]
