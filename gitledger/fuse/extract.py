"""The extractor: one pass over a session's events into a bounded ``Snapshot``."""

from __future__ import annotations

import json
import re
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..text import cut
from ..transcripts import Event, ReadStats, read_events
from .condense import _TAG_RE, _norm, _sentences, clean, relative_paths
from .rules import (
    _ANSWER_PAIR_RE,
    _ANSWERS_RE,
    _ASK_TOOLS,
    _ASYNC_LAUNCH,
    _BD_CHILD_RE,
    _BD_CLOSE_RE,
    _BD_LIST_RE,
    _BD_READY_RE,
    _BD_SHOW_RE,
    _BD_SYMBOL_STATUS,
    _BD_UPDATE_RE,
    _CLAIM_RE,
    _COMMIT_OUT_RE,
    _CONSTRAINT_RE,
    _COUNT_RE,
    _COUNT_WORD_RE,
    _DECISION_RE,
    _EDIT_TOOLS,
    _FAILURE_RE,
    _FINDING_RE,
    _GOAL_CHANGE_RE,
    _NEXT_STEP_RE,
    _NOTIFICATION_RE,
    _NOTIFIED_AGENT_RE,
    _OPEN_STATUSES,
    _PATCH_FILE_RE,
    _PLAN_ITEM_RE,
    _REASON_RE,
    _REJECT_REASON_RE,
    _SHELL_TOOLS,
    _SPEC_COMMAND_RE,
    _SPEC_FILE_RE,
    _TODO_TOOLS,
    _TRIVIAL_TOOL_ERRORS,
    CHECK_TAIL,
    MIN_OUTCOME,
    NAMES_PER_FILE,
    _call_summary,
    _check_key,
    _command_head,
    _first_error_line,
    _goal_from_summary,
    _parse_spec,
    _pitfall_key,
    _relative,
    _split_specs,
    commit_body,
    edit_names,
    is_check,
    request_text,
    shell_command,
)
from .snapshot import (
    ITEM_CHARS,
    KEEP_ANSWERS,
    KEEP_CHECKS,
    KEEP_CONSTRAINTS,
    KEEP_DECISIONS,
    KEEP_FILES,
    KEEP_NAMED_FILES,
    KEEP_OUTCOMES,
    KEEP_PITFALLS,
    KEEP_REQUESTS,
    KEEP_SPECS,
    KEEP_SUBAGENTS,
    KEEP_TURN,
    MAX_CONSTRAINT_SOURCE,
    OUTCOME_CHARS,
    OpenItem,
    Snapshot,
    Spec,
    SubagentResult,
)

_MARKED_RE = re.compile(
    "|".join(f"(?:{r.pattern})" for r in (_DECISION_RE, _FINDING_RE, _FAILURE_RE)), re.I
)
# Tools whose result no rule reads unless it failed (an edit tool's is the whole file).
_UNREAD_TOOLS = frozenset({"Grep", "Glob", "LS", "WebFetch", "WebSearch", "TodoWrite"})


def _said(text: str, kept: frozenset[str] | set[str]) -> str:
    """What an assistant's text says it found or did: its sentences less those that only
    announce the next step ("Let me check the config.", "Now add the handler.") and those
    ``kept`` already (as decisions or pitfalls)."""
    return clean(
        " ".join(s for s in _sentences(text) if s not in kept and not _NEXT_STEP_RE.match(s))
    )


KEEP_ACTIONS = 2  # the tool calls before the last one, for where it left off
_DEFAULT_BRANCHES = frozenset({"", "main", "master", "trunk", "develop", "HEAD"})
SHORT_REPLY = 20  # a reply this short to the assistant's question is an answer, not a request
QUESTION_CHARS = 300


class _Recent:
    """The newest ``size`` distinct texts, oldest first; a repeat moves to the end."""

    def __init__(
        self, size: int, items: Iterable[str] = (), keyfn: Callable[[str], str] | None = None
    ) -> None:
        self.size = size
        self.keyfn = keyfn
        self.items: OrderedDict[str, str] = OrderedDict()
        for item in items:
            self.add(item)

    def add(self, text: str, key: str | None = None) -> None:
        key = _norm(key or (self.keyfn(text) if self.keyfn else text))[:200]
        if not key:
            return
        self.items.pop(key, None)
        self.items[key] = text
        while len(self.items) > self.size:
            self.items.popitem(last=False)

    def values(self) -> list[str]:
        return list(self.items.values())

    def replace(self, key: str, text: str) -> None:
        """Change the text kept under ``key`` (where it was added with that key)."""
        norm = _norm(key)[:200]
        if norm in self.items:
            self.items[norm] = text


class Extractor:
    """One pass over the events; every field is bounded (see the KEEP_* limits)."""

    def __init__(self, previous: Snapshot | None = None, session: str = "") -> None:
        self.snap = Snapshot(session=session)
        self.carried_goal = previous.goal if previous else ""
        self.goal_history: list[str] = list(previous.goal_history) if previous else []
        self.goal = self.carried_goal
        self.compactions_before = previous.compactions if previous else 0
        self.constraints = _Recent(KEEP_CONSTRAINTS, previous.constraints if previous else ())
        self.decisions = _Recent(KEEP_DECISIONS, previous.decisions if previous else ())
        self.pitfalls = _Recent(
            KEEP_PITFALLS, previous.pitfalls if previous else (), keyfn=_pitfall_key
        )
        self.requests: deque[str] = deque(maxlen=KEEP_REQUESTS)
        self.outcomes = _Recent(KEEP_OUTCOMES, previous.outcomes if previous else ())
        self.answers = _Recent(KEEP_ANSWERS, previous.answers if previous else ())
        self.turn_text = ""  # the assistant's latest text in the turn under way
        # its texts so far, each with what it says (less the steps it announces)
        # (what is read once the turn is over, at the end: a save reads thousands of texts)
        self.turn_texts: deque[tuple[str, str, frozenset[str]]] = deque(maxlen=3 * KEEP_TURN)
        self.checks = _Recent(KEEP_CHECKS, previous.checks if previous else ())
        # keyed, so re-reading a transcript after a save does not repeat a result
        self.subagents: OrderedDict[str, SubagentResult] = OrderedDict(
            (_norm(r.agent + " " + r.text)[:300], r)
            for r in (previous.subagent_results if previous else [])
        )
        self.files = _Recent(KEEP_FILES, previous.files_edited if previous else ())
        self.names: OrderedDict[str, list[str]] = OrderedDict()
        for entry in previous.edited_names if previous else ():
            path, _, names = entry.rpartition(": ")
            self.names[path] = names.split(", ")
        self.specs: OrderedDict[str, Spec] = OrderedDict(
            (s.ref, s) for s in (previous.specs if previous else [])
        )
        self.todos: list[OpenItem] = []
        self.tasks: OrderedDict[str, OpenItem] = OrderedDict()
        self.had_item_tools = False
        self.previous_items = list(previous.open_items) if previous else []
        self.pending_calls: OrderedDict[str, tuple[str, dict[str, Any]]] = OrderedDict()
        self.tracker: OrderedDict[str, OpenItem] = OrderedDict()
        self.epics: set[str] = set()
        self.touched = ""  # the tracker item last updated or closed
        self.failed: dict[str, tuple[str, str]] = {}  # command head -> (pitfall key, text)
        self.plan = previous.plan if previous else ""
        self.left_off = ""
        self.last_action = ""
        self.actions: deque[str] = deque(maxlen=KEEP_ACTIONS + 1)
        self.task_id = previous.task_id if previous else None
        self.compactions = 0
        self.events = 0
        self.last_ts: str | None = None
        self.first_request_seen = False
        self.first_command = ""  # a bare slash command, the goal when nothing else is
        self.command_prompt = ""
        self.summary_goal = ""
        self.cwd: str | None = None
        self.branch = previous.branch if previous else ""
        self.source = ""

    # - per event -

    def feed(self, event: Event) -> None:
        self.events += 1
        self.source = self.source or event.source
        if event.timestamp:
            self.last_ts = event.timestamp
        if event.cwd and not self.cwd:
            self.cwd = event.cwd
        if event.branch:
            self.branch = event.branch
        if event.sidechain:
            return  # sub-agents' own turns; their results arrive as tool results in the main line
        kind = event.kind
        if kind == "user":
            self._user(event)
        elif kind == "assistant":
            self._assistant(event)
        elif kind == "tool_result":
            self._tool_result(event)
        elif kind == "compact_boundary":
            self.compactions += 1
        elif kind == "summary":
            if not self.first_request_seen and not self.summary_goal:
                self.summary_goal = _goal_from_summary(event.text)
        elif kind == "attachment" and event.subtype == "task_reminder":
            self._task_reminder(event.result)

    def _user(self, event: Event) -> None:
        text = request_text(event)
        if text is None and "<task-notification>" in event.text:
            self._notification(event.text)
        if text is None:
            # A slash command's expanded prompt arrives as harness text right after it.
            if (
                self.first_command
                and not self.command_prompt
                and event.is_meta
                and not event.sidechain
                and not event.text.lstrip().startswith(("Caveat", "<"))
            ):
                self.command_prompt = clean(event.text)[:300]
            return
        flat = clean(text)
        question = self.turn_text
        self._end_turn()
        if self.requests and _norm(self.requests[-1]).startswith(_norm(flat)):
            return  # a queued prompt and the user record that delivers it
        if question.rstrip().endswith("?") and len(flat) <= SHORT_REPLY:
            # a short reply ("1", "yes, B") says nothing without the question it answers
            self.requests.append(f"{flat} (answering: {cut(question, QUESTION_CHARS)})")
        else:
            self.requests.append(flat[:ITEM_CHARS])
        bare_command = flat.startswith("/") and " " not in flat
        if bare_command and not self.first_command:
            self.first_command = flat[:100]
        if not self.first_request_seen and not bare_command:
            self.first_request_seen = True
            if not self.goal:
                # a transcript that starts with a compaction summary: the summary's request wins
                self.goal = self.summary_goal or flat[:ITEM_CHARS]
        elif _GOAL_CHANGE_RE.match(flat) and _norm(flat) != _norm(self.goal):
            if self.goal:
                self.goal_history.append(self.goal)
                self.goal_history = self.goal_history[-5:]
            self.goal = flat[:ITEM_CHARS]
        if len(text) > MAX_CONSTRAINT_SOURCE:
            return  # pasted material (docs, logs): its "must"s are not the user's constraints
        for sentence in _sentences(text):
            if _CONSTRAINT_RE.search(sentence) and not sentence.endswith("?"):
                self.constraints.add(clean(sentence)[:400])

    def _end_turn(self) -> None:
        """The assistant's last text before the person speaks again is its report of the turn:
        what it did, found and decided, in its own summary."""
        text, self.turn_text = self.turn_text, ""
        self.turn_texts.clear()
        if len(text) >= MIN_OUTCOME and not text.rstrip().endswith("?"):
            self.outcomes.add(text)

    def _assistant(self, event: Event) -> None:
        if event.model == "<synthetic>":
            return  # Claude Code's own stand-in ("No response requested."), not the assistant's
        if event.text.strip():
            flat = clean(event.text)
            self.left_off = flat[:ITEM_CHARS]
            self.turn_text = flat[:OUTCOME_CHARS]
            kept: set[str] = set()  # sentences kept as decisions or pitfalls: not said again
            # one scan of the whole text first: most of what an assistant says marks nothing,
            # and a sentence can only match where the text does
            marked = _MARKED_RE.search(event.text) is not None
            for sentence in _sentences(event.text) if marked else ():
                if len(sentence) < 25:
                    continue
                decision = bool(_DECISION_RE.search(sentence))
                finding = bool(_FINDING_RE.search(sentence))
                if decision or finding:
                    if sentence.lower().startswith(("let me", "now let me", "i'll now")) and not (
                        _REASON_RE.search(sentence)
                    ):
                        continue
                    self.decisions.add(clean(sentence)[:400])
                    kept.add(sentence)
                elif _FAILURE_RE.search(sentence) and _REASON_RE.search(sentence):
                    self.pitfalls.add(clean(sentence)[:400])
                    kept.add(sentence)
            if len(event.text) >= 150 and len(_PLAN_ITEM_RE.findall(event.text)) >= 3:
                self.plan = flat[:ITEM_CHARS]  # shown as the plan, not again as said in the turn
            elif len(flat) >= MIN_OUTCOME:
                self.turn_texts.append((self.turn_text, event.text, frozenset(kept)))
        for call in event.tool_calls:
            if self.last_action:
                self.actions.append(self.last_action)
            self.last_action = self._summary(call.name, call.input)
            self.pending_calls[call.id] = (call.name, call.input)
            while len(self.pending_calls) > 200:
                self.pending_calls.popitem(last=False)
            self._tool_call(call.name, call.input)

    def _tool_call(self, name: str, data: dict[str, Any]) -> None:
        if name == "apply_patch" or (name == "shell" and "apply_patch" in json.dumps(data)):
            patch = json.dumps(data) if name == "shell" else str(data.get("input", ""))
            for match in _PATCH_FILE_RE.finditer(patch.replace("\\n", "\n")):
                self.files.add(_relative(match.group(1).strip().strip('"'), self.cwd))
        elif name in _EDIT_TOOLS:
            path = data.get("file_path") or data.get("notebook_path") or data.get("path")
            if isinstance(path, str) and path:
                path = _relative(path, self.cwd)
                self.files.add(path)
                self._names(path, edit_names(data))
        elif name in _TODO_TOOLS:
            # the agent's whole todo list, replaced each time: (list key, item text key)
            list_key, text_key = _TODO_TOOLS[name]
            todos = data.get(list_key)
            if isinstance(todos, list):
                self.had_item_tools = True
                self.todos = [
                    OpenItem(
                        text=clean(str(t.get(text_key, "")))[:400], status=str(t.get("status"))
                    )
                    for t in todos
                    if isinstance(t, dict)
                ]
        elif name == "TaskUpdate":
            task_id = str(data.get("taskId") or "")
            item = self.tasks.get(task_id)
            self.had_item_tools = True
            if item is None:
                item = OpenItem(
                    text=clean(str(data.get("subject") or f"task #{task_id}")), id=task_id
                )
                self.tasks[task_id] = item
            if isinstance(data.get("status"), str):
                if data["status"] == "deleted":
                    self.tasks.pop(task_id, None)
                else:
                    item.status = data["status"]
            if isinstance(data.get("subject"), str):
                item.text = clean(data["subject"])[:400]
        elif name in _SHELL_TOOLS:
            command = shell_command(data)
            if command is not None:
                claim = _CLAIM_RE.search(command)
                if claim:
                    self.task_id = claim.group(1) or claim.group(2)
        elif name.startswith("mcp__") and name.endswith(("task_claim", "claim_task")):
            task = data.get("id") or data.get("task_id")
            if isinstance(task, str):
                self.task_id = task

    def _summary(self, name: str, data: dict[str, Any]) -> str:
        """A tool call in a line, the session folder's paths relative to it (as files edited
        are): a cut at 72 characters then keeps the command, not the folder."""
        return relative_paths(_call_summary(name, data), self.cwd or "")

    def _names(self, path: str, names: list[str]) -> None:
        """The names a file's edits brought in, newest last, the file moved to the end."""
        # a name the file's own name says (TranscriptComponents in transcript_components.ex)
        stem = _norm(path.rsplit("/", 1)[-1].split(".", 1)[0]).replace(" ", "")
        names = [n for n in names if _norm(n).replace(" ", "") != stem]
        if not names:
            return
        known = [n for n in self.names.pop(path, []) if n not in names]
        self.names[path] = [*known, *names][-NAMES_PER_FILE:]
        while len(self.names) > KEEP_NAMED_FILES:
            self.names.popitem(last=False)

    def ignores_result(self, call_id: str) -> bool:
        """Whether this call's result holds nothing the rules read unless it is an error (the
        reader leaves such a result undecoded): edits and writes (Claude Code returns the whole
        file), searches, fetches, todo lists, and reads of files that are not specs."""
        call = self.pending_calls.get(call_id)
        if call is None:
            return False
        name, data = call
        if name == "Read":
            path = data.get("file_path")
            return isinstance(path, str) and not _SPEC_FILE_RE.search(path)
        return name in _EDIT_TOOLS or name in _UNREAD_TOOLS

    def _tool_result(self, event: Event) -> None:
        call = self.pending_calls.pop(event.tool_use_id or "", None)
        name = event.tool_name or (call[0] if call else "")
        data = call[1] if call else {}
        if name in {"Task", "Agent"}:
            label = str(
                data.get("description")
                or data.get("name")
                or data.get("subagent_type")
                or "sub-agent"
            )
            if _ASYNC_LAUNCH in event.text[:200]:
                return  # a background agent's launch notice: its result comes as a notification
            self._subagent(label, event.text)
            return
        if name == "TaskCreate":
            self.had_item_tools = True
            result: dict[str, Any] = event.result if isinstance(event.result, dict) else {}
            task: dict[str, Any] = result["task"] if isinstance(result.get("task"), dict) else {}
            task_id = str(task.get("id") or "")
            if not task_id:
                match = re.search(r"Task #(\w+) created", event.text)
                task_id = match.group(1) if match else f"new{len(self.tasks) + 1}"
            subject = str(data.get("subject") or task.get("subject") or "")
            self.tasks[task_id] = OpenItem(text=clean(subject)[:400], status="pending", id=task_id)
            return
        answered = "User has answered" in event.text and (name in _ASK_TOOLS or not name)
        answers = _ANSWERS_RE.search(event.text) if answered else None
        if answers:
            for question, answer in _ANSWER_PAIR_RE.findall(answers.group(1)):
                self.answers.add(
                    f"Asked {clean(question)[:300]} Answer: {clean(answer)[:400]}", key=question
                )
            return
        reason = (
            _REJECT_REASON_RE.search(event.text)
            if event.is_error and ("rejection" in event.text or "the user said" in event.text)
            else None
        )
        if reason and clean(reason.group(1)):
            # the person's own words on why a step was refused: a rule for the rest of the work
            self.answers.add(
                f"On {cut(self._summary(name, data), 72)}: {clean(reason.group(1))[:600]}"
            )
        if name in _SHELL_TOOLS:
            self._checks(data, event.text, event.is_error)
        if event.is_error:
            text = event.text
            if any(marker in text for marker in _TRIVIAL_TOOL_ERRORS):
                return
            if "doesn't want to" in text or "user rejected" in text.lower():
                self.pitfalls.add(f"The user rejected {self._summary(name, data)}")
                return
            line = _first_error_line(text)
            if line:
                summary = cut(self._summary(name, data), 72)
                # the same command failing again replaces its older failure (keyed by the call)
                self.pitfalls.add(f"{summary} failed: {line}")
                head = _command_head(name, data)
                if head:
                    self.failed[head] = (summary, f"{summary} failed: {line}")
            return
        head = _command_head(name, data)
        if head and head in self.failed:
            key, text = self.failed.pop(head)
            summary = cut(self._summary(name, data), 72)
            if _norm(summary) != _norm(key):
                self.pitfalls.replace(key, f"{text}; then worked: {summary}")
        if name in _SHELL_TOOLS:
            self._tracker(data, event.text)
        if name == "ExitPlanMode" and isinstance(data.get("plan"), str):
            # the plan the user approved (a rejected one is an error result, handled above)
            self._add_spec(_parse_spec("approved plan", data["plan"], steps=True))
            return
        spec_ref = None
        if name in _SHELL_TOOLS:
            command = shell_command(data)
            if command is not None:
                match = _SPEC_COMMAND_RE.search(command)
                if match:
                    spec_ref = clean(match.group(0))[:120]
        elif name in {"Read", "read_file", "view"}:
            path = data.get("file_path") or data.get("path") or data.get("absolute_path")
            if isinstance(path, str) and _SPEC_FILE_RE.search(path):
                spec_ref = _relative(path, self.cwd)
        if spec_ref:
            for ref, text in _split_specs(spec_ref, event.text):
                self._add_spec(_parse_spec(ref, text))

    def _subagent(self, label: str, text: str) -> None:
        text = clean(_TAG_RE.sub(" ", text))
        if text:
            found = SubagentResult(agent=clean(label)[:120], text=text[:ITEM_CHARS])
            key = _norm(found.agent + " " + found.text)[:300]
            self.subagents.pop(key, None)
            self.subagents[key] = found
            while len(self.subagents) > KEEP_SUBAGENTS:
                self.subagents.popitem(last=False)

    def _notification(self, text: str) -> None:
        """A background sub-agent's result, delivered as a <task-notification> (its call
        returned only a launch notice); a background command's notification holds no result."""
        for summary, result in _NOTIFICATION_RE.findall(text):
            agent = _NOTIFIED_AGENT_RE.match(summary.strip())
            self._subagent(agent.group(1) if agent else summary, result)

    def _add_spec(self, spec: Spec | None) -> None:
        """The newest spec last; a spec shown again moves there, the oldest past KEEP_SPECS go."""
        if spec:
            self.specs.pop(spec.ref, None)
            self.specs[spec.ref] = spec
            while len(self.specs) > KEEP_SPECS:
                self.specs.popitem(last=False)

    def _checks(self, data: dict[str, Any], output: str, failed: bool) -> None:
        """The runs that verify the work (tests, linters, type checks, builds) with the count
        they reported, and the commits made: what a resuming agent re-runs and builds on."""
        command = shell_command(data)
        if command is None:
            return
        first = clean(command.strip().splitlines()[0] if command.strip() else "")
        if "commit" in first:  # git commit, or a script that commits, prints "[branch sha] …"
            for branch, sha, subject in _COMMIT_OUT_RE.findall(output[:4_000]):
                # the message's body is the assistant's own account of what the commit does
                body = commit_body(command, subject)
                item = f"Committed {sha} on {branch}: {clean(subject)[:200]}"
                self.checks.add(f"{item}. {body}" if body else item, key=sha)
        if not is_check(first):
            return
        # a runner prints its counts at the end: its last lines are enough
        tail = _TAG_RE.sub(" ", output[-CHECK_TAIL:])
        counts = [clean(m) for m in _COUNT_RE.findall(tail)] if _COUNT_WORD_RE.search(tail) else []
        # its summary: the last counts it printed, one a line ("1309 pass", "0 fail") or several
        # on one ("3 failed, 1306 passed")
        last = list(dict.fromkeys(counts[-3:]))
        result = "; ".join(last) if counts else ("failed" if failed else "ok")
        if failed and counts:
            result += " (failed)"
        self.checks.add(f"{cut(first, 160)} -> {cut(result, 120)}", key=_check_key(first))

    def _tracker(self, data: dict[str, Any], output: str) -> None:
        """Items of a task tracker driven from the shell (beads), as open work."""
        command = shell_command(data)
        if command is None or "bd " not in command:
            return
        for kind, item_id, title in _BD_READY_RE.findall(output):
            self._track(item_id, title, "open", kind)
        for item_id, kind, title in _BD_LIST_RE.findall(output):
            self._track(item_id, title, "open", kind)
        for symbol, item_id, title in _BD_CHILD_RE.findall(output):
            self._track(item_id, title, _BD_SYMBOL_STATUS.get(symbol, "open"))
        for item_id, title, status in _BD_SHOW_RE.findall(output):
            self._track(item_id, title, status.strip().lower().replace(" ", "_"))
        for ids, status in _BD_UPDATE_RE.findall(command):
            for item_id in ids.split():
                self._track(item_id, None, status.lower())
                self.touched = item_id
        for ids, *reasons in _BD_CLOSE_RE.findall(command):
            reason = next((r for r in reasons if r), "")
            for item_id in ids.split():
                self._track(item_id, None, "closed")
                self.touched = item_id
                if reason:
                    self.decisions.add(f"Closed {item_id}: {clean(reason)[:360]}")

    def _track(self, item_id: str, title: str | None, status: str, kind: str = "") -> None:
        if kind == "epic":
            self.epics.add(item_id)
        item = self.tracker.pop(item_id, None) or OpenItem(text="", id=item_id)
        if title:
            item.text = clean(f"{item_id}: {title}")[:400]
        elif not item.text:
            item.text = item_id
        if not (status == "open" and item.status not in {"pending", "open"}):
            item.status = status  # a listing does not undo an update seen earlier
        self.tracker[item_id] = item
        while len(self.tracker) > 300:
            self.tracker.popitem(last=False)

    def _task_reminder(self, content: Any) -> None:
        if not isinstance(content, list):
            return
        self.had_item_tools = True
        tasks: OrderedDict[str, OpenItem] = OrderedDict()
        for item in content:
            if isinstance(item, dict) and item.get("id") is not None:
                task_id = str(item["id"])
                tasks[task_id] = OpenItem(
                    text=clean(str(item.get("subject") or ""))[:400],
                    status=str(item.get("status") or "pending"),
                    id=task_id,
                )
        self.tasks = tasks

    # - result -

    def finish(self, stats: ReadStats | None = None) -> Snapshot:
        snap = self.snap
        snap.outcomes = self.outcomes.values()
        snap.answers = self.answers.values()
        snap.checks = self.checks.values()
        snap.source = self.source
        snap.cwd = self.cwd or ""
        command_goal = self.first_command
        if command_goal and self.command_prompt:
            command_goal = f"{command_goal}: {self.command_prompt}"
        snap.goal = self.goal or self.summary_goal or command_goal
        snap.goal_history = self.goal_history
        # the branch names the work, unless it is the default one (or a detached HEAD)
        snap.branch = "" if self.branch in _DEFAULT_BRANCHES else clean(self.branch)[:120]
        tracked = [
            i
            for i in self.tracker.values()
            if i.status in _OPEN_STATUSES and i.id not in self.epics
        ]
        doing = [i for i in tracked if i.status in {"in_progress", "active"}]
        focus = str(doing[-1].id) if doing else self.touched
        if focus:
            # the epic of the item in progress: its siblings are the open work, other epics not
            prefix = focus.rsplit(".", 1)[0] if "." in focus else focus
            tracked = [i for i in tracked if str(i.id).startswith(prefix)]
            # specs of the item in progress come last, that is first when rendered
            for ref in [r for r in self.specs if r.endswith(focus)]:
                self.specs.move_to_end(ref)
        tracked = tracked[-8:]
        if self.had_item_tools or tracked:
            items = [i for i in self.todos if i.status in _OPEN_STATUSES]
            items += [i for i in self.tasks.values() if i.status in _OPEN_STATUSES]
            items += tracked
        else:
            items = self.previous_items
        # in-progress first, then the rest in list order
        snap.open_items = sorted(items, key=lambda i: i.status not in {"in_progress", "active"})
        finished = [*self.todos, *self.tasks.values()]
        snap.done_items = [i.text for i in finished if i.status == "completed" and i.text][-10:]
        snap.constraints = self.constraints.values()
        snap.decisions = self.decisions.values()
        snap.pitfalls = self.pitfalls.values()
        snap.subagent_results = list(self.subagents.values())
        snap.recent_requests = list(self.requests)
        snap.left_off = self.left_off
        # the turn under way has no report yet: what it said before its last text stands in
        turn = list(self.turn_texts)
        if turn and turn[-1][0] == self.turn_text:
            turn.pop()  # the last text is where it left off
        said = [_said(text, kept)[:OUTCOME_CHARS] for _, text, kept in turn]
        snap.turn = [t for t in said if len(t) >= MIN_OUTCOME][-KEEP_TURN:]
        snap.plan = self.plan if _norm(self.plan) != _norm(self.left_off) else ""
        snap.last_action = self.last_action
        snap.actions_before = [a for a in self.actions if a != self.last_action][-KEEP_ACTIONS:]
        snap.files_edited = self.files.values()
        snap.edited_names = [f"{path}: {', '.join(names)}" for path, names in self.names.items()]
        snap.specs = list(self.specs.values())
        snap.task_id = self.task_id
        snap.compactions = self.compactions_before + self.compactions
        snap.events = self.events
        snap.last_timestamp = self.last_ts
        if stats is not None:
            snap.stats = {
                k: v
                for k, v in stats.to_dict().items()
                if k
                in {
                    "format",
                    "lines",
                    "events",
                    "skipped",
                    "invalid_lines",
                    "unknown_types",
                    "oversized_lines",
                    "non_utf8_lines",
                    "cut_last_line",
                    "missing",
                }
            }
        return snap


def extract(
    events: Iterable[Event],
    previous: Snapshot | None = None,
    *,
    session: str = "",
    stats: ReadStats | None = None,
) -> Snapshot:
    """The snapshot of a session's task line from its events (deterministic, one pass)."""
    extractor = Extractor(previous, session=session)
    for event in events:
        extractor.feed(event)
    return extractor.finish(stats)


def snapshot_file(path: Path, previous: Snapshot | None = None, *, session: str = "") -> Snapshot:
    """Read a transcript file (any supported format) and extract its snapshot; the long tool
    results no rule reads are left undecoded (``Extractor.ignores_result``)."""
    stats = ReadStats()
    extractor = Extractor(previous, session=session)
    for event in read_events(path, stats=stats, skip_result=extractor.ignores_result):
        extractor.feed(event)
    return extractor.finish(stats)


__all__ = [
    "Extractor",
    "extract",
    "snapshot_file",
]
