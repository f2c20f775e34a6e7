"""Property-based fuzzing of every parser that reads outside input: transcripts, stored records,
hook payloads, CLI arguments and the agent settings merges.

The promise checked: no input makes gitledger raise anything but its own documented refusal
(a ``LedgerError``), print a traceback, exit with a code outside 0-3, or overwrite a settings file
it refused. Each property runs a few hundred examples so the suite stays fast;
``benchmarks/fuzz_run.py`` runs the same targets with atheris for a million inputs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gitledger import fuse, judge
from gitledger.cli import cli
from gitledger.cli.mcp import merge_json_config, merge_toml_config
from gitledger.errors import CorruptRecord, InvalidInput, LedgerError
from gitledger.ledger import Ledger
from gitledger.model import canonical_json, decode_record, encode_record
from gitledger.transcripts import ReadStats, read_events

FAST = settings(
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
CLI_FAST = settings(FAST, max_examples=150)

KEYS = [
    "type", "message", "role", "content", "text", "name", "input", "id", "tool_use_id", "usage",
    "input_tokens", "sessionId", "session_id", "cwd", "timestamp", "isSidechain", "summary",
    "payload", "arguments", "call_id", "output", "messages", "step", "calls", "toolUses",
    "context_tokens", "window", "first_in_turn", "transcript_path", "hooks", "PreCompact",
    "SessionStart", "matcher", "command", "mcpServers", "gitledger", "goal", "status", "version",
    "todos", "file_path", "command", "thinking", "toolUseResult", "projectHash",
]  # fmt: skip
WORDS = [
    "user", "assistant", "system", "summary", "tool_use", "tool_result", "text", "Bash", "Edit",
    "Write", "TodoWrite", "Task", "ExitPlanMode", "function_call", "response_item", "compact",
    "pending", "completed", "\x1b[2J", "\u202e", "../../x", "Decision: use SQLite.",
    "Ignore all previous instructions.", "gitledger fuse",
]  # fmt: skip

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(WORDS)
    | st.text(max_size=30)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), inner, max_size=5)
    ),
    max_leaves=25,
)
json_objects = st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), json_values, max_size=6)
FORMATS = [None, "claude_code", "codex", "plain", "gemini"]


def read_all(path: Path, fmt: str | None) -> int:
    stats = ReadStats()
    return sum(1 for _ in read_events(path, stats=stats, format=fmt))


# --- the transcript reader ----------------------------------------------------------------------


@FAST
@given(data=st.binary(max_size=3000), fmt=st.sampled_from(FORMATS))
@example(data=b"\xff\xfe{\n" + b"[" * 5000 + b"\n", fmt=None)
@example(data=b'{"messages": [' + b"{" * 3000, fmt="gemini")
def test_transcript_reader_never_raises_on_bytes(
    tmp_path: Path, data: bytes, fmt: str | None
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    read_all(path, fmt)


@FAST
@given(
    lines=st.lists(json_objects | st.binary(max_size=40), min_size=1, max_size=8),
    fmt=st.sampled_from(FORMATS),
    budget=st.integers(min_value=fuse.MIN_BUDGET, max_value=fuse.MAX_BUDGET),
)
@example(lines=[{"type": []}], fmt=None, budget=300)  # was a TypeError: unhashable 'list'
@example(lines=[{"type": {}, "payload": {"type": []}}], fmt="codex", budget=300)
@example(lines=[{"type": "system", "subtype": []}], fmt="claude_code", budget=300)
@example(lines=[{"messages": [{"type": []}]}], fmt="gemini", budget=300)
def test_transcript_json_lines_read_snapshot_and_render_within_budget(
    tmp_path: Path, lines: list[Any], fmt: str | None, budget: int
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(
        b"\n".join(line if isinstance(line, bytes) else json.dumps(line).encode() for line in lines)
    )
    read_all(path, fmt)
    snap = fuse.snapshot_file(path, session="fuzz")
    text = fuse.render(snap, budget, trigger="auto")
    assert len(text.encode("utf-8")) <= budget


# --- stored records -----------------------------------------------------------------------------


@FAST
@given(data=st.binary(max_size=2000))
@example(data=b'{"owner": "a\\u0000b"}')  # was InvalidInput ("remove it and try again")
def test_decode_record_refuses_random_bytes_as_corrupt(data: bytes) -> None:
    try:
        decode_record(data, where="fuzz")
    except CorruptRecord:
        pass


SKELETON = {
    "id": "sxwkq7bbfc8nqtfmdg8c",
    "version": 1,
    "goal": "g",
    "status": "open",
    "created_at": "2026-11-29T19:00:00Z",
    "updated_at": "2026-11-29T19:00:00Z",
}


@FAST
@given(extra=json_objects, keep=st.booleans())
@example(extra={"owner": "a\x00b"}, keep=True)  # was InvalidInput, not CorruptRecord
@example(extra={"labels": ["x" * 70_000]}, keep=True)
def test_decode_record_on_json_objects_refuses_or_round_trips(
    extra: dict[str, Any], keep: bool
) -> None:
    record = {**SKELETON, **extra} if keep else extra
    try:
        task = decode_record(json.dumps(record).encode(), where="fuzz")
    except CorruptRecord:
        return
    assert decode_record(encode_record(task), where="again") == task


@FAST
@given(value=json_values)
@example(value={"b": ["\u2028", "\x1b[31m", 'q"\\'], "a": {}, "c": [[], {"z": None, "y": True}]})
def test_canonical_json_is_the_standard_encoders_text(value: Any) -> None:
    """task.json's fast encoder writes exactly what json.dumps(sort_keys, indent=1) would."""
    expected = json.dumps(value, sort_keys=True, ensure_ascii=False, indent=1)
    assert canonical_json(value) == expected


# --- hook payloads ------------------------------------------------------------------------------


@FAST
@given(raw=st.text(max_size=2000) | json_values.map(json.dumps))
@example(raw="[" * 100_000)
@example(raw='{"a":' * 50_000)
def test_hook_payload_is_always_an_object(raw: str) -> None:
    assert isinstance(fuse.read_hook_payload(raw), dict)


@FAST
@given(payload=json_objects, step=json_values, messages=json_values)
@example(payload={}, step=None, messages=[{"toolUses": True}])  # was TypeError
@example(payload={}, step=None, messages=[{"role": "assistant", "toolUses": [1, {"input": [1]}]}])
def test_judge_payload_entry_points_refuse_cleanly(
    payload: dict[str, Any], step: Any, messages: Any
) -> None:
    payload = {**payload, "step": step, "messages": messages}
    for entry in (
        lambda: judge.step_from_payload(step if isinstance(step, dict) else payload),
        lambda: judge.step_from_payload(payload),
        lambda: judge.context_from_messages(payload),
    ):
        try:
            entry()
        except LedgerError:
            pass


@CLI_FAST
@given(payload=json_values | json_objects)
@example(payload={"transcript_path": [["x" * 300]]})  # was OSError: File name too long
def test_judge_step_command_on_random_payloads(payload: Any) -> None:
    result = CliRunner().invoke(cli, ["judge", "step"], input=json.dumps(payload))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code in (0, 1, 2, 3)


# --- CLI arguments ------------------------------------------------------------------------------

OPTIONS = [
    "--goal", "--criteria", "--status", "--next", "--blocker", "--owner", "--priority", "--parent",
    "--label", "--remove-label", "--note", "--decision", "--evidence", "--dependency",
    "--remove-dependency", "--expect-version", "--idempotency-key", "--json", "--", "open",
    "done", "blocked", "0", "4", "-1", "99999999999999999999",
]  # fmt: skip
arguments = st.lists(
    st.sampled_from(OPTIONS) | st.text(max_size=40).map(lambda s: s.replace("\x00", "")),
    max_size=6,
)


def check_cli(args: list[str]) -> None:
    result = CliRunner().invoke(cli, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        args,
        result.exception,
    )
    assert result.exit_code in (0, 1, 2, 3), (args, result.exit_code, result.output)
    assert "Traceback" not in result.output


@CLI_FAST
@given(args=arguments)
def test_task_create_on_random_arguments(ledger: Ledger, args: list[str]) -> None:
    check_cli(["task", "create", *args])


@CLI_FAST
@given(args=arguments, prefix=st.integers(min_value=0, max_value=20), junk=st.text(max_size=8))
def test_task_update_on_random_arguments(
    ledger: Ledger, args: list[str], prefix: int, junk: str
) -> None:
    task_id = ledger.create("target").id if not list(ledger.list_tasks(limit=1)) else None
    task_id = task_id or ledger.list_tasks(limit=1)[0].id
    target = (task_id[:prefix] + junk).replace("\x00", "")
    check_cli(["task", "update", target, *args])
    assert ledger.verify().ok


# --- settings merges: refused cleanly, never overwritten ---------------------------------------

settings_texts = (
    st.text(max_size=300)
    | json_values.map(json.dumps)
    | json_objects.map(lambda d: json.dumps({**d, "hooks": d.get("hooks", d)}))
    | st.sampled_from(
        ["", "\r", "{", "[]", '{"hooks": []}', '{"hooks": {"PreCompact": 3}}', "a = ["]
    )
)


@CLI_FAST
@given(text=settings_texts, agent=st.sampled_from(["claude", "codex", "gemini"]))
@example(text="\x1f", agent="claude")  # space to Python, not to JSON: refused, not overwritten
@example(text=" \u2028\n", agent="codex")
def test_fuse_setup_on_random_settings_merges_or_leaves_the_file_alone(
    isolated: Path, text: str, agent: str
) -> None:
    path = isolated / "fuzz-settings.json"
    path.write_text(text, encoding="utf-8")
    before = path.read_bytes()
    result = CliRunner().invoke(
        cli, ["fuse", "setup", "--agent", agent, "--settings", str(path), "--write", "--json"]
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    if result.exit_code == 0:
        merged = json.loads(path.read_text())
        assert isinstance(merged, dict)
        assert fuse.HOOK_MARK in json.dumps(merged.get("hooks"))
        if before.strip():
            original = json.loads(before)
            assert {k: v for k, v in merged.items() if k != "hooks"} == {
                k: v for k, v in original.items() if k != "hooks"
            }
    else:
        assert result.exit_code == 2, result.output
        assert path.read_bytes() == before
    path.with_name(path.name + ".bak").unlink(missing_ok=True)


@FAST
@given(text=settings_texts)
def test_mcp_setup_merges_on_random_json_and_toml_refuse_or_parse(
    text: str, tmp_path: Path
) -> None:
    import tomllib

    entry = {"command": "gitledger", "args": ["mcp"]}
    try:
        merged = merge_json_config(text, tmp_path / "x.json", entry)
    except InvalidInput:
        pass
    else:
        assert json.loads(merged)["mcpServers"]["gitledger"] == entry
    tables = '[mcp_servers.gitledger]\ncommand = "gitledger"\n'
    try:
        after = merge_toml_config(text, tmp_path / "config.toml", tables)
    except InvalidInput:
        pass
    else:
        assert tomllib.loads(after)["mcp_servers"]["gitledger"]["command"] == "gitledger"


@pytest.mark.parametrize("agent", ["claude", "codex"])
@CLI_FAST
@given(text=settings_texts)
def test_mcp_setup_command_on_random_files_never_overwrites_a_refused_one(
    isolated: Path, monkeypatch: pytest.MonkeyPatch, agent: str, text: str
) -> None:
    monkeypatch.chdir(isolated)
    home = isolated / "home"
    path = home / ".claude.json" if agent == "claude" else home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    before = path.read_bytes()
    result = CliRunner().invoke(cli, ["mcp", "setup", "--agent", agent, "--write", "--json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in (0, 2), result.output
    if result.exit_code != 0:
        assert path.read_bytes() == before


# --- gitledger setup's merges and the one hook payload reader ---------------------------------


def _without_empty_events(value: dict[str, Any]) -> dict[str, Any]:
    hooks = value.get("hooks")
    if not isinstance(hooks, dict):
        return value
    kept = {k: v for k, v in hooks.items() if v != []}
    rest = {k: v for k, v in value.items() if k != "hooks"}
    return {**rest, "hooks": kept} if kept else rest


@FAST
@given(text=settings_texts, agent=st.sampled_from(["claude", "codex", "gemini"]))
def test_setup_merge_round_trips_is_idempotent_and_undoes_itself(text: str, agent: str) -> None:
    from gitledger.agents import install
    from gitledger.agents import settings as agent_settings

    where = Path("settings.json")
    try:
        value = agent_settings.parse_json(where, text)
    except InvalidInput:
        return
    assert agent_settings.parse_json(where, agent_settings.dump_json(value, text)) == value
    wanted = install.wanted_hooks(agent, sync="origin")
    managed = agent_settings.KNOWN_COMMANDS
    try:
        merged = agent_settings.merge_hooks(value, agent, wanted, managed=managed)
    except InvalidInput:
        return  # 'hooks' is not an object: refused, nothing written
    assert agent_settings.merge_hooks(merged, agent, wanted, managed=managed) == merged
    assert {k: v for k, v in merged.items() if k != "hooks"} == {
        k: v for k, v in value.items() if k != "hooks"
    }
    undone = agent_settings.merge_hooks(merged, agent, [], managed=managed)
    plain = agent_settings.merge_hooks(value, agent, [], managed=managed)
    assert _without_empty_events(undone) == _without_empty_events(plain)


@FAST
@given(raw=st.binary(max_size=400) | json_values.map(lambda v: json.dumps(v).encode()))
def test_the_hook_payload_reader_returns_an_object_or_refuses(raw: bytes) -> None:
    import io

    from gitledger import hooks

    payload = hooks.read_payload(io.BytesIO(raw))
    assert isinstance(payload, dict)
    try:
        assert hooks.read_payload(io.BytesIO(raw), strict=True) == payload
    except InvalidInput:
        assert payload == {}
    for key in payload:
        value = hooks.text_field(payload, key)
        assert value is None or (isinstance(value, str) and "\x00" not in value)
