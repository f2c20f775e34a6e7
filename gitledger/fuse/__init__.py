"""The compaction fuse: save a session's task line before compaction, put it back after.

When an agent compacts its conversation, its own summary may keep the numbers and drop the
reasoning, the open items or what a sub-agent found. The fuse runs first (Claude Code's PreCompact
hook) and extracts, deterministically and without a model, a structured snapshot of the task line
from the transcript; after compaction (SessionStart, source ``compact`` or ``resume``) it renders
that snapshot back under a byte budget.

One module per step:

- ``snapshot``: the ``Snapshot`` record (JSON round-trips through ``to_dict``) and the limits on
  what it keeps.
- ``rules`` and ``extract``: ``extract(events, previous=None) -> Snapshot``, one pass over the
  event stream keeping only bounded state (the last N of each kind), so a 100 MB transcript costs
  what a 1 MB one does. The goal is the first request, carried over from the previous snapshot of
  the same session across compactions; an explicit change of goal replaces it and keeps the old
  one as history. ``rules`` holds what marks a constraint, a decision, a finding, a spec.
- ``condense`` and ``render``: ``render(snapshot, budget) -> str``, sections packed by priority
  (goal, linked task, open items, specs; then constraints, decisions, pitfalls, sub-agent results,
  recent requests, where it left off, files); the open items and the newest request first. Every
  item first gets a short slot (its first clause as a terse note, ``condense``); only then do items
  grow, so shortening happens before dropping, and a shortened item keeps the clauses that name
  files, identifiers and numbers. An item said twice is shown once. The last line says what was
  left out. Stored text is data: control characters are folded, every line starts with a heading
  or ``- `` (under 2,000 bytes a section is one line, its items after the heading), and the block
  is fenced, so text from the transcript cannot forge a heading, a fence or an instruction line.
- ``store``: ``save(ledger, ...)`` / ``load(ledger, session)``; each save is a commit on
  ``refs/gitledger/fuse/<session>`` holding ``snapshot.json``, ``restore.md`` (the rendering at the
  default budget), ``trigger`` and ``delta.json`` (what changed since the previous save), so
  ``git log -p`` on that ref reviews a session's compactions.
- ``steer(snapshot)`` (PreCompact's output, which Claude Code appends to its summary prompt):
  what the summary must keep, quoted from the conversation as data, never from tool output.
  ``record_summary()`` (PostCompact) commits the summary the agent wrote beside the snapshot, and
  the next restore renders the complement: only what that summary does not already say.
- ``hook``: what the hooks read and print; ``demo``: the offline demo.

The agent-settings editing (``setup_plan()`` / ``apply_setup()``) lives in
``gitledger.agents.settings``; its names are re-exported here for the callers that used them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports
from ..text import cut
from .condense import clean, condense, defang, shorten, shorten_path

# Eager: importing the module gitledger.fuse.extract would bind the package's ``extract`` to it.
from .extract import Extractor, extract, snapshot_file
from .hook import read_hook_payload, session_start_output
from .render import (
    SMALL_BUDGET,
    STEER_BUDGET,
    check_budget,
    default_budget,
    render,
    steer,
    summary_coverage,
)
from .snapshot import (
    DEFAULT_BUDGET,
    FORMAT_VERSION,
    FUSE_REF_PREFIX,
    MAX_BUDGET,
    MIN_BUDGET,
    OpenItem,
    Snapshot,
    Spec,
    SubagentResult,
)
from .store import (
    SavedSnapshot,
    check_session,
    delta,
    fuse_ref,
    history,
    link,
    load,
    memory_hints,
    problems,
    record_summary,
    remember_snapshot,
    restore_text,
    save,
    sessions,
    snapshot_facts,
    task_lines,
    verify,
)

if TYPE_CHECKING:  # imported on first use: a hook needs neither setup nor the demo
    from ..agents.settings import (
        HOOK_MARK,
        SetupPlan,
        apply_setup,
        check_settings_writable,
        hook_command,
        merge_settings,
        replace_settings_file,
        settings_path,
        setup_plan,
    )
    from .demo import DEMO_BUDGETS, run_demo
    from .rules import request_text

__getattr__, __dir__ = lazy_exports(globals())


__all__ = [
    "DEFAULT_BUDGET",
    "DEMO_BUDGETS",
    "FORMAT_VERSION",
    "FUSE_REF_PREFIX",
    "HOOK_MARK",
    "MAX_BUDGET",
    "MIN_BUDGET",
    "SMALL_BUDGET",
    "STEER_BUDGET",
    "Extractor",
    "OpenItem",
    "SavedSnapshot",
    "SetupPlan",
    "Snapshot",
    "Spec",
    "SubagentResult",
    "apply_setup",
    "check_budget",
    "check_session",
    "check_settings_writable",
    "clean",
    "condense",
    "cut",
    "default_budget",
    "defang",
    "delta",
    "extract",
    "fuse_ref",
    "history",
    "hook_command",
    "link",
    "load",
    "memory_hints",
    "merge_settings",
    "problems",
    "verify",
    "read_hook_payload",
    "record_summary",
    "remember_snapshot",
    "render",
    "replace_settings_file",
    "request_text",
    "restore_text",
    "run_demo",
    "save",
    "session_start_output",
    "sessions",
    "settings_path",
    "setup_plan",
    "shorten",
    "shorten_path",
    "snapshot_facts",
    "snapshot_file",
    "steer",
    "summary_coverage",
    "task_lines",
]
