"""``gitledger setup``: one command wires hooks, MCP server and instructions, for each agent.

Real files in a real Git work tree, the real CLI as a subprocess; the commands setup writes are
run from an environment without the virtualenv on PATH, as an agent would start them.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomllib

from gitledger import agents
from gitledger.agents.settings import command_words, is_our_command

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "transcripts"
TRANSCRIPT = FIXTURES / "claude_2_1_session.jsonl"


@pytest.fixture
def project(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = isolated / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    monkeypatch.chdir(root)
    return root


def setup(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gitledger", "setup", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".git/" not in str(p.relative_to(root)) + "/"
    }


def hook_commands(settings: dict[str, Any], event: str) -> list[str]:
    return [
        h["command"]
        for group in settings.get("hooks", {}).get(event, [])
        for h in group.get("hooks", [])
    ]


# --- one command, every part, idempotent, undone by --uninstall ---------------------------------


def test_setup_previews_writes_once_and_uninstalls(project: Path) -> None:
    preview = setup("--project", cwd=project)
    assert preview.returncode == 0, preview.stderr
    assert "PreCompact" in preview.stdout and "--write" in preview.stdout
    assert snapshot(project) == {}

    wrote = setup("--project", "--write", cwd=project)
    assert wrote.returncode == 0, wrote.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert any("fuse save --hook" in c for c in hook_commands(settings, "PreCompact"))
    starts = settings["hooks"]["SessionStart"]
    assert {g["matcher"] for g in starts} == {"compact|resume", "startup|resume|clear|compact"}
    mcp = json.loads((project / ".mcp.json").read_text())["mcpServers"]["gitledger"]
    assert mcp["command"] == os.path.abspath(sys.executable) and mcp["args"][-1] == "mcp"
    assert "gitledger prime" in (project / "CLAUDE.md").read_text()

    written = snapshot(project)
    again = setup("--project", "--write", cwd=project)
    assert again.returncode == 0 and "Nothing to change" in again.stdout
    assert snapshot(project) == written

    gone = setup("--project", "--write", "--uninstall", cwd=project)
    assert gone.returncode == 0, gone.stderr
    assert json.loads((project / ".claude" / "settings.json").read_text()) == {}
    assert json.loads((project / ".mcp.json").read_text()) == {"mcpServers": {}}
    assert not (project / "CLAUDE.md").exists()  # it held nothing but our block


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini", "cursor"])
def test_each_agent_gets_its_files_in_its_schema(agent: str, project: Path) -> None:
    out = setup("--agent", agent, "--write", "--json", cwd=project)
    assert out.returncode == 0, out.stderr
    files = {f["path"]: f for f in json.loads(out.stdout)["files"]}
    spec = agents.get(agent)
    assert str(spec.mcp_path(None)) in files
    if spec.mcp_format == "toml":
        data = tomllib.loads(spec.mcp_path(None).read_text())
        assert data["mcp_servers"]["gitledger"]["args"][-1] == "mcp"
    else:
        data = json.loads(spec.mcp_path(None).read_text())
        assert data["mcpServers"]["gitledger"]["args"][-1] == "mcp"
    if spec.hooks:
        settings = json.loads(spec.settings_path(None).read_text())
        save_event = spec.hooks["save"].event
        assert any("fuse save --hook" in c for c in hook_commands(settings, save_event))
        start = hook_commands(settings, "SessionStart")
        assert any("prime --hook" in c for c in start)
        mirror = [c for c in hook_commands(settings, "PostToolUse") if "hook tasklist" in c]
        assert len(mirror) == (1 if "todo" in spec.hooks else 0)
    again = setup("--agent", agent, "--write", cwd=project)
    assert "Nothing to change" in again.stdout, again.stdout


# --- issue 15 item 6: the commands work from the agent's environment ------------------------------


def _agent_env() -> dict[str, str]:
    """An agent started outside the virtualenv: no venv on PATH (PYTHONPATH kept: it is how
    this checkout's code is found in development)."""
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["PATH"] = "/usr/bin:/bin"
    return env


def test_the_written_commands_run_without_the_venv_on_path(project: Path) -> None:
    assert setup("--project", "--write", cwd=project).returncode == 0
    assert subprocess.run(["git", "init", "-q"], cwd=project).returncode == 0
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    payload = json.dumps(
        {"session_id": "env-1", "transcript_path": str(TRANSCRIPT), "cwd": str(project)}
    )
    for event in ("PreCompact", "SessionStart"):
        for command in hook_commands(settings, event):
            ran = subprocess.run(
                ["/bin/sh", "-c", command],
                input=payload,
                capture_output=True,
                text=True,
                env=_agent_env(),
                cwd=project,
                timeout=120,
            )
            assert ran.returncode == 0 and "Traceback" not in ran.stderr, (command, ran.stderr)
            assert "not found" not in ran.stderr
            if "prime --hook" in command:
                out = json.loads(ran.stdout)["hookSpecificOutput"]
                assert out["hookEventName"] == "SessionStart"
    mcp = json.loads((project / ".mcp.json").read_text())["mcpServers"]["gitledger"]
    tools = subprocess.run(
        [mcp["command"], *mcp["args"], "tools"],
        capture_output=True,
        text=True,
        env=_agent_env(),
        cwd=project,
        timeout=120,
    )
    assert tools.returncode == 0 and "task_show" in tools.stdout, tools.stderr


# --- D9: only entries whose command is exactly ours ----------------------------------------------

USERS = {
    "model": "opus",
    "hooks": {
        "PreCompact": [
            {
                "matcher": "",
                "hooks": [
                    {"type": "command", "command": "~/bin/backup-transcript.sh"},
                    {"type": "command", "command": 'notify-send "gitledger fuse saved"'},
                ],
            }
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "say gitledger fuse done"}]}],
        "SessionEnd": "disabled",
    },
}


def test_user_entries_beside_ours_survive_install_and_uninstall(project: Path) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(USERS, indent=2))
    out = setup("--project", "--write", "--sync", str(project / "origin.git"), cwd=project)
    assert out.returncode == 0, out.stderr
    assert "SessionEnd" in out.stderr and "left as it is" in out.stderr  # a note, not a rewrite
    merged = json.loads(path.read_text())
    assert merged["hooks"]["PreCompact"][0] == USERS["hooks"]["PreCompact"][0]
    assert merged["hooks"]["Stop"] == USERS["hooks"]["Stop"]
    assert merged["hooks"]["SessionEnd"] == "disabled"
    assert setup("--project", "--write", "--uninstall", cwd=project).returncode == 0
    assert json.loads(path.read_text()) == USERS


@pytest.mark.parametrize(
    ("command", "ours"),
    [
        ("/usr/bin/python3 -m gitledger fuse save --hook", True),
        ("'/opt/my env/bin/python' -m gitledger fuse restore --hook", True),
        ("gitledger prime --hook --sync origin", True),
        ("/usr/bin/python3 -m gitledger hook tasklist", True),
        ("gitledger hook", False),
        ("/home/a/.local/bin/git-ledger --ledger /x sync --hook origin", True),
        ('notify-send "gitledger fuse saved"', False),
        ("gitledger fuse save --hook; rm -rf ~", False),
        ("gitledger fuse save", False),
        ("~/bin/backup-transcript.sh gitledger fuse save --hook", False),
        ("python3 -m gitledger task create x --hook", False),
        ("echo $(gitledger fuse save --hook)", False),
        ("unbalanced 'quote", False),
    ],
)
def test_which_commands_are_ours(command: str, ours: bool) -> None:
    assert is_our_command(command) is ours, command_words(command)


# --- D14: numbers, surrogates, CRLF, files that are not files ------------------------------------


def test_numbers_keep_their_text_and_crlf_backups_are_byte_exact(project: Path) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    original = b'{\r\n  "big": 1e400,\r\n  "price": 1.50,\r\n  "n": 12345678901234567890\r\n}\r\n'
    path.write_bytes(original)
    out = setup("--project", "--write", cwd=project)
    assert out.returncode == 0, out.stderr
    text = path.read_bytes()
    assert b'"big": 1e400' in text and b'"price": 1.50' in text and b"Infinity" not in text
    assert (
        b"12345678901234567890" in text
        and b"\r\n" in text
        and b"\n" not in text.replace(b"\r\n", b"")
    )
    assert path.with_name("settings.json.bak").read_bytes() == original


def test_a_lone_surrogate_is_refused_before_anything_is_written(project: Path) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    original = b'{"name": "\\ud800 alone"}\n'
    path.write_bytes(original)
    before = snapshot(project)
    out = setup("--project", "--write", cwd=project)
    assert out.returncode == 2 and "lone surrogate" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert snapshot(project) == before  # no .bak, no temporary, no .mcp.json, no CLAUDE.md


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "loop", "dir"])
def test_settings_that_are_no_regular_file_are_refused(kind: str, isolated: Path) -> None:
    path = isolated / "home" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "loop":
        path.symlink_to(path)
    else:
        path.mkdir()
    for args in (["setup"], ["setup", "--write"], ["fuse", "setup"], ["fuse", "setup", "--write"]):
        out = subprocess.run(
            [sys.executable, "-m", "gitledger", *args],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=isolated,
        )
        assert out.returncode == 2 and "Traceback" not in out.stderr, (args, out.stderr)
        assert "nothing was written" in out.stderr
    assert not list(path.parent.glob("*.bak")) and not list(path.parent.glob("*gitledger-tmp"))


# --- D4: planted links are never followed, project files stay in the project ---------------------


def test_planted_links_at_temporaries_and_backups_are_not_followed(
    project: Path, isolated: Path
) -> None:
    victim = isolated / "victim"
    victim.write_text("precious\n")
    claude = project / ".claude"
    claude.mkdir()
    (claude / "settings.json").write_text("{}\n")
    (project / ".mcp.json").write_text("{}\n")
    for name in (
        ".claude/settings.json.gitledger-tmp",
        ".claude/settings.json.bak",
        ".mcp.json.gitledger-tmp",
        ".mcp.json.bak",
    ):
        (project / name).symlink_to(victim)
    out = setup("--project", "--write", cwd=project)
    assert out.returncode == 0, out.stderr
    assert victim.read_text() == "precious\n"
    assert (claude / "settings.json.bak").read_text() == "{}\n"  # the link replaced, not followed
    assert not (claude / "settings.json.bak").is_symlink()


@pytest.mark.parametrize("planted", ["CLAUDE.md", ".mcp.json", ".claude/settings.json", ".claude"])
def test_a_project_file_resolving_outside_the_project_is_refused(
    planted: str, project: Path, isolated: Path
) -> None:
    outside = isolated / "outside"
    outside.mkdir()
    target = outside / "authorized_keys"
    target.write_text("ssh-ed25519 AAAA me\n")
    link = project / planted
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside if planted == ".claude" else target)
    out = setup("--project", "--write", cwd=project)
    assert out.returncode == 2 and "outside the project" in out.stderr, out.stderr
    assert target.read_text() == "ssh-ed25519 AAAA me\n"
    assert sorted(p.name for p in outside.iterdir()) == ["authorized_keys"]
    agents_md = subprocess.run(
        [sys.executable, "-m", "gitledger", "agents-md", "--file", "CLAUDE.md", "--write"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if planted == "CLAUDE.md":
        assert agents_md.returncode == 2 and "outside the project" in agents_md.stderr
    assert target.read_text() == "ssh-ed25519 AAAA me\n"


# --- D15: Codex TOML edited with tomlkit -----------------------------------------------------------


@pytest.mark.parametrize(
    "original",
    [
        '[mcp_servers]\ngitledger = { command = "old" }\n',
        'mcp_servers.gitledger.command = "old"\nmodel = "o3"\n',
        'notes = """\n[mcp_servers.gitledger]\ncommand = "inside a string"\n"""\n',
        'mcp_servers = { docs = { command = "docs" } }\n',
        "# keep this comment\n[mcp_servers.docs]\ncommand = 'docs'  # and this\n",
    ],
)
def test_codex_toml_in_every_shape(original: str, project: Path) -> None:
    config = Path.home() / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(original)
    out = setup("--agent", "codex", "--write", cwd=project)
    assert out.returncode == 0, out.stderr
    text = config.read_text()
    data = tomllib.loads(text)
    assert data["mcp_servers"]["gitledger"]["command"] == os.path.abspath(sys.executable)
    before = tomllib.loads(original)
    if "notes" in before:
        assert data["notes"] == before["notes"]  # the string is still the string
    for comment in ("# keep this comment", "# and this"):
        assert (comment in text) == (comment in original)
    for key, value in before.get("mcp_servers", {}).items():
        if key != "gitledger":
            assert data["mcp_servers"][key] == value
    assert "Nothing to change" in setup("--agent", "codex", "--write", cwd=project).stdout
    assert setup("--agent", "codex", "--write", "--uninstall", cwd=project).returncode == 0
    left = tomllib.loads(config.read_text())
    assert "gitledger" not in left.get("mcp_servers", {})
    assert {k: v for k, v in left.items() if k != "mcp_servers"} == {
        k: v for k, v in before.items() if k != "mcp_servers"
    }


# --- --sync: bounded, never failing the agent -------------------------------------------------------


@pytest.fixture
def silent_remote() -> Iterator[str]:
    """A git:// remote on loopback that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                held.append(conn)
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"git://127.0.0.1:{server.getsockname()[1]}/ledger.git"
    stop.set()
    thread.join(5)
    for conn in held:
        conn.close()
    server.close()


def _hook(args: list[str], payload: dict[str, Any], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gitledger", *args],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def test_a_silent_remote_never_blocks_or_fails_a_hook(project: Path, silent_remote: str) -> None:
    for args in (
        ["sync", "--hook", "--timeout", "2", silent_remote],
        ["prime", "--hook", "--sync", silent_remote],
    ):
        ran = _hook(args, {"session_id": "s", "cwd": str(project)}, project)
        assert ran.returncode == 0 and "Traceback" not in ran.stderr, ran.stderr
        assert "sync" in ran.stderr  # said on stderr, once
    primed = _hook(["prime", "--hook", "--sync", silent_remote], {"cwd": str(project)}, project)
    assert json.loads(primed.stdout)["hookSpecificOutput"]["hookEventName"] == "SessionStart"


def test_sync_hooks_carry_a_task_from_one_machine_to_another(isolated: Path) -> None:
    origin = isolated / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    machines = []
    for name in ("a", "b"):
        root = isolated / name
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        machines.append(root)
    env = {k: v for k, v in os.environ.items() if k != "GITLEDGER_DIR"}
    a, b = machines
    for root in machines:
        subprocess.run(
            [sys.executable, "-m", "gitledger", "init"],
            cwd=root,
            env=env,
            check=True,
            capture_output=True,
        )
    subprocess.run(
        [sys.executable, "-m", "gitledger", "task", "create", "Ship the CSV export"],
        cwd=a,
        env=env,
        check=True,
        capture_output=True,
    )
    pushed = subprocess.run(
        [sys.executable, "-m", "gitledger", "sync", "--hook", str(origin)],
        input=json.dumps({"cwd": str(a)}),
        cwd=a,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert pushed.returncode == 0 and pushed.stderr == "", pushed.stderr
    primed = subprocess.run(
        [sys.executable, "-m", "gitledger", "prime", "--hook", "--sync", str(origin)],
        input=json.dumps({"cwd": str(b), "source": "startup"}),
        cwd=b,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert primed.returncode == 0, primed.stderr
    context = json.loads(primed.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Ship the CSV export" in context
    assert f"last sync just now with {origin}" in context  # prime says how fresh it is


def test_setup_with_sync_installs_the_sync_hooks(project: Path) -> None:
    out = setup("--project", "--write", "--sync", "origin", cwd=project)
    assert out.returncode == 0, out.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    (prime,) = [c for c in hook_commands(settings, "SessionStart") if "prime" in c]
    assert shlex.split(prime)[-4:] == ["prime", "--hook", "--sync", "origin"]
    for event in ("PostCompact", "SessionEnd"):
        (push,) = [c for c in hook_commands(settings, event) if "sync" in c]
        assert shlex.split(push)[-5:] == ["sync", "--hook", "--timeout", "10", "origin"]
    # Dropping --sync takes the sync hooks out again, and nothing else: PostCompact keeps the
    # fuse's summary hook.
    assert setup("--project", "--write", cwd=project).returncode == 0
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert "SessionEnd" not in settings["hooks"]
    (summary,) = hook_commands(settings, "PostCompact")
    assert shlex.split(summary)[-3:] == ["fuse", "summary", "--hook"]
    assert all("--sync" not in c for c in hook_commands(settings, "SessionStart"))


@pytest.mark.parametrize("value", ["0.0", "1e400", "-0.5", "null", "true", '"off"', "{}"])
def test_an_event_set_to_a_non_list_is_kept_byte_for_byte_and_noted(
    project: Path, value: str
) -> None:
    # Numbers are kept as written (1e400 must not come back as Infinity); a note, never a crash.
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"": 0.0, "hooks": {"PreCompact": ' + value + "}}\n")
    out = setup("--project", "--write", cwd=project)
    assert out.returncode == 0, out.stderr
    assert "PreCompact" in out.stderr and "left as it is" in out.stderr
    written = path.read_text()
    assert f'"PreCompact": {value}' in written and '"": 0.0' in written
    assert json.loads(written)["hooks"]["SessionStart"]
