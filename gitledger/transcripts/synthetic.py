"""Synthetic Claude Code transcripts with known facts, for the fuse demo, tests and benchmarks.

``write_demo_session(path)`` writes a long session (about 185 KB, about 95 messages) in Claude Code
2.1's format in which each of 14 probe facts appears exactly once, among routine work (file reads,
test runs with long output, chatter). ``probes_kept(text)`` says which probes a restored text still
carries. ``write_large_session(path, size)`` repeats routine work to any size, for timing and memory
measurements. Everything is deterministic: the same call writes the same bytes.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Probe:
    name: str
    kind: str  # goal, constraint, decision, finding, pitfall, subagent, open_item, request, …
    token: str  # a string that appears once in the session and must survive the restore


PROBES: tuple[Probe, ...] = (
    Probe("goal", "goal", "KESTREL-7"),
    Probe("constraint: legacy table", "constraint", "billing_v1_archive"),
    Probe("constraint: latency", "constraint", "p99 under 35 ms"),
    Probe("decision: algorithm", "decision", "token bucket"),
    Probe("decision: storage", "decision", "rate_buckets_v2"),
    Probe("finding: root cause", "decision", "clock skew"),
    Probe("pitfall: test database", "pitfall", "port 5433"),
    Probe("sub-agent result", "subagent", "legacy_gate.py"),
    Probe("open item: in progress", "open_item", "metrics export"),
    Probe("open item: pending", "open_item", "QUOTA_BURST"),
    Probe("latest request", "request", "per tenant"),
    Probe("where it left off", "left_off", "tenant override parser"),
    Probe("file edited", "file", "bucket_store.py"),
    Probe("spec criterion", "spec", "Retry-After"),
)

SESSION_ID = "5f0c7a1e-demo-4b2a-9d3e-kestrel000007"
_CWD = "/home/dev/kestrel"


def probes_kept(text: str) -> list[Probe]:
    return [p for p in PROBES if p.token in text]


class _Writer:
    def __init__(self, session: str) -> None:
        self.session = session
        self.parent: str | None = None
        self.n = 0
        self.minute = 0
        self.messages = 0

    def _base(self, kind: str) -> dict[str, Any]:
        self.n += 1
        self.minute += 1
        uuid = f"00000000-0000-4000-8000-{self.n:012d}"
        record = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": _CWD,
            "sessionId": self.session,
            "version": "2.1.39",
            "gitBranch": "main",
            "type": kind,
            "uuid": uuid,
            "timestamp": f"2026-03-02T{9 + self.minute // 60:02d}:{self.minute % 60:02d}:00.000Z",
        }
        self.parent = uuid
        return record

    def user(self, text: str) -> str:
        self.messages += 1
        record = self._base("user")
        record["message"] = {"role": "user", "content": text}
        return json.dumps(record)

    def assistant(self, text: str = "", tool: tuple[str, str, dict[str, Any]] | None = None) -> str:
        self.messages += 1
        record = self._base("assistant")
        content: list[dict[str, Any]] = []
        if text:
            content.append({"type": "text", "text": text})
        if tool:
            call_id, name, data = tool
            content.append({"type": "tool_use", "id": call_id, "name": name, "input": data})
        record["message"] = {
            "model": "claude-sonnet-4-5",
            "id": f"msg_{self.n:06d}",
            "type": "message",
            "role": "assistant",
            "content": content,
            "stop_reason": "tool_use" if tool else "end_turn",
            "usage": {"input_tokens": 1200 + self.n, "output_tokens": 80 + self.n % 50},
        }
        return json.dumps(record)

    def result(self, call_id: str, text: str, error: bool = False, extra: Any = None) -> str:
        self.messages += 1
        record = self._base("user")
        block: dict[str, Any] = {"tool_use_id": call_id, "type": "tool_result", "content": text}
        if error:
            block["is_error"] = True
        record["message"] = {"role": "user", "content": [block]}
        if extra is not None:
            record["toolUseResult"] = extra
        return json.dumps(record)


_MODULES = ["handlers", "routing", "auth", "invoices", "ledger", "webhooks", "retries", "audit"]


def _filler_output(rng: random.Random, lines: int) -> str:
    out = []
    for i in range(lines):
        module = rng.choice(_MODULES)
        out.append(
            f"tests/test_{module}.py::test_case_{i:03d} PASSED"
            f"{' ' * rng.randint(1, 8)}[{(i * 100) // max(lines, 1):3d}%]"
        )
    return "\n".join(out)


def _filler_source(rng: random.Random, name: str, lines: int) -> str:
    body = []
    for i in range(1, lines + 1):
        body.append(
            f"{i:6d}\u2192    value_{i} = compute_{rng.choice(_MODULES)}(request, offset={i})"
        )
    return f"# {name}\n" + "\n".join(body)


def _routine(w: _Writer, rng: random.Random, step: int) -> Iterator[str]:
    """One round of routine work: read a file, run tests, say something without decisions."""
    module = _MODULES[step % len(_MODULES)]
    read_id = f"toolu_read_{step:04d}"
    yield w.assistant(
        f"Reading the {module} module to see how requests flow through it.",
        (read_id, "Read", {"file_path": f"{_CWD}/src/billing/{module}.py"}),
    )
    yield w.result(read_id, _filler_source(rng, f"src/billing/{module}.py", 52))
    test_id = f"toolu_test_{step:04d}"
    yield w.assistant(
        "",
        (test_id, "Bash", {"command": f"pytest tests/test_{module}.py -q", "description": "tests"}),
    )
    yield w.result(test_id, _filler_output(rng, 64) + f"\n64 passed in {rng.randint(2, 9)}.1s")


def demo_events(session: str = SESSION_ID) -> Iterator[str]:
    """The lines of the demo session (see the module docstring)."""
    rng = random.Random(7)
    w = _Writer(session)
    yield w.user(
        "We need a request rate limiter in front of the billing API, ticket KESTREL-7. "
        "Start by looking at how requests reach the handlers."
    )
    for step in range(2):
        yield from _routine(w, rng, step)
    yield w.user(
        "Two rules from ops: never write to the legacy table billing_v1_archive, it is replicated "
        "to the auditors. And the limiter has to keep p99 under 35 ms on the hot path."
    )
    spec_id = "toolu_spec_0001"
    yield w.assistant(
        "I'll read the task record first.",
        (spec_id, "Bash", {"command": "gitledger task show 4f2a9c"}),
    )
    yield w.result(
        spec_id,
        "4f2a9c  [active] Rate-limit the billing API\n\n## Acceptance criteria\n"
        "- [ ] Requests over the limit get HTTP 429\n"
        "- [ ] 429 responses carry a Retry-After header\n\n## Notes\nOwner: platform team\n",
    )
    agent_id = "toolu_agent_0001"
    yield w.assistant(
        "",
        (
            agent_id,
            "Agent",
            {
                "description": "Survey existing limiter code",
                "subagent_type": "Explore",
                "prompt": "Find any existing rate limiting or quota code in the repository.",
            },
        ),
    )
    yield w.result(
        agent_id,
        "Found one earlier attempt: the old limiter lives in services/quota/legacy_gate.py and is "
        "imported nowhere; it used a fixed one-second window.",
        extra={"status": "completed"},
    )
    for step in range(2, 5):
        yield from _routine(w, rng, step)
    yield w.assistant(
        "I'll use a token bucket rather than a sliding window, because bursts of twenty requests "
        "from batch clients must pass while the average stays bounded."
    )
    todo_id = "toolu_todo_0001"
    yield w.assistant(
        "",
        (
            todo_id,
            "TodoWrite",
            {
                "todos": [
                    {"content": "Implement the bucket", "status": "completed", "activeForm": "x"},
                    {
                        "content": "Add metrics export for rejected requests",
                        "status": "in_progress",
                        "activeForm": "Adding metrics",
                    },
                    {
                        "content": "Document the QUOTA_BURST environment variable",
                        "status": "pending",
                        "activeForm": "Documenting",
                    },
                ]
            },
        ),
    )
    yield w.result(todo_id, "Todos have been modified successfully.")
    for step in range(5, 8):
        yield from _routine(w, rng, step)
    edit_id = "toolu_edit_0001"
    yield w.assistant(
        "Writing the storage layer now.",
        (
            edit_id,
            "Write",
            {"file_path": f"{_CWD}/src/limiter/bucket_store.py", "content": "class Store: ...\n"},
        ),
    )
    yield w.result(edit_id, "File created successfully.")
    yield w.assistant(
        "Decided to keep the buckets in a new table rate_buckets_v2, since the old quota table "
        "has no per-key row lock and would serialise every request."
    )
    fail_id = "toolu_fail_0001"
    yield w.assistant(
        "", (fail_id, "Bash", {"command": "pytest tests/test_limiter.py -q", "description": "t"})
    )
    yield w.result(
        fail_id,
        "E   psycopg.OperationalError: connection to server at 127.0.0.1, port 5433 failed: "
        "Connection refused\n1 error in 0.4s",
        error=True,
    )
    for step in range(8, 11):
        yield from _routine(w, rng, step)
    yield w.assistant(
        "The root cause of the flaky refill test was clock skew between the two pods, up to 400 ms, "
        "so refill now uses the database clock."
    )
    for step in range(11, 17):
        yield from _routine(w, rng, step)
    yield w.user("Looks good. Please also make the limit configurable per tenant.")
    for step in range(17, 19):
        yield from _routine(w, rng, step)
    yield w.assistant(
        "I am halfway through the tenant override parser: the YAML schema is done, the lookup "
        "and its tests are next."
    )


def write_demo_session(path: Path, session: str = SESSION_ID) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        for line in demo_events(session):
            out.write(line + "\n")
    return path


def count_messages(path: Path) -> int:
    with open(path, encoding="utf-8") as handle:
        return sum(
            1 for line in handle if '"type": "user"' in line or '"type": "assistant"' in line
        )


def write_large_session(path: Path, size: int, session: str = SESSION_ID) -> Path:
    """The demo session with routine work repeated in the middle until the file is ``size`` bytes."""
    path = Path(path)
    lines = list(demo_events(session))
    head, tail = lines[: len(lines) // 2], lines[len(lines) // 2 :]
    rng = random.Random(11)
    w = _Writer(session)
    w.n = 10_000
    written = 0
    with open(path, "w", encoding="utf-8") as out:
        for line in head:
            out.write(line + "\n")
            written += len(line) + 1
        budget = size - sum(len(x) + 1 for x in tail)
        step = 0
        while written < budget:
            for line in _routine(w, rng, step):
                out.write(line + "\n")
                written += len(line) + 1
            step += 1
        for line in tail:
            out.write(line + "\n")
    return path


__all__ = [
    "PROBES",
    "Probe",
    "SESSION_ID",
    "count_messages",
    "demo_events",
    "probes_kept",
    "write_demo_session",
    "write_large_session",
]
