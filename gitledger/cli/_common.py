"""What every command shares: opening the ledger, the error seam, and --json output."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import click

from ..errors import LedgerError

if TYPE_CHECKING:
    from ..ledger import Ledger

F = TypeVar("F", bound=Callable[..., Any])


class CommandError(click.ClickException):
    """A LedgerError as click shows it: the message, and the error's own exit code.

    click reads the exit code from the exception's class (a ``ClassVar`` since click 8.4), so
    each exit code has its own subclass: build one with ``CommandError.of(error)``.
    """

    _by_code: ClassVar[dict[int, type[CommandError]]] = {}

    def __init__(self, error: LedgerError, as_json: bool = False) -> None:
        super().__init__(error.worded("cli"))
        self.error = error
        self.as_json = as_json

    @classmethod
    def of(cls, error: LedgerError, as_json: bool = False) -> CommandError:
        """The CommandError for ``error``, of the subclass whose exit code is the error's."""
        code = error.exit_code
        sub = cls._by_code.get(code)
        if sub is None:
            sub = type(f"CommandError{code}", (cls,), {"exit_code": code})
            cls._by_code[code] = sub
        return sub(error, as_json)

    def show(self, file: Any = None) -> None:
        if self.as_json:
            click.echo(json.dumps(self.error.to_dict("cli"), ensure_ascii=False), err=True)
        else:
            click.echo(f"Error: {self.message}", err=True)


@contextlib.contextmanager
def errors(as_json: bool = False) -> Iterator[None]:
    """The CLI's one error seam: a LedgerError becomes a message and its exit code."""
    try:
        yield
    except LedgerError as exc:
        raise CommandError.of(exc, as_json) from exc


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(func)


def write_option(func: F) -> F:
    """``--write`` of every command that changes a user's files: without it, only the diff."""
    return click.option(
        "--write", is_flag=True, help="Write the change (default: only show it as a diff)."
    )(func)


def agent_option(names: Sequence[str], help: str) -> Callable[[F], F]:
    """``--agent NAME`` of the setup commands: one of ``names``, ``agents.DEFAULT`` unless told."""
    from ..agents import DEFAULT

    return click.option(
        "--agent", type=click.Choice(names), default=DEFAULT, show_default=True, help=help
    )


def open_ledger(ctx: click.Context, *, create: bool = False) -> Ledger:
    """The ledger named by --ledger / GITLEDGER_DIR, else the one for the working directory."""
    from ..ledger import Ledger

    obj = ctx.find_root().obj or {}
    path = obj.get("ledger_path")
    return Ledger.open(
        Path(path) if path else None,
        actor=obj.get("actor"),
        agent=obj.get("agent"),
        create=create,
    )


def actor_of(ctx: click.Context) -> str | None:
    obj = ctx.find_root().obj or {}
    value = obj.get("actor")
    return str(value) if value else None


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2, default=str) + "\n")
