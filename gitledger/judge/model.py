"""The optional model judge: one Messages API call for a step the rules are unsure of.

The deterministic judge answers most steps for free; a SAME that mentions pieces or finishing
without a clear move is ``unsure``, and with ``--model NAME`` that step is put to a model. It
reads what the rules read and a little more, about 2,000 tokens however long the session:

- the person's requests: the first and the latest three whole (each capped), the others cut to
  a line;
- the assistant's latest messages;
- what its latest calls touched: a path, a pattern, a command's description -- never a call's
  full input and never any tool output;
- its task list, if it keeps one;
- the step: what it just said and what its calls touch.

It answers with one sentence of reasoning and the verdict on the last line. Anything else --
a network error, a refusal, a timeout, an unclear last line -- is SAME: a missed boundary costs
one compaction at the wrong moment later; a false NEXT compacts away live work now.

The API is Anthropic's Messages API (``POST {ANTHROPIC_BASE_URL}/v1/messages``, key in
``ANTHROPIC_API_KEY``) or anything that speaks it. The standard library's HTTP client is enough
for one small request, so nothing is added to the dependencies.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..text import one_line
from .calls import TaskList
from .shapes import NEXT, SAME, Call, Message, StepContext, Verdict

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
# About 2,000 tokens at ~4 characters a token (English prose with code names).
PROMPT_CHARS = 8_000
REQUEST_CHARS = 1_500
LINE_CHARS = 160
MESSAGE_CHARS = 400
LATEST_MESSAGES = 6
LATEST_CALLS = 12
TIMEOUT_S = 30.0

SYSTEM = """You judge one step of an AI coding assistant's work for a tool that compacts the \
conversation at task boundaries.

Answer NEXT when, at this step, a piece of work the person asked for is finished and the \
assistant turns to another piece they asked for (one issue in a list, one task, one fix, or a \
clearly separate phase), or when this is the first step of the next piece right after the \
previous one was closed.

Answer SAME for everything else: work inside a piece; a piece that passes but is still being \
checked, tidied or committed; the last piece finishing and any wrap-up after it; a status recap; \
a step that asks the person something or proposes work not asked for.

Write one sentence of reasoning, then the verdict alone on the last line: NEXT or SAME."""


def _line(text: str, limit: int = LINE_CHARS) -> str:
    return one_line(text, limit)


def _block(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def touched(call: Call) -> str:
    """What a call touches, in a few words: never its full input."""
    data = call.input
    for key in ("file_path", "path", "notebook_path", "pattern", "url", "query"):
        value = data.get(key)
        if isinstance(value, str) and value:
            return f"{call.name} {_line(value, 100)}"
    description = data.get("description")
    if isinstance(description, str) and description:
        return f"{call.name}: {_line(description, 100)}"
    command = data.get("command")
    if isinstance(command, str) and command:
        first = command.strip().splitlines()[0] if command.strip() else ""
        return f"{call.name}: {_line(first, 60)}"
    for key in ("subject", "taskId", "status"):
        value = data.get(key)
        if isinstance(value, str) and value:
            return f"{call.name} {key}={_line(value, 60)}"
    return call.name


def judge_prompt(ctx: StepContext, budget: int = PROMPT_CHARS) -> str:
    """The user message for the model: requests, latest messages, calls, task list, the step."""
    history: Sequence[Message] = ctx.history
    requests = [m.text for m in history if m.role in ("user", "summary") and m.text.strip()]
    tasks = TaskList()
    assistant = [m for m in history if m.role == "assistant"]
    for message in assistant:
        for call in message.calls:
            tasks.apply(call)
    texts = [m.text for m in assistant if m.text.strip()][-LATEST_MESSAGES:]
    calls = [touched(c) for m in assistant for c in m.calls][-LATEST_CALLS:]

    def render(
        request_limit: int, message_limit: int, n_calls: int, n_tasks: int, n_middle: int
    ) -> str:
        parts = ["## The person's requests"]
        whole = {0, *range(max(len(requests) - 3, 0), len(requests))}
        middle = [i for i in range(len(requests)) if i not in whole]
        shown = set(middle[-n_middle:]) if n_middle else set()
        for index, text in enumerate(requests):
            if index in whole:
                parts.append(f"{index + 1}. {_block(text, request_limit)}")
            elif index in shown:
                parts.append(f"{index + 1}. {_line(text, 100 if n_middle < 10 else LINE_CHARS)}")
            elif index == middle[0]:
                parts.append(f"({len(middle) - len(shown)} earlier requests left out)")
        if len(parts) == 1:
            parts.append("(none in the current context)")
        parts.append("\n## The assistant's latest messages")
        parts.extend(f"- {_block(t, message_limit)}" for t in texts)
        if n_calls:
            parts.append("\n## What its latest calls touched")
            parts.extend(f"- {c}" for c in calls[-n_calls:])
        rendered_tasks = tasks.render()
        if rendered_tasks and n_tasks:
            parts.append("\n## Its task list")
            parts.extend(f"- {_line(t, 100)}" for t in rendered_tasks[:n_tasks])
        parts.append("\n## The step to judge")
        parts.append(_block(ctx.step.text, 1_200) or "(no text)")
        for call in ctx.step.calls[:8]:
            parts.append(f"- calls {touched(call)}")
        return "\n".join(parts)

    # Shrink the generous parts first until the prompt fits.
    for request_limit, message_limit, n_calls, n_tasks, n_middle in (
        (REQUEST_CHARS, MESSAGE_CHARS, LATEST_CALLS, 40, 30),
        (800, 300, 8, 25, 15),
        (400, 200, 5, 15, 8),
        (200, 120, 3, 8, 3),
    ):
        prompt = render(request_limit, message_limit, n_calls, n_tasks, n_middle)
        if len(prompt) <= budget:
            return prompt
    return prompt[: budget - 200] + "\n…\n## The step to judge\n" + _block(ctx.step.text, 150)


def parse_answer(text: str) -> tuple[str, str]:
    """(decision, reasoning) from the model's answer; anything unclear is SAME."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return SAME, "the model gave no answer"
    last = lines[-1].strip("*_`#>:. ").upper()
    last = last.removeprefix("VERDICT").strip(":*_ ")
    reasoning = _line(" ".join(lines[:-1]) or lines[-1], 300)
    if last == NEXT:
        return NEXT, reasoning
    if last == SAME:
        return SAME, reasoning
    return SAME, f"unclear answer from the model ({_line(lines[-1], 60)!r}), so SAME"


@dataclass
class ModelJudge:
    """A callable ``(StepContext) -> Verdict`` over a Messages API. Counts what it spends."""

    model: str
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = TIMEOUT_S
    max_tokens: int = 200
    calls: int = 0
    failures: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def endpoint(self) -> str:
        base = self.base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
        return base.rstrip("/") + "/v1/messages"

    def ask(self, prompt: str) -> str:
        """One Messages API call; returns the answer's text. Raises on any failure."""
        import urllib.request  # only here: the hook that builds a prompt never pays for it

        body = json.dumps(
            {
                "model": self.model,
                "max_tokens": self.max_tokens,
                "system": SYSTEM,
                "messages": [{"role": "user", "content": prompt}],
            }
        ).encode()
        key = self.api_key if self.api_key is not None else os.environ.get("ANTHROPIC_API_KEY", "")
        request = urllib.request.Request(
            self.endpoint(),
            data=body,
            method="POST",
            headers={
                "content-type": "application/json",
                "anthropic-version": API_VERSION,
                "x-api-key": key,
                "authorization": f"Bearer {key}",
            },
        )
        with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
            data: Any = json.loads(response.read().decode("utf-8"))
        usage = data.get("usage") if isinstance(data, dict) else None
        if isinstance(usage, dict):
            self.input_tokens += int(usage.get("input_tokens") or 0)
            self.output_tokens += int(usage.get("output_tokens") or 0)
        content = data.get("content") if isinstance(data, dict) else None
        if not isinstance(content, list):
            raise ValueError("the response has no content")
        return "\n".join(
            str(block.get("text", ""))
            for block in content
            if isinstance(block, dict) and block.get("type") == "text"
        )

    def __call__(self, ctx: StepContext) -> Verdict:
        self.calls += 1
        try:
            answer = self.ask(judge_prompt(ctx))
        except Exception as exc:  # noqa: BLE001 - any failure of the model call means SAME
            self.failures += 1
            reason = f"model call failed ({type(exc).__name__}: {_line(str(exc), 120)}), so SAME"
            return Verdict(SAME, reason, "model-failed", by="model")
        decision, reasoning = parse_answer(answer)
        return Verdict(decision, reasoning, "model", by="model")


__all__ = [
    "API_VERSION",
    "DEFAULT_BASE_URL",
    "LATEST_CALLS",
    "LATEST_MESSAGES",
    "LINE_CHARS",
    "MESSAGE_CHARS",
    "ModelJudge",
    "PROMPT_CHARS",
    "REQUEST_CHARS",
    "SYSTEM",
    "TIMEOUT_S",
    "judge_prompt",
    "parse_answer",
    "touched",
]
