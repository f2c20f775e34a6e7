"""Where the ledger lives: one function decides, and an environment variable overrides it.

In order:

1. an explicit path (``--ledger PATH``) or ``GITLEDGER_DIR``: a team ledger anywhere;
2. walking up from the working directory, the first of
   - a ``.gitledger/`` folder (a workspace ledger made by ``gitledger init`` outside Git), or
   - a Git work tree, whose ledger is ``gitledger/`` in its common Git directory (never tracked,
     untouched by ``git clean``, shared by linked worktrees, invisible to ``git log --all``);
3. nothing: commands say so, and hooks fall back to ``user_ledger_dir()``.

A ledger found by walking up came with the folder, so it is trusted only as far as gitledger
itself would have put it there (``UnsafeLedger`` otherwise, naming the real place and the fix):

- ``.gitledger`` must not be a symbolic link: a link committed in a checkout could point anywhere,
  and the first hook would create a repository there;
- ``.gitledger/`` must not lie inside a Git work tree: ``gitledger init`` never puts one there
  (in a work tree the ledger is in the Git directory, which a clone does not copy), so one found
  there came with the repository's files (tracked, or unpacked from an archive);
- and ``gitstore.GitStore(trust_config=False)`` refuses a discovered workspace ledger whose own
  config names a program (``gpg.program``, ``core.sshCommand``, ...): a ledger unpacked from an
  archive outside Git must not run code either.

A path the user names (``--ledger``, ``GITLEDGER_DIR``) is the user's choice and is taken as is.
This module does not import pygit2: ``gitledger where`` and start-up stay cheap.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import Step, UnsafeLedger
from .structs import struct

WORKSPACE_DIR = ".gitledger"
IN_GIT_DIR = "gitledger"
ENV_LEDGER = "GITLEDGER_DIR"


@struct(frozen=True)
class Location:
    path: Path
    kind: str  # "explicit", "git", "workspace", "user"
    project_root: Path | None  # the Git work tree or workspace the ledger belongs to

    @property
    def trusted_config(self) -> bool:
        """Whether programs named in the ledger's own Git config may run: not for a workspace
        ledger found by discovery (its files came with the folder)."""
        return self.kind != "workspace"


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
        _refuse_link(workspace)
        if workspace.is_dir():
            tree = git_work_tree(folder)
            if tree is not None:
                raise UnsafeLedger(
                    f"Refusing the ledger {workspace}: it lies inside the Git work tree {tree}, "
                    "where ",
                    Step("init"),
                    " never puts one (there the ledger lives in the Git directory, which a "
                    "clone does not copy), so it came with the repository's files and its "
                    f"config could name programs to run. Remove it (git rm -r --cached "
                    f"{WORKSPACE_DIR}, then delete it); if it is yours, move it to "
                    f"{_in_git(tree)}, or name it with ",
                    Step("name the ledger", str(workspace)),
                    ".",
                )
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
    _refuse_link(target / WORKSPACE_DIR)
    return Location(target / WORKSPACE_DIR, "workspace", target)


def missing_ledger(location: Location | None) -> tuple[str | Step, ...]:
    """What to say when there is no ledger where one was looked for, and what to do about it.

    One rule for every command (``where`` included, which exits 1 like the others): no ledger at
    the place this folder uses is an error whose message names that place and the fix for how
    it was chosen, never advice to pass an option the user already passed. The parts of a
    ``NoLedger``: each interface words the steps (``errors.Step``).
    """
    if location is None:
        return (
            "No ledger here (this folder is in no Git work tree and has no .gitledger/). Run ",
            Step("init"),
            " to make one here, or name one with ",
            Step("name the ledger"),
            ".",
        )
    if location.kind == "explicit":
        return (
            f"No ledger at {location.path} (named by ",
            Step("name the ledger"),
            f" or {ENV_LEDGER}). Check the path, or create a ledger there with ",
            Step("init at", str(location.path)),
            ".",
        )
    return (f"No ledger at {location.path} yet. Run ", Step("init"), " to create it.")


def _refuse_link(workspace: Path) -> None:
    """``UnsafeLedger`` for a ``.gitledger`` that is a symbolic link, naming where it points."""
    if not workspace.is_symlink():
        return
    real = Path(os.path.realpath(workspace))
    raise UnsafeLedger(
        f"Refusing {workspace}: it is a symbolic link to {real}, and gitledger neither uses nor "
        f"creates a ledger through a link it finds (one in a checkout could point anywhere). If "
        f"{real} is your ledger, name it with ",
        Step("name the ledger", str(real)),
        f" (or {ENV_LEDGER}); otherwise remove the link.",
    )


def _in_git(tree: Path) -> str:
    common = _git_common_dir(tree / ".git")
    return str(common / IN_GIT_DIR) if common is not None else f"{tree}/.git/{IN_GIT_DIR}"


def user_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "gitledger"


def user_ledger_dir() -> Path:
    """The per-user ledger that hooks use where no project ledger exists."""
    return Path(os.environ.get("GITLEDGER_HOME") or user_data_dir()) / "ledger"


__all__ = [
    "ENV_LEDGER",
    "IN_GIT_DIR",
    "Location",
    "WORKSPACE_DIR",
    "default_location",
    "discover",
    "git_work_tree",
    "missing_ledger",
    "user_data_dir",
    "user_ledger_dir",
]
