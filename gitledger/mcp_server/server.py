"""The MCP server's plumbing: the ledger behind the tools, argument checking, and the SDK's
low-level ``Server`` over stdio (the package docstring has the design)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import secrets
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from ..claims import named_agent
from ..errors import InvalidInput, LedgerError
from .handlers import present
from .shapes import Arguments, JSONObject, coerce, describe_schema_error, error_result
from .tools import INSTRUCTIONS, available_tools

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.server.lowlevel import Server as LowLevelServer

    from ..ledger import Ledger
    from ..memory import Memory

SERVER_NAME = "gitledger"
CONTEXT_URI = "gitledger://task/{id}/context"
_CONTEXT_URI_RE = re.compile(r"^gitledger://task/([^/]+)/context$")
log = logging.getLogger("gitledger.mcp_server")


class Server:
    """The ledger behind the MCP tools: opened on first use, then kept for the session."""

    def __init__(
        self,
        path: Path | None = None,
        *,
        actor: str | None = None,
        agent: str | None = None,
        transcript_dirs: list[Path] | None = None,
    ) -> None:
        from jsonschema import Draft202012Validator

        self.path = path
        self.transcript_dirs = allowed_transcript_dirs(transcript_dirs)
        self.actor = actor
        self.agent = named_agent(agent) or process_agent()
        self._ledger: Ledger | None = None
        self._memory: Memory | None = None
        self.tools = {t.name: t for t in available_tools()}
        self._validators = {
            name: Draft202012Validator(t.input_schema()) for name, t in self.tools.items()
        }
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gitledger-mcp")

    def memory(self) -> Memory:
        """The ledger's memory of facts, made once (its SQLite index stays on this thread)."""
        if self._memory is None:
            if not present("gitledger.memory:Memory"):
                raise InvalidInput("This install has no memory module.")
            from ..memory import Memory

            self._memory = Memory(self.ledger())
        return self._memory

    def ledger(self) -> Ledger:
        """The ledger, opened once; a missing ledger is retried on the next call."""
        if self._ledger is None:
            from ..ledger import Ledger

            self._ledger = Ledger.open(self.path, actor=self.actor, agent=self.agent)
        return self._ledger

    def transcript(self, value: str) -> Path:
        """The transcript ``fuse_save`` may read: a regular file inside an agent's transcript
        folder (or one given with ``gitledger mcp --transcripts DIR``). Any other file a client
        names (``/proc/self/environ``, ``/etc/passwd``) is refused: the server is not a reader of
        files for whoever speaks to it."""
        from ..hooks import transcript_file

        path = transcript_file(os.path.expanduser(value))
        real = Path(os.path.realpath(path))
        for folder in self.transcript_dirs:
            top = Path(os.path.realpath(folder))
            if top in real.parents:
                return path
        shown = ", ".join(str(d) for d in self.transcript_dirs) or "none"
        raise InvalidInput(
            f"fuse_save reads only agents' transcripts (folders: {shown}); {path} is not in one. "
            "Start the server with 'gitledger mcp --transcripts DIR' to allow another folder."
        )

    # Synchronous entry points (run on the worker thread; also usable in-process).

    def call(self, name: str, arguments: JSONObject | None) -> tuple[JSONObject, bool]:
        """Run tool ``name``: (structured result, is_error)."""
        from jsonschema.exceptions import best_match

        spec = self.tools.get(name)
        if spec is None:
            known = ", ".join(sorted(self.tools))
            error = InvalidInput(f"No tool '{name}'. Tools: {known}.")
            return error_result(error, "python"), True
        args = coerce(spec, arguments or {})
        problem = best_match(self._validators[name].iter_errors(args))
        if problem is not None:
            return error_result(InvalidInput(describe_schema_error(name, problem)), "python"), True
        try:
            return spec.run(self, Arguments(args)), False
        except LedgerError as exc:
            return error_result(exc, "mcp"), True
        except Exception as exc:  # noqa: BLE001 - a bug must come back as a result, not a hang
            log.exception("tool %s failed", name)
            return {"error": "internal_error", "message": f"{type(exc).__name__}: {exc}"}, True

    def read_context(self, uri: str) -> str:
        """The text of ``gitledger://task/{id}/context``: the handoff, or the task's Markdown."""
        match = _CONTEXT_URI_RE.match(uri)
        if match is None:
            raise InvalidInput(f"Unknown resource {uri}; use {CONTEXT_URI}.")
        task_id = match.group(1)
        led = self.ledger()
        if present("gitledger.context:task_context"):
            from ..context import task_context

            return task_context(led, task_id).text
        from ..model import render_markdown

        return render_markdown(led.show(task_id))

    # The MCP side.

    def mcp_tools(self) -> list[types.Tool]:
        import mcp_types as types

        return [
            types.Tool(
                name=t.name,
                description=t.description,
                input_schema=t.input_schema(),
                annotations=types.ToolAnnotations(
                    read_only_hint=t.read_only,
                    destructive_hint=False if not t.read_only else None,
                ),
            )
            for t in self.tools.values()
        ]

    def build(self) -> LowLevelServer[dict[str, object]]:
        import mcp_types as types
        from mcp.server.lowlevel import Server as LowLevelServer

        from .. import __version__ as server_version  # the package's own (see cli --version)

        tools = self.mcp_tools()

        # The SDK hands each callback its request context too; none of them needs it.
        async def list_tools(
            ctx: object, params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            return types.ListToolsResult(tools=tools)

        async def call_tool(
            ctx: object, params: types.CallToolRequestParams
        ) -> types.CallToolResult:
            loop = asyncio.get_running_loop()
            result, is_error = await loop.run_in_executor(
                self._executor, self.call, params.name, params.arguments
            )
            text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)],
                structured_content=result,
                is_error=is_error,
            )

        async def list_templates(
            ctx: object, params: types.PaginatedRequestParams | None
        ) -> types.ListResourceTemplatesResult:
            return types.ListResourceTemplatesResult(
                resource_templates=[
                    types.ResourceTemplate(
                        name="task-context",
                        uri_template=CONTEXT_URI,
                        description="A task's handoff: what the next agent needs to continue it.",
                        mime_type="text/plain",
                    )
                ]
            )

        async def list_resources(
            ctx: object, params: types.PaginatedRequestParams | None
        ) -> types.ListResourcesResult:
            return types.ListResourcesResult(resources=[])

        async def read_resource(
            ctx: object, params: types.ReadResourceRequestParams
        ) -> types.ReadResourceResult:
            from mcp.shared.exceptions import MCPError

            uri = str(params.uri)
            loop = asyncio.get_running_loop()
            try:
                text = await loop.run_in_executor(self._executor, self.read_context, uri)
            except LedgerError as exc:
                raise MCPError(
                    code=-32602, message=exc.worded("mcp"), data=exc.to_dict("mcp")
                ) from exc
            return types.ReadResourceResult(
                contents=[types.TextResourceContents(uri=uri, text=text, mime_type="text/plain")]
            )

        return LowLevelServer(
            SERVER_NAME,
            version=server_version,
            instructions=INSTRUCTIONS,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_resources=list_resources,
            on_list_resource_templates=list_templates,
            on_read_resource=read_resource,
        )

    async def serve_stdio(self) -> None:
        from ..mcp_stdio import guarded_stdio_server

        server = self.build()
        try:
            async with guarded_stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
        finally:
            self._executor.shutdown(wait=False)


def tools_list_json() -> str:
    """The result of tools/list as a client receives it (for counting its tokens)."""
    tools = [
        t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in Server().mcp_tools()
    ]
    return json.dumps({"tools": tools}, ensure_ascii=False)


def process_agent() -> str:
    """This server process's agent id, ``mcp-<random>@HOST``, when the agent that started it
    names no session (Claude Code gives its stdio servers CLAUDE_CODE_SESSION_ID, so there the
    server claims as the session its hooks write as): two servers are two claimants. Pin it with
    GITLEDGER_AGENT in the server's ``env`` (or ``gitledger --agent ID mcp``)."""
    from ..claims import machine_name

    return f"mcp-{secrets.token_hex(3)}@{machine_name()}"


def allowed_transcript_dirs(extra: list[Path] | None = None) -> list[Path]:
    """Where ``fuse_save`` may read: every agent's transcript folders, the folders in
    GITLEDGER_TRANSCRIPTS (separated by ':'), and ``extra``."""
    from ..agents import transcript_dirs

    folders = [Path(d) for d in transcript_dirs()]
    folders += [Path(d) for d in os.environ.get("GITLEDGER_TRANSCRIPTS", "").split(os.pathsep) if d]
    return folders + list(extra or [])


def run(
    path: Path | None = None,
    *,
    actor: str | None = None,
    agent: str | None = None,
    transcript_dirs: list[Path] | None = None,
) -> None:
    """Serve MCP over stdin/stdout until the client closes the pipe."""
    import anyio

    # stdout belongs to the protocol: anything logged goes to stderr.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    server = Server(path, actor=actor, agent=agent, transcript_dirs=transcript_dirs)
    anyio.run(server.serve_stdio, backend="asyncio")


__all__ = [
    "CONTEXT_URI",
    "SERVER_NAME",
    "Server",
    "allowed_transcript_dirs",
    "log",
    "process_agent",
    "run",
    "tools_list_json",
]
