"""Which transport moves the objects, and what it moves: the git CLI where it is installed,
libgit2 where it is not (PATH without git), through a real `git daemon` on loopback.

What must hold either way: only changed refs travel, only objects the other side lacks are
sent, the staging namespace is empty once a sync is done, and a missing git is a clear error
(bundles, work-tree targets) or a fallback (everything else), never a crash."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers import GIT, Daemon, git_refs
from test_sync import make_ledger, refs_of, seed

from gitledger import gitstore, sync
from gitledger.errors import RemoteError
from gitledger.ledger import Ledger

STAGING = "refs/gitledger-staging/"


@pytest.fixture
def no_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A PATH on which there is no git (the daemon, started before, keeps running)."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert gitstore.git_transport() is None


def bare(daemon: Daemon, name: str) -> str:
    subprocess.run([GIT, "init", "-q", "--bare", str(daemon.base / name)], check=True)
    return daemon.url(name)


def staged(ledger: Ledger) -> list[str]:
    return [name for name, _tip in ledger.store.refs(STAGING)]


def new_objects(git_dir: Path, old: str, new: str) -> int:
    """How many objects ``new`` has that ``old`` lacks (what a minimal fetch must carry)."""
    out = subprocess.run(
        [GIT, "--git-dir", str(git_dir), "rev-list", "--objects", new, f"^{old}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return len(out.splitlines())


def round_trip(tmp_path: Path, daemon: Daemon) -> None:
    """Backup, restore, change on both sides, sync both ways: equal refs, nothing staged."""
    a = make_ledger(tmp_path / "a", "alice")
    tasks = seed(a, 6)
    url = bare(daemon, "team.git")
    report = sync.backup(a, url)
    assert sorted(report.pushed) == sorted(refs_of(a))
    assert git_refs(daemon.base / "team.git") == refs_of(a)

    b = make_ledger(tmp_path / "b", "bob")
    restored = sync.restore(b, url)
    assert restored.verified and refs_of(b) == refs_of(a)
    assert staged(b) == []

    a.update(tasks[2].id, notes=["from a"])
    b.update(tasks[3].id, notes=["from b"])
    b.update(tasks[2].id, notes=["also from b"])  # diverges from a's edit: merged
    first = sync.sync(a, url)
    assert first.pushed == [f"refs/gitledger/tasks/{tasks[2].id}"]
    second = sync.sync(b, url)
    assert second.merged == [f"refs/gitledger/tasks/{tasks[2].id}"]
    assert sync.sync(a, url).fast_forwarded
    assert refs_of(a) == refs_of(b) == git_refs(daemon.base / "team.git")
    notes = [n.text for n in a.show(tasks[2].id).notes]
    assert "from a" in notes and "also from b" in notes
    assert staged(a) == [] and staged(b) == []
    assert sync.sync(a, url).quiet and sync.sync(b, url).quiet


def test_git_cli_transport_round_trip(tmp_path: Path, daemon: Daemon) -> None:
    assert gitstore.git_transport() is not None  # the test machine has git
    round_trip(tmp_path, daemon)


def test_libgit2_moves_the_objects_when_git_is_missing(
    tmp_path: Path, daemon: Daemon, no_git: None
) -> None:
    round_trip(tmp_path, daemon)


def test_without_git_a_bundle_or_work_tree_target_is_a_clear_error(
    tmp_path: Path, no_git: None
) -> None:
    ledger = make_ledger(tmp_path / "l")
    ledger.create("one")
    before = refs_of(ledger)
    with pytest.raises(RemoteError) as info:
        sync.backup(ledger, bundle=tmp_path / "l.bundle")
    assert "needs the git command" in info.value.message
    assert not (tmp_path / "l.bundle").exists()
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    gitstore.GitStore.init(work / ".git")  # a repository with a work tree, made without git
    (work / ".git" / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tbare = false\n")
    with pytest.raises(RemoteError) as info:
        sync.backup(ledger, str(work))
    assert "needs the git command" in info.value.message
    assert refs_of(ledger) == before


def test_a_sync_fetches_only_what_is_new(tmp_path: Path, daemon: Daemon) -> None:
    """One task changed elsewhere: that ref alone travels, and only the objects of its new
    version (the server is told which version this ledger has), not the history under it."""
    a = make_ledger(tmp_path / "a", "alice")
    tasks = seed(a, 30)
    url = bare(daemon, "team.git")
    sync.backup(a, url)
    b = make_ledger(tmp_path / "b", "bob")
    sync.restore(b, url)
    ref = f"refs/gitledger/tasks/{tasks[7].id}"
    old = refs_of(a)[ref]
    a.update(tasks[7].id, notes=["one more"])
    pushed = sync.sync(a, url)
    assert pushed.pushed == [ref]
    fetched = sync.sync(b, url)
    assert fetched.fast_forwarded == [ref] and not fetched.pushed
    assert fetched.fetched_objects == new_objects(a.path, old, refs_of(a)[ref])
    assert pushed.pushed_objects == fetched.fetched_objects
    assert staged(b) == []


def test_staging_left_by_an_interrupted_run_is_cleared(tmp_path: Path, daemon: Daemon) -> None:
    a = make_ledger(tmp_path / "a")
    seed(a, 3)
    url = bare(daemon, "team.git")
    sync.backup(a, url)
    tip = next(iter(refs_of(a).values()))
    leftover = f"{sync.remote.staging_namespace(url)}tasks/leftover"  # this remote's landing place
    subprocess.run([GIT, "--git-dir", str(a.path), "update-ref", leftover, tip], check=True)
    assert sync.sync(a, url).quiet
    assert staged(a) == []


def test_progress_is_reported_through_the_git_cli(tmp_path: Path, daemon: Daemon) -> None:
    a = make_ledger(tmp_path / "a")
    seed(a, 5)
    url = bare(daemon, "team.git")
    seen: list[tuple[str, int, int]] = []
    sync.backup(a, url, progress=lambda phase, done, total: seen.append((phase, done, total)))
    assert seen and all(phase == "push" for phase, _d, _t in seen)
    assert seen[-1][1] == seen[-1][2] > 0
    b = make_ledger(tmp_path / "b")
    got: list[tuple[str, int, int]] = []
    sync.restore(b, url, progress=lambda phase, done, total: got.append((phase, done, total)))
    assert got and got[-1][0] == "fetch" and got[-1][1] == got[-1][2] > 0


def test_a_lock_left_in_staging_by_a_killed_sync_does_not_block_the_next(
    tmp_path: Path, daemon: Daemon
) -> None:
    """A sync killed inside its fetch leaves ``<staged ref>.lock``; the next sync, holding the
    staging namespace, knows no live sync owns it, removes it and fetches that ref."""
    url = bare(daemon, "team.git")
    a = make_ledger(tmp_path / "a", "alice")
    [task] = seed(a, 1)
    sync.backup(a, url)
    b = make_ledger(tmp_path / "b", "bob")
    sync.restore(b, url)
    b.update(task.id, notes=["from b"])
    sync.sync(b, url)
    lock = a.path / f"{sync.remote.staging_namespace(url)}tasks/{task.id}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("0" * 40 + "\n")
    report = sync.sync(a, url)
    assert report.fast_forwarded == [f"refs/gitledger/tasks/{task.id}"]
    assert "from b" in [n.text for n in a.show(task.id).notes]
    assert not lock.exists() and staged(a) == []
