"""The ledger core through the Python API, on real Git repositories in tmp_path."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitledger.errors import (
    AmbiguousId,
    ClaimConflict,
    GateRefused,
    IdempotencyConflict,
    InvalidInput,
    NoLedger,
    TaskNotFound,
    VersionConflict,
    VersionNotFound,
)
from gitledger.ledger import Ledger
from gitledger.model import MAX_FIELD_BYTES
from gitledger.refs import task_ref


def git(ledger: Ledger, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(ledger.path), *args], capture_output=True, text=True, check=True
    ).stdout


def finishable(ledger: Ledger, goal: str = "dep") -> str:
    task = ledger.create(goal, criteria="it works")
    ledger.update(task.id, evidence=["tests pass"], status="done")
    return task.id


# --- storage layout ---------------------------------------------------------------------------


def test_task_is_a_ref_and_each_version_a_commit(ledger: Ledger) -> None:
    task = ledger.create("Ship the release", criteria="Tests pass")
    ledger.update(task.id, status="active", next="Run final tests")
    log = git(ledger, "log", "--format=%s", task_ref(task.id)).splitlines()
    assert log == ["update: status open→active, next", "create: Ship the release"]
    tree = git(ledger, "ls-tree", "--name-only", task_ref(task.id)).split()
    assert tree == ["FORMAT", "task.json", "task.md"]
    assert git(ledger, "show", f"{task_ref(task.id)}:FORMAT") == "gitledger-task 1\n"
    markdown = git(ledger, "show", f"{task_ref(task.id)}:task.md")
    assert "# Ship the release" in markdown and "- next: Run final tests" in markdown
    # git log -p reads like a changelog of the task
    patch = git(ledger, "log", "-p", "-1", task_ref(task.id))
    assert "+- next: Run final tests" in patch


def test_ledger_lives_in_git_common_dir_and_stays_out_of_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITLEDGER_DIR")
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "a.txt").write_text("a")
    subprocess.run(["git", "-C", str(project), "add", "."], check=True)
    subprocess.run(["git", "-C", str(project), "commit", "-qm", "a"], check=True)
    sub = project / "sub"
    sub.mkdir()
    ledger = Ledger.init(sub)
    assert ledger.path == project / ".git" / "gitledger"
    ledger.create("a task")
    opened = Ledger.open(cwd=sub)
    assert opened.path == ledger.path
    # the project's history and status do not see the ledger
    log_all = subprocess.run(
        ["git", "-C", str(project), "log", "--all", "--oneline"], capture_output=True, text=True
    ).stdout
    assert len(log_all.splitlines()) == 1
    status = subprocess.run(
        ["git", "-C", str(project), "status", "--porcelain"], capture_output=True, text=True
    ).stdout
    assert status == ""
    # a linked worktree shares the ledger
    worktree = tmp_path / "wt"
    subprocess.run(["git", "-C", str(project), "worktree", "add", "-q", str(worktree)], check=True)
    assert Ledger.open(cwd=worktree).path == ledger.path


def test_outside_git_init_makes_a_workspace_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITLEDGER_DIR")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with pytest.raises(NoLedger, match=r"Run Ledger\.init\(\) to make one here"):
        Ledger.open(cwd=workspace)
    ledger = Ledger.init(workspace)
    assert ledger.path == workspace / ".gitledger"
    assert Ledger.open(cwd=workspace).path == ledger.path


def test_actor_is_the_commit_author(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    task = ledger.create("x", actor="agent-7")
    assert task.actor == "agent-7"
    assert git(ledger, "log", "-1", "--format=%an", task_ref(task.id)).strip() == "agent-7"
    monkeypatch.setenv("GITLEDGER_ACTOR", "Robo <robo@example.org>")
    updated = ledger.update(task.id, note="hi") if False else ledger.update(task.id, notes=["hi"])
    assert updated.actor == "Robo"
    assert git(ledger, "log", "-1", "--format=%an <%ae>", task_ref(task.id)).strip() == (
        "Robo <robo@example.org>"
    )
    monkeypatch.delenv("GITLEDGER_ACTOR")
    again = ledger.update(task.id, notes=["from git identity"])
    assert again.actor == "Test Person"


# --- create, update, show ---------------------------------------------------------------------


def test_create_with_every_field(ledger: Ledger) -> None:
    parent = ledger.create("parent")
    dep = ledger.create("dep")
    task = ledger.create(
        "Ship",
        criteria="released",
        parent=parent.id[:8],
        owner="ann",
        priority=0,
        labels=["release", "q4"],
        next="tag it",
        dependencies=[dep.id],
    )
    shown = ledger.show(task.id)
    assert shown == task
    assert (shown.parent, shown.dependencies, shown.labels) == (
        parent.id,
        [dep.id],
        ["release", "q4"],
    )
    assert (shown.owner, shown.priority, shown.next, shown.version) == ("ann", 0, "tag it", 1)


def test_update_many_fields_in_one_version(ledger: Ledger) -> None:
    task = ledger.create("goal", criteria="c")
    dep = ledger.create("dep")
    updated = ledger.update(
        task.id,
        status="active",
        next="n",
        owner="bob",
        priority=1,
        add_labels=["x"],
        notes=["one", "two"],
        decisions=["d1", "d2"],
        evidence=["e1"],
        add_dependencies=[dep.id],
    )
    assert updated.version == 2
    assert [n.text for n in updated.notes] == ["one", "two"]
    assert [d.text for d in updated.decisions] == ["d1", "d2"]
    assert updated.dependencies == [dep.id]
    removed = ledger.update(task.id, remove_dependencies=[dep.id], remove_labels=["x"])
    assert removed.dependencies == [] and removed.labels == [] and removed.version == 3
    cleared = ledger.update(task.id, owner="", next="")
    assert cleared.owner is None and cleared.next is None


def test_update_that_changes_nothing_writes_nothing(ledger: Ledger) -> None:
    task = ledger.create("goal")
    same = ledger.update(task.id, priority=task.priority)
    assert same.version == 1
    assert len(git(ledger, "log", "--oneline", task_ref(task.id)).splitlines()) == 1


def test_show_at_version_history_and_diff(ledger: Ledger) -> None:
    task = ledger.create("goal", criteria="c")
    ledger.update(task.id, status="active")
    ledger.update(task.id, notes=["n1"], next="step 2")
    assert ledger.show(task.id, at=1).status == "open"
    assert ledger.show(task.id, at=2).status == "active"
    with pytest.raises(VersionNotFound):
        ledger.show(task.id, at=9)
    history = ledger.history(task.id)
    assert [v.version for v in history] == [3, 2, 1]
    assert {(c.field, c.kind) for c in history[0].changes} == {("notes", "added"), ("next", "set")}
    assert [v.version for v in ledger.history(task.id, limit=1, offset=1)] == [2]
    diff = ledger.diff(task.id, 1, 3)
    assert {c.field for c in diff} == {"status", "next", "notes"}


def test_idempotency_key(ledger: Ledger) -> None:
    first = ledger.create("Ship the release", criteria="c", idempotency_key="ship-release")
    ledger.update(first.id, status="active")
    again = ledger.create("Ship the release", criteria="c", idempotency_key="ship-release")
    assert again.id == first.id and again.version == 2
    with pytest.raises(IdempotencyConflict):
        ledger.create("Something else", idempotency_key="ship-release")
    assert len(list(ledger.tasks())) == 1


def test_a_damaged_idempotency_key_is_refused_not_guessed(ledger: Ledger) -> None:
    from gitledger.errors import CorruptRecord
    from gitledger.keys import KEY_FILE, key_ref

    author = ("Test Person", "test@example.com")
    old = ledger.create("Kept", idempotency_key="old-style")
    # A key written by earlier versions (compact JSON, no indent) still reads.
    ref = key_ref("written-before")
    body = b'{"task_id": "%s", "request_hash": null}\n' % old.id.encode()
    ledger.store.write(ref, {KEY_FILE: body}, "idempotency key\n", author, [], None)
    assert ledger.create("Kept", idempotency_key="written-before").id == old.id
    for damage in (b"{not json", b'{"task_id": 7}\n', b"[]\n"):
        ref = key_ref(f"damaged {damage!r}")
        ledger.store.write(ref, {KEY_FILE: damage}, "idempotency key\n", author, [], None)
        with pytest.raises(CorruptRecord, match="does not name a task"):
            ledger.create("Kept", idempotency_key=f"damaged {damage!r}")
    assert [t.id for t in ledger.tasks()] == [old.id]  # nothing written


# --- short ids --------------------------------------------------------------------------------


def test_prefixes_resolve_like_git(ledger: Ledger) -> None:
    tasks = [ledger.create(f"t{i}") for i in range(40)]
    for task in tasks:
        short = ledger.short_id(task.id)
        assert len(short) >= 6 and ledger.resolve(short) == task.id
    # one-character prefixes are ambiguous among 40 tasks for some letter
    first_chars = [t.id[0] for t in tasks]
    common = max(set(first_chars), key=first_chars.count)
    with pytest.raises(AmbiguousId) as info:
        ledger.resolve(common)
    assert len(info.value.candidates) == first_chars.count(common)
    with pytest.raises(TaskNotFound):
        ledger.resolve("zzzzzzzz")
    with pytest.raises(TaskNotFound, match="not a task id"):
        ledger.resolve("../etc")
    shorts = ledger.short_ids(t.id for t in tasks)
    assert len(set(shorts.values())) == 40


# --- gates ------------------------------------------------------------------------------------


def test_goal_and_criteria_changes_need_a_decision(ledger: Ledger) -> None:
    task = ledger.create("goal", criteria="c")
    for change in ({"goal": "other"}, {"criteria": "other"}):
        with pytest.raises(GateRefused, match="decision"):
            ledger.update(task.id, **change)
        assert ledger.show(task.id).version == 1
    ok = ledger.update(task.id, goal="other", decisions=["the user narrowed it"])
    assert ok.goal == "other"


def test_a_first_value_of_criteria_needs_no_decision(ledger: Ledger, cli) -> None:  # type: ignore[no-untyped-def]
    task = ledger.create("goal")
    assert ledger.update(task.id, criteria="tests pass").criteria == "tests pass"
    with pytest.raises(GateRefused, match="decision"):
        ledger.update(task.id, criteria="")  # clearing agreed criteria is a change
    with pytest.raises(GateRefused, match="decision"):
        ledger.update(task.id, criteria="tests and docs pass")
    # and on the command line, as a user meets it
    other = ledger.create("second goal")
    out = cli("task", "update", other.id[:8], "--criteria", "it ships")
    assert out.returncode == 0, out.stderr
    assert ledger.show(other.id).criteria == "it ships"


def test_cancel_needs_a_decision_and_blocked_needs_a_blocker(ledger: Ledger) -> None:
    task = ledger.create("goal")
    with pytest.raises(GateRefused, match="decision"):
        ledger.update(task.id, status="cancelled")
    with pytest.raises(GateRefused, match="blocker"):
        ledger.update(task.id, status="blocked")
    assert ledger.update(task.id, status="blocked", blocker="waiting on CI").status == "blocked"
    assert ledger.update(task.id, status="cancelled", decisions=["dropped"]).status == "cancelled"


def test_done_gate(ledger: Ledger) -> None:
    no_criteria = ledger.create("goal")
    with pytest.raises(GateRefused, match="criteria"):
        ledger.update(no_criteria.id, status="done", evidence=["x"])

    dep = ledger.create("dep", criteria="c")
    task = ledger.create("goal", criteria="c", dependencies=[dep.id])
    ledger.update(task.id, blocker="waiting")
    with pytest.raises(GateRefused, match="blocker"):
        ledger.update(task.id, status="done", evidence=["x"])
    ledger.update(task.id, blocker="")
    with pytest.raises(GateRefused, match="dependency"):
        ledger.update(task.id, status="done", evidence=["x"])
    ledger.update(dep.id, status="done", evidence=["dep works"])
    with pytest.raises(GateRefused, match="evidence"):
        ledger.update(task.id, status="done")
    assert ledger.show(task.id).status == "open"
    done = ledger.update(task.id, status="done", evidence=["all green"])
    assert done.status == "done"


def test_stale_evidence_after_criteria_change_does_not_count(ledger: Ledger) -> None:
    task = ledger.create("goal", criteria="old criteria")
    ledger.update(task.id, evidence=["proves the old criteria"])
    ledger.update(task.id, criteria="new criteria", decisions=["scope grew"])
    with pytest.raises(GateRefused, match="earlier criteria"):
        ledger.update(task.id, status="done")
    assert ledger.update(task.id, status="done", evidence=["proves the new"]).status == "done"


def test_evidence_copied_from_another_task_does_not_count(ledger: Ledger) -> None:
    a = ledger.create("a", criteria="same criteria")
    b = ledger.create("b", criteria="same criteria")
    a = ledger.update(a.id, evidence=["a's proof"])
    # Copy a's bound evidence record into b's history by writing b's record directly.
    b_record = ledger.show(b.id)
    forged = b_record.replace(**{"evidence": list(a.evidence), "version": 2})
    tip = ledger.store.tip(task_ref(b.id))
    ledger.store.write(
        task_ref(b.id), ledger.record_files(forged), "forged", ("x", "x@x"), [tip], tip
    )
    with pytest.raises(GateRefused, match="another task"):
        ledger.update(b.id, status="done")


def test_dependency_rules(ledger: Ledger) -> None:
    a = ledger.create("a")
    b = ledger.create("b", dependencies=[a.id])
    c = ledger.create("c", dependencies=[b.id])
    with pytest.raises(GateRefused, match="itself"):
        ledger.update(a.id, add_dependencies=[a.id])
    with pytest.raises(GateRefused, match="cycle"):
        ledger.update(a.id, add_dependencies=[c.id])
    with pytest.raises(TaskNotFound):
        ledger.create("d", dependencies=["0000000000000000zzzz"])
    with pytest.raises(TaskNotFound):
        ledger.create("d", parent="0000000000000000zzzz")
    with pytest.raises(GateRefused, match="own parent"):
        ledger.update(a.id, parent=a.id)
    ledger.update(b.id, parent=a.id)
    with pytest.raises(GateRefused, match="cycle of parents"):
        ledger.update(a.id, parent=b.id)
    with pytest.raises(InvalidInput, match="does not depend"):
        ledger.update(a.id, remove_dependencies=[b.id])


# --- listing ----------------------------------------------------------------------------------


def test_list_inbox_ready_search_children(ledger: Ledger) -> None:
    parent = ledger.create("parent", labels=["p"])
    active = ledger.create("active one", parent=parent.id, owner="ann")
    ledger.update(active.id, status="active")
    blocked = ledger.create("blocked one")
    ledger.update(blocked.id, status="blocked", blocker="needs review")
    dep_done = finishable(ledger, "finished dep")
    waiting = ledger.create("waits on open", dependencies=[active.id])
    ready = ledger.create("ready one", dependencies=[dep_done], priority=0)
    ledger.update(ready.id, notes=["mentions the Flux capacitor"])

    inbox = ledger.inbox(10)
    assert [t.status for t in inbox[:2]] == ["active", "blocked"]
    assert all(t.status in ("active", "blocked", "open") for t in inbox)
    ready_ids = [t.id for t in ledger.ready(10)]
    assert ready_ids[0] == ready.id and waiting.id not in ready_ids and blocked.id not in ready_ids
    assert [t.id for t in ledger.search("flux CAPACITOR")] == [ready.id]
    assert ledger.search("flux nothing-here") == []
    assert [t.id for t in ledger.children(parent.id)] == [active.id]
    assert [t.id for t in ledger.list_tasks(owner="ann")] == [active.id]
    assert [t.id for t in ledger.list_tasks(label="p")] == [parent.id]
    assert {t.id for t in ledger.list_tasks(status=["done"])} == {dep_done}
    page1 = ledger.list_tasks(limit=3)
    page2 = ledger.list_tasks(limit=3, offset=3)
    assert len(page1) == 3 and not {t.id for t in page1} & {t.id for t in page2}
    with pytest.raises(InvalidInput):
        ledger.list_tasks(status="finished")


# --- claim ------------------------------------------------------------------------------------


def test_claim_first_wins(ledger: Ledger) -> None:
    task = ledger.create("take me")
    claimed = ledger.claim(task.id, actor="alice")
    assert (claimed.owner, claimed.status) == ("alice", "active")
    assert ledger.claim(task.id, actor="alice").version == claimed.version
    with pytest.raises(ClaimConflict, match="alice"):
        ledger.claim(task.id, actor="bob")


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"goal": ""}, "goal"),
        ({"goal": "x" * (MAX_FIELD_BYTES + 1)}, "limit"),
        ({"goal": "nul\x00byte"}, "NUL"),
        ({"goal": "bad \udcff utf8"}, "UTF-8"),
        ({"goal": "ok", "priority": 7}, "Priority"),
        ({"goal": "ok", "labels": ["two words"]}, "label"),
    ],
)
def test_bad_create_input_writes_nothing(ledger: Ledger, kwargs: dict, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        ledger.create(**kwargs)
    assert list(ledger.tasks()) == []


def test_bad_update_input_writes_nothing(ledger: Ledger) -> None:
    task = ledger.create("goal")
    with pytest.raises(InvalidInput, match="Unknown status"):
        ledger.update(task.id, status="finished")
    with pytest.raises(InvalidInput, match="Nothing to update"):
        ledger.update(task.id)
    with pytest.raises(InvalidInput, match="blank"):
        ledger.update(task.id, notes=["   "])
    with pytest.raises(VersionConflict):
        ledger.update(task.id, notes=["x"], expect_version=5)
    assert ledger.show(task.id).version == 1


# --- verify -----------------------------------------------------------------------------------


def test_verify_names_corrupt_and_foreign_refs_and_the_rest_stays_usable(ledger: Ledger) -> None:
    good = ledger.create("good task")
    bad = ledger.create("to be corrupted")
    assert ledger.verify().ok
    # corrupt one object of the bad task: overwrite its loose task.json blob with other content
    blob = git(ledger, "rev-parse", f"{task_ref(bad.id)}:task.json").strip()
    obj = ledger.path / "objects" / blob[:2] / blob[2:]
    obj.chmod(0o644)
    other = subprocess.run(
        ["git", "--git-dir", str(ledger.path), "hash-object", "-w", "--stdin"],
        input="tampered",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    obj.write_bytes((ledger.path / "objects" / other[:2] / other[2:]).read_bytes())
    # a foreign ref in the task namespace
    commit = git(ledger, "rev-parse", task_ref(good.id)).strip()
    git(ledger, "update-ref", "refs/gitledger/tasks/not-a-task", commit)

    report = ledger.verify()
    names = {p.ref for p in report.problems}
    assert names == {task_ref(bad.id), "refs/gitledger/tasks/not-a-task"}
    assert any("corrupt" in p.message.lower() or "mismatch" in p.message for p in report.problems)
    # the good task is still listed and shown
    assert [t.id for t in ledger.list_tasks()] == [good.id]
    assert {p.ref for p in ledger.skipped} == names
    assert ledger.show(good.id).goal == "good task"
    assert [t.id for t in ledger.inbox()] == [good.id]


def test_many_writes_outside_git_do_not_crash_the_process(tmp_path: Path) -> None:
    # pygit2 1.21's discover_repository() drops a reference to None when it finds nothing;
    # a few hundred calls abort the interpreter. The identity lookup must not use it.
    import os
    import sys

    outside = tmp_path / "outside"
    outside.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_AUTHOR")}
    code = (
        "from gitledger.ledger import Ledger\n"
        "led = Ledger.init()\n"
        "t = led.create('x')\n"
        "for i in range(300):\n"
        "    led.update(t.id, notes=[f'n{i}'])\n"
        "print(led.show(t.id).version)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=outside, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-500:]
    assert result.stdout.strip() == "301"


def test_a_stale_ref_lock_from_a_killed_writer_is_cleared_by_the_next_write(
    ledger: Ledger, capfd: pytest.CaptureFixture[str]
) -> None:
    import os
    import time

    task = ledger.create("locked by a killed writer")
    lock = ledger.path / "refs" / "gitledger" / "tasks" / f"{task.id}.lock"
    lock.write_text("")
    old = time.time() - 60
    os.utime(lock, (old, old))  # left long ago: only a dead writer can own it
    updated = ledger.update(task.id, notes=["after the kill"])
    assert updated.version == 2 and not lock.exists()
    assert "stale lock" in capfd.readouterr().err
    # a fresh lock may belong to a live git process: it still blocks, and the error names the fix
    lock.write_text("")
    from gitledger.errors import StorageError

    with pytest.raises(StorageError, match=r"run Ledger\.repair\(\) to remove stale locks"):
        ledger.update(task.id, notes=["blocked"])
    assert ledger.show(task.id).version == 2
