"""Where the ledger lives: one function decides, and an environment variable overrides it.

In order:

1. an explicit path (``--ledger PATH``) or ``GITLEDGER_DIR``: a team ledger anywhere;
2. walking up from the working directory, the first of
   - a ``.gitledger/`` folder (a workspace ledger made by ``gitledger init`` outside Git), or
   - a Git work tree, whose ledger is ``gitledger/`` in its common Git directory (never tracked,
     untouched by ``git clean``, shared by linked worktrees, invisible to ``git log --all``);
3. nothing: commands say so, and hooks fall back to ``user_ledger_dir()``.

This module does not import pygit2: ``gitledger where`` and start-up stay cheap.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

WORKSPACE_DIR = ".gitledger"
IN_GIT_DIR = "gitledger"
ENV_LEDGER = "GITLEDGER_DIR"


@dataclass(frozen=True)
class Location:
    path: Path
    kind: str  # "explicit", "git", "workspace", "user"
    project_root: Path | None  # the Git work tree or workspace the ledger belongs to


def _git_common_dir(dot_git: Path) -> Path | None:
    """The common Git directory for a ``.git`` entry (a directory, or a worktree's file)."""
    if dot_git.is_dir():
        gitdir = dot_git
    elif dot_git.is_file():
        try:
            text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return None
        if not text.startswith("gitdir:"):
            return None
        gitdir = Path(text[len("gitdir:") :].strip())
        if not gitdir.is_absolute():
            gitdir = (dot_git.parent / gitdir).resolve()
    else:
        return None
    commondir = gitdir / "commondir"
    if commondir.is_file():
        try:
            rel = commondir.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return gitdir
        common = Path(rel)
        return common if common.is_absolute() else (gitdir / common).resolve()
    return gitdir


def git_work_tree(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` that has a ``.git`` (directory or file)."""
    here = Path(start).absolute()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return None


def discover(cwd: Path | None = None) -> Location | None:
    """Find the ledger for ``cwd`` without creating anything (see the module docstring)."""
    env = os.environ.get(ENV_LEDGER)
    if env:
        return Location(Path(env).expanduser().absolute(), "explicit", None)
    here = Path(cwd or os.getcwd()).absolute()
    for folder in (here, *here.parents):
        workspace = folder / WORKSPACE_DIR
        if workspace.is_dir():
            return Location(workspace, "workspace", folder)
        dot_git = folder / ".git"
        if dot_git.exists():
            common = _git_common_dir(dot_git)
            if common is not None:
                return Location(common / IN_GIT_DIR, "git", folder)
    return None


def default_location(path: Path | None = None) -> Location:
    """Where ``gitledger init [PATH]`` puts a ledger: in Git's common dir, else ``PATH/.gitledger``."""
    target = Path(path or os.getcwd()).absolute()
    for folder in (target, *target.parents):
        dot_git = folder / ".git"
        if dot_git.exists():
            common = _git_common_dir(dot_git)
            if common is not None:
                return Location(common / IN_GIT_DIR, "git", folder)
    return Location(target / WORKSPACE_DIR, "workspace", target)


def missing_ledger(location: Location | None) -> str:
    """What to say when there is no ledger where one was looked for, and what to do about it.

    One rule for every command (``where`` included, which exits 1 like the others): no ledger at
    the place this folder uses is an error whose message names that place and the fix for how
    it was chosen, never advice to pass an option the user already passed.
    """
    if location is None:
        return (
            "No ledger here (this folder is in no Git work tree and has no .gitledger/). "
            "Run 'gitledger init' to make one here, or pass --ledger PATH."
        )
    if location.kind == "explicit":
        return (
            f"No ledger at {location.path} (named by --ledger or {ENV_LEDGER}). Check the path, "
            f"or create a ledger there with 'gitledger --ledger {location.path} init'."
        )
    return f"No ledger at {location.path} yet. Run 'gitledger init' to create it."


def user_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "gitledger"


def user_ledger_dir() -> Path:
    """The per-user ledger that hooks use where no project ledger exists."""
    return Path(os.environ.get("GITLEDGER_HOME") or user_data_dir()) / "ledger"
