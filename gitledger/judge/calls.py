"""What the judge reads from calls: what kind of work each tool call is, and the task list.

The tool names come from the agent registry (``gitledger.agents``): a Codex ``shell`` or a Gemini
``run_shell_command`` is judged like Claude Code's ``Bash``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

from ..agents import shell_command, tool_names
from .shapes import Call

# --- tool names: read from the agent registry (gitledger.agents), every agent's at once ----

# Tools that only look things up. After a compaction the assistant re-reads what it needs; those
# steps are not judged until it does real work again (the summary is not a piece of work).
READ_ONLY_TOOLS = tool_names("read")
EDIT_TOOLS = tool_names("edit")
ASK_TOOLS = tool_names("ask")
TASK_TOOLS = tool_names("todo")
SHELL_TOOLS = tool_names("shell")


_READ_ONLY_COMMANDS = frozenset(
    "cat ls grep rg egrep fgrep sed head tail wc find pwd echo less more file stat tree du df "
    "which type awk jq diff cmp sort uniq cut nl od xxd date env printenv realpath dirname "
    "basename true test".split()
)
_READ_ONLY_GIT = frozenset(
    "status log diff show blame branch rev-parse ls-files grep remote".split()
)
_COMMIT_RE = re.compile(r"\bgit\s+(?:-C\s+\S+\s+)?commit\b")


_REDIRECT_RE = re.compile(r"(?<![2&>=-])>(?!&|\s*/dev/null)")
_WRITE_WORDS_RE = re.compile(r"\b(?:sed\s+-i|tee|patch|rm|mv)\b")


def _writes(command: str) -> bool:
    """Whether a shell command changes files (cheap substring checks before each pattern)."""
    if ".write(" in command:
        return True
    if ">" in command and _REDIRECT_RE.search(command):
        return True
    return bool(_WRITE_WORDS_RE.search(command))


@lru_cache(maxsize=8192)
def _bash_kind(command: str) -> str:
    """``commit``, ``read`` (only looks things up), ``write`` (changes files) or ``other``."""
    if "commit" in command and _COMMIT_RE.search(command):
        return "commit"
    if not command.strip():
        return "other"
    if _writes(command):
        return "write"
    for part in re.split(r"&&|\|\||[;|\n]", command):
        words = part.strip().split()
        if not words:
            continue
        program = words[0].rsplit("/", 1)[-1]
        if program == "git" and len(words) > 1 and words[1] in _READ_ONLY_GIT:
            continue
        if program == "sed" and "-i" in words:
            return "write"
        if program not in _READ_ONLY_COMMANDS:
            return "other"
    return "read"


def _kind(call: Call) -> str:
    if call.name in SHELL_TOOLS:
        return _bash_kind(shell_command(call.input))
    if call.name in READ_ONLY_TOOLS:
        return "read"
    if call.name in EDIT_TOOLS:
        return "write"
    return "other"


def is_read_only(call: Call) -> bool:
    """A call that only looks something up (a read, a search, a read-only shell command)."""
    return _kind(call) == "read"


def is_commit(call: Call) -> bool:
    return _kind(call) == "commit"


def is_file_work(call: Call) -> bool:
    """A call that changes files: the work of some piece is under way."""
    return _kind(call) == "write"


class TaskList:
    """The assistant's task list as its calls left it: TodoWrite, TaskCreate and TaskUpdate."""

    def __init__(self) -> None:
        self.items: dict[str, dict[str, str]] = {}
        self._next_id = 1

    def apply(self, call: Call) -> list[tuple[str, str, str]]:
        """Apply one call; returns the status changes it made as (id, old, new)."""
        changes: list[tuple[str, str, str]] = []
        data = call.input
        if call.name == "TodoWrite" and isinstance(data.get("todos"), list):
            seen: dict[str, dict[str, str]] = {}
            for index, todo in enumerate(data["todos"]):
                if not isinstance(todo, Mapping):
                    continue
                key = str(todo.get("id") or todo.get("content") or index)
                status = str(todo.get("status", "pending"))
                old = self.items.get(key, {}).get("status", "")
                if old != status:
                    changes.append((key, old, status))
                seen[key] = {"subject": str(todo.get("content", "")), "status": status}
            self.items = seen
        elif call.name == "TaskCreate":
            key = str(data.get("taskId") or self._next_id)
            self._next_id += 1
            self.items[key] = {"subject": str(data.get("subject", "")), "status": "pending"}
            changes.append((key, "", "pending"))
        elif call.name == "TaskUpdate":
            key = str(data.get("taskId", ""))
            new_status = data.get("status")
            if key and isinstance(new_status, str):
                item = self.items.setdefault(key, {"subject": "", "status": ""})
                if item["status"] != new_status:
                    changes.append((key, item["status"], new_status))
                item["status"] = new_status
        return changes

    def in_progress(self) -> list[str]:
        return [k for k, v in self.items.items() if v["status"] == "in_progress"]

    def open_items(self) -> list[str]:
        return [k for k, v in self.items.items() if v["status"] in ("pending", "in_progress")]

    def render(self) -> list[str]:
        return [f"[{v['status']}] {v['subject']}" for v in self.items.values()]


__all__ = [
    "ASK_TOOLS",
    "EDIT_TOOLS",
    "READ_ONLY_TOOLS",
    "SHELL_TOOLS",
    "TASK_TOOLS",
    "TaskList",
    "is_commit",
    "is_file_work",
    "is_read_only",
]
