"""The ``gitledger`` command line (also ``git ledger``).

Commands are thin: parse, call one library function, render. The click application is
``gitledger.cli.app`` (its names are exported here on first use); ``main`` runs it, except for
``gitledger judge step``, which a hook runs after every step of an agent: that one is parsed
without click (``gitledger.cli.fast``), since importing click costs more than judging the step
(docs/JUDGE.md, "Time"). Anything the fast parser does not know — help, a bad value, an
unknown option — goes to click, so the command behaves and answers alike either way.
"""

from __future__ import annotations

import sys

from ..lazy import lazy_exports

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:  # the click application's names, imported on first use (gitledger/lazy.py)
    from .app import *  # noqa: F403

__getattr__, __dir__ = lazy_exports(globals(), also=["main"])


def main() -> None:
    args = sys.argv[1:]
    try:
        from .fast import run_fast

        code = run_fast(args)
        if code is None:
            from .fuse_hooks import run_fuse_hook

            code = run_fuse_hook(args)
        if code is None:  # not a command the fast parsers take: click parses it
            from .app import cli

            cli.main(prog_name="gitledger")
        else:
            sys.exit(code)
    except KeyboardInterrupt:
        sys.stderr.write("Interrupted.\n")
        sys.exit(130)
    except SystemExit as exc:
        # Run as an agent's hook, exit 2 means "block": Claude Code refuses to compact when a
        # PreCompact hook exits 2. A usage error (an old install, an unknown option) must not do
        # that, and click fails before any command could catch it, so it is mapped here.
        if exc.code == 2 and _as_hook(args):
            sys.exit(1)
        raise


def _as_hook(args: list[str]) -> bool:
    """Whether this run is an agent's hook: ``--hook`` anywhere, or the ``hook`` command."""
    if "--hook" in args:
        return True
    rest = iter(args)
    for arg in rest:
        if arg in ("--ledger", "--actor"):
            next(rest, None)  # the option's value
        elif not arg.startswith("-"):
            return arg == "hook"
    return False
