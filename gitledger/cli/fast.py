"""``gitledger judge step`` without click: the command a hook runs after every step of an agent.

Importing click and the click application costs a ``judge step`` process more than reading and
judging the step (docs/JUDGE.md, "Time"), so ``gitledger.cli.main`` hands the arguments here
first. ``run_fast`` parses the forms a hook and a person type — the global ``--ledger``,
``--actor``, ``--agent`` before or after the command, ``judge step`` and its options as
``--name VALUE`` or ``--name=VALUE`` — and returns None for anything else (``--help``, an
unknown option, a value click would refuse), which click then parses and answers as always.
The step itself is ``step``, which the click command ``judge step`` calls too: one body, one
output, whichever parser ran.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from typing import Any

    from ..judge.shapes import StepContext
    from ..ledger import Ledger

# A function hook hands the step judge the whole conversation since the last compaction
# ($.session.messages(), tool output left out, long tool inputs cut by the module): more than a
# command hook's payload, still bounded.
STEP_PAYLOAD_BYTES = 16 << 20

_GLOBALS = {"--ledger": "ledger_path", "--actor": "actor", "--agent": "agent"}
_VALUES = {
    "--transcript": "transcript",
    "--floor": "floor",
    "--model": "model",
    "--window": "window",
    "--session": "session",
}
_FLAGS = {
    "--checkpoint": "checkpoint",
    "--hook": "hook",
    "--prompt": "with_prompt",
    "--json": "as_json",
}
_DECIMAL = re.compile(r"\d+(?:\.\d*)?|\.\d+")


class _Fallback(Exception):
    """The arguments are not a form the fast parser takes: click parses them."""


def _option(args: list[str], index: int, names: dict[str, str]) -> tuple[str, str, int] | None:
    """``(name, value, next index)`` for ``--name VALUE`` / ``--name=VALUE`` at ``index``."""
    arg = args[index]
    name, sep, value = arg.partition("=")
    if name not in names:
        return None
    if not sep:
        if index + 1 >= len(args):
            raise _Fallback
        value = args[index + 1]
        index += 1
    if not value or value.startswith("-"):
        raise _Fallback  # click's own answer (a missing or odd value) is the one to give
    return names[name], value, index + 1


def parse_step(args: list[str]) -> dict[str, Any] | None:
    """The options of ``[globals] judge step [options]``, or None when click must parse it."""
    found: dict[str, Any] = {"ledger_path": None, "actor": None, "agent": None}
    try:
        index = 0
        while index < len(args) and args[index].startswith("--"):
            got = _option(args, index, _GLOBALS)
            if got is None:
                return None
            found[got[0]], index = got[1], got[2]
        if args[index : index + 2] != ["judge", "step"]:
            return None
        index += 2
        while index < len(args):
            arg = args[index]
            if arg in _FLAGS:
                found[_FLAGS[arg]] = True
                index += 1
                continue
            got = _option(args, index, {**_VALUES, **_GLOBALS})
            if got is None:
                return None
            found[got[0]], index = got[1], got[2]
    except _Fallback:
        return None
    return _checked(found)


def _checked(found: dict[str, Any]) -> dict[str, Any] | None:
    """The values converted as click converts them; None where click would refuse one."""
    floor = found.get("floor")
    if floor is not None:
        if not _DECIMAL.fullmatch(floor) or not 0 <= float(floor) <= 100:
            return None
        found["floor"] = float(floor)
    window = found.get("window")
    if window is not None:
        if not window.isascii() or not window.isdigit() or int(window) < 1000:
            return None
        found["window"] = int(window)
    transcript = found.get("transcript")
    if transcript is not None:
        if os.path.isdir(transcript):
            return None  # click.Path(dir_okay=False) says so
        found["transcript"] = Path(transcript)
    for key, env in (("ledger_path", "GITLEDGER_DIR"), ("actor", "GITLEDGER_ACTOR")):
        if found.get(key) is None:
            found[key] = os.environ.get(env) or None
    ledger = found.get("ledger_path")
    if ledger is not None and os.path.isfile(ledger):
        return None  # click.Path(file_okay=False) says so
    for flag in _FLAGS.values():
        found.setdefault(flag, False)
    for value in _VALUES.values():
        found.setdefault(value, None)
    return found


def run_fast(args: list[str]) -> int | None:
    """Run ``judge step`` when the arguments are a form parsed here: its exit code, else None."""
    if len(args) < 2 or "judge" not in args[:7] or "step" not in args[:8]:
        return None
    options = parse_step(args)
    if options is None:
        return None
    import gc

    # A step is a short process: reference counting frees what it reads, and the cyclic
    # collector, which found a few hundred objects to free, cost 1-3 ms of a step and 12 ms of a
    # whole read of a 3.8 MB transcript. What it would have freed goes at exit.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run_step(options)
    finally:
        if collecting:
            gc.enable()


def _run_step(options: dict[str, Any]) -> int:
    from ..errors import LedgerError

    as_json = bool(options["as_json"])
    opts = dict(options)
    if options["hook"]:
        from ..hooks import never_fail

        with never_fail("judge step", "judged SAME"):
            try:
                step(**opts)
            except LedgerError as exc:
                raise _Worded(exc) from exc
        return 0
    try:
        step(**opts)
    except LedgerError as exc:
        if as_json:
            text = json.dumps(exc.to_dict("cli"), ensure_ascii=False)
        else:
            text = f"Error: {exc.worded('cli')}"
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
        return exc.exit_code
    return 0


class _Worded(Exception):
    """A LedgerError as a hook reports it: worded for the CLI, as click's error is."""

    def __init__(self, error: Any) -> None:
        self.message = error.worded("cli")
        super().__init__(self.message)


def _payload(limit: int | None = None) -> dict[str, Any]:
    """The hook payload on stdin, bounded in size and time (see gitledger.hooks); a payload that
    is not a JSON object is an error naming why."""
    from ..hooks import MAX_PAYLOAD_BYTES, read_payload

    return read_payload(strict=True, limit=limit or MAX_PAYLOAD_BYTES)


def is_file(path: Path) -> bool:
    """Path.is_file, but a name too long for the file system (ENAMETOOLONG) is no file either."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def transcript_and_payload(
    transcript: Path | None, *, inline: bool
) -> tuple[Path | None, dict[str, Any]]:
    """``--transcript``, else the hook payload on stdin and the transcript it names.

    A path given by hand must exist. With ``inline`` (the step judge) the payload may carry the
    step itself ("step" or "messages") instead, and a payload's transcript may not exist yet:
    Claude Code writes it asynchronously, and the judge then sees no step rather than failing.
    """
    from ..errors import InvalidInput

    if transcript is not None:
        if not is_file(transcript):
            raise InvalidInput(f"No transcript at {transcript}. Check the path.")
        return transcript, {}
    payload = _payload(STEP_PAYLOAD_BYTES if inline else None)
    given = payload.get("transcript_path")
    if not given:
        if inline and ("step" in payload or "messages" in payload):
            return None, payload
        raise InvalidInput(
            f"{'Nothing to judge' if inline else 'No transcript'}: pass --transcript PATH, or a "
            'hook payload with "transcript_path" on stdin.'
        )
    from ..hooks import transcript_file

    try:
        path = transcript_file(given)
    except InvalidInput:
        # The step judge may run before Claude Code has written the transcript: a missing one
        # is no step. Anything else that is there but no regular file is refused.
        if not inline or not isinstance(given, str) or os.path.lexists(given):
            raise
        path = Path(given)
    return path, payload


def find_ledger(explicit: str | None) -> Path | None:
    """The ledger in use, if one exists; the step judge never creates one."""
    if explicit:
        return Path(explicit)
    from .. import paths
    from ..errors import UnsafeLedger

    try:
        location = paths.discover()
    except UnsafeLedger:  # refused by the commands that write; the judge reads defaults
        return None
    return location.path if location is not None else None


def cache_folder(explicit: str | None, cwd: object) -> Path | None:
    """Where the step judge keeps its transcript read cache: ``gitledger-judge/`` in the ledger
    it reads its settings from (``--ledger``, else the project of the payload's ``cwd`` or of
    the working directory), if that ledger exists; None (read whole) otherwise, and always
    with GITLEDGER_JUDGE=0."""
    from ..judge.cache import CACHE_DIR
    from ..judge.state import load_config

    if not load_config(None).enabled:
        return None
    where: Path | None = Path(explicit) if explicit else None
    if where is None:
        from .. import paths
        from ..errors import UnsafeLedger

        folder = None
        if isinstance(cwd, str) and cwd and "\x00" not in cwd and os.path.isdir(cwd):
            folder = Path(cwd)
        try:
            location = paths.discover(folder)
        except (UnsafeLedger, OSError, ValueError):
            return None
        where = location.path if location is not None else None
    if where is None or not (where / "HEAD").is_file():
        return None
    return where / CACHE_DIR


def _hook_ledger(
    explicit: str | None, cwd: object, actor: str | None, agent: str | None, session: object
) -> Ledger:
    """The hook's ledger; its writes name the session as the agent (unless ``--agent`` or
    GITLEDGER_AGENT pins one)."""
    import os

    from ..hooks import hook_ledger

    agent = agent or os.environ.get("GITLEDGER_AGENT") or None
    return hook_ledger(explicit, cwd, actor=actor, agent=agent, session=session)


def step(
    *,
    transcript: Path | None,
    floor: float | None,
    model: str | None,
    window: int | None,
    checkpoint: bool,
    session: str | None,
    hook: bool,
    with_prompt: bool,
    as_json: bool,
    ledger_path: str | None = None,
    actor: str | None = None,
    agent: str | None = None,
) -> None:
    """``gitledger judge step`` (see its help): judge the step, print the verdict. A
    ``LedgerError`` is the caller's to report (``--hook`` only changes how)."""
    from ..errors import InvalidInput
    from ..judge.cache import read_step_context
    from ..judge.contexts import context_from_messages
    from ..judge.shapes import SAME, Verdict
    from ..judge.step import gate, judge_step

    del hook  # the caller's: it decides how an error is reported
    transcript, payload = transcript_and_payload(transcript, inline=True)
    raw_step = payload.get("step")
    if raw_step is not None and not isinstance(raw_step, dict):
        raise InvalidInput('The payload\'s "step" must be an object {"text", "calls"}.')
    context: StepContext | None
    kept = None  # the transcript's read cache, to save once the judge is known to be on
    if "messages" in payload:
        context = context_from_messages({**payload, **({"window": window} if window else {})})
    else:
        context, kept = read_step_context(
            transcript,
            step=raw_step,
            window=window,
            cache=cache_folder(ledger_path, payload.get("cwd")) if transcript else None,
        )
    enabled: bool | None = None  # unknown until the settings are read
    # Most steps are skipped for reasons no setting changes (no text, first of a turn, …):
    # those never open the ledger, which is most of a hook's cost.
    early = gate(context, floor=0) if context is not None else None
    if context is None:
        verdict = Verdict(SAME, "the transcript has no assistant step", "no-step", False, by="gate")
    elif early is not None:
        verdict = early
    else:
        from ..judge.cache import CACHE_DIR
        from ..judge.state import config_at, load_config

        where = find_ledger(ledger_path)
        # The settings read last time are kept beside the read cache, in the same ledger.
        kept_in = where / CACHE_DIR if where is not None and load_config(None).enabled else None
        config = config_at(where, kept_in) if where is not None else load_config(None)
        enabled = config.enabled
        if not config.enabled:
            from ..judge import patterns

            patterns.forget(kept_in)
            verdict = Verdict(
                SAME, "the judge is disabled (enabled=false)", "off", False, by="gate"
            )
        else:
            if config.window and not window and "messages" not in payload:
                from ..structs import replace

                context = replace(context, window=config.window)
            judge_model = None
            name = model or config.model
            if name:
                from ..judge.model import ModelJudge

                judge_model = ModelJudge(name)
            from ..judge import patterns

            # The rules' patterns compiled by an earlier step are kept in the same folder.
            patterns.keep_in(kept_in)
            verdict = judge_step(
                context, floor=config.floor if floor is None else floor, model=judge_model
            )
            patterns.save()
    if kept is not None:
        # A disabled judge keeps nothing; a step skipped before the settings were read only
        # extends a cache an enabled judge started.
        if enabled is False:
            kept.drop()
        elif enabled or kept.exists:
            kept.save()
    saved = None
    if checkpoint and verdict.is_next and context is not None:
        from ..judge.hook import checkpoint as take_checkpoint
        from ..judge.state import judge_ref

        who = session or payload.get("session_id") or (transcript.stem if transcript else None)
        if not who or transcript is None:
            raise InvalidInput(
                "--checkpoint needs the session and its transcript: a hook payload with "
                "session_id and transcript_path, or --session and --transcript."
            )
        judge_ref(str(who))
        saved = take_checkpoint(
            _hook_ledger(ledger_path, payload.get("cwd"), actor, agent, str(who)),
            str(who),
            transcript,
            context.step,
        )
    asked: dict[str, Any] = {}
    if with_prompt and context is not None and verdict.unsure and verdict.decision == SAME:
        from ..judge.model import SYSTEM, judge_prompt

        asked = {"system": SYSTEM, "prompt": judge_prompt(context)}
    out = sys.stdout
    if as_json:
        document = {**verdict.to_dict(), **({"checkpoint": saved} if checkpoint else {}), **asked}
        out.write(json.dumps(document, ensure_ascii=False, indent=2, default=str) + "\n")
    else:
        tag = verdict.decision if verdict.judged else f"{verdict.decision} (not judged)"
        out.write(f"{tag}: {verdict.reason}\n")
        if saved:
            out.write(f"Checkpoint: fuse snapshot {saved[:12]} (trigger boundary)\n")
    out.flush()


__all__ = [
    "STEP_PAYLOAD_BYTES",
    "cache_folder",
    "find_ledger",
    "is_file",
    "parse_step",
    "run_fast",
    "step",
    "transcript_and_payload",
]
