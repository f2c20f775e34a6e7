"""The judge's settings and each session's state, as small JSON documents on refs in the ledger:
settings on ``refs/gitledger/config/judge``, a session's state on ``refs/gitledger/judge/<session>``."""

from __future__ import annotations

from collections.abc import Mapping

from ..refs import JUDGE_CONFIG_REF, JUDGE_PREFIX
from ..structs import asdict, field, fields_of, struct
from .shapes import DEFAULT_FLOOR

TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from typing import Any

JUDGE_REF_PREFIX = JUDGE_PREFIX
CONFIG_REF = JUDGE_CONFIG_REF
STATE_FORMAT = 1


@struct
class JudgeConfig:
    """Settings, stored in the ledger (``gitledger judge config``); ``enabled=false`` makes the
    judge inert everywhere: no verdicts, no state written."""

    enabled: bool = True
    floor: float = DEFAULT_FLOOR
    model: str | None = None
    # The Claude Code function hook asks the session's own model about the steps the rules are
    # unsure of ($.model.complete); session_model=false stops it.
    session_model: bool = True
    window: int | None = None
    fill_candidate: float = 70.0
    urgent_fill: float = 85.0
    long_task_turns: int = 5
    idle_turns: int = 3
    compaction_turns: int = 25
    backoff: tuple[int, ...] = (5, 10, 20)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["backoff"] = list(self.backoff)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JudgeConfig:
        config = cls()
        for key, value in data.items():
            if key in fields_of(cls):
                config = config.with_value(key, value)
        return config

    def with_value(self, key: str, value: Any) -> JudgeConfig:
        """A copy with ``key`` set from ``value`` (a string from the command line, or JSON)."""
        from ..errors import InvalidInput

        if key not in fields_of(JudgeConfig):
            raise InvalidInput(
                f"Unknown judge setting {key!r}. Settings: {', '.join(fields_of(JudgeConfig))}."
            )
        current = getattr(self, key)
        try:
            parsed: Any
            if key in ("enabled", "session_model"):
                parsed = value if isinstance(value, bool) else _parse_bool(str(value))
            elif key == "model":
                parsed = str(value) if value not in (None, "", "none", "null") else None
            elif key == "window":
                parsed = int(value) if value not in (None, "", "none", "null", "auto") else None
                if parsed is not None and parsed < 1000:
                    raise ValueError("a window is at least 1000 tokens")
            elif key == "backoff":
                items = value if isinstance(value, (list, tuple)) else str(value).split(",")
                parsed = tuple(int(x) for x in items)
                if not parsed or any(x < 1 for x in parsed):
                    raise ValueError("turn counts of at least 1")
            elif isinstance(current, float):
                parsed = float(value)
                if not 0 <= parsed <= 100:
                    raise ValueError("a percentage from 0 to 100")
            else:
                parsed = int(value)
                if parsed < 1:
                    raise ValueError("at least 1")
        except (TypeError, ValueError) as exc:
            raise InvalidInput(f"Bad value {value!r} for judge setting {key!r}: {exc}.") from exc
        return JudgeConfig(**{**self.__dict__, key: parsed})


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("true or false")


@struct
class TurnState:
    """What persists between turns of one session."""

    session: str
    cooldown_until: int = 0  # no candidate before this turn
    deferrals: int = 0  # consecutive deferrals (picks the next backoff)
    last_compaction_turn: int | None = None
    decisions: list[dict[str, Any]] = field(default_factory=list)  # the latest, newest last
    last_checkpoint: str | None = None  # the step the latest boundary checkpoint was taken at
    # What asking a model about unsure steps cost: calls, failed calls, tokens in and out.
    model_spend: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"format": STATE_FORMAT, **asdict(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], session: str) -> TurnState:
        return cls(
            session=session,
            cooldown_until=int(data.get("cooldown_until", 0)),
            deferrals=int(data.get("deferrals", 0)),
            last_compaction_turn=data.get("last_compaction_turn"),
            decisions=list(data.get("decisions", []))[-20:],
            last_checkpoint=data.get("last_checkpoint"),
            model_spend={
                k: int(v)
                for k, v in (data.get("model_spend") or {}).items()
                if k in SPEND_KEYS and isinstance(v, int)
            },
        )


def judge_ref(session: str) -> str:
    from ..fuse import check_session

    return JUDGE_REF_PREFIX + check_session(session)


STATE_FILE = "state.json"


def _read_store(store: Any, refname: str) -> tuple[dict[str, Any] | None, str | None]:
    """The JSON document on ``refname`` and its tip; (None, None) when the ref does not exist,
    ({}, tip) when it is damaged (the next write starts fresh)."""
    from ..gitstore.documents import read_document

    document = read_document(store, refname, STATE_FILE)
    if document.tip is None:
        return None, None
    return document.data, document.tip


def _read_json(ledger: Any, refname: str) -> tuple[dict[str, Any] | None, str | None]:
    return _read_store(ledger.store, refname)


def _write_json(
    ledger: Any, refname: str, data: Mapping[str, Any], message: str, tip: str | None
) -> None:
    from ..gitstore.documents import write_document

    write_document(
        ledger.store,
        refname,
        STATE_FILE,
        data,
        message,
        ledger.author(),
        expected_tip=tip,
        extra={"FORMAT": f"{STATE_FORMAT}\n".encode()},
    )


def config_at(path: Any, cache: Any | None = None) -> JudgeConfig:
    """The settings of the ledger at ``path`` (a bare repository), or the defaults if it has
    none. Reads the store directly: the step judge runs on every step of a session and should
    not pay for loading the task model. With ``cache`` (the judge's cache folder) the settings
    read last time are used while the settings ref has not moved (``_config_stamp``), which
    spares the step judge opening the store at all."""
    from pathlib import Path

    path = Path(path)
    if not (path / "HEAD").exists():
        return _with_env(JudgeConfig())
    stamp = _config_stamp(path) if cache is not None else None
    if cache is not None:
        kept = _cached_settings(Path(cache), stamp)
        if kept is not None:
            return _with_env(JudgeConfig.from_dict(kept) if kept else JudgeConfig())
    from ..gitstore.raw import read_packed_refs

    data: dict[str, Any] | None = None
    # No settings written (the usual case): the defaults, without loading pygit2 for the store.
    if (path / CONFIG_REF).is_file() or CONFIG_REF in read_packed_refs(path):
        from ..gitstore import GitStore

        data, _ = _read_store(GitStore(path), CONFIG_REF)
    config = _with_env(JudgeConfig.from_dict(data) if data else JudgeConfig())
    if cache is not None:
        _keep_settings(Path(cache), stamp, (data or {}) if config.enabled else None)
    return config


CONFIG_CACHE = "settings.json"


def _config_stamp(path: Any) -> list[int]:
    """A fingerprint of where the settings ref can be: its loose-ref file and packed-refs.
    Git replaces either by renaming a new file over it, so while inode, size and mtime of both
    are unchanged the ref has not moved (the reasoning of ``gitstore.raw.RefsStamp``)."""
    import os

    out: list[int] = []
    for name in (CONFIG_REF, "packed-refs"):
        try:
            st = os.stat(path / name)
            out += [st.st_mtime_ns, st.st_ino, st.st_size]
        except OSError:
            out += [0, 0, 0]
    return out


def _cached_settings(cache: Any, stamp: Any) -> dict[str, Any] | None:
    import json

    try:
        kept = json.loads((cache / CONFIG_CACHE).read_bytes())
        if kept.get("stamp") == stamp and isinstance(kept.get("settings"), dict):
            return dict(kept["settings"])
    except (OSError, ValueError, AttributeError):
        pass
    return None


def _keep_settings(cache: Any, stamp: Any, data: Mapping[str, Any] | None) -> None:
    """Keep the settings read for ``stamp``; None (a disabled judge, which keeps nothing)
    removes what was kept."""
    import contextlib
    import json
    import os

    if data is None:
        with contextlib.suppress(OSError):
            (cache / CONFIG_CACHE).unlink()
        return
    with contextlib.suppress(OSError, ValueError, TypeError):
        cache.mkdir(exist_ok=True)
        temporary = cache / f"{CONFIG_CACHE}.{os.getpid()}.tmp"
        temporary.write_text(json.dumps({"stamp": stamp, "settings": dict(data or {})}))
        os.replace(temporary, cache / CONFIG_CACHE)


def load_config(ledger: Any | None) -> JudgeConfig:
    """The ledger's judge settings (the defaults without a ledger), GITLEDGER_JUDGE applied."""
    data = _read_json(ledger, CONFIG_REF)[0] if ledger is not None else None
    return _with_env(JudgeConfig.from_dict(data) if data else JudgeConfig())


def _with_env(config: JudgeConfig) -> JudgeConfig:
    """GITLEDGER_JUDGE=0 turns the judge off for one process without changing the settings."""
    import os

    env = os.environ.get("GITLEDGER_JUDGE")
    if env is not None and env.strip():
        try:
            if not _parse_bool(env):
                return JudgeConfig(**{**config.__dict__, "enabled": False})
        except ValueError:
            pass
    return config


def save_config(ledger: Any, changes: Mapping[str, Any]) -> JudgeConfig:
    """Apply ``changes`` (setting → value) to the stored settings; all or nothing."""
    with ledger.store.lock():
        data, tip = _read_json(ledger, CONFIG_REF)
        config = JudgeConfig.from_dict(data or {})
        for key, value in changes.items():
            config = config.with_value(key, value)
        if changes:
            said = ", ".join(f"{k}={v}" for k, v in changes.items())
            _write_json(ledger, CONFIG_REF, config.to_dict(), f"judge config: {said}\n", tip)
    return config


SPEND_KEYS = ("calls", "failures", "input_tokens", "output_tokens")


def record_spend(
    ledger: Any,
    session: str,
    *,
    input_tokens: int = 0,
    output_tokens: int = 0,
    failed: bool = False,
) -> TurnState:
    """Count one model call about an unsure step in the session's state (one commit)."""
    from ..errors import InvalidInput

    if input_tokens < 0 or output_tokens < 0:
        raise InvalidInput("Token counts are 0 or more.")
    refname = judge_ref(session)
    with ledger.store.lock():
        data, tip = _read_json(ledger, refname)
        state = TurnState.from_dict(data or {}, session)
        spend = {key: state.model_spend.get(key, 0) for key in SPEND_KEYS}
        spend["calls"] += 1
        spend["failures"] += int(failed)
        spend["input_tokens"] += input_tokens
        spend["output_tokens"] += output_tokens
        state.model_spend = spend
        said = "failed" if failed else f"{input_tokens} in, {output_tokens} out"
        _write_json(ledger, refname, state.to_dict(), f"judge: model call ({said})\n", tip)
    return state


def load_state(ledger: Any, session: str) -> TurnState:
    data, _ = _read_json(ledger, judge_ref(session))
    return TurnState.from_dict(data or {}, session)


def sessions(ledger: Any) -> list[str]:
    return sorted(name[len(JUDGE_REF_PREFIX) :] for name, _ in ledger.store.refs(JUDGE_REF_PREFIX))


__all__ = [
    "CONFIG_REF",
    "JUDGE_REF_PREFIX",
    "JudgeConfig",
    "SPEND_KEYS",
    "STATE_FILE",
    "STATE_FORMAT",
    "TurnState",
    "config_at",
    "judge_ref",
    "load_config",
    "load_state",
    "record_spend",
    "save_config",
    "sessions",
]
