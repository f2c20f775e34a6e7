"""The click application: the root group, its global options, and the command groups it imports
on first use (``COMMANDS``). ``gitledger.cli.main`` runs it.

Each command group lives in a module of its own and is imported only when it is run, so
``gitledger task show`` pays for the task module and nothing else (start-up is most of a CLI
call's cost; see docs/BENCHMARKS.md).
"""

from __future__ import annotations

from typing import Any

import click

from .. import __version__
from ..lazy import import_spec

# name -> "module:attribute" of a click command or group, imported on first use.
COMMANDS: dict[str, str] = {
    "init": "gitledger.cli.core:init_cmd",
    "where": "gitledger.cli.core:where_cmd",
    "verify": "gitledger.cli.core:verify_cmd",
    "log": "gitledger.cli.log:log_cmd",
    "hook": "gitledger.cli.hook:hook_group",
    "repair": "gitledger.cli.core:repair_cmd",
    "config": "gitledger.cli.config:config_cmd",
    "demo": "gitledger.cli.demo:demo_cmd",
    "task": "gitledger.cli.task:task_group",
    "prime": "gitledger.cli.context:prime_cmd",
    "index": "gitledger.cli.index:index_group",
    "graph": "gitledger.cli.index:graph_cmd",
    "backup": "gitledger.cli.sync:backup_cmd",
    "restore": "gitledger.cli.sync:restore_cmd",
    "sync": "gitledger.cli.sync:sync_cmd",
    "remote": "gitledger.cli.sync:remote_group",
    "fuse": "gitledger.cli.fuse:fuse_group",
    "judge": "gitledger.cli.judge:judge_group",
    "remember": "gitledger.cli.memory:remember_cmd",
    "recall": "gitledger.cli.memory:recall_cmd",
    "memory": "gitledger.cli.memory:memory_group",
    "mcp": "gitledger.cli.mcp:mcp_group",
    "agents-md": "gitledger.cli.mcp:agents_md_cmd",
    "setup": "gitledger.cli.setup:setup_cmd",
}


def load_command(spec: str) -> click.Command | None:
    command = import_spec(spec)  # None: the group's module is not there; a broken one raises
    return command if isinstance(command, click.Command) else None


LEDGER_HELP = (
    "The ledger to use (a bare Git repository). Default: gitledger/ in this Git "
    "repository's common directory, or .gitledger/ in this workspace."
)
ACTOR_HELP = "Who is writing (default: your Git identity)."
AGENT_HELP = (
    "Which of your agents is writing, e.g. a session id (default: cli@HOST). Two agents are "
    "two claimants."
)


def _set_global(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    # Given after the subcommand, a global option overrides what the root was given (or read
    # from GITLEDGER_DIR / GITLEDGER_ACTOR): the root's callback ran before this one.
    if value is not None and param.name:
        obj = ctx.find_root().ensure_object(dict)
        obj[param.name] = value


AFTER = " Also accepted before the command."
GLOBAL_OPTIONS: tuple[tuple[list[str], dict[str, Any]], ...] = (
    (
        ["--ledger", "ledger_path"],
        {"type": click.Path(file_okay=False, path_type=str), "help": LEDGER_HELP + AFTER},
    ),
    (["--actor"], {"help": ACTOR_HELP + AFTER}),
    (["--agent"], {"help": AGENT_HELP + AFTER}),
)


def accept_global_options(command: click.Command) -> click.Command:
    """Let ``--ledger``, ``--actor`` and ``--agent`` also follow the subcommand (``task claim ID --actor x``).

    Each command (and each group that runs without a subcommand) gets the options once,
    after its own, so its --help lists them where the user looks.
    """
    commands = [command]
    while commands:
        current = commands.pop()
        if isinstance(current, click.Group):
            commands.extend(current.commands.values())
            if not current.invoke_without_command:
                continue
        names = {name for p in current.params for name in p.opts}
        for decls, kwargs in GLOBAL_OPTIONS:
            if decls[0] not in names:  # a command's own option of that name wins
                current.params.append(
                    click.Option(decls, expose_value=False, callback=_set_global, **kwargs)
                )
    return command


class LazyGroup(click.Group):
    """A group whose subcommands are imported from ``lazy`` only when asked for."""

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(super().list_commands(ctx))
        names.update(name for name in self.lazy if self.get_command(ctx, name) is not None)
        return sorted(names)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        spec = self.lazy.get(cmd_name)
        if spec is None:
            return None
        command = load_command(spec)
        if command is not None:
            self.commands[cmd_name] = accept_global_options(command)
        return command


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
# The version is the package's own, not looked up in installed metadata: from a checkout, its
# git_ledger.egg-info beside the editable install made click's lookup find two distributions.
@click.version_option(version=__version__, prog_name="gitledger")
@click.option(
    "--ledger",
    "ledger_path",
    type=click.Path(file_okay=False, path_type=str),
    envvar="GITLEDGER_DIR",
    help=LEDGER_HELP,
)
@click.option("--actor", envvar="GITLEDGER_ACTOR", help=ACTOR_HELP)
@click.option("--agent", envvar="GITLEDGER_AGENT", help=AGENT_HELP)
@click.pass_context
def cli(ctx: click.Context, ledger_path: str | None, actor: str | None, agent: str | None) -> None:
    """gitledger: a task ledger for AI coding agents, kept in Git.

    Every task is a Git ref and every version of it a commit, so history, checksums, backup and
    sync come from Git. Start with 'gitledger init', then 'gitledger task create GOAL'.
    """
    ctx.ensure_object(dict)
    ctx.obj["ledger_path"] = ledger_path
    ctx.obj["actor"] = actor
    ctx.obj["agent"] = agent


__all__ = [
    "ACTOR_HELP",
    "AFTER",
    "AGENT_HELP",
    "COMMANDS",
    "GLOBAL_OPTIONS",
    "LEDGER_HELP",
    "LazyGroup",
    "accept_global_options",
    "cli",
    "load_command",
]
