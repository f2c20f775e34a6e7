"""Which settings in a ledger's own Git config would make gitledger (or git) run a program.

A workspace ledger found by discovery came with the folder it is in (paths.py says why that is
refused inside a Git work tree); outside one it may still come from an unpacked archive. Its
``config`` file must then name no program: ``gpg.program`` and ``gpg.ssh.program`` are run by
gitledger's signing, ``core.sshCommand``, ``core.gitProxy``, ``credential.helper`` and
``protocol.ext.allow`` by the git command that moves objects, and ``include.path`` could pull in
any of them from elsewhere. ``GitStore(trust_config=False)`` refuses such a ledger; the user's
global and system config are the user's and are not looked at.
"""

from __future__ import annotations

import pygit2

# The last part of a key that names a program, a shell command or a hook (any section), as Git
# documents them: gpg.program, gpg.ssh.program, core.sshCommand, core.gitProxy, core.askPass,
# core.fsmonitor, core.hooksPath, core.editor, core.pager, core.alternateRefsCommand,
# credential.helper, credential.<url>.helper, remote.<name>.uploadpack/receivepack,
# uploadpack.packObjectsHook, filter.<driver>.clean/smudge/process, diff.<driver>.textconv/command,
# diff.external, merge.<driver>.driver, gpg.ssh.defaultKeyCommand, mergetool.<tool>.cmd.
_PROGRAM_LEAVES = frozenset(
    {
        "program",
        "sshcommand",
        "gitproxy",
        "askpass",
        "fsmonitor",
        "hookspath",
        "editor",
        "pager",
        "alternaterefscommand",
        "helper",
        "uploadpack",
        "receivepack",
        "packobjectshook",
        "clean",
        "smudge",
        "process",
        "textconv",
        "command",
        "external",
        "driver",
        "cmd",
        "defaultkeycommand",
    }
)
# Whole sections whose every key is a command or pulls in other config.
_PROGRAM_SECTIONS = frozenset({"alias", "include", "includeif", "pager", "protocol"})
# Levels written by the ledger's owner in the ledger itself (libgit2: local, worktree, app).
_OWN_LEVELS = (pygit2.enums.ConfigLevel.LOCAL, pygit2.enums.ConfigLevel.WORKTREE)


def names_a_program(key: str) -> bool:
    """Whether Git config ``key`` (``section[.subsection].name``) names something to run."""
    lower = key.lower()
    section = lower.split(".", 1)[0]
    leaf = lower.rsplit(".", 1)[-1]
    if section in _PROGRAM_SECTIONS:
        return True
    return leaf in _PROGRAM_LEAVES


def program_settings(config: pygit2.Config) -> list[tuple[str, str]]:
    """``(key, value)`` of each setting in the repository's own config (and files it includes)
    that names a program."""
    found: list[tuple[str, str]] = []
    for entry in config:
        if entry.level in _OWN_LEVELS and names_a_program(entry.name):
            found.append((entry.name, entry.value or ""))
    return found


__all__ = [
    "names_a_program",
    "program_settings",
]
