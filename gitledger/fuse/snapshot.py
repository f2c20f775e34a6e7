"""The snapshot: the task line of one session at one point, and the limits on what it keeps."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..refs import FUSE_PREFIX

FORMAT_VERSION = 1
FUSE_REF_PREFIX = FUSE_PREFIX
DEFAULT_BUDGET = 6_000
MAX_BUDGET = 9_500  # Claude Code caps hook context at 10,000 characters
MIN_BUDGET = 300

# How much of each kind the snapshot keeps (the newest ones).
KEEP_CONSTRAINTS = 20
KEEP_DECISIONS = 20
KEEP_PITFALLS = 10
KEEP_SUBAGENTS = 8
KEEP_REQUESTS = 40
KEEP_OUTCOMES = 6  # the assistant's end-of-turn reports, newest last
KEEP_CHECKS = 8  # verification runs with their counts, and commits made
KEEP_ANSWERS = 10  # the person's answers to the agent's questions and to its plans
KEEP_TURN = 4  # the assistant's texts in the turn under way, before its last one
OUTCOME_CHARS = 2_000  # an end-of-turn report is often a list of what was done and found
KEEP_FILES = 60
KEEP_NAMED_FILES = 20  # files with the names their edits brought in (functions, tests, fields)
KEEP_SPECS = 4
ITEM_CHARS = 1_200  # one stored item at most
MAX_CONSTRAINT_SOURCE = 2_500  # longer user messages are pasted material, not constraints
SPEC_LINES = 14  # lines of the newest spec offered to the renderer; older specs get fewer


@dataclass
class SubagentResult:
    agent: str
    text: str


@dataclass
class Spec:
    ref: str
    title: str = ""
    criteria: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)


@dataclass
class OpenItem:
    text: str
    status: str = "pending"
    id: str | None = None


@dataclass
class Snapshot:
    """The task line of one session at one point; JSON round-trips through ``to_dict``."""

    format: int = FORMAT_VERSION
    session: str = ""
    source: str = ""
    cwd: str = ""  # the session's folder: paths under it are shown relative to it
    goal: str = ""
    branch: str = ""  # the git branch the session works on (not the default branch)
    goal_history: list[str] = field(default_factory=list)
    open_items: list[OpenItem] = field(default_factory=list)
    done_items: list[str] = field(
        default_factory=list
    )  # finished todo/task items (accomplishments)
    constraints: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    pitfalls: list[str] = field(default_factory=list)
    subagent_results: list[SubagentResult] = field(default_factory=list)
    recent_requests: list[str] = field(default_factory=list)
    # what the assistant reported at the end of each turn (done, found, decided), newest last
    outcomes: list[str] = field(default_factory=list)
    # the person's answers to the agent's questions, and the reasons given for rejecting a step
    answers: list[str] = field(default_factory=list)
    # the checks run (tests, linters, builds) with the counts they reported, and commits made
    checks: list[str] = field(default_factory=list)
    left_off: str = ""
    # what the assistant said earlier in the turn under way (no report ends it yet), newest last
    turn: list[str] = field(default_factory=list)
    plan: str = ""  # the latest list of steps the assistant wrote (the plan it was following)
    last_action: str = ""
    actions_before: list[str] = field(default_factory=list)  # the calls before it, newest last
    files_edited: list[str] = field(default_factory=list)
    # per file edited, newest last: "path: name, name" (the names its edits declared or added)
    edited_names: list[str] = field(default_factory=list)
    specs: list[Spec] = field(default_factory=list)
    task_id: str | None = None  # the linked ledger task (fuse link, or a task the session claimed)
    task_state: list[str] = field(default_factory=list)  # its required state at save time
    compactions: int = 0
    events: int = 0
    last_timestamp: str | None = None
    stats: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Snapshot:
        known = {f for f in cls.__dataclass_fields__}
        values = {k: v for k, v in data.items() if k in known}
        values["open_items"] = [OpenItem(**_only(OpenItem, i)) for i in data.get("open_items", [])]
        values["subagent_results"] = [
            SubagentResult(**_only(SubagentResult, i)) for i in data.get("subagent_results", [])
        ]
        values["specs"] = [Spec(**_only(Spec, i)) for i in data.get("specs", [])]
        return cls(**values)


def _only(kind: Any, data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        return {}
    fields = kind.__dataclass_fields__
    return {k: v for k, v in data.items() if k in fields}


__all__ = [
    "DEFAULT_BUDGET",
    "FORMAT_VERSION",
    "FUSE_REF_PREFIX",
    "ITEM_CHARS",
    "KEEP_ANSWERS",
    "KEEP_CHECKS",
    "KEEP_CONSTRAINTS",
    "KEEP_DECISIONS",
    "KEEP_FILES",
    "KEEP_NAMED_FILES",
    "KEEP_OUTCOMES",
    "KEEP_PITFALLS",
    "KEEP_REQUESTS",
    "KEEP_SPECS",
    "KEEP_SUBAGENTS",
    "KEEP_TURN",
    "MAX_BUDGET",
    "MAX_CONSTRAINT_SOURCE",
    "MIN_BUDGET",
    "OUTCOME_CHARS",
    "OpenItem",
    "SPEC_LINES",
    "Snapshot",
    "Spec",
    "SubagentResult",
]
