"""The marked block gitledger adds to a project's AGENTS.md / CLAUDE.md / GEMINI.md.

The block points agents at ``gitledger prime`` and the protocol; it sits between two HTML comments
so it can be replaced in place or taken out, leaving the rest of the file as it was.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InvalidInput
from .settings import FileChange, decode, read_config

BEGIN = "<!-- gitledger:begin -->"
END = "<!-- gitledger:end -->"

AGENTS_BLOCK = f"""{BEGIN}
## Task ledger (gitledger)

This project keeps its task line in gitledger, so it survives compaction and restarts.

- Start: run `gitledger prime` (or the MCP tool `prime`), then `gitledger task claim ID --push`
  (one winner across agents and machines; `claim_conflict` means pick another task).
- As you work: `gitledger task update ID --next "..."`, `--decision "... because ..."`,
  `--evidence "commit:SHA" / test output`; `gitledger sync` when another machine should see it.
- Stop: `--status done --evidence "..."` when the criteria are met,
  `--status blocked --blocker "..."`, or `gitledger task release ID`; then `gitledger sync`.
- Protocol: docs/AGENT-PROTOCOL.md in the gitledger repository; `gitledger --help` for the rest.
{END}
"""


def _block_span(text: str) -> tuple[int, int] | None:
    """Where gitledger's block is in ``text`` (its newline included), or None; a begin marker
    without an end marker is refused rather than guessed at."""
    start = text.find(BEGIN)
    if start < 0:
        return None
    end = text.find(END, start)
    if end < 0:
        raise InvalidInput(
            f"The file has '{BEGIN}' but no '{END}'; fix the block by hand, then run again."
        )
    end += len(END)
    if text[end : end + 1] == "\n":
        end += 1
    return start, end


def remove_block(text: str) -> str:
    """``text`` without gitledger's marked block (and the blank line that set it apart)."""
    span = _block_span(text)
    if span is None:
        return text
    head, tail = text[: span[0]], text[span[1] :]
    if head.endswith("\n\n") and not tail:
        head = head[:-1]
    return head + tail


def add_block(text: str) -> str:
    """``text`` with gitledger's block: replaced where it is, else appended after a blank line."""
    span = _block_span(text)
    if span is not None:
        return text[: span[0]] + AGENTS_BLOCK + text[span[1] :]
    if not text:
        return AGENTS_BLOCK
    # One blank line before the block; remove_block takes exactly that line away again.
    return text + ("\n" if text.endswith("\n") else "\n\n") + AGENTS_BLOCK


def block_change(path: Path, *, root: Path, remove: bool = False) -> FileChange:
    """The change to the instructions file at ``path`` (inside the project ``root``): a file that
    resolves outside the project (a committed link to ~/.ssh/authorized_keys) is refused."""
    raw = read_config(path, root=root)
    before = decode(path, raw)
    if remove:
        after = remove_block(before) if raw is not None else ""
    else:
        after = add_block(before)
    return FileChange(
        path, raw, after, label="instructions", delete_when_empty=remove, keep_backup=False
    )


__all__ = [
    "AGENTS_BLOCK",
    "BEGIN",
    "END",
    "add_block",
    "block_change",
    "remove_block",
]
