"""The fuse's hooks without click: ``fuse save --hook``, ``fuse summary --hook``, ``fuse restore
--hook``, the commands an agent runs at every compaction.

A hook's process is mostly start-up, and importing click and the click application is a good
part of it, so ``gitledger.cli.main`` hands the arguments here (after ``judge step``'s fast path):
``run_fuse_hook`` takes exactly the form ``fuse setup`` installs — the global ``--ledger``,
``--actor``, ``--agent`` first (``--name VALUE`` or ``--name=VALUE``), then ``fuse ACTION
--hook`` and, for ``save``, ``--json`` — and returns None for anything else, which click parses
as always. The click commands call the same bodies (``save_hook``, ``summary_hook``,
``restore_hook``), so a hook behaves alike whichever parser ran: it reads the payload on stdin
and never fails the agent (exit 0, one line on stderr).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..ledger import Ledger

_GLOBALS = {"--ledger": "ledger_path", "--actor": "actor", "--agent": "agent"}
Who = dict[str, Any]  # the global options: ledger_path, actor, agent (None where not given)
_ACTIONS = {"save": {"--hook", "--json"}, "summary": {"--hook"}, "restore": {"--hook"}}


def parse_hook(args: list[str]) -> tuple[str, dict[str, Any]] | None:
    """``(action, options)`` for ``[globals] fuse ACTION --hook``, or None when click must parse."""
    found: dict[str, Any] = {}
    index = 0
    while index < len(args) and args[index].startswith("--"):
        name, sep, value = args[index].partition("=")
        if name not in _GLOBALS:
            return None
        if not sep:
            if index + 1 >= len(args):
                return None
            index += 1
            value = args[index]
        if not value or value.startswith("-"):
            return None  # click's own answer (a missing or odd value) is the one to give
        found[_GLOBALS[name]] = value
        index += 1
    if len(args) < index + 3 or args[index] != "fuse" or args[index + 1] not in _ACTIONS:
        return None
    action, flags = args[index + 1], args[index + 2 :]
    if "--hook" not in flags or len(set(flags)) != len(flags) or not set(flags) <= _ACTIONS[action]:
        return None
    for key, env in (
        ("ledger_path", "GITLEDGER_DIR"),
        ("actor", "GITLEDGER_ACTOR"),
        ("agent", "GITLEDGER_AGENT"),
    ):
        if found.get(key) is None:
            found[key] = os.environ.get(env) or None
    if found.get("ledger_path") and os.path.isfile(found["ledger_path"]):
        return None  # click.Path(file_okay=False) says so
    found["as_json"] = "--json" in flags
    return action, found


def run_fuse_hook(args: list[str]) -> int | None:
    """Run a fuse hook when the arguments are its installed form: exit code 0; else None."""
    if len(args) < 3 or "fuse" not in args[:7] or "--hook" not in args:
        return None
    parsed = parse_hook(args)
    if parsed is None:
        return None
    action, options = parsed
    from ..hooks import never_fail

    who = {key: options.get(key) for key in ("ledger_path", "actor", "agent")}
    if action == "save":
        with never_fail("fuse save", "nothing saved"):
            save_hook(who, as_json=options["as_json"])
    elif action == "summary":
        with never_fail("fuse summary", "nothing recorded"):
            summary_hook(who)
    else:
        from ..hooks import read_payload

        with never_fail("fuse restore", "nothing restored"):
            restore_hook(who, read_payload())
    return 0


def _note(action: str, message: str) -> None:
    from ..hooks import note

    note(f"fuse {action}", message)


def _ledger(who: Who, cwd: object, session: object) -> Ledger:
    """The hook's ledger; its writes name the session as the agent (unless --agent pins one)."""
    from ..hooks import hook_ledger

    return hook_ledger(
        who.get("ledger_path"), cwd, actor=who.get("actor"), agent=who.get("agent"), session=session
    )


def save_hook(
    who: Who,
    transcript: Path | None = None,
    session: str | None = None,
    trigger: str | None = None,
    as_json: bool = False,
) -> None:
    """``fuse save`` as a hook: the payload names the session and its transcript.

    A transcript that is not a regular file (a directory, a FIFO, /dev/zero, a symlink loop) is
    refused before the ledger is opened. A missing one saves the previous task line again when
    the session has one, and nothing for a session never saved.
    """
    from .. import fuse
    from ..errors import InvalidInput
    from ..hooks import emit, read_payload, text_field, transcript_file

    payload = read_payload(strict=True)  # a payload that is no object says why, in one line
    given: object = str(transcript) if transcript else payload.get("transcript_path")
    session = session or text_field(payload, "session_id")
    trigger = (
        trigger or text_field(payload, "trigger", limit=40) or ("auto" if payload else "manual")
    )
    if given is None or not session:
        _note("save", "no transcript_path or session_id in the hook payload; nothing saved")
        return
    fuse.check_session(session)
    missing = False
    try:
        path = transcript_file(given)
    except InvalidInput:
        if not isinstance(given, str) or not given or os.path.lexists(given):
            raise
        path, missing = Path(given), True
    ledger = _ledger(who, payload.get("cwd"), session)
    if missing and fuse.load(ledger, session) is None:
        _note("save", f"transcript {path} is missing and the session has no save; nothing saved")
        return
    saved = fuse.save(ledger, session, path, trigger=trigger, actor=who.get("actor"))
    stats = saved.snapshot.stats
    if stats.get("missing"):
        _note("save", f"transcript {path} is missing; saved the previous task line again")
    elif stats.get("skipped") or stats.get("cut_last_line") or stats.get("non_utf8_lines"):
        non_utf8 = stats.get("non_utf8_lines")
        _note(
            "save",
            f"saved {saved.commit[:12]}; skipped {stats.get('skipped', 0)} lines"
            f"{', cut last line' if stats.get('cut_last_line') else ''}"
            f"{', ' + str(non_utf8) + ' non-UTF-8 lines' if non_utf8 else ''}",
        )
    if as_json:
        emit(json.dumps(saved.to_dict(), ensure_ascii=False, indent=2, default=str), "fuse save")
    elif payload.get("hook_event_name") == "PreCompact" and saved.snapshot.source == "claude_code":
        # Claude Code appends a PreCompact hook's stdout to the prompt that asks for its summary
        emit(fuse.steer(saved.snapshot, interface="cli"), "fuse save")


def summary_hook(who: Who, session: str | None = None) -> None:
    """``fuse summary`` as a hook: {session_id, compact_summary, trigger} on stdin."""
    from .. import fuse
    from ..hooks import read_payload, text_field

    payload = read_payload()
    session = session or text_field(payload, "session_id")
    summary = payload.get("compact_summary")
    if not session or not isinstance(summary, str) or not summary.strip():
        _note("summary", "no session_id or compact_summary; nothing recorded")
        return
    fuse.check_session(session)
    ledger = _ledger(who, payload.get("cwd"), session)
    trigger = text_field(payload, "trigger", limit=40) or "auto"
    fuse.record_summary(ledger, session, summary, trigger=trigger, actor=who.get("actor"))


def restore_hook(
    who: Who,
    payload: dict[str, Any],
    session: str | None = None,
    budget: int | None = None,
    plain: bool = False,
) -> None:
    """``fuse restore`` as a hook: the session's task line as SessionStart context, or nothing
    for a session never saved."""
    from .. import fuse
    from ..hooks import emit, session_start_output, text_field

    session = session or text_field(payload, "session_id")
    if not session:
        _note("restore", "no session_id in the hook payload; nothing restored")
        return
    fuse.check_session(session)
    ledger = _ledger(who, payload.get("cwd"), session)
    saved = fuse.load(ledger, session)
    if saved is None:
        return  # nothing saved for this session: nothing to say
    # budget None: the default
    text, _ = fuse.restore_text(ledger, session, budget, saved=saved, interface="cli")
    emit(text if plain else session_start_output(text), "fuse restore")


__all__ = [
    "parse_hook",
    "restore_hook",
    "run_fuse_hook",
    "save_hook",
    "summary_hook",
]
