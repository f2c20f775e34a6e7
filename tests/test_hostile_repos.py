"""A cloned repository, an unpacked archive or a planted link must never run code or touch files
outside the ledger (issue 17: D1, D2, D3, D11).

Every case is a real repository or folder built in tmp_path, driven through the real CLI as a
subprocess with no ledger named (GITLEDGER_DIR unset: discovery decides); "ran" is a marker file
the planted program would create.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_cli

GIT = shutil.which("git") or "git"
FIXTURES = Path(__file__).parent / "fixtures"


def git(*args: str, cwd: Path) -> str:
    return subprocess.run([GIT, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def env_without_ledger() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("GITLEDGER_DIR", None)
    return env


def gl(*args: str, cwd: Path, input: str | None = None) -> subprocess.CompletedProcess[str]:
    full = [sys.executable, "-m", "gitledger", *args]
    return subprocess.run(
        full,
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        env=env_without_ledger(),
        timeout=120,
    )


def planted_program(folder: Path, marker: Path) -> Path:
    """A program that, if anything runs it, leaves ``marker`` behind."""
    script = folder / "evil.sh"
    script.write_text(f"#!/bin/sh\necho ran >> {marker}\nexit 1\n")
    script.chmod(0o755)
    return script


def bare_ledger_at(path: Path, settings: dict[str, str]) -> None:
    git("init", "-q", "--bare", str(path), cwd=path.parent)
    for key, value in settings.items():
        git("config", "--file", str(path / "config"), key, value, cwd=path.parent)


def hostile_clone(tmp_path: Path, settings: dict[str, str]) -> tuple[Path, Path]:
    """A repository that commits a bare ``.gitledger/`` with ``settings``, cloned; returns the
    clone and the marker file its program would write."""
    origin = tmp_path / "origin"
    origin.mkdir()
    git("init", "-q", cwd=origin)
    marker = tmp_path / "ran"
    planted_program(origin, marker)
    bare_ledger_at(
        origin / ".gitledger", {k: v.replace("@EVIL@", "./evil.sh") for k, v in settings.items()}
    )
    # Git does not track empty folders; keep the bare layout complete in the commit.
    for empty in ("refs/heads", "refs/tags", "objects/info", "objects/pack"):
        (origin / ".gitledger" / empty / ".keep").touch()
    git("add", "-A", cwd=origin)
    git("commit", "-qm", "ship a ledger", cwd=origin)
    clone = tmp_path / "clone"
    git("clone", "-q", str(origin), str(clone), cwd=tmp_path)
    return clone, marker


SIGNING = {"gitledger.sign": "true", "gpg.program": "@EVIL@", "user.signingKey": "K"}


# --- D1: a committed .gitledger/ -----------------------------------------------------------------


def test_a_committed_ledger_is_refused_and_its_program_never_runs(tmp_path: Path) -> None:
    clone, marker = hostile_clone(tmp_path, SIGNING)
    out = gl("task", "create", "hello", cwd=clone)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    assert "inside the Git work tree" in out.stderr and str(clone) in out.stderr
    assert not marker.exists()
    # Nothing written into the planted ledger.
    assert not list((clone / ".gitledger" / "refs").rglob("gitledger"))
    for sub in (clone / "sub", clone / "sub" / "deeper"):
        sub.mkdir(exist_ok=True)
        again = gl("where", cwd=sub)
        assert again.returncode != 0 and "Refusing the ledger" in again.stderr
    assert not marker.exists()


def test_the_hook_in_a_hostile_clone_saves_to_the_user_ledger_and_runs_nothing(
    tmp_path: Path, isolated: Path
) -> None:
    clone, marker = hostile_clone(tmp_path, SIGNING)
    payload = json.dumps(
        {
            "hook_event_name": "PreCompact",
            "session_id": "hostile1",
            "transcript_path": str(FIXTURES / "transcripts" / "claude_2_1_session.jsonl"),
            "cwd": str(clone),
            "trigger": "auto",
        }
    )
    out = gl("fuse", "save", "--hook", cwd=clone, input=payload)
    assert out.returncode == 0, out.stderr
    assert "Refusing the ledger" in out.stderr and "per-user ledger" in out.stderr
    assert not marker.exists()
    user_ledger = isolated / "home" / ".local" / "share" / "gitledger" / "ledger"
    assert (user_ledger / "refs" / "gitledger" / "fuse" / "hostile1").is_file()


# Each kind of setting in a ledger's own config that names a program: the whole class is refused
# for a ledger found by discovery, even outside any Git work tree (an unpacked archive).
PROGRAM_SETTINGS = {
    "gpg.program": "@EVIL@",
    "gpg.ssh.program": "@EVIL@",
    "gpg.x509.program": "@EVIL@",
    "gpg.ssh.defaultKeyCommand": "@EVIL@",
    "core.sshCommand": "@EVIL@",
    "core.gitProxy": "@EVIL@",
    "core.askPass": "@EVIL@",
    "core.fsmonitor": "@EVIL@",
    "core.hooksPath": ".",
    "core.pager": "@EVIL@",
    "core.editor": "@EVIL@",
    "credential.helper": "!@EVIL@",
    "credential.https://example.com.helper": "!@EVIL@",
    "remote.origin.uploadpack": "@EVIL@",
    "remote.origin.receivepack": "@EVIL@",
    "uploadpack.packObjectsHook": "@EVIL@",
    "protocol.ext.allow": "always",
    "filter.x.smudge": "@EVIL@",
    "diff.x.textconv": "@EVIL@",
    "include.path": "elsewhere.cfg",
    "includeIf.gitdir:/.path": "elsewhere.cfg",
    "alias.st": "!@EVIL@",
}


@pytest.mark.parametrize("key", sorted(PROGRAM_SETTINGS))
def test_an_unpacked_ledger_naming_a_program_is_refused(tmp_path: Path, key: str) -> None:
    folder = tmp_path / "unpacked"  # no .git anywhere above: an archive's contents
    folder.mkdir()
    marker = tmp_path / "ran"
    script = planted_program(folder, marker)
    value = PROGRAM_SETTINGS[key].replace("@EVIL@", str(script))
    bare_ledger_at(folder / ".gitledger", {"gitledger.sign": "true", key: value})
    for args in (("task", "create", "x"), ("task", "list"), ("verify",)):
        out = gl(*args, cwd=folder)
        assert out.returncode != 0, (key, args, out.stdout)
        assert "Traceback" not in out.stderr
        assert key.split(".")[-1].lower() in out.stderr.lower() and "--ledger" in out.stderr
    assert not marker.exists()


def test_an_unpacked_ledger_without_programs_is_used(tmp_path: Path) -> None:
    folder = tmp_path / "unpacked"
    folder.mkdir()
    assert gl("init", cwd=folder).returncode == 0
    assert (folder / ".gitledger" / "HEAD").exists()
    assert gl("task", "create", "fine", cwd=folder).returncode == 0


def test_a_ledger_named_by_the_user_is_taken_as_is(tmp_path: Path) -> None:
    clone, marker = hostile_clone(tmp_path, {"gitledger.sign": "false", "core.pager": "cat"})
    env = {"GITLEDGER_DIR": str(clone / ".gitledger")}
    out = run_cli("task", "create", "mine", cwd=clone, env=env)
    assert out.returncode == 0, out.stderr


def test_the_git_ledger_of_a_work_tree_is_still_found(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    assert gl("init", cwd=repo).returncode == 0
    out = gl("where", "--json", cwd=repo)
    assert json.loads(out.stdout)["kind"] == "git"
    assert gl("task", "create", "ok", cwd=repo).returncode == 0


# --- D2: a .gitledger symlink --------------------------------------------------------------------


@pytest.mark.parametrize("target_kind", ["existing-dir", "missing", "existing-ledger", "relative"])
@pytest.mark.parametrize("in_git", [True, False], ids=["clone", "plain-folder"])
def test_a_gitledger_symlink_is_refused_and_names_the_real_place(
    tmp_path: Path, isolated: Path, target_kind: str, in_git: bool
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    if in_git:
        git("init", "-q", cwd=project)
    outside = tmp_path / "outside"
    if target_kind == "existing-dir":
        outside.mkdir()
    elif target_kind == "existing-ledger":
        git("init", "-q", "--bare", str(outside), cwd=tmp_path)
    link_target: str | Path = "../outside" if target_kind == "relative" else outside
    if target_kind == "relative":
        outside.mkdir()
    (project / ".gitledger").symlink_to(link_target)
    before = sorted(p.name for p in outside.iterdir()) if outside.exists() else None
    real = str(outside.resolve())
    # In a Git work tree 'init' makes the ledger in the Git directory and never reads the link.
    commands = [("task", "create", "x"), ("where",)] + ([] if in_git else [("init",)])
    for args in commands:
        out = gl(*args, cwd=project)
        assert out.returncode != 0, args
        assert "symbolic link" in out.stderr and real in out.stderr, out.stderr
    payload = json.dumps(
        {
            "hook_event_name": "PreCompact",
            "session_id": "link1",
            "transcript_path": str(FIXTURES / "transcripts" / "claude_2_1_session.jsonl"),
            "cwd": str(project),
        }
    )
    hook = gl("fuse", "save", "--hook", cwd=project, input=payload)
    assert hook.returncode == 0 and real in hook.stderr
    after = sorted(p.name for p in outside.iterdir()) if outside.exists() else None
    assert after == before  # nothing created where the link points


# --- D3: repair and a planted refs symlink -------------------------------------------------------


@pytest.mark.parametrize("named", [False, True], ids=["discovered", "named-with-ledger"])
def test_repair_refuses_a_refs_folder_outside_the_ledger(tmp_path: Path, named: bool) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    assert gl("init", cwd=folder).returncode == 0
    ledger = folder / ".gitledger"
    for lock in (folder / "yarn.lock", folder / "sub" / "Cargo.lock"):
        lock.parent.mkdir(exist_ok=True)
        lock.write_text("keep me\n")
        old = time.time() - 3600
        os.utime(lock, (old, old))
    shutil.rmtree(ledger / "refs")
    (ledger / "refs").symlink_to("..")
    out = gl(*(["--ledger", str(ledger)] if named else []), "repair", cwd=folder)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "outside the ledger" in out.stderr
    assert (folder / "yarn.lock").read_text() == "keep me\n"
    assert (folder / "sub" / "Cargo.lock").read_text() == "keep me\n"


def test_repair_removes_only_ref_locks_inside_the_ledger(tmp_path: Path) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    assert gl("init", cwd=folder).returncode == 0
    assert gl("task", "create", "one", cwd=folder).returncode == 0
    ledger = folder / ".gitledger"
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "precious.lock").write_text("keep\n")
    tasks = ledger / "refs" / "gitledger" / "tasks"
    (tasks / "planted").symlink_to(outside)  # a directory link inside refs: not followed
    stale = tasks / "zzzzzzzzzzzz.lock"
    stale.write_text("")
    old = time.time() - 3600
    for p in (stale, outside / "precious.lock"):
        os.utime(p, (old, old))
    out = gl("repair", cwd=folder)
    assert out.returncode == 0, out.stderr
    assert not stale.exists()
    assert (outside / "precious.lock").read_text() == "keep\n"


# --- D11: first-use hooks racing to create the per-user ledger --------------------------------


RACE = """
import os, sys
from pathlib import Path
from gitledger.ledger import Ledger
while not os.path.exists(sys.argv[3]):  # spin: start all at the same instant
    pass
ledger = Ledger.open_for_hook(Path(sys.argv[1]))
ledger.create(f"task {sys.argv[2]}")
"""


@pytest.mark.parametrize("round_", range(3))
def test_racing_first_use_hooks_create_one_ledger_and_lose_nothing(
    tmp_path: Path, round_: int
) -> None:
    folder = tmp_path / "not-a-repo"
    folder.mkdir()
    go = tmp_path / "go"
    home = tmp_path / "gl-home"
    env = {**env_without_ledger(), "GITLEDGER_HOME": str(home)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACE, str(folder), str(n), str(go)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(16)
    ]
    time.sleep(2.0)  # every process imported and spinning
    go.touch()
    errors = []
    for p in procs:
        _out, err = p.communicate(timeout=120)
        if p.returncode != 0:
            errors.append(err)
    assert errors == []
    refs = git(
        "--git-dir", str(home / "ledger"), "for-each-ref", "refs/gitledger/tasks/", cwd=tmp_path
    )
    assert len(refs.splitlines()) == 16
    assert not [p for p in home.iterdir() if ".init-" in p.name]  # no half-made ledger left


def test_a_refused_ledger_names_it_as_each_interface_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitledger.errors import UnsafeLedger
    from gitledger.ledger import Ledger

    monkeypatch.delenv("GITLEDGER_DIR", raising=False)
    folder = tmp_path / "unpacked"
    folder.mkdir()
    ledger = folder / ".gitledger"
    bare_ledger_at(ledger, {"core.pager": "less"})
    with pytest.raises(UnsafeLedger) as refused:
        Ledger.open(cwd=folder)
    assert f"or name the ledger with Ledger.open({str(ledger)!r})." in refused.value.message
    assert f"or name the ledger with --ledger {ledger}." in refused.value.worded("cli")
    assert f"--ledger {ledger} in the MCP server's command." in refused.value.worded("mcp")
    out = gl("task", "list", cwd=folder)
    assert f"or name the ledger with --ledger {ledger}." in " ".join(out.stderr.split())
