"""The extraction rules: what marks a request, a constraint, a decision, a finding, a failure,
a spec or a tracker item in a transcript, and the small readers of tool calls and results."""

from __future__ import annotations

import re
from typing import Any

from ..agents import tool_names
from ..transcripts import Event
from .condense import _LINE_NUMBER_RE, _REMINDER_RE, _TAG_RE, clean
from .snapshot import ITEM_CHARS, Spec

_SKIP_USER_PREFIXES = (
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<bash-input>",
    "Caveat:",
    "[Request interrupted",
    "This session is being continued",
    "<task-notification>",
    "<user-prompt-submit-hook>",
)
# A background sub-agent: its call returns a launch notice, and its result arrives later as a
# <task-notification> in a user record (Claude Code 2.1). A background shell command's
# notification has no <result>.
_ASYNC_LAUNCH = "Async agent launched successfully"
_NOTIFICATION_RE = re.compile(
    r"<task-notification>.*?<summary>(.*?)</summary>\s*<result>(.*?)(?:</result>|$)", re.S
)
_NOTIFIED_AGENT_RE = re.compile(r'^Agent "(.+)" (?:completed|finished|failed)')
_QUIET_COMMANDS = {
    "/clear",
    "/compact",
    "/context",
    "/cost",
    "/help",
    "/model",
    "/resume",
    "/config",
    "/status",
    "/exit",
    "/login",
    "/logout",
    "/mcp",
    "/memory",
    "/permissions",
    "/hooks",
    "/ide",
    "/doctor",
    "/usage",
    "/agents",
    "/plugin",
    "/rewind",
}
_COMMAND_RE = re.compile(r"<command-name>\s*(/?[^<\s]+)\s*</command-name>", re.S)
_ARGS_RE = re.compile(r"<command-args>(.*?)</command-args>", re.S)

_GOAL_CHANGE_RE = re.compile(
    r"^\W*(new (task|goal)\b|change of plan|forget (that|the previous|about)|scratch that|"
    r"(actually,? )?(instead|now),? (let'?s|please) (work on|switch|do|build|implement)|"
    r"let'?s switch to|switch(ing)? (gears|to)|next task\b|the goal is now)",
    re.I,
)
_CONSTRAINT_RE = re.compile(
    r"\b(don'?t|do not|never|always|must|mustn'?t|make sure|ensure|should ?n[o']t|avoid|"
    r"only use|only|prefer|keep (it|the|them|all|every)|without|no more than|at most|at least|"
    r"required|important|please use|use only|not allowed|forbidden|has to|have to|needs? to|"
    r"should|can'?t|cannot)\b",
    re.I,
)
_DECISION_RE = re.compile(
    r"\b(decided|decision:|decide to|i'?ll go with|going with|we'?ll use|i'?ll use|we chose|"
    r"i chose|chose to|choosing|opted|switched to|settled on|the approach is|"
    r"we'?ll keep|i'?ll keep|(use|using|prefer|go with)\b.{0,80}\b(instead of|rather than)|"
    r"(instead of|rather than)\b.{0,80}\b(use|using|go with))",
    re.I,
)
_FINDING_RE = re.compile(
    r"\b(root cause|turns out|found that|the (issue|problem|bug|cause|culprit) (is|was)|"
    r"the fix (is|was)|this means|which means|confirmed that|is caused by|was caused by|"
    r"doesn'?t support|does not support|not supported|false positive|isn'?t recognized|"
    r"needs? \S{1,40} as a (test |dev )?dependency)\b",
    re.I,
)
# Task trackers read and changed from the shell (beads: ``bd``). Their items are open work.
_BD_READY_RE = re.compile(r"^\s*\d+\.\s+\[[^\]]*\]\s+\[(\w+)\]\s+([\w.-]+):\s+(.+)$", re.M)
_BD_LIST_RE = re.compile(
    r"^\s*[○◐●✓]\s+([\w.-]+)\s+\[[^\]]*\]\s+\[(\w+)\]\s+-\s+(.+?)(?:\s+\(blocked by:.*\))?\s*$",
    re.M,
)
_BD_SHOW_RE = re.compile(r"^\s*[○◐●✓]\s+([\w.-]+)\s+·\s+(.+?)\s+\[[^\]]*·\s*([\w ]+)\]\s*$", re.M)
_BD_CHILD_RE = re.compile(r"^\s*↳\s*([○◐●✓])\s+([\w.-]+):\s+(.+?)(?:\s+●\s*P\d)?\s*$", re.M)
_BD_SYMBOL_STATUS = {"○": "open", "◐": "in_progress", "●": "blocked", "✓": "closed"}
_BD_UPDATE_RE = re.compile(r"\bbd update ((?:[\w.-]+\s+)+)--status[ =](\w+)")
_BD_CLOSE_RE = re.compile(
    r"\bbd close ((?:[\w.-]+\s*)+?)(?:\s+--reason[ =](?:\"([^\"]*)\"|'([^']*)'|(\S+)))?(?=\s*(?:$|&&|;|\||2>))",
    re.M,
)
_PLAN_ITEM_RE = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+\S", re.M)
# A sentence that announces the assistant's next step rather than saying what it found or did:
# "Let me check the config.", "Now add the handler.", "I'll run the tests first."
_NEXT_STEP_RE = re.compile(
    r"^(?:(?:now|next|first|then|ok(?:ay)?|great|good|perfect|alright|so)\b[,!.:]?\s+)*"
    r"(?:let me|let's|i'll|i will|i need to|i'm going to|i am going to|i should|we need to|"
    r"i'm now|time to|(?<=now )(?!i\b|i'|we\b|the\b|it\b|that\b|this\b|there\b|all\b)\w+)",
    re.I,
)
_REASON_RE = re.compile(
    r"\b(because|since|so that|due to|as a result|which means|otherwise)\b", re.I
)
_FAILURE_RE = re.compile(
    r"\b(failed|fails|doesn'?t work|didn'?t work|does not work|broke|broken|the error (is|was)|"
    r"mistake|won'?t work|can'?t use|cannot use|pitfall|gotcha|careful)\b",
    re.I,
)
_TRIVIAL_TOOL_ERRORS = (
    "has not been read yet",
    "String to replace not found",
    "File has been modified since read",
    "File has been unexpectedly modified",
    "Found 2 matches",
    "matches of the string to replace",
    "File does not exist",
    "is a directory",
)
_SPEC_COMMAND_RE = re.compile(
    r"\b(gitledger task show|git ledger task show|bd show|gh issue view|gh pr view|"
    r"jira issue view|linear issue view|glab issue view)\b(\s+[\w.#/:-]+)?",
)
_SPEC_FILE_RE = re.compile(
    r"(^|/)(specs?|requirements|rfcs?|issues?|stories|tickets)/[^/]+\.(md|txt|rst)$|"
    r"(^|/)[^/]*(spec|SPEC|Spec|requirements|REQUIREMENTS|PRD|prd|ISSUE|issue|TASK|TODO|PLAN|"
    r"plan|story|STORY)[^/]*\.(md|txt|rst)$"
)
_CRITERIA_HEAD_RE = re.compile(
    r"^\s*(#+\s*|\*\*)?\s*(acceptance|criteria|done when|definition of done|requirements|"
    r"must|tests?|deliverables?|what to build|goals?)\b",
    re.I,
)
# A heading over the spec's rules: what is listed under it binds whatever its words
# ("Architecture constraints:", "## Non-goals", "Guardrails").
_RULES_HEAD_RE = re.compile(
    r"\b(constraints?|rules|guardrails|non-goals|invariants|restrictions|limitations|"
    r"out of scope|do not|don'?ts)\b",
    re.I,
)
_HEADING_RE = re.compile(r"^\s*(#+\s+\S|\*\*[^*]+\*\*\s*:?\s*$|[A-Z][A-Za-z /]{2,40}:\s*$)")
_CLAIM_RE = re.compile(
    r"\b(?:gitledger|git ledger)\s+(?:task\s+)?(?:claim|start)\s+([A-Za-z0-9]{4,64})\b|"
    r"\b(?:gitledger|git ledger)\s+task\s+update\s+([A-Za-z0-9]{4,64})\b[^|;&]*--status[ =]active"
)
_PATCH_FILE_RE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.M)
_EDIT_TOOLS = tool_names("edit")  # every agent's, from the registry
_SHELL_TOOLS = tool_names("shell")
_OPEN_STATUSES = {"pending", "in_progress", "in-progress", "open", "active", "blocked", "todo"}

# The harness's words around the person's answers (AskUserQuestion) and refusals.
_ASK_TOOLS = {"AskUserQuestion", "ask_user", "AskUser"}
_ANSWERS_RE = re.compile(r"User has answered your questions?:\s*(.+)", re.S)
_ANSWER_PAIR_RE = re.compile(r'"((?:[^"\\]|\\.){3,600}?)"\s*=\s*"((?:[^"\\]|\\.){1,800}?)"')
_REJECT_REASON_RE = re.compile(
    r"(?:reason for the rejection|the user said):\s*(.+?)\s*(?:$|\n\n|STOP what you are doing)",
    re.S | re.I,
)
# Commands that verify the work, and what their output counts ("1309 pass", "3 failed").
_CHECK_COMMAND_RE = re.compile(
    r"\b(pytest|tox|nox|mypy|pyright|ruff|flake8|eslint|tsc|jest|vitest|mocha|rspec|phpunit|"
    r"golangci-lint|clippy|typecheck|lint|test|tests|check|vet|build|verify|ci)\b",
    re.I,
)
_COUNT_RE = re.compile(
    r"(?:^|\s)((?:\d[\d,]*\s+(?:tests?\s+)?(?:passed|pass|passing|failed|fail|failing|errors?|"
    r"skipped|ok)\b[^\n]{0,60}))",
    re.I,
)
_COUNT_WORD_RE = re.compile(r"pass|fail|error|skipped|\bok\b", re.I)
CHECK_TAIL = 800  # bytes of a check's output read for its counts (runners print them last)
# git commit prints "[branch abc1234] subject"
_COMMIT_OUT_RE = re.compile(
    r"^\[([\w./+-]{1,80})(?: \(root-commit\))? ([0-9a-f]{7,12})\] (.+)$", re.M
)
# The message a commit command writes: a heredoc (``-m "$(cat <<'EOF' … EOF)"``, ``-F - <<EOF``)
# or its ``-m`` arguments.
_HEREDOC_RE = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?\s*\n(.*?)\n\s*\1\b", re.S)
_MESSAGE_ARG_RE = re.compile(r"""(?:^|\s)-m\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)')""")
_TRAILER_RE = re.compile(
    r"^\s*(?:[\w-]+-by:|Co-Authored-By:|Change-Id:|🤖|Generated with\b).*$", re.I | re.M
)
COMMIT_BODY_CHARS = 600


def commit_body(command: str, subject: str) -> str:
    """What a commit's message says beyond its subject (the assistant's own account of the
    change), trailers left out; empty when the command holds no message."""
    found = _HEREDOC_RE.search(command)
    if found:
        message = found.group(2)
    else:
        parts = [a or b for a, b in _MESSAGE_ARG_RE.findall(command)]
        message = "\n\n".join(p.replace('\\"', '"') for p in parts if not p.startswith("$("))
    message = _TRAILER_RE.sub("", message).strip()
    first, _, rest = message.partition("\n")
    head, said = clean(first), clean(subject)
    if head and (head.startswith(said[:60]) or said.startswith(head)):
        message = rest
    return clean(message)[:COMMIT_BODY_CHARS]


_QUOTED_RE = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"|\$\(cat <<.*", re.S)


def is_check(command: str) -> bool:
    """Whether a shell command verifies the work: a check word (``pytest``, ``go test``,
    ``npm run lint``) as a word of the command itself, not inside a path or a quoted argument
    (``grep -n X tests/app.py`` reads a file)."""
    unquoted = _QUOTED_RE.sub(" ", command)
    words = [w for w in unquoted.split() if "/" not in w and "=" not in w]
    return bool(_CHECK_COMMAND_RE.search(" ".join(words)))


def _check_key(command: str) -> str:
    """The same check run again (other flags, another path) replaces its older result."""
    words = [w for w in command.split() if not w.startswith(("-", "2>", ">", "&", "|"))]
    return " ".join(words[:3])


MIN_OUTCOME = 80  # shorter end-of-turn texts are acknowledgements, not reports

# Todo-list tools: Claude Code's TodoWrite, Gemini CLI's write_todos, Codex's update_plan.
_TODO_TOOLS = {
    "TodoWrite": ("todos", "content"),
    "write_todos": ("todos", "description"),
    "update_plan": ("plan", "step"),
}


def request_text(event: Event) -> str | None:
    """The request a user event makes, or None when the harness wrote it (meta, command output)."""
    if event.kind != "user" or event.is_meta or event.sidechain:
        return None
    text = _REMINDER_RE.sub(" ", event.text).strip()
    if not text or text.startswith(_SKIP_USER_PREFIXES):
        return None
    command = _COMMAND_RE.search(text)
    if command:
        name = command.group(1)
        if not name.startswith("/"):
            name = "/" + name
        args_match = _ARGS_RE.search(text)
        args = args_match.group(1).strip() if args_match else ""
        if name in _QUIET_COMMANDS and not args:
            return None
        return f"{name} {args}".strip()
    if text.startswith("<command-message>"):
        return None
    return text


def _call_summary(name: str, data: dict[str, Any]) -> str:
    pattern = data.get("pattern")
    if isinstance(pattern, str) and pattern.strip():
        # a search is known by what it looks for, then where
        where = data.get("path") or data.get("glob")
        where = f" in {clean(where)[:120]}" if isinstance(where, str) and where.strip() else ""
        return f"{name} {clean(pattern.strip())[:160]}{where}"
    for key in ("command", "file_path", "path", "pattern", "url", "description", "query"):
        value = data.get(key)
        if isinstance(value, list):
            value = " ".join(str(v) for v in value)
        if isinstance(value, str) and value.strip():
            # the first line: a heredoc commit message is not what identifies the command
            return f"{name} {clean(value.strip().splitlines()[0])[:160]}"
    return name


def _first_error_line(text: str) -> str:
    text = _TAG_RE.sub(" ", text)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not re.match(r"^(exit code \d+|traceback \(most)", ln, re.I)]
    for line in lines:
        if re.search(r"(error|exception|failed|fatal|denied|not found|refused|assert)", line, re.I):
            return clean(re.sub(r"^E\s+", "", line))[:240]
    return clean(lines[0])[:240] if lines else ""


_NAMED_LINE_RE = re.compile(r"`[^`]+`|\w+\.\w+|\w+_\w+|[a-z][A-Z]\w*")


def _plan_order(criteria: list[str], said: list[str]) -> list[str]:
    return [s for s in said if s not in criteria] + criteria


def _prose_lines(text: str) -> list[str]:
    """A document's lines outside its fenced code blocks (code is neither a criterion nor a rule:
    ``lines++ // skip the last line`` is not the spec's)."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced:
            out.append(line.rstrip())
    return out


def _parse_spec(ref: str, text: str, *, steps: bool = False) -> Spec | None:
    """Acceptance criteria and constraint lines of a spec; ``steps``: a plan, whose top-level
    list items are its criteria when it has no criteria heading."""
    text = _LINE_NUMBER_RE.sub("", text)
    lines = _prose_lines(text)
    title = next((clean(ln).lstrip("#* ") for ln in lines if ln.strip()), "")
    criteria: list[str] = []
    constraints: list[str] = []
    in_criteria = in_rules = False
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        if _CRITERIA_HEAD_RE.match(stripped) and (
            _HEADING_RE.match(stripped) or stripped.endswith(":")
        ):
            in_criteria = True
            continue
        if _HEADING_RE.match(stripped):
            in_criteria = False
            in_rules = bool(_RULES_HEAD_RE.search(stripped))
            continue
        item = clean(stripped.lstrip("-*•> ").removeprefix("[ ]").removeprefix("[x]").strip())
        item = item.replace("**", "").strip()
        if len(item) < 6:
            continue
        if stripped.startswith(("- [ ]", "* [ ]", "- [x]")) or (
            in_criteria
            and stripped.startswith(("-", "*", "•"))
            or in_criteria
            and stripped[0].isdigit()
        ):
            if len(criteria) < 10:
                criteria.append(item[:300])
        elif (
            (_CONSTRAINT_RE.search(item) or in_rules and stripped.startswith(("-", "*", "•")))
            and len(constraints) < 8
            and len(item) <= 300
        ):
            constraints.append(item)
    if steps and not criteria:
        for line in lines:
            if re.match(r"^(\d+[.)]|[-*•])\s+\S", line):  # top-level items only
                item = clean(line.lstrip("-*•0123456789.) ")).replace("**", "").strip()
                if len(item) >= 6 and len(criteria) < 10 and item not in constraints:
                    criteria.append(item[:300])
    if steps:
        # what the plan says to do in its prose: "Use X (already in go.mod)", "In F(), before G():"
        said = [
            clean(ln.strip()).replace("**", "")[:300]
            for ln in lines
            if len(ln.strip()) >= 30
            and not ln.lstrip().startswith(("#", "|", "-", "*", "•", ">"))
            and not ln.strip()[0].isdigit()
            and _NAMED_LINE_RE.search(ln)
        ]
        criteria = _plan_order(criteria, said)[:12]
    if not criteria and not constraints:
        return None
    return Spec(ref=ref, title=title[:200], criteria=criteria, constraints=constraints)


def _pitfall_key(text: str) -> str:
    """A failed call's pitfall is keyed by the call, so the same call failing again replaces it."""
    head, failed, _ = text.partition(" failed: ")
    return head if failed else text


def shell_command(data: dict[str, Any]) -> str | None:
    """The command line of a shell tool's input (``command``, Codex's ``cmd``, a list of words
    joined), or None when the input holds none."""
    command = data.get("command") or data.get("cmd")
    if isinstance(command, list):
        command = " ".join(str(c) for c in command)
    return command if isinstance(command, str) else None


def _command_head(name: str, data: dict[str, Any]) -> str:
    """What identifies 'the same kind of command' for a failure and its fix: tool and 2 words."""
    command = shell_command(data)
    if command is None:
        return ""
    words = [w for w in command.split() if not w.startswith(("-", "2>", ">", "&"))]
    return f"{name} {' '.join(words[:2])}" if words else ""


def _split_specs(ref: str, text: str) -> list[tuple[str, str]]:
    """One tracker command may print several items (``bd show a; bd show b``): one spec each."""
    heads = list(_BD_SHOW_RE.finditer(text))
    if len(heads) < 2:
        return [(ref, text)]
    out = []
    for n, head in enumerate(heads):
        end = heads[n + 1].start() if n + 1 < len(heads) else len(text)
        out.append((f"bd show {head.group(1)}", text[head.start() : end]))
    return out


# A name a reader cannot guess: CamelCase inside (``indexEntries``, ``ParseHTTP``) or joined by
# underscores (``max_retries``, ``TestX_Y``), six characters at least.
_IDENT_RE = re.compile(r"(?<![\w$.-])[A-Za-z_][A-Za-z0-9_]{5,}(?![\w$])")
_COMPOUND_RE = re.compile(r"[a-z0-9][A-Z]|[A-Za-z0-9]_[A-Za-z0-9]")
# A declaration in most languages: what a new file defines (its other names are only used).
_DECLARATION_RE = re.compile(
    r"\b(?:func|def|defp|class|function|fn|type|interface|struct|enum|trait|const|let|var|"
    r"defmodule|module)\s+(?:\([^)]{0,80}\)\s*)?(?:[A-Za-z_][A-Za-z0-9_]*\.)*"
    r"([A-Za-z_][A-Za-z0-9_]*)"
)
NAMES_PER_FILE = 8


def _compound(word: str) -> bool:
    return bool(_COMPOUND_RE.search(word)) and not word.isupper()


def edit_names(data: dict[str, Any]) -> list[str]:
    """The names an edit brings in, in their order: those its new text declares, then the
    compound names (``indexEntries``, ``max_retries``) its new text has and its old text has
    not; of a new file (``Write``) only what it declares."""
    new_parts: list[str] = []
    old_parts: list[str] = []
    edits = data.get("edits")
    for edit in edits if isinstance(edits, list) else [data]:
        if not isinstance(edit, dict):
            continue
        for key in ("new_string", "content", "new_source", "new_str", "file_text"):
            if isinstance(edit.get(key), str):
                new_parts.append(edit[key])
        for key in ("old_string", "old_str"):
            if isinstance(edit.get(key), str):
                old_parts.append(edit[key])
    new, old = "\n".join(new_parts), "\n".join(old_parts)
    if not new:
        return []
    before = set(_IDENT_RE.findall(old)) if old else set()
    declared = [n for n in _DECLARATION_RE.findall(new) if len(n) >= 6 and n not in before]
    used = {} if "content" in data and not old else dict.fromkeys(_IDENT_RE.findall(new))
    out = dict.fromkeys(declared)
    for name in used:
        if len(out) >= NAMES_PER_FILE:
            break
        if name not in before and _compound(name):
            out[name] = None
    return list(out)[:NAMES_PER_FILE]


def _relative(path: str, cwd: str | None) -> str:
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1 :]
    return path


def _goal_from_summary(text: str) -> str:
    """The 'Primary Request and Intent' paragraph of a compaction summary, if it has one."""
    match = re.search(
        r"Primary Request and Intent:?\**\s*(.+?)(?:\n\s*\n|\n\s*\d+\.\s|\Z)", text, re.S | re.I
    )
    if match:
        return clean(match.group(1))[:ITEM_CHARS]
    for line in text.splitlines():
        line = clean(line)
        if len(line) > 20 and not line.lower().startswith("this session is being continued"):
            return line[:ITEM_CHARS]
    return ""


__all__ = [
    "COMMIT_BODY_CHARS",
    "MIN_OUTCOME",
    "NAMES_PER_FILE",
    "commit_body",
    "edit_names",
    "is_check",
    "request_text",
    "shell_command",
]
