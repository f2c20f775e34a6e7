"""The MCP server: the ledger's tools for agents that speak MCP, over stdio.

``gitledger mcp`` runs it. Each tool is one call into the library (``Ledger`` or a service module),
so the gates, the error messages and the exit kinds are the ones the CLI has; this module only
describes the tools, checks arguments against their schemas and turns results into MCP results.

Design notes:

- **Hand-written schemas on the SDK's low-level ``Server``.** ``MCPServer`` would generate schemas
  from signatures, but those carry a title per property, ``anyOf`` with ``null`` for each optional
  and defaults, which multiplies the token cost of ``tools/list`` (every agent pays it on every
  turn). Here each property is a type, a one-line description and, for closed sets, an enum;
  required fields are listed; unknown fields are refused. ``benchmarks/mcp_bench.py`` counts the
  cl100k tokens of the whole list.
- **Errors are tool results, not protocol errors.** A ``LedgerError`` comes back with
  ``isError`` set, ``structuredContent`` equal to ``error.to_dict()`` (``{"error": kind,
  "message": ...}``, what ``--json`` prints on the CLI) and the same JSON as text, so a model sees
  the message that names the fix and a program can branch on the kind.
- **One ledger, opened once, read fresh on every call.** Reads go to the refs (and, once it
  exists, to the index, which brings itself up to date from the refs) on each call; writes are
  compare-and-swap under the ledger's lock. Nothing is cached here, so writes made by other
  processes between two calls are seen by the next one.
- **One worker thread.** Calls run one at a time on a single thread, off the event loop: the
  ledger's objects (a pygit2 repository, SQLite connections) stay on the thread that made them,
  concurrent requests are serialized rather than interleaved, and a slow call (a backup over the
  network) does not stop the server from answering pings.
- **Optional services register only when they exist.** The context assembler, sync and memory are
  separate modules; a tool that needs one is listed only when that module and function import.
- **Typed arguments.** A handler reads its arguments through ``shapes.Arguments`` (checked against
  the schema first), results are ``JSONObject`` values, so ``mypy --strict`` checks the tools like
  the library they call.

The package: ``shapes`` (JSON types, ``Arguments``, schema pieces, ``ToolSpec``), ``handlers``
(one library call per tool), ``tools`` (the tool list: names, descriptions, schemas), ``server``
(the ledger behind the tools and the SDK's stdio server).
"""

from __future__ import annotations

from .handlers import task_result, task_summaries
from .server import (
    CONTEXT_URI,
    SERVER_NAME,
    Server,
    allowed_transcript_dirs,
    log,
    process_agent,
    run,
    tools_list_json,
)
from .shapes import JSON, Arguments, JSONObject, ToolSpec, UpdateEdits, describe_schema_error
from .tools import (
    CORE_TOOLS,
    INSTRUCTIONS,
    SERVICE_TOOLS,
    available_tools,
    missing_tools,
    read_only_tool_names,
)

__all__ = [
    "CONTEXT_URI",
    "CORE_TOOLS",
    "INSTRUCTIONS",
    "JSON",
    "SERVER_NAME",
    "SERVICE_TOOLS",
    "Arguments",
    "JSONObject",
    "Server",
    "ToolSpec",
    "UpdateEdits",
    "allowed_transcript_dirs",
    "available_tools",
    "describe_schema_error",
    "log",
    "missing_tools",
    "process_agent",
    "read_only_tool_names",
    "run",
    "task_result",
    "task_summaries",
    "tools_list_json",
]
