"""Backup, restore, sync and claims through real Git remotes: paths, bundles and a `git daemon`
on loopback that the tests start and stop. No mocks of Git."""

from __future__ import annotations

import json
import random
import subprocess
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from helpers import Daemon, free_port, git_refs, run_cli

from gitledger import sync
from gitledger.errors import ClaimConflict, GateRefused, InvalidInput, RemoteError
from gitledger.gitstore import GitStore
from gitledger.ledger import Ledger
from gitledger.model import Task
from gitledger.refs import LEDGER_REFSPEC

PREFIX = "refs/gitledger/"


# --- helpers ------------------------------------------------------------------------------------


def make_ledger(path: Path, actor: str = "tester") -> Ledger:
    return Ledger.open(path, create=True, actor=actor)


def refs_of(ledger: Ledger) -> dict[str, str]:
    return dict(ledger.store.refs(PREFIX))


def records(ledger: Ledger) -> dict[str, dict[str, Any]]:
    return {t.id: t.to_json_dict() for t in ledger.tasks()}


def seed(ledger: Ledger, n: int = 4) -> list[Task]:
    tasks = [
        ledger.create(
            f"task {i}",
            criteria=f"criteria {i}",
            labels=[f"l{i}"],
            next=f"step {i}",
            priority=i % 5,
        )
        for i in range(n)
    ]
    ledger.update(tasks[0].id, notes=["a note"], decisions=["a decision"], evidence=["proof"])
    ledger.update(tasks[0].id, status="done")
    if n > 1:
        ledger.update(tasks[1].id, add_dependencies=[tasks[0].id], status="active")
    return [ledger.show(t.id) for t in tasks]


# --- backup and restore -------------------------------------------------------------------------


def test_backup_to_path_url_and_bundle_then_restore_equal(tmp_path: Path, daemon: Daemon) -> None:
    source = make_ledger(tmp_path / "src")
    seed(source, 5)
    want = refs_of(source)

    # A path that does not exist yet becomes a bare repository.
    target = tmp_path / "backups" / "ledger.git"
    report = sync.backup(source, str(target))
    assert sorted(report.pushed) == sorted(want)
    assert git_refs(target) == want
    again = sync.backup(source, str(target))
    assert again.pushed == [] and again.pushed_objects == 0

    daemon.bare("team.git")
    url = daemon.url("team.git")
    report = sync.backup(source, url)
    assert sorted(report.pushed) == sorted(want)
    assert git_refs(daemon.base / "team.git") == want

    bundle = tmp_path / "ledger.bundle"
    report = sync.backup(source, bundle=bundle)
    assert report.verified and sorted(report.pushed) == sorted(want)

    for n, where in enumerate((str(target), url, str(bundle))):
        fresh = make_ledger(tmp_path / f"restored{n}")
        restored = sync.restore(fresh, where)
        assert restored.verified is True and restored.problems == []
        assert len(restored.created) == len(want)
        assert refs_of(fresh) == want
        assert records(fresh) == records(source)
        assert fresh.verify().ok


def test_restore_into_a_ledger_with_work_merges_and_keeps_local(tmp_path: Path) -> None:
    source = make_ledger(tmp_path / "src", "alice")
    [first, *_] = seed(source, 2)
    remote = tmp_path / "remote.git"
    sync.backup(source, str(remote))

    mine = make_ledger(tmp_path / "mine", "bob")
    sync.restore(mine, str(remote))
    mine.update(first.id, notes=["bob's local note"])
    local_only = mine.create("bob's own task")
    source.update(first.id, notes=["alice's later note"])
    sync.backup(source, str(remote))

    report = sync.restore(mine, str(remote))
    assert report.merged == [f"{PREFIX}tasks/{first.id}"]
    notes = [n.text for n in mine.show(first.id).notes]
    assert {"a note", "bob's local note", "alice's later note"} <= set(notes)
    assert mine.show(local_only.id).goal == "bob's own task"
    assert report.verified


def test_cli_backup_restore_sync(tmp_path: Path, ledger: Ledger) -> None:
    ledger_dir = tmp_path / "ledger"
    made = run_cli("task", "create", "ship the backup", "--json")
    assert made.returncode == 0, made.stderr
    task_id = json.loads(made.stdout)["id"]
    remote = tmp_path / "remote.git"

    out = run_cli("backup", str(remote), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["pushed"] == [f"{PREFIX}tasks/{task_id}"]
    out = run_cli("task", "backup", str(remote))
    assert out.returncode == 0, out.stderr
    assert "nothing to do" in out.stdout

    other = tmp_path / "other"
    out = run_cli("--ledger", str(other), "restore", str(remote))
    assert out.returncode == 0, out.stderr
    assert "1 new" in out.stdout
    out = run_cli("--ledger", str(other), "task", "update", task_id[:8], "--note", "from other")
    assert out.returncode == 0, out.stderr
    out = run_cli("--ledger", str(other), "sync", str(remote), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["pushed"] == [f"{PREFIX}tasks/{task_id}"]

    out = run_cli("task", "restore", str(remote), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["fast_forwarded"] == [f"{PREFIX}tasks/{task_id}"]
    shown = run_cli("task", "show", task_id, "--json")
    assert [n["text"] for n in json.loads(shown.stdout)["notes"]] == ["from other"]
    assert refs_of(Ledger.open(ledger_dir)) == refs_of(Ledger.open(other))

    bundle = tmp_path / "b.bundle"
    out = run_cli("backup", "--bundle", str(bundle))
    assert out.returncode == 0 and bundle.exists(), out.stderr
    out = run_cli("--ledger", str(tmp_path / "third"), "restore", str(bundle), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["verified"] is True


def test_bad_input_is_refused_and_changes_nothing(tmp_path: Path, ledger: Ledger) -> None:
    ledger.create("keep me")
    before = refs_of(ledger)
    out = run_cli("sync", "nosuchremote")
    assert out.returncode == 2
    assert "git remote add nosuchremote" in out.stderr
    out = run_cli("backup", "somewhere", "--bundle", str(tmp_path / "x.bundle"))
    assert out.returncode == 2
    assert not (tmp_path / "x.bundle").exists()
    out = run_cli("restore", str(tmp_path / "missing.git"))
    assert out.returncode == 2 and "Nothing to restore" in out.stderr
    not_git = tmp_path / "plain-folder"
    not_git.mkdir()
    (not_git / "file.txt").write_text("hello")
    out = run_cli("backup", str(not_git))
    assert out.returncode == 2 and "not a Git repository" in out.stderr
    assert refs_of(ledger) == before
    with pytest.raises(InvalidInput):
        sync.sync(ledger, str(not_git / "file.txt"))
    assert refs_of(ledger) == before


# --- failing remotes ----------------------------------------------------------------------------


def test_remote_that_refuses(tmp_path: Path, daemon: Daemon) -> None:
    repo = daemon.bare("strict.git")
    hook = repo / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'policy: no ledger refs here' >&2\nexit 1\n")
    hook.chmod(0o755)
    ledger = make_ledger(tmp_path / "l")
    seed(ledger, 2)
    before = refs_of(ledger)
    with pytest.raises(RemoteError) as info:
        sync.backup(ledger, daemon.url("strict.git"))
    assert "refused" in info.value.message or "declined" in info.value.message
    with pytest.raises(RemoteError):
        sync.sync(ledger, daemon.url("strict.git"))
    assert refs_of(ledger) == before
    assert git_refs(repo) == {}
    assert ledger.verify().ok


def test_remote_that_disappears_mid_push(tmp_path: Path, daemon: Daemon) -> None:
    repo = daemon.bare("flaky.git")
    hook = repo / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nsleep 5\n")
    hook.chmod(0o755)
    ledger = make_ledger(tmp_path / "l")
    seed(ledger, 3)
    before = refs_of(ledger)
    # Kill the server (and its per-connection children) while it is receiving the push.
    killer = threading.Timer(1.0, daemon.stop)
    killer.start()
    started = time.monotonic()
    try:
        with pytest.raises(RemoteError) as info:
            sync.backup(ledger, daemon.url("flaky.git"))
    finally:
        killer.join()
    assert time.monotonic() - started < 5
    assert daemon.url("flaky.git") in info.value.message
    assert refs_of(ledger) == before
    assert git_refs(repo) == {}
    # And a server that is gone altogether: a clear error naming the fix.
    with pytest.raises(RemoteError) as gone:
        sync.sync(ledger, daemon.url("flaky.git"))
    assert "nothing was changed here" in gone.value.message
    assert refs_of(ledger) == before


def _loose_object(repo: Path, oid: str) -> Path:
    return repo / "objects" / oid[:2] / oid[2:]


def test_remote_holding_a_corrupt_object(tmp_path: Path, daemon: Daemon) -> None:
    source = make_ledger(tmp_path / "src")
    [task, *_] = seed(source, 2)
    repo = daemon.bare("damaged.git")
    # Loose objects, so one can be damaged in place (a push of this size is unpacked).
    subprocess.run(["git", "--git-dir", str(repo), "config", "receive.unpackLimit", "1000"])
    sync.backup(source, daemon.url("damaged.git"))
    tip = refs_of(source)[f"{PREFIX}tasks/{task.id}"]
    blob = subprocess.run(
        ["git", "--git-dir", str(repo), "rev-parse", f"{tip}:task.json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    path = _loose_object(repo, blob)
    assert path.exists()
    path.chmod(0o644)
    path.write_bytes(zlib.compress(b'blob 12\x00{"forged":1}'))

    for n, where in enumerate((daemon.url("damaged.git"), str(repo))):
        fresh = make_ledger(tmp_path / f"fresh{n}")
        with pytest.raises(RemoteError) as info:
            sync.restore(fresh, where)
        assert "damaged" in info.value.message or "corrupt" in info.value.message
        assert refs_of(fresh) == {}
    # A ledger with work of its own is not touched either, and nothing is pushed.
    mine = make_ledger(tmp_path / "mine")
    mine.create("my own work")
    before, remote_before = refs_of(mine), git_refs(repo)
    with pytest.raises(RemoteError):
        sync.sync(mine, daemon.url("damaged.git"))
    assert refs_of(mine) == before
    assert git_refs(repo) == remote_before


def test_credentials_in_a_url_are_never_echoed(tmp_path: Path, ledger: Ledger) -> None:
    ledger.create("secret-free")
    port = free_port()  # nothing listens here
    url = f"http://alice:s3cret-token@127.0.0.1:{port}/ledger.git"
    for args in (
        ("backup", url),
        ("sync", url),
        ("restore", url),
        ("backup", url, "--json"),
        ("sync", url, "--json"),
        ("remote", "setup", "team", url),
    ):
        out = run_cli(*args)
        assert "s3cret-token" not in out.stdout + out.stderr, args
        if args[0] != "remote":
            assert out.returncode == 1, (args, out.stderr)
            assert "alice:***@127.0.0.1" in out.stdout + out.stderr
    assert "s3cret-token" in (ledger.path / "config").read_text()  # stored, as git does


# --- many machines ------------------------------------------------------------------------------


def _random_edit(rng: random.Random, ledger: Ledger, ids: list[str], who: str, n: int) -> None:
    task_id = rng.choice(ids)
    kind = rng.choice(["note", "status", "next", "dep", "decision", "evidence", "label"])
    try:
        if kind == "note":
            ledger.update(task_id, notes=[f"{who} note {n}"])
        elif kind == "status":
            status = rng.choice(["open", "active", "blocked"])
            ledger.update(
                task_id, status=status, blocker=f"{who} waits" if status == "blocked" else ""
            )
        elif kind == "next":
            ledger.update(task_id, next=f"{who} next {n}")
        elif kind == "dep":
            other = rng.choice([i for i in ids if i != task_id])
            current = ledger.show(task_id).dependencies
            if other in current:
                ledger.update(task_id, remove_dependencies=[other])
            else:
                ledger.update(task_id, add_dependencies=[other])
        elif kind == "decision":
            ledger.update(task_id, decisions=[f"{who} decided {n}"])
        elif kind == "evidence":
            ledger.update(task_id, evidence=[f"{who} evidence {n}"])
        else:
            ledger.update(task_id, add_labels=[f"{who}{n % 3}"])
    except GateRefused:
        pass  # e.g. a dependency cycle: the ledger said no, nothing was written


@pytest.mark.parametrize("seed_value", [7, 2026])
def test_three_clones_edit_concurrently_and_converge(
    tmp_path: Path, daemon: Daemon, seed_value: int
) -> None:
    rng = random.Random(seed_value)
    daemon.bare("shared.git")
    url = daemon.url("shared.git")
    names = ["alice", "bob", "carol"]
    clones = {n: make_ledger(tmp_path / n, n) for n in names}
    ids = [t.id for t in seed(clones["alice"], 4)]
    sync.sync(clones["alice"], url)
    for n in names[1:]:
        sync.sync(clones[n], url)

    written: dict[str, set[str]] = {"notes": set(), "decisions": set(), "evidence": set()}
    counter = 0
    for _round in range(4):
        for n in names:
            for _ in range(rng.randint(1, 4)):
                counter += 1
                _random_edit(rng, clones[n], ids, n, counter)
        # Concurrent syncs: pushes race at the server, losers fetch, merge and retry.
        order = names[:]
        rng.shuffle(order)
        with ThreadPoolExecutor(3) as pool:
            list(pool.map(lambda n: sync.sync(clones[n], url), order))
    for ledger in clones.values():
        for task in ledger.tasks():
            for kind in written:
                written[kind] |= {e.id for e in getattr(task, kind)}

    for _pass in range(10):  # sync in random orders until a whole pass changes nothing
        order = names[:]
        rng.shuffle(order)
        reports = [sync.sync(clones[n], url) for n in order]
        if all(r.quiet for r in reports):
            break
    else:
        pytest.fail("clones did not converge in 10 passes")

    expected = git_refs(daemon.base / "shared.git")
    for n, ledger in clones.items():
        assert refs_of(ledger) == expected, n
        assert ledger.verify().ok
        for task in ledger.tasks():
            assert task.id in ids
        for kind, entry_ids in written.items():
            have = {e.id for t in ledger.tasks() for e in getattr(t, kind)}
            assert entry_ids <= have, (n, kind)
    assert records(clones["alice"]) == records(clones["bob"]) == records(clones["carol"])


def test_two_clones_claim_one_task_exactly_one_wins(tmp_path: Path, daemon: Daemon) -> None:
    daemon.bare("claims.git")
    url = daemon.url("claims.git")
    a, b = make_ledger(tmp_path / "a", "alice"), make_ledger(tmp_path / "b", "bob")
    ids = [a.create(f"claim me {i}").id for i in range(5)]
    sync.sync(a, url)
    sync.sync(b, url)
    for task_id in ids:
        barrier = threading.Barrier(2)

        def attempt(ledger: Ledger, task_id: str = task_id, barrier: Any = barrier) -> str:
            barrier.wait()
            try:
                return sync.claim(ledger, task_id, url).owner or ""
            except ClaimConflict:
                return "lost"

        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(attempt, (a, b)))
        assert sorted(results) in (["alice", "lost"], ["bob", "lost"]), results
        winner = next(r for r in results if r != "lost")
        sync.sync(a, url)
        sync.sync(b, url)
        assert a.show(task_id).owner == b.show(task_id).owner == winner
        assert a.show(task_id).conflicts == []


def test_stale_claim_loses_and_is_dropped(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    a, b = make_ledger(tmp_path / "a", "alice"), make_ledger(tmp_path / "b", "bob")
    task = a.create("one owner only")
    sync.backup(a, str(remote))
    sync.restore(b, str(remote))
    assert sync.claim(a, task.id, str(remote)).owner == "alice"
    with pytest.raises(ClaimConflict):
        sync.claim(b, task.id, str(remote))
    assert b.show(task.id).owner == "alice"
    assert refs_of(a) == refs_of(b) == git_refs(remote)
    # The CLI path: `task claim ID --push REMOTE`, exit 3 for the loser.
    other = a.create("second")
    sync.backup(a, str(remote))
    out = run_cli("--ledger", str(b.path), "--actor", "bob", "task", "claim", other.id[:8],
                  "--push", str(remote), "--json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["owner"] == "bob"
    out = run_cli("--ledger", str(a.path), "--actor", "alice", "task", "claim", other.id[:8],
                  "--push", str(remote))  # fmt: skip
    assert out.returncode == 3
    assert "already claimed by bob" in out.stderr


def test_diverged_non_task_ref_is_kept_and_reported(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    a, b = make_ledger(tmp_path / "a"), make_ledger(tmp_path / "b")
    # a kind sync cannot merge (tasks, fuse, memory, judge state and settings documents it can)
    ref = f"{PREFIX}config/unknown-kind"
    for ledger, text in ((a, b"from a"), (b, b"from b")):
        ledger.store.write(ref, {"snap": text}, "snapshot", ("t", "t@x"), [], None)
    sync.sync(a, str(remote))
    report = sync.sync(b, str(remote))
    assert report.unmerged == [ref]
    assert ref not in report.pushed
    assert ledger_blob(b, ref) == b"from b"
    out = run_cli("--ledger", str(b.path), "backup", str(remote))
    assert out.returncode == 3
    assert "gitledger sync" in out.stderr
    # sync itself says so and exits non-zero: a stranded ref is not a success
    out = run_cli("--ledger", str(b.path), "sync", str(remote))
    assert out.returncode == 3
    assert "diverged, kept local and not pushed: refs/gitledger/config/unknown-kind" in out.stdout
    assert "cannot merge" in out.stderr


def ledger_blob(ledger: Ledger, ref: str) -> bytes | None:
    tip = ledger.store.tip(ref)
    assert tip is not None
    return ledger.store.read_files(tip, ("snap",))["snap"]


# --- remote names, setup, hooks, the init warning -----------------------------------------------


def _project(tmp_path: Path, origin: Path) -> Path:
    project = tmp_path / "project"
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(["git", "-C", str(project), "remote", "add", "origin", str(origin)], check=True)
    return project


def test_origin_of_the_project_setup_and_init_warning(tmp_path: Path) -> None:
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    project = _project(tmp_path, origin)
    ledger = Ledger(GitStore.init(project / ".git" / "gitledger"), project_root=project)
    task = ledger.create("travels with the code")
    report = sync.backup(ledger)  # default remote: the project's origin
    assert report.pushed == [f"{PREFIX}tasks/{task.id}"]

    clone_dir = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(origin), str(clone_dir)], check=True)
    fresh = Ledger(GitStore.init(clone_dir / ".git" / "gitledger"), project_root=clone_dir)
    warning = sync.init_warning(fresh)
    assert (
        warning is not None and "sync.restore(ledger, 'origin')" in warning and "1 task" in warning
    )
    assert "'gitledger restore origin'" in (sync.init_warning(fresh, interface="cli") or "")
    sync.restore(fresh, "origin")
    assert sync.init_warning(fresh) is None

    changed = sync.setup_remote(fresh, "origin")
    assert changed == [
        f"remote.origin.url = {origin}",
        "remote.origin.fetch = refs/gitledger/*:refs/gitledger/*",
        "remote.origin.push = refs/gitledger/*:refs/gitledger/*",
    ]
    assert sync.setup_remote(fresh, "origin") == []
    fresh.update(task.id, notes=["pushed by plain git"])
    subprocess.run(
        ["git", "--git-dir", str(fresh.path), "push", "-q", "origin"], check=True, timeout=60
    )
    assert git_refs(origin) == refs_of(fresh)
    ledger_fetch = subprocess.run(
        ["git", "--git-dir", str(ledger.path), "fetch", "-q", str(origin), LEDGER_REFSPEC],
        capture_output=True,
        text=True,
    )
    assert ledger_fetch.returncode == 0, ledger_fetch.stderr
    assert ledger.show(task.id).notes[0].text == "pushed by plain git"

    out = run_cli("--ledger", str(fresh.path), "remote", "setup", "mirror", str(tmp_path / "m"))
    assert out.returncode == 0 and "remote.mirror.push" in out.stdout, out.stderr
    out = run_cli("--ledger", str(fresh.path), "remote", "setup", "no such")
    assert out.returncode == 2


def test_no_pre_push_hooks_and_a_non_bare_target(tmp_path: Path, ledger: Ledger) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    marker = tmp_path / "hook-ran"
    (hooks / "pre-push").write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    (hooks / "pre-push").chmod(0o755)
    subprocess.run(["git", "config", "--global", "core.hooksPath", str(hooks)], check=True)
    work = tmp_path / "worktree-repo"
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    ledger.create("into a work tree's repository")
    report = sync.backup(ledger, str(work))  # pygit2 cannot push here; the git CLI does
    assert report.pushed and git_refs(work / ".git") == refs_of(ledger)
    assert not marker.exists()


def test_a_ref_deleted_on_the_remote_is_pushed_again(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    ledger = make_ledger(tmp_path / "l")
    tasks = seed(ledger, 3)
    sync.sync(ledger, str(remote))
    gone = f"{PREFIX}tasks/{tasks[2].id}"
    subprocess.run(["git", "--git-dir", str(remote), "update-ref", "-d", gone], check=True)
    report = sync.sync(ledger, str(remote))
    assert report.pushed == [gone]
    assert git_refs(remote) == refs_of(ledger)
    assert sync.sync(ledger, str(remote)).quiet


def test_cli_sync_reports_a_conflict_and_keeps_both_notes(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    a, b = make_ledger(tmp_path / "a", "alice"), make_ledger(tmp_path / "b", "bob")
    task = a.create("shared", next="start")
    sync.sync(a, str(remote))
    sync.sync(b, str(remote))
    a.update(task.id, next="alice's way", notes=["alice was here"])
    b.update(task.id, next="bob's way", notes=["bob was here"])
    out = run_cli("--ledger", str(a.path), "sync", str(remote))
    assert out.returncode == 0, out.stderr
    out = run_cli("--ledger", str(b.path), "sync", str(remote))
    assert out.returncode == 0, out.stderr
    assert "1 merged" in out.stdout and "conflict on" in out.stdout and "next" in out.stdout
    merged = b.show(task.id)
    assert {n.text for n in merged.notes} == {"alice was here", "bob was here"}
    assert merged.next == "bob's way"  # bob wrote later by the clock
    assert merged.conflicts[0].dropped == "alice's way"
    history = b.history(task.id)
    assert len(history[0].parents) == 2
    out = run_cli("--ledger", str(a.path), "sync", str(remote), "--json")
    assert json.loads(out.stdout)["fast_forwarded"] == [f"{PREFIX}tasks/{task.id}"]
    assert refs_of(a) == refs_of(b) == git_refs(remote)


def test_init_in_a_fresh_clone_warns_through_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITLEDGER_DIR")
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    project = _project(tmp_path, origin)
    ledger = Ledger(GitStore.init(project / ".git" / "gitledger"), project_root=project)
    ledger.create("travels with the code")
    sync.backup(ledger)
    clone_dir = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(origin), str(clone_dir)], check=True)
    out = run_cli("init", cwd=clone_dir)
    assert out.returncode == 0, out.stderr
    assert "gitledger restore origin" in out.stderr
    quiet = run_cli("init", cwd=tmp_path)  # no Git, no origin: no warning, no error
    assert quiet.returncode == 0 and "warning" not in quiet.stderr


def test_a_sync_records_what_it_moved_in_the_index(tmp_path: Path) -> None:
    """The first command after a sync costs what the sync changed, not a pass over every ref."""

    remote = tmp_path / "remote.git"
    source = make_ledger(tmp_path / "src", "alice")
    tasks = seed(source, 6)
    sync.backup(source, str(remote))
    mine = make_ledger(tmp_path / "mine", "bob")
    sync.restore(mine, str(remote))
    mine.update(tasks[1].id, notes=["bob's note"])  # diverges: the sync will merge it
    idx = mine.index()
    assert idx is not None
    time.sleep(0.1)  # past the racy window, so the index trusts its stamp
    assert len(mine.list_tasks()) == 6
    source.update(tasks[2].id, status="blocked", blocker="waits on alice")
    source.update(tasks[1].id, notes=["alice's note"])
    fresh = source.create("made by alice after the restore")
    sync.backup(source, str(remote))

    report = sync.sync(mine, url=str(remote))
    assert report.merged == [f"{PREFIX}tasks/{tasks[1].id}"]
    stats = idx.refresh()
    assert stats.checked is False, "the sync should have recorded the refs it moved"
    assert [t.id for t in mine.list_tasks(status="blocked")] == [tasks[2].id]
    assert fresh.id in {t.id for t in mine.search("after the restore")}
    notes = {n.text for t in mine.list_tasks(status="active") for n in t.notes}
    assert {"bob's note", "alice's note"} <= notes


def test_a_remote_accepted_claim_beats_an_earlier_local_one_at_sync(tmp_path: Path) -> None:
    """The server decides claims: a local claim that never reached it loses, however early."""
    remote = tmp_path / "remote.git"
    a, b = make_ledger(tmp_path / "a", "alice"), make_ledger(tmp_path / "b", "bob")
    task = a.create("contested")
    sync.backup(a, str(remote))
    sync.restore(b, str(remote))
    a.claim(task.id)  # earlier, offline: never pushed
    assert sync.claim(b, task.id, str(remote)).owner == "bob"  # the server took bob's
    report = sync.sync(a, url=str(remote))
    assert report.conflicts == {task.id: ["owner"]}
    merged = a.show(task.id)
    assert merged.owner == "bob"
    assert [(c.kept, c.dropped) for c in merged.conflicts] == [("bob", "alice")]
    assert Ledger.open(remote).show(task.id).owner == "bob"
    with pytest.raises(ClaimConflict):
        sync.claim(a, task.id, str(remote))


def test_the_after_push_check_goes_round_again_when_the_remote_moved_on(tmp_path: Path) -> None:
    """A push that was accepted, then built on by another machine, is not a failure."""
    from gitledger.errors import RemoteMoved

    remote = tmp_path / "remote.git"
    a, b = make_ledger(tmp_path / "a", "alice"), make_ledger(tmp_path / "b", "bob")
    task = a.create("busy")
    sync.backup(a, str(remote))
    sync.restore(b, str(remote))
    a.update(task.id, notes=["from a"])
    ref = f"{PREFIX}tasks/{task.id}"
    pushed = a.store.tip(ref)
    assert pushed is not None
    sync.backup(a, str(remote))
    sync.sync(b, url=str(remote))  # b fetches a's push, and pushes nothing new
    b.update(task.id, notes=["from b, on top"])
    sync.sync(b, url=str(remote))  # the remote moves on past a's push
    with pytest.raises(RemoteMoved) as moved:
        sync.exchange.check_remote(str(remote), a, [(ref, pushed, None)])
    # the next step, worded for each interface
    assert moved.value.message.endswith("Run sync.sync(ledger) again.")
    assert moved.value.worded("cli").endswith("Run 'gitledger sync' again.")
    assert moved.value.worded("mcp").endswith("Run the sync tool again.")
    report = sync.sync(a, url=str(remote))  # a's next round fast-forwards and is done
    assert {n.text for n in a.show(task.id).notes} >= {"from a", "from b, on top"}
    assert report.fast_forwarded == [ref]


def test_a_claim_is_not_won_when_integration_left_the_remote_version_for_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Integration may leave a ref for the next round (a writer outside gitledger's lock moved it
    at that moment). A claim written on the stale local version then has nothing it can push; it
    must not be reported as won (the 16-process mix caught two winners this way)."""
    remote = tmp_path / "remote.git"
    a, b = make_ledger(tmp_path / "a", "alice"), make_ledger(tmp_path / "b", "bob")
    task = a.create("contested")
    sync.backup(a, str(remote))
    sync.restore(b, str(remote))
    assert sync.claim(b, task.id, str(remote)).owner == "bob"  # the server took bob's

    real = sync.exchange.integrate
    calls = []

    def integrate_later_once(ledger: Ledger, remote_tips: dict[str, str], report: Any,
                             local: dict[str, str] | None = None) -> dict[str, str]:  # fmt: skip
        calls.append(1)
        if len(calls) == 1:  # as when a foreign writer moved the ref: kept for the next round
            return dict(ledger.store.refs(PREFIX)) if local is None else local
        return real(ledger, remote_tips, report, local)

    monkeypatch.setattr(sync.exchange, "integrate", integrate_later_once)
    with pytest.raises(ClaimConflict):
        sync.claim(a, task.id, str(remote))
    assert len(calls) >= 2
    assert a.show(task.id).owner == "bob"
    assert Ledger.open(remote).show(task.id).owner == "bob"


def test_a_backup_to_a_remote_with_newer_work_reports_one_outcome(tmp_path: Path) -> None:
    """One rule: a backup that left refs behind says so in its summary, and exits 3 saying why."""
    remote = tmp_path / "remote.git"
    a, b = make_ledger(tmp_path / "a", "alice"), make_ledger(tmp_path / "b", "bob")
    shared = a.create("worked on by both")
    sync.backup(a, str(remote))
    sync.restore(b, str(remote))
    b.update(shared.id, notes=["bob's newer work"])
    sync.backup(b, str(remote))
    a.update(shared.id, notes=["alice's work"])
    a.create("only alice has this")
    out = run_cli("--ledger", str(a.path), "backup", str(remote))
    assert out.returncode == 3, out.stdout + out.stderr
    assert out.stdout.startswith("Backed up only part of the ledger to"), out.stdout
    assert "1 pushed, 1 not pushed (the remote has newer work on them)" in out.stdout
    assert "Run 'gitledger sync'" in out.stderr
    # bob's work on the remote is untouched
    assert {n.text for n in Ledger.open(remote).show(shared.id).notes} == {"bob's newer work"}
