"""The MCP tools: every tool's name, description, hand-written schema and handler, the list a
client gets from ``tools/list``. A property is a type, a one-line description and, for a closed
set, an enum; required arguments are listed; unknown ones are refused (``benchmarks/mcp_bench.py``
counts the list's cl100k tokens). A tool over a service (context, sync, fuse, memory) is listed
only when the function it ``needs`` imports."""

from __future__ import annotations

from ..model import STATUSES
from . import handlers
from .handlers import present
from .shapes import ID, LIMIT, PRIORITY, STATUS, ToolSpec, boolean, integer, string, strings

INSTRUCTIONS = (
    "gitledger keeps your task line in Git so it survives compaction, restarts and other "
    "machines. Start with prime (it shows who holds what). Claim one task with task_claim and "
    "remote origin, so exactly one agent wins it; claim_conflict means pick another. While "
    "working record next, decisions and evidence with task_update (each write renews your "
    "claim's lease). Run sync before you stop. Finish with status done plus evidence, status "
    "blocked plus a blocker, or task_release to hand it back."
)

CORE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "task_create",
        "Create a task. Returns it with its id and version.",
        {
            "goal": string("What is to be achieved, one sentence"),
            "criteria": string("How we will know it is done (needed before done)"),
            "next": string("The next concrete action"),
            "priority": PRIORITY,
            "labels": strings("Labels, one word each"),
            "parent": string("Parent task id"),
            "dependencies": strings("Ids of tasks that must be done first"),
            "owner": string("Owner"),
            "idempotency_key": string("Repeat-safe key: same request returns the same task"),
        },
        ("goal",),
        handlers.create,
        read_only=False,
    ),
    ToolSpec(
        "task_update",
        "Write one new version with every change given (lists append). Gates: goal/criteria "
        "change, cancel, or reassigning (owner) a task another agent holds needs a decision; "
        "blocked needs a blocker; done needs criteria and evidence. '' clears next, blocker, "
        "owner, parent.",
        {
            "id": ID,
            "expect_version": integer(
                "Fail with version_conflict unless the task is at this version"
            ),
            "status": STATUS,
            "next": string("Next action"),
            "blocker": string("What it waits on"),
            "notes": strings("Notes to add"),
            "decisions": strings("Decisions to add, each with its reason"),
            "evidence": strings("Evidence the criteria are met (commit:SHA, test output)"),
            "goal": string("New goal"),
            "criteria": string("New completion criteria"),
            "owner": string("Owner"),
            "priority": PRIORITY,
            "parent": string("Parent task id"),
            "add_labels": strings("Labels to add"),
            "remove_labels": strings("Labels to remove"),
            "add_dependencies": strings("Task ids to depend on"),
            "remove_dependencies": strings("Task ids to stop depending on"),
        },
        ("id",),
        handlers.update,
        read_only=False,
    ),
    ToolSpec(
        "task_show",
        "Read one task in full (at: an earlier version).",
        {"id": ID, "at": integer("Version number", minimum=1)},
        ("id",),
        handlers.show,
    ),
    ToolSpec(
        "task_list",
        "List tasks, most recently updated first.",
        {
            "status": {
                "type": "array",
                "items": {"type": "string", "enum": list(STATUSES)},
                "description": "Only these statuses",
            },
            "owner": string("Only this owner"),
            "label": string("Only this label"),
            "parent": string("Only children of this task"),
            "limit": LIMIT,
            "offset": integer("Skip this many", minimum=0),
        },
        (),
        handlers.list_tasks,
    ),
    ToolSpec(
        "task_inbox",
        "What needs attention: active, then blocked, then open tasks.",
        {"limit": LIMIT},
        (),
        handlers.inbox,
    ),
    ToolSpec(
        "task_ready",
        "Tasks that can start now, by priority: open with nothing in the way, or active with a "
        "lapsed claim (claim: 'lapsed'; task_claim takes it over).",
        {"limit": LIMIT},
        (),
        handlers.ready,
    ),
    ToolSpec(
        "task_search",
        "Full-text search over all task text, best match first.",
        {"query": string('Words; "a phrase", prefix*, OR, NOT work'), "limit": LIMIT},
        ("query",),
        handlers.search,
    ),
    ToolSpec(
        "task_history",
        "Versions of a task, newest first, with what changed in each.",
        {"id": ID, "limit": LIMIT, "offset": integer("Skip the newest N", minimum=0)},
        ("id",),
        handlers.history,
    ),
    ToolSpec(
        "task_children",
        "Subtasks of a task.",
        {"id": ID},
        ("id",),
        handlers.children,
    ),
    ToolSpec(
        "task_claim",
        "Take a task for this agent and make it active. First claim wins; claim_conflict if "
        "another person or agent holds it; re-claiming your own says 'already yours'.",
        {
            "id": ID,
            "remote": string("Count the claim only once this remote accepted it (e.g. origin)"),
            "steal": boolean("Take a live claim (needs decision)"),
            "decision": string("Why you take a live claim (with steal)"),
        },
        ("id",),
        handlers.claim,
        read_only=False,
    ),
    ToolSpec(
        "task_release",
        "Hand back this agent's claim: owner cleared, the task open again.",
        {"id": ID},
        ("id",),
        handlers.release,
        read_only=False,
    ),
    ToolSpec(
        "verify",
        "Check every task's objects, records and version chain.",
        {},
        (),
        handlers.verify,
    ),
)


_BUDGET = integer("Max size in unit", minimum=1)
_SESSION = string("Agent session id")
_FACT_KIND = string(
    "Kind of fact",
    enum=["decision", "pitfall", "constraint", "preference", "todo", "accomplishment"],
)
_UNIT = string("Budget unit", enum=["bytes", "tokens"])

SERVICE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "prime",
        "Start here: your active and claimed tasks, what is ready, recent decisions.",
        {"budget": _BUDGET, "unit": _UNIT},
        (),
        handlers.prime,
        needs="gitledger.handoff:prime",
    ),
    ToolSpec(
        "task_context",
        "One task's handoff under a size budget: state, decisions, evidence, related tasks.",
        {"id": ID, "budget": _BUDGET, "unit": _UNIT},
        ("id",),
        handlers.context,
        needs="gitledger.context:task_context",
    ),
    ToolSpec(
        "backup",
        "Push every ledger ref to a Git remote (name, URL or path).",
        {"remote": string("Remote, default origin")},
        (),
        handlers.backup,
        read_only=False,
        needs="gitledger.sync:backup",
    ),
    ToolSpec(
        "restore",
        "Fetch ledger refs from a remote, path or bundle and merge them in.",
        {"source": string("Remote, URL, path or bundle")},
        ("source",),
        handlers.restore,
        read_only=False,
        needs="gitledger.sync:restore",
    ),
    ToolSpec(
        "sync",
        "Fetch, merge diverged tasks, push to a remote.",
        {"remote": string("Remote, default origin")},
        (),
        handlers.sync,
        read_only=False,
        needs="gitledger.sync:sync",
    ),
    ToolSpec(
        "fuse_restore",
        "After compaction: the saved task line of a session (newest if none given).",
        {"session": _SESSION, "budget": integer("Max bytes", minimum=1)},
        (),
        handlers.fuse_restore,
        needs="gitledger.fuse:restore_text",
    ),
    ToolSpec(
        "fuse_save",
        "Snapshot a session's transcript (JSONL) to the ledger before compacting.",
        {"session": _SESSION, "transcript": string("Transcript file path")},
        ("session", "transcript"),
        handlers.fuse_save,
        read_only=False,
        needs="gitledger.fuse:save",
    ),
    ToolSpec(
        "fuse_link",
        "Tie a session to a task: its restores then carry the task's state.",
        {"session": _SESSION, "id": ID},
        ("session", "id"),
        handlers.fuse_link,
        read_only=False,
        needs="gitledger.fuse:link",
    ),
    ToolSpec(
        "remember",
        "Keep a fact for later sessions (same fact again reinforces it). Hints, not task state.",
        {
            "text": string("The fact, one or two sentences"),
            "kind": _FACT_KIND,
            "tags": strings("Tags"),
            "importance": integer("1 low to 5 high", minimum=1, maximum=5),
            "task": string("Task id it came from"),
        },
        ("text",),
        handlers.remember,
        read_only=False,
        needs="gitledger.memory:Memory",
    ),
    ToolSpec(
        "recall",
        "Facts worth reading for a query, by relevance and strength; recalling reinforces them.",
        {
            "query": string("Words to look for"),
            "k": integer("How many", minimum=1),
            "kind": _FACT_KIND,
        },
        ("query",),
        handlers.recall,
        read_only=False,  # recalling counts as a use and writes it
        needs="gitledger.memory:Memory",
    ),
    ToolSpec(
        "memory_list",
        "Remembered facts, strongest first.",
        {
            "kind": _FACT_KIND,
            "forgotten": boolean("List forgotten facts instead"),
            "limit": LIMIT,
        },
        (),
        handlers.memory_list,
        needs="gitledger.memory:Memory",
    ),
    ToolSpec(
        "memory_stats",
        "Counts of active and forgotten facts by kind, and the capacity.",
        {},
        (),
        handlers.memory_stats,
        needs="gitledger.memory:Memory",
    ),
    ToolSpec(
        "memory_forget",
        "Take a fact out of use (kept in history; memory_restore brings it back).",
        {"id": string("Fact id or unique prefix")},
        ("id",),
        handlers.memory_forget,
        read_only=False,
        needs="gitledger.memory:Memory",
    ),
    ToolSpec(
        "memory_restore",
        "Bring a forgotten fact back.",
        {"id": string("Fact id or unique prefix")},
        ("id",),
        handlers.memory_restore,
        read_only=False,
        needs="gitledger.memory:Memory",
    ),
    ToolSpec(
        "memory_import",
        "Remember many facts at once; one bad fact refuses all.",
        {
            "facts": {
                "type": "array",
                "description": "Facts: {text, kind, tags, importance}",
                "items": {"type": "object"},
            }
        },
        ("facts",),
        handlers.memory_import,
        read_only=False,
        needs="gitledger.memory:Memory",
    ),
)


def available_tools() -> list[ToolSpec]:
    """Every tool whose library code is present, core tools first."""
    tools = list(CORE_TOOLS)
    tools += [t for t in SERVICE_TOOLS if t.needs is None or present(t.needs)]
    return tools


def missing_tools() -> list[str]:
    """Tools left out because the module they need is not there (for the setup report)."""
    return [t.name for t in SERVICE_TOOLS if t.needs and not present(t.needs)]


def read_only_tool_names() -> list[str]:
    return [t.name for t in available_tools() if t.read_only]


__all__ = [
    "CORE_TOOLS",
    "INSTRUCTIONS",
    "SERVICE_TOOLS",
    "available_tools",
    "missing_tools",
    "read_only_tool_names",
]
