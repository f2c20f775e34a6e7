"""What the MCP tools are made of: JSON values, a tool's checked arguments, its schema, its spec.

A tool's arguments arrive as JSON and are checked against its hand-written schema before it
runs (``Server.call``); ``Arguments`` then reads them with their types, so a handler is typed
like any library call. ``describe_schema_error`` words what the schema refused in the client's
terms (the argument's name, the arguments a tool takes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias, TypedDict, cast

from ..errors import InvalidInput, LedgerError
from ..model import STATUSES

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

    from ..edits import Interface
    from .server import Server

JSON: TypeAlias = "str | int | float | bool | None | list[JSON] | dict[str, JSON]"
JSONObject: TypeAlias = "dict[str, JSON]"


class UpdateEdits(TypedDict, total=False):
    """The edits of ``task_update``, as ``Ledger.update`` takes them (``edits.UPDATE_EDITS``;
    ``tests/test_mcp_server.py`` checks the two name the same edits)."""

    goal: str
    criteria: str
    status: str
    next: str
    blocker: str
    owner: str
    priority: int
    parent: str
    add_labels: list[str]
    remove_labels: list[str]
    notes: list[str]
    decisions: list[str]
    evidence: list[str]
    add_dependencies: list[str]
    remove_dependencies: list[str]


class Arguments:
    """A tool's arguments, already checked against its schema, read with their types. A value of
    the wrong type (possible only when a caller skips the schema) is ``InvalidInput``."""

    def __init__(self, values: JSONObject) -> None:
        self.values = values

    def __contains__(self, name: str) -> bool:
        return name in self.values

    def _wrong(self, name: str, what: str) -> InvalidInput:
        return InvalidInput(f"Argument '{name}' is {what}, not {self.values[name]!r}.")

    def text(self, name: str) -> str:
        """A required string."""
        value = self.values.get(name)
        if not isinstance(value, str):
            raise InvalidInput(f"Argument '{name}' is a required string.")
        return value

    def maybe_text(self, name: str) -> str | None:
        return self.text(name) if name in self.values else None

    def text_or(self, name: str, default: str) -> str:
        return self.text(name) if name in self.values else default

    def maybe_number(self, name: str) -> int | None:
        if name not in self.values:
            return None
        value = self.values[name]
        if not isinstance(value, int) or isinstance(value, bool):
            raise self._wrong(name, "an integer")
        return value

    def number(self, name: str, default: int) -> int:
        found = self.maybe_number(name)
        return default if found is None else found

    def flag(self, name: str) -> bool:
        value = self.values.get(name, False)
        if not isinstance(value, bool):
            raise self._wrong(name, "true or false")
        return value

    def texts(self, name: str) -> list[str]:
        """A list of strings ([] when absent)."""
        value = self.values.get(name, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._wrong(name, "a list of strings")
        return [v for v in value if isinstance(v, str)]

    def objects(self, name: str) -> list[JSONObject]:
        """A list of JSON objects ([] when absent)."""
        value = self.values.get(name, [])
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise self._wrong(name, "a list of objects")
        return [v for v in value if isinstance(v, dict)]

    def edits(self) -> UpdateEdits:
        """The update edits given (their types are the schema's, checked before the call)."""
        from ..edits import UPDATE_EDITS

        return cast(UpdateEdits, {n: self.values[n] for n in UPDATE_EDITS if n in self.values})


# --- schema pieces ------------------------------------------------------------------------------


def string(description: str, **extra: JSON) -> JSONObject:
    return {"type": "string", "description": description, **extra}


def integer(description: str, **extra: JSON) -> JSONObject:
    return {"type": "integer", "description": description, **extra}


def strings(description: str) -> JSONObject:
    return {"type": "array", "items": {"type": "string"}, "description": description}


def boolean(description: str) -> JSONObject:
    return {"type": "boolean", "description": description}


ID = string("Task id or unique prefix")
LIMIT = integer("Max results", minimum=0)
PRIORITY = integer("0 highest to 4 lowest", minimum=0, maximum=4)
STATUS = string("New status", enum=list(STATUSES))

Handler = Callable[["Server", Arguments], JSONObject]


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, what a model needs to know to call it, and the call itself."""

    name: str
    description: str
    properties: dict[str, JSONObject]
    required: tuple[str, ...]
    run: Handler
    read_only: bool = True
    needs: str | None = None  # "module:function" that must import for the tool to be listed

    def input_schema(self) -> JSONObject:
        schema: JSONObject = {
            "type": "object",
            "properties": dict(self.properties),
            "additionalProperties": False,
        }
        if self.required:
            schema["required"] = list(self.required)
        return schema


def error_result(exc: LedgerError, interface: Interface) -> JSONObject:
    """A refusal as a tool result: ``LedgerError.to_dict`` (its values are text, numbers and
    lists of ids, so JSON)."""
    return cast(JSONObject, exc.to_dict(interface))


def coerce(spec: ToolSpec, args: JSONObject) -> JSONObject:
    """Forgive a lone string where a list is expected: models often send one."""
    out = dict(args)
    for name, prop in spec.properties.items():
        value = out.get(name)
        if prop.get("type") == "array" and isinstance(value, str):
            out[name] = [value]
    return out


def describe_schema_error(tool: str, error: ValidationError) -> str:
    where = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "additionalProperties":
        allowed = ", ".join(sorted(error.schema.get("properties", {})))
        return f"{tool}: {error.message}. Arguments it takes: {allowed}."
    if error.validator == "required":
        return f"{tool}: {error.message}."
    return f"{tool}: argument '{where}': {error.message}."


__all__ = [
    "ID",
    "JSON",
    "LIMIT",
    "PRIORITY",
    "STATUS",
    "Arguments",
    "Handler",
    "JSONObject",
    "ToolSpec",
    "UpdateEdits",
    "boolean",
    "coerce",
    "describe_schema_error",
    "error_result",
    "integer",
    "string",
    "strings",
]
