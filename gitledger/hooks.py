"""What every agent hook shares: reading the payload, opening the ledger, never failing the agent.

An agent runs gitledger as a hook (PreCompact, SessionStart, PostToolUse, Stop …) with a JSON
object on stdin and a few seconds to answer. A hook that hangs, crashes or prints a traceback
breaks the agent's session, so every hook command goes through this module:

- ``read_payload()`` reads at most ``MAX_PAYLOAD_BYTES`` (1 MiB) and gives up after
  ``PAYLOAD_WAIT`` (5 s) on a stdin that stays open and idle (an agent's shell tool running a
  hook command by hand). A payload that is not a JSON object is empty, or with ``strict`` an
  ``InvalidInput`` naming why.
- ``text_field()`` and ``transcript_file()`` take the few fields a hook reads and refuse what a
  hostile payload may put there: a non-string, NUL, a lone surrogate, and for a transcript
  anything but a regular file (``/dev/zero``, a FIFO, a directory, a symlink loop: each of those
  either never returns or has no transcript to read). Checking happens before any lock is taken.
- ``hook_ledger()`` is the ledger a hook writes to: ``--ledger`` if given, else the project of
  the payload's ``cwd``, else the per-user ledger. Its writes name the agent: ``--agent`` /
  ``GITLEDGER_AGENT`` if the person pinned one, else the payload's ``session_id``.
- ``never_fail()`` wraps a hook's body: any exception becomes one line on stderr and exit 0, and
  so does a stdout that is closed or full (``emit()``): the agent goes on whatever happens.
- ``session_start_output()`` and ``hook_output()`` build the JSON an agent reads back.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import stat
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from .errors import InvalidInput
from .text import one_line

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from typing import IO, Any

    from .ledger import Ledger

MAX_PAYLOAD_BYTES = 1 << 20
PAYLOAD_WAIT = 5.0
MAX_FIELD_CHARS = 4_096

__all__ = [
    "MAX_PAYLOAD_BYTES",
    "PAYLOAD_WAIT",
    "emit",
    "enter_project",
    "guard_std_fds",
    "hook_agent",
    "hook_ledger",
    "hook_output",
    "never_fail",
    "note",
    "read_payload",
    "read_raw",
    "run_bounded",
    "session_start_output",
    "text_field",
    "transcript_file",
]


# --- reading the payload ------------------------------------------------------------------------


def read_raw(
    stream: IO[Any] | None = None,
    *,
    wait: float = PAYLOAD_WAIT,
    limit: int = MAX_PAYLOAD_BYTES,
) -> bytes | None:
    """Up to ``limit + 1`` bytes of ``stream`` (default stdin), within ``wait`` seconds in all.

    None when there is no payload to wait for (a terminal, a closed stdin) or nothing arrived in
    time. A payload still arriving at the deadline is cut there (and then fails to parse); one
    longer than ``limit`` comes back as ``limit + 1`` bytes, so the caller can tell.
    """
    stream = sys.stdin if stream is None else stream
    if stream is None:
        return None
    try:
        if stream.isatty():
            return None
    except (OSError, ValueError):
        return None
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):  # not a real file (click's test runner)
        fd = -1
    if fd < 0:
        try:
            data = getattr(stream, "buffer", stream).read(limit + 1)
        except (OSError, ValueError):
            return None
        return data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    deadline = time.monotonic() + wait
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            ready, _, _ = select.select([fd], [], [], remaining)
        except (OSError, ValueError):
            ready = [fd]  # select cannot watch it (some platforms): read, it will not block long
        if not ready:
            break
        try:
            chunk = os.read(fd, min(1 << 16, limit + 1 - size))
        except BlockingIOError:
            continue
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks) if chunks else None


def read_payload(
    stream: IO[Any] | None = None,
    *,
    wait: float = PAYLOAD_WAIT,
    limit: int = MAX_PAYLOAD_BYTES,
    strict: bool = False,
) -> dict[str, Any]:
    """The JSON object an agent's hook gets on stdin; ``{}`` when there is none.

    Anything else (too large, not UTF-8 JSON, not an object, nested too deeply) is ``{}`` too,
    or with ``strict`` an ``InvalidInput`` saying which.
    """
    raw = read_raw(stream, wait=wait, limit=limit)
    if raw is None or not raw.strip():
        return {}
    problem: str
    if len(raw) > limit:
        problem = f"is larger than {limit:,} bytes"
    else:
        try:
            value = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            problem = "is not UTF-8"
        except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
            problem = f"is not JSON ({type(exc).__name__}: {str(exc)[:120]})"
        else:
            if isinstance(value, dict):
                return value
            problem = f"must be a JSON object, not a {type(value).__name__}"
    if strict:
        raise InvalidInput(f"The hook payload on stdin {problem}. Pass --transcript PATH instead.")
    return {}


def text_field(payload: Mapping[str, Any], key: str, *, limit: int = MAX_FIELD_CHARS) -> str | None:
    """``payload[key]`` when it is usable text: a non-empty string without NUL or lone
    surrogates, at most ``limit`` characters. Anything else (a hostile payload can put any
    JSON value anywhere) is None."""
    value = payload.get(key)
    if not isinstance(value, str) or not value or len(value) > limit or "\x00" in value:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return value


def transcript_file(value: object) -> Path:
    """The transcript a hook was pointed at, if it is a regular file (symlinks followed).

    Raises ``InvalidInput`` naming what it is instead: missing, a directory, a FIFO or device
    (reading ``/dev/zero`` or a FIFO never ends), a symlink loop. This is checked before the
    writer lock is taken, so a bad path never holds the lock.
    """
    if not isinstance(value, str | os.PathLike):
        raise InvalidInput("The hook payload has no transcript_path.")
    text = os.fspath(value)
    if not text or "\x00" in str(text) or len(str(text)) > MAX_FIELD_CHARS:
        raise InvalidInput("The hook payload's transcript_path is not a usable path.")
    path = Path(text)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError as exc:
        raise InvalidInput(f"No transcript at {path}.") from exc
    except (OSError, ValueError, UnicodeEncodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise InvalidInput(f"Cannot read the transcript {path} ({reason}).") from exc
    if not stat.S_ISREG(mode):
        kind = (
            "a directory"
            if stat.S_ISDIR(mode)
            else "a FIFO"
            if stat.S_ISFIFO(mode)
            else "a device"
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "not a regular file"
        )
        raise InvalidInput(f"The transcript {path} is {kind}, not a transcript file.")
    return path


# --- the ledger a hook writes to ----------------------------------------------------------------


def hook_agent(agent: str | None, session: object) -> str | None:
    """The agent a hook writes as: ``agent`` (``--agent`` / GITLEDGER_AGENT, pinned by the person)
    if given, else the payload's ``session_id``: the session is the agent, so a claim or a write
    a hook makes names it (and a write renews the lease of a claim the session holds)."""
    if agent:
        return agent
    if isinstance(session, str):
        found = text_field({"session_id": session}, "session_id", limit=256)
        if found and found.strip():
            return " ".join(found.split())
    return None


def hook_ledger(
    explicit: str | Path | None,
    cwd: object,
    *,
    actor: str | None = None,
    agent: str | None = None,
    session: object = None,
) -> Ledger:
    """``explicit`` (``--ledger`` / GITLEDGER_DIR) if given, else the ledger of the payload's
    ``cwd`` (the project the agent runs in), else the per-user ledger; its writes name the agent
    ``hook_agent(agent, session)``."""
    from .ledger import Ledger

    agent = hook_agent(agent, session)
    if explicit:
        return Ledger.open(Path(explicit), actor=actor, agent=agent, create=True)
    folder: Path | None = None
    if isinstance(cwd, str) and cwd and "\x00" not in cwd:
        with contextlib.suppress(OSError, ValueError):
            if Path(cwd).is_dir():
                folder = Path(cwd)
    return Ledger.open_for_hook(folder, actor=actor, agent=agent)


# --- never failing the agent --------------------------------------------------------------------


def guard_std_fds() -> None:
    """Open /dev/null on any of fds 0-2 that is closed.

    An agent may start a hook with stdout closed; the first file the hook opens would then get
    fd 1, and whatever the hook or a Git subprocess prints would land in that file.
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            try:
                null = os.open(os.devnull, os.O_RDWR)
            except OSError:
                return
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    if sys.stdout is None:
        with contextlib.suppress(OSError):
            sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - lives as long as stdout


def _silence_stdout() -> None:
    """Point fd 1 at /dev/null, so the interpreter's last flush of stdout cannot fail either."""
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)


def note(label: str, message: str) -> None:
    """One line on stderr: ``gitledger LABEL: MESSAGE`` (control characters folded)."""
    flat = one_line(message, 300)
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.write(f"gitledger {label}: {flat}\n")
        sys.stderr.flush()


def emit(text: str, label: str = "hook") -> bool:
    """Print ``text`` and a newline for the agent; False (and a note) when stdout is closed or
    full. Never raises."""
    out = sys.stdout
    try:
        if out is None:
            raise OSError("stdout is closed")
        out.write(text + "\n")
        out.flush()
    except (OSError, ValueError) as exc:
        _silence_stdout()
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        note(label, f"could not print the hook's answer ({reason}); the agent goes on")
        return False
    return True


@contextlib.contextmanager
def never_fail(label: str, what: str = "nothing done") -> Iterator[None]:
    """Run a hook's body so that nothing it raises reaches the agent.

    A ``LedgerError`` (or click's error for one) is its message; anything else is named with its
    type. Either way one line on stderr ends with ``what`` ("nothing saved") and the hook exits 0.
    """
    guard_std_fds()
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - a hook must never break the agent
        message = getattr(exc, "message", None)
        if not isinstance(message, str) or not message:
            message = f"unexpected {type(exc).__name__}: {exc}"
        note(label, f"{message} ({what}; the agent goes on)")
    finally:
        # The interpreter flushes stdout once more at exit: if that would fail, fail it now.
        out = sys.stdout
        if out is not None:
            try:
                out.flush()
            except (OSError, ValueError):
                _silence_stdout()


# --- what a hook prints -------------------------------------------------------------------------


def hook_output(event: str, context: str) -> str:
    """The JSON a hook prints to add ``context`` to the agent's next model request."""
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}},
        ensure_ascii=False,
    )


def session_start_output(text: str) -> str:
    """What a SessionStart hook prints to put ``text`` before the session's first request."""
    return hook_output("SessionStart", text)


# --- work a hook may not wait on ----------------------------------------------------------------

SYNC_TIMEOUT = 10.0


def enter_project(payload: Mapping[str, Any]) -> None:
    """Run the rest of the hook in the payload's ``cwd`` (the agent's project), if it is a
    folder: the ledger is then found there as for any command."""
    cwd = text_field(payload, "cwd")
    if cwd:
        with contextlib.suppress(OSError, ValueError):
            os.chdir(cwd)


def run_bounded(args: list[str], *, timeout: float = SYNC_TIMEOUT) -> tuple[bool, str]:
    """Run ``gitledger ARGS`` in a child process for at most ``timeout`` seconds.

    The child gets its own process group (killed whole at the deadline: a Git transport stuck
    on a dead remote goes with it), no stdin, and no terminal prompt for credentials. Returns
    whether it succeeded and its last line of output. A sync killed mid-way is safe: writes are
    atomic, and the next hook's sync goes on from there.
    """
    import signal
    import subprocess

    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="true", SSH_ASKPASS="true")
    env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes -o ConnectTimeout=5")
    command = [os.path.abspath(sys.executable), "-m", "gitledger", *args]
    try:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        return False, f"could not start {' '.join(args[:1])} ({exc.strerror})"
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return False, f"gave up after {timeout:g} s; the next hook tries again"
    text = (err or b"").decode("utf-8", "replace").strip() or (out or b"").decode(
        "utf-8", "replace"
    ).strip()
    last = text.splitlines()[-1] if text else ""
    return proc.returncode == 0, last
