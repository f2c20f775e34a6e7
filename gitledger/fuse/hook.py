"""What the fuse's hooks read and print."""

from __future__ import annotations

import json
from typing import Any


def read_hook_payload(raw: str) -> dict[str, Any]:
    """The JSON object a hook gets on stdin; anything else is an empty payload."""
    try:
        value = json.loads(raw) if raw.strip() else {}
    except (ValueError, RecursionError):  # deeply nested JSON exhausts the parser's stack
        return {}
    return value if isinstance(value, dict) else {}


def session_start_output(text: str) -> str:
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}},
        ensure_ascii=False,
    )


__all__ = [
    "read_hook_payload",
    "session_start_output",
]
