"""Hostile input the rest of the suite does not cover: deeply nested JSON, session ids that try to
leave their ref namespace, settings files that are symlinks or read-only, and a remote that sends
refs outside the ledger namespace or carries credentials in its URL.

Each case asserts both halves of the promise: a clear error (or a clean skip for a hook, which
must never fail its agent) and nothing changed that should not have changed.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import run_cli

from gitledger import fuse, sync
from gitledger.cli import cli
from gitledger.cli.mcp import merge_json_config, merge_toml_config
from gitledger.errors import CorruptRecord, InvalidInput
from gitledger.ledger import Ledger
from gitledger.model import decode_record
from gitledger.transcripts import ReadStats, read_events

DEEP = 200_000  # far past Python's recursion limit (1,000) and json's C parser's own guard


def deep_array(depth: int = DEEP) -> str:
    return "[" * depth + "]" * depth


def deep_object(depth: int = DEEP) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def invoke(*args: str, input: str | None = None) -> object:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


# --- deeply nested JSON -------------------------------------------------------------------------


@pytest.mark.parametrize("text", [deep_array(), deep_object()])
def test_deep_json_in_a_hook_payload_is_an_empty_payload(text: str) -> None:
    assert fuse.read_hook_payload(text) == {}


@pytest.mark.parametrize("action", ["save", "restore"])
def test_fuse_hooks_given_deep_json_skip_cleanly(action: str, isolated: Path) -> None:
    out = run_cli("fuse", action, "--hook", input=deep_object(50_000))
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert not (isolated / "ledger").exists() or action == "restore"


def test_judge_step_given_deep_json_is_refused_with_a_message() -> None:
    out = run_cli("judge", "step", input=deep_array(50_000))
    assert "Traceback" not in out.stderr
    assert out.returncode in (0, 1, 2), out.stderr
    assert out.returncode == 0 or "not JSON" in out.stderr


def test_deep_json_lines_in_a_transcript_are_counted_not_raised(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    good = {"type": "user", "message": {"role": "user", "content": "fix the parser"}}
    path.write_text(deep_object(50_000) + "\n" + json.dumps(good) + "\n" + deep_array(50_000))
    stats = ReadStats()
    events = list(read_events(path, stats=stats, format="claude_code"))
    assert [e.text for e in events if e.kind == "user"] == ["fix the parser"]
    assert stats.invalid_lines + int(stats.cut_last_line) == 2


def test_deep_json_in_a_stored_record_is_a_corrupt_record_error() -> None:
    with pytest.raises(CorruptRecord, match="not valid JSON"):
        decode_record(deep_object().encode(), where="refs/gitledger/tasks/x")


def test_deep_json_in_an_import_file_is_refused(tmp_path: Path, ledger: Ledger) -> None:
    path = tmp_path / "import.jsonl"
    path.write_text(deep_object(50_000) + "\n")
    out = run_cli("task", "import", str(path))
    assert out.returncode == 2, out.stderr  # InvalidInput
    assert "Traceback" not in out.stderr and "too deeply" in out.stderr
    assert list(ledger.tasks()) == []


def test_deep_json_and_toml_settings_for_mcp_setup_are_refused(tmp_path: Path) -> None:
    where = tmp_path / "x"
    with pytest.raises(InvalidInput, match="too deeply"):
        merge_json_config(deep_object(), where, {"command": "gitledger"})
    with pytest.raises(InvalidInput, match="too deeply"):
        merge_toml_config("a = " + "[" * DEEP, where, "[mcp_servers.gitledger]\n")


def test_deep_json_settings_file_for_fuse_setup_is_refused_and_kept(isolated: Path) -> None:
    path = isolated / "home" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    text = deep_array()
    path.write_text(text)
    out = run_cli("fuse", "setup", "--write")
    assert out.returncode == 2 and "too deeply" in out.stderr, out.stderr
    assert path.read_text() == text
    assert not path.with_name("settings.json.bak").exists()


# --- hook payloads of the wrong shape ----------------------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [
        {"transcript_path": 5, "session_id": "s"},
        {"transcript_path": ["a"], "session_id": "s"},
        {"transcript_path": {"x": 1}, "session_id": {"y": 2}, "cwd": 3},
        {"transcript_path": "a\x00b.jsonl", "session_id": "s"},
        {"session_id": 7, "cwd": ["not", "a", "path"]},
    ],
)
def test_fuse_save_hook_with_a_payload_of_the_wrong_shape_never_fails(
    payload: dict[str, object],
) -> None:
    out = run_cli("fuse", "save", "--hook", input=json.dumps(payload))
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert "nothing saved" in out.stderr


# --- session ids that try to leave refs/gitledger/fuse/ ----------------------------------------

BAD_SESSIONS = [
    "../tasks/x",
    "..",
    "a/../../b",
    "a/b",
    "../../../../etc/passwd",
    "s..s",
    "s.lock",
    "s.",
    ".hidden",
    "-flag",
    "a b",
    "a~1",
    "a^2",
    "a:b",
    "a?b",
    "a*b",
    "a[b",
    "a\\b",
    "a@{b",
    "a\x00b",
    "a\x7fb",
    "a\nb",
    "x" * 129,
    "",
    "ａｂｃ",  # fullwidth letters: look like ASCII, are not
    "sess\u2024ion",  # one dot leader, looks like '.'
    "sess\u2215ion",  # division slash, looks like '/'
    "\u2025",  # two dot leader, looks like '..'
    "се́ssion",  # Cyrillic 'с' and 'е' with a combining accent
    "sess\u200bion",  # zero-width space
]


@pytest.mark.parametrize("session", BAD_SESSIONS)
def test_bad_session_ids_are_refused_by_save_and_link(
    session: str, tmp_path: Path, ledger: Ledger
) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"role": "user", "content": "do the thing"}) + "\n")
    task = ledger.create("a task")
    before = dict(ledger.store.refs("refs/"))
    with pytest.raises(InvalidInput, match="not usable"):
        fuse.save(ledger, session, transcript)
    with pytest.raises(InvalidInput, match="not usable"):
        fuse.link(ledger, session, task.id)
    assert dict(ledger.store.refs("refs/")) == before
    if session and "\x00" not in session:  # argv cannot carry NUL; '' means "the file's name"
        for args in (
            ("fuse", "save", "--transcript", str(transcript), "--session", session),
            ("fuse", "link", task.id, "--session", session),
        ):
            out = run_cli(*args)
            assert out.returncode in (1, 2), (args, out.stderr)
            assert "Traceback" not in out.stderr
    assert dict(ledger.store.refs("refs/")) == before
    assert not list(ledger.path.rglob("passwd"))


def test_a_bad_session_id_in_a_hook_payload_saves_nothing(tmp_path: Path, ledger: Ledger) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"role": "user", "content": "do the thing"}) + "\n")
    before = dict(ledger.store.refs("refs/"))
    payload = {"session_id": "../tasks/evil", "transcript_path": str(transcript)}
    out = run_cli("fuse", "save", "--hook", input=json.dumps(payload))
    assert out.returncode == 0 and "not usable" in out.stderr, out.stderr
    assert dict(ledger.store.refs("refs/")) == before


# --- settings files that are symlinks or read-only ---------------------------------------------


def _claude_settings(isolated: Path) -> Path:
    return isolated / "home" / ".claude" / "settings.json"


def test_fuse_setup_writes_through_a_symlinked_settings_file(isolated: Path) -> None:
    dotfiles = isolated / "dotfiles" / "claude-settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{"model": "opus"}\n')
    link = _claude_settings(isolated)
    link.parent.mkdir(parents=True)
    link.symlink_to(dotfiles)
    out = run_cli("fuse", "setup", "--write")
    assert out.returncode == 0, out.stderr
    assert link.is_symlink() and link.resolve() == dotfiles.resolve()
    merged = json.loads(dotfiles.read_text())
    assert merged["model"] == "opus" and "PreCompact" in merged["hooks"]
    assert not list(dotfiles.parent.glob("*.gitledger-tmp"))


def test_mcp_setup_writes_through_a_symlinked_config(isolated: Path) -> None:
    real = isolated / "dotfiles" / "claude.json"
    real.parent.mkdir()
    real.write_text('{"theme": "dark"}\n')
    link = isolated / "home" / ".claude.json"
    link.symlink_to(real)
    out = run_cli("mcp", "setup", "--write", cwd=isolated)
    assert out.returncode == 0, out.stderr
    assert link.is_symlink()
    data = json.loads(real.read_text())
    assert data["theme"] == "dark" and "gitledger" in data["mcpServers"]


def _read_only(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)


def test_fuse_setup_refuses_a_read_only_settings_file(isolated: Path) -> None:
    path = _claude_settings(isolated)
    _read_only(path, '{"model": "opus"}\n')
    out = run_cli("fuse", "setup", "--write")
    assert out.returncode == 2 and "read-only" in out.stderr, out.stderr
    assert "chmod u+w" in out.stderr
    assert path.read_text() == '{"model": "opus"}\n'
    assert not os.access(path, os.W_OK) or not path.stat().st_mode & 0o222
    assert not path.with_name("settings.json.bak").exists()


def test_fuse_setup_refuses_a_symlink_to_a_read_only_file(isolated: Path) -> None:
    real = isolated / "dotfiles" / "settings.json"
    _read_only(real, "{}\n")
    link = _claude_settings(isolated)
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    out = run_cli("fuse", "setup", "--write")
    assert out.returncode == 2 and "read-only" in out.stderr, out.stderr
    assert real.read_text() == "{}\n" and link.is_symlink()


def test_mcp_setup_refuses_a_read_only_config(isolated: Path) -> None:
    path = isolated / "home" / ".claude.json"
    _read_only(path, '{"theme": "dark"}\n')
    out = run_cli("mcp", "setup", "--write", cwd=isolated)
    assert out.returncode == 2 and "read-only" in out.stderr, out.stderr
    assert path.read_text() == '{"theme": "dark"}\n'


def test_mcp_setup_refuses_a_config_that_is_not_utf8(isolated: Path) -> None:
    path = isolated / "home" / ".claude.json"
    path.write_bytes(b'{"a": "\xff\xfe"}')
    out = run_cli("mcp", "setup", "--write", cwd=isolated)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert "Cannot read" in out.stderr
    assert path.read_bytes() == b'{"a": "\xff\xfe"}'


def test_fuse_setup_keeps_the_file_mode(isolated: Path) -> None:
    path = _claude_settings(isolated)
    path.parent.mkdir(parents=True)
    path.write_text("{}\n")
    path.chmod(0o600)
    assert run_cli("fuse", "setup", "--write").returncode == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


# --- a remote that sends refs outside the ledger namespace -------------------------------------


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def _hostile_remote(tmp_path: Path, ledger: Ledger, *, blob_task: bool = False) -> Path:
    """A bare repository holding a real ledger ref plus refs a ledger must never take in."""
    remote = tmp_path / "hostile.git"
    sync.backup(ledger, str(remote))
    tip = _git("--git-dir", str(remote), "for-each-ref", "--format=%(objectname)").split()[0]
    refs = {
        "refs/heads/main": tip,
        "refs/tags/v1": tip,
        "refs/notes/commits": tip,
        "refs/gitledger-staging/evil/tasks/x": tip,
        "refs/gitledgerx/tasks/y": tip,
        "refs/gitledger/tasks/not-an-id": tip,
    }
    if blob_task:
        blob = subprocess.run(
            ["git", "--git-dir", str(remote), "hash-object", "-w", "--stdin"],
            input="not a commit",
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        refs["refs/gitledger/tasks/ffffffffffffffffffff"] = blob
    for name, target in refs.items():
        _git("--git-dir", str(remote), "update-ref", name, target)
    _git("--git-dir", str(remote), "symbolic-ref", "HEAD", "refs/heads/main")
    return remote


def _ref_names(git_dir: Path) -> set[str]:
    return set(_git("--git-dir", str(git_dir), "for-each-ref", "--format=%(refname)").split())


def test_sync_takes_in_only_ledger_refs_and_verify_names_foreign_ones(
    tmp_path: Path, ledger: Ledger
) -> None:
    task = ledger.create("the one real task")
    remote = _hostile_remote(tmp_path, ledger)
    other = Ledger.open(tmp_path / "other", create=True)
    out = run_cli("--ledger", str(other.path), "sync", str(remote))
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    names = _ref_names(other.path)
    assert {n for n in names if not n.startswith("refs/gitledger")} == set()
    assert not any(n.startswith(("refs/gitledgerx", "refs/gitledger-staging/evil")) for n in names)
    assert other.show(task.id).goal == "the one real task"
    # A ref inside the namespace with a name that is no task id comes along, and verify says so.
    report = other.verify()
    assert [p.ref for p in report.problems] == ["refs/gitledger/tasks/not-an-id"]
    assert "foreign" in report.problems[0].message
    assert [t.id for t in other.tasks()] == [task.id]


def test_a_task_ref_that_points_at_a_blob_refuses_the_sync_and_changes_nothing(
    tmp_path: Path, ledger: Ledger
) -> None:
    ledger.create("the one real task")
    remote = _hostile_remote(tmp_path, ledger, blob_task=True)
    other = Ledger.open(tmp_path / "other", create=True)
    mine = other.create("a local task")
    before = dict(other.store.refs("refs/gitledger/"))
    for args in (("sync", str(remote)), ("restore", str(remote))):
        out = run_cli("--ledger", str(other.path), *args)
        assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
        assert "not a commit" in out.stderr and "Nothing was changed" in out.stderr
        assert dict(other.store.refs("refs/gitledger/")) == before
    assert [t.id for t in other.tasks()] == [mine.id]


# --- credentials in a remote URL ---------------------------------------------------------------


def test_credentials_never_echoed_by_a_live_git_daemon_remote(
    tmp_path: Path, ledger: Ledger
) -> None:
    """test_sync covers a remote nobody answers; here a live server answers (and refuses)."""
    from helpers import start_daemon

    ledger.create("a task")
    server = start_daemon(tmp_path / "served")
    try:
        server.bare("real.git")
        secret = "tok-9f8e7d6c5b4a"
        for url in (
            f"git://alice:{secret}@127.0.0.1:{server.port}/missing.git",
            f"git://alice:{secret}@127.0.0.1:{server.port}/real.git",
        ):
            for args in (("backup", url), ("sync", url), ("restore", url), ("sync", url, "--json")):
                out = run_cli(*args)
                assert secret not in out.stdout + out.stderr, (args, out.stdout, out.stderr)
                assert "Traceback" not in out.stderr
    finally:
        server.stop()


def test_credentials_never_echoed_by_remote_setup_or_where(tmp_path: Path, ledger: Ledger) -> None:
    secret = "ghp_secretTOKENvalue123"
    url = f"https://bob:{secret}@example.invalid/team/ledger.git"
    for args in (
        ("remote", "setup", "origin", url),
        ("remote", "setup", "origin", url, "--json"),
        ("where",),
        ("where", "--json"),
        ("status",),
    ):
        out = run_cli(*args)
        assert secret not in out.stdout + out.stderr, (args, out.stdout, out.stderr)


@pytest.mark.parametrize("text", ["\r", " \r ", "\r\n\r"])
def test_a_toml_config_of_bare_carriage_returns_is_refused_not_a_traceback(
    text: str, tmp_path: Path
) -> None:
    """Found by benchmarks/fuzz_run.py: blank-looking text skipped the check, then failed to parse."""
    with pytest.raises(InvalidInput, match="not valid TOML"):
        merge_toml_config(text, tmp_path / "config.toml", "[mcp_servers.gitledger]\n")


# --- paths too long for the file system (ENAMETOOLONG is an OSError, not "no such file") -------

LONG = "x" * 300


def test_a_transcript_path_too_long_is_no_transcript_not_a_traceback() -> None:
    """Found by tests/test_fuzz.py: Path.is_file() raises for a name over 255 bytes."""
    for args, payload in (
        (("judge", "step"), {"transcript_path": LONG}),
        (("judge", "turn"), {"transcript_path": LONG}),
        (("judge", "step"), {"transcript_path": [LONG, {"a": LONG}]}),
        (("fuse", "save", "--transcript", LONG, "--session", "s"), None),
        (("fuse", "save", "--hook"), {"transcript_path": LONG, "session_id": "s"}),
    ):
        out = run_cli(*args, input=json.dumps(payload) if payload else None)
        assert "Traceback" not in out.stderr, (args, out.stderr)
        assert out.returncode in (0, 1, 2), (args, out.stderr)


def test_a_step_that_is_not_an_object_is_refused_by_the_library_too() -> None:
    from gitledger import judge

    for step in (True, 5, "text", ["a"]):
        with pytest.raises(InvalidInput, match="A step is"):
            judge.context_from_messages({"messages": [], "step": step})


# --- bounded memory in a long-lived process -----------------------------------------------------


def test_ledgers_opened_and_dropped_do_not_accumulate(ledger: Ledger) -> None:
    """Found by fuzz_run.py's cli worker (77 MB to 176 MB over 4,000 commands): each Index held
    its ledger strongly, so a registry of indexes kept every Ledger alive. Now a Ledger holds its
    Index and nothing holds the Ledger: dropped, both go."""
    import gc
    import weakref

    task = ledger.create("x")
    dropped = []
    for _ in range(25):
        opened = Ledger.open(ledger.path)
        opened.short_id(task.id)
        assert opened.index() is not None
        dropped.append((weakref.ref(opened), weakref.ref(opened.index())))
        del opened
    for _ in range(25):
        assert invoke("task", "show", task.id).exit_code == 0  # type: ignore[attr-defined]
    gc.collect()
    assert [pair for pair in dropped if pair[0]() is not None or pair[1]() is not None] == []


def test_memory_import_of_deep_json_is_refused(tmp_path: Path, ledger: Ledger) -> None:
    path = tmp_path / "facts.jsonl"
    path.write_text(deep_object(5_000) + "\n")  # deep, yet within memory import's line limit
    out = run_cli("memory", "import", str(path))
    assert out.returncode == 2 and "too deeply" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_mcp_fuse_save_with_a_path_too_long_is_a_tool_error(ledger: Ledger) -> None:
    from gitledger import mcp_server

    srv = mcp_server.Server()
    result, is_error = srv.call("fuse_save", {"session": "s1", "transcript": LONG})
    assert is_error and result["error"] == "invalid_input", result
