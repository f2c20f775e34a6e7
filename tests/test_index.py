"""The derived index: kept current from the refs (other processes, plain git fetch), rebuilt when
damaged, ranked search with snippets, and ready/blocked kept current incrementally."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import scan
from click.testing import CliRunner

from gitledger.cli import cli as gitledger_cli
from gitledger.index import INDEX_FILE, SCHEMA_VERSION, Index, plain_query
from gitledger.ledger import Ledger
from gitledger.refs import task_ref


def git(path: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "--git-dir", str(path), *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def finish(ledger: Ledger, task_id: str) -> None:
    ledger.update(
        task_id,
        criteria="it works",
        decisions=["criteria set"],
        evidence=["checked"],
        status="done",
    )


def age_refs(ledger: Ledger) -> None:
    """Make the ref directory's mtime old, as if the last write was long ago (not racy)."""
    past = time.time() - 60
    tasks_dir = ledger.path / "refs" / "gitledger" / "tasks"
    os.utime(tasks_dir, (past, past))


def scan_ids(ledger_path: Path, method: str, *args: object) -> list[str]:
    """The same listing as a plain scan of the refs (``scan.py``): the oracle for the index."""
    found: list[str] = getattr(scan, method)(scan.scan(Ledger.open(ledger_path).store), *args)
    return found


def test_index_lives_in_the_ledger_and_serves_listing(ledger: Ledger) -> None:
    a = ledger.create("alpha", labels=["x"], owner="ann")
    b = ledger.create("beta", parent=a.id)
    assert {t.id for t in ledger.list_tasks()} == {a.id, b.id}
    assert (ledger.path / INDEX_FILE).exists()
    idx = ledger.index()
    assert idx is not None and idx.status().tasks == 2
    assert [t.id for t in ledger.list_tasks(label="x")] == [a.id]
    assert [t.id for t in ledger.list_tasks(owner="ann")] == [a.id]
    assert [t.id for t in ledger.children(a.id)] == [b.id]
    assert [t.id for t in ledger.list_tasks(parent=a.id)] == [b.id]
    assert sorted(t.id for t in ledger.tasks()) == sorted([a.id, b.id])


def test_nothing_read_when_no_ref_moved(ledger: Ledger) -> None:
    ledger.create("one")
    age_refs(ledger)
    idx = ledger.index()
    assert idx is not None
    idx.refresh()
    assert idx.last_refresh.checked  # the fingerprint changed: it compared the tips
    idx.refresh()
    assert not idx.last_refresh.checked  # nothing moved: three stat calls, no ref read
    # a ref moved by something other than gitledger (the writes of gitledger record themselves)
    tip = ledger.store.tip(task_ref(ledger.list_tasks()[0].id))
    subprocess.run(
        [
            "git",
            "--git-dir",
            str(ledger.path),
            "update-ref",
            "refs/gitledger/tasks/" + "2" * 20,
            tip,
        ],
        check=True,
    )
    age_refs(ledger)
    idx.refresh()
    assert idx.last_refresh.checked and idx.last_refresh.changed == 1


def test_kept_current_across_writes_from_another_process(ledger: Ledger, cli) -> None:  # type: ignore[no-untyped-def]
    first = ledger.create("written here")
    assert [t.id for t in ledger.inbox(10)] == [first.id]
    out = cli("task", "create", "written by another process", "--json")
    assert out.returncode == 0, out.stderr
    other = json.loads(out.stdout)["id"]
    assert {t.id for t in ledger.inbox(10)} == {first.id, other}
    assert cli("task", "update", other, "--status", "active").returncode == 0
    assert [t.id for t in ledger.inbox(10)][0] == other  # active ranks first
    assert [t.id for t in ledger.search("another")] == [other]
    done = cli("task", "update", first.id, "--status", "blocked", "--blocker", "waits on review")
    assert done.returncode == 0, done.stderr
    assert [t.status for t in ledger.inbox(10)] == ["active", "blocked"]
    assert ledger.ready(10) == []


def test_kept_current_across_a_plain_git_fetch(ledger: Ledger, tmp_path: Path) -> None:
    mine = ledger.create("local task")
    assert [t.id for t in ledger.list_tasks()] == [mine.id]
    other = Ledger.open(tmp_path / "other", create=True)
    fetched = [other.create(f"fetched task {n}", labels=["remote"]).id for n in range(3)]
    git(ledger.path, "fetch", "--quiet", str(other.path), "+refs/gitledger/*:refs/gitledger/*")
    assert {t.id for t in ledger.list_tasks()} == {mine.id, *fetched}
    assert {t.id for t in ledger.search("fetched")} == set(fetched)
    # A later version arriving by fetch replaces the indexed one.
    other.update(fetched[0], status="active")
    git(ledger.path, "fetch", "--quiet", str(other.path), "+refs/gitledger/*:refs/gitledger/*")
    assert ledger.inbox(1)[0].id == fetched[0]
    # So does a ref deleted by plain git, and a pack-refs that moves every ref into packed-refs.
    git(ledger.path, "update-ref", "-d", task_ref(fetched[1]))
    assert fetched[1] not in {t.id for t in ledger.list_tasks()}
    git(ledger.path, "pack-refs", "--all")
    assert {t.id for t in ledger.list_tasks()} == {mine.id, fetched[0], fetched[2]}
    ledger.update(mine.id, notes=["after packing"])
    assert [t.id for t in ledger.search("packing")] == [mine.id]


@pytest.mark.parametrize(
    "damage",
    ["delete", "garbage", "empty", "old-schema", "dropped-table"],
)
def test_missing_or_damaged_index_is_rebuilt_silently(ledger: Ledger, damage: str) -> None:
    a = ledger.create("survives damage", labels=["keep"])
    assert [t.id for t in ledger.search("damage")] == [a.id]
    file = ledger.path / INDEX_FILE
    idx = ledger.index()
    assert idx is not None
    idx.close()
    if damage == "delete":
        file.unlink()
    elif damage == "garbage":
        for suffix in ("-wal", "-shm"):
            Path(f"{file}{suffix}").unlink(missing_ok=True)
        file.write_bytes(b"this is not SQLite at all\x00" * 200)
    elif damage == "empty":
        file.write_bytes(b"")
    else:
        import sqlite3

        conn = sqlite3.connect(file)
        if damage == "old-schema":
            conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (SCHEMA_VERSION + 7,))
        else:
            conn.execute("DROP TABLE fts")
        conn.commit()
        conn.close()
    fresh = Ledger.open(ledger.path)
    assert [t.id for t in fresh.search("damage")] == [a.id]
    assert [t.id for t in fresh.list_tasks(label="keep")] == [a.id]
    runner = CliRunner()
    out = runner.invoke(gitledger_cli, ["index", "status", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["tasks"] == 1


def test_index_rebuild_and_status_commands(ledger: Ledger) -> None:
    for n in range(5):
        ledger.create(f"task {n}")
    runner = CliRunner()
    out = runner.invoke(gitledger_cli, ["index", "rebuild", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["tasks"] == 5 and data["schema"] == SCHEMA_VERSION and data["size_bytes"] > 0
    out = runner.invoke(gitledger_cli, ["index", "status"])
    assert out.exit_code == 0 and "tasks:    5" in out.output


def test_unreadable_refs_are_reported_not_fatal(ledger: Ledger) -> None:
    good = ledger.create("good task")
    # A ref under the tasks directory that points at a commit holding no task record.
    empty_tree = subprocess.run(
        ["git", "--git-dir", str(ledger.path), "hash-object", "-t", "tree", "-w", "/dev/null"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    commit = subprocess.run(
        ["git", "--git-dir", str(ledger.path), "commit-tree", empty_tree, "-m", "not a task"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    git(ledger.path, "update-ref", "refs/gitledger/tasks/0000000000000000000z", commit)
    git(ledger.path, "update-ref", "refs/gitledger/tasks/NOT-AN-ID", commit)
    assert [t.id for t in ledger.list_tasks()] == [good.id]
    assert sorted(p.ref for p in ledger.skipped) == [
        "refs/gitledger/tasks/0000000000000000000z",
        "refs/gitledger/tasks/NOT-AN-ID",
    ]
    git(ledger.path, "update-ref", "-d", "refs/gitledger/tasks/NOT-AN-ID")
    ledger.list_tasks()
    assert [p.ref for p in ledger.skipped] == ["refs/gitledger/tasks/0000000000000000000z"]


# --- search ------------------------------------------------------------------------------------


def test_goal_match_outranks_note_match(ledger: Ledger) -> None:
    in_goal = ledger.create("Rewrite the tokenizer")
    in_note = ledger.create("Ship the release")
    # The note match is written later, so recency alone would put it first.
    ledger.update(in_note.id, notes=["the tokenizer is slow on long lines"])
    in_criteria = ledger.create("Benchmark parsing", criteria="tokenizer handles 1 MB/s")
    ranked = [t.id for t in ledger.search("tokenizer")]
    assert ranked == [in_goal.id, in_criteria.id, in_note.id]


def test_snippets_show_why_a_task_matched(ledger: Ledger) -> None:
    task = ledger.create("Ship the release")
    ledger.update(
        task.id,
        notes=["Long preamble about many unrelated things before the word lighthouse appears"],
    )

    hits = ledger.search_hits("lighthouse")
    assert [h.task.id for h in hits] == [task.id]
    assert "[lighthouse]" in hits[0].snippet
    out = CliRunner().invoke(gitledger_cli, ["task", "search", "lighthouse"])
    assert out.exit_code == 0 and "[lighthouse]" in out.output
    data = json.loads(
        CliRunner().invoke(gitledger_cli, ["task", "search", "light*", "--json"]).output
    )
    assert data[0]["id"] == task.id and "[lighthouse]" in data[0]["snippet"]
    assert isinstance(data[0]["score"], float)


def test_prefix_phrase_and_filters(ledger: Ledger) -> None:
    parser = ledger.create("Write the parser", labels=["lang"], owner="ann")
    written = ledger.create("Parser is written by hand", labels=["lang"])
    ledger.update(written.id, status="active")
    other = ledger.create("hand the written report over")
    assert {t.id for t in ledger.search("pars*")} == {parser.id, written.id}
    assert [t.id for t in ledger.search('"written by hand"')] == [written.id]
    assert {t.id for t in ledger.search("written hand")} == {written.id, other.id}
    assert [t.id for t in ledger.search("goal:report")] == [other.id]
    assert [t.id for t in ledger.search("parser NOT hand")] == [parser.id]

    assert [h.task.id for h in ledger.search_hits("pars*", statuses=["active"])] == [written.id]
    assert [h.task.id for h in ledger.search_hits("pars*", owner="ann")] == [parser.id]
    assert {h.task.id for h in ledger.search_hits("pars*", label="lang")} == {
        parser.id,
        written.id,
    }
    out = CliRunner().invoke(
        gitledger_cli, ["task", "search", "pars*", "--status", "open", "--json"]
    )
    assert [t["id"] for t in json.loads(out.output)] == [parser.id]


@pytest.mark.parametrize(
    ("query", "matches"),
    [
        ('"half-written', True),  # unbalanced quote
        ("half-written", True),  # '-' is not FTS5 syntax
        ("parser AND", True),
        ("(parser", True),
        ("parser)", True),
        ("draft:parser", True),  # no column 'draft': the words draft and parser
        ("a:b:c", True),
        ("nope:parser", False),  # plain words: 'nope' is not in the task
        ("NOT", False),
        ("***", False),
    ],
)
def test_fts_syntax_errors_are_plain_words(ledger: Ledger, query: str, matches: bool) -> None:
    task = ledger.create("The half-written parser (draft) a:b:c")
    found = ledger.search(query)  # never raises
    assert [t.id for t in found] == ([task.id] if matches else [])
    out = CliRunner().invoke(gitledger_cli, ["task", "search", query])
    assert out.exit_code == 0, out.output


def test_plain_query_rewrites_pieces_as_phrases() -> None:
    assert plain_query('half-written pars* "x AND') == '"half" "written" "pars"* "x"'
    assert plain_query("*** ---") is None


def test_empty_search_is_bad_input(ledger: Ledger) -> None:
    out = CliRunner().invoke(gitledger_cli, ["task", "search", "   "])
    assert out.exit_code == 2 and "at least one word" in out.output


# --- ready and blocked ---------------------------------------------------------------------------


def test_ready_and_blocked_deep_in_a_chain(ledger: Ledger) -> None:
    chain = [ledger.create("link 0", priority=1)]
    for n in range(1, 8):
        chain.append(ledger.create(f"link {n}", dependencies=[chain[-1].id], priority=1))
    loose = ledger.create("independent", priority=3)
    ids = [t.id for t in chain]

    def ready() -> list[str]:
        found = [t.id for t in ledger.ready(None)]
        assert found == scan_ids(ledger.path, "ready", None)  # the index agrees with the refs
        return found

    assert ready() == [ids[0], loose.id]
    finish(ledger, ids[0])
    assert ready() == [ids[1], loose.id]
    # Deep in the chain: link 5 stops depending on link 4, so it is ready at once.
    ledger.update(ids[5], remove_dependencies=[ids[4]])
    assert ready() == [ids[1], ids[5], loose.id]
    # ... and depending on an unfinished task takes it out again.
    ledger.update(ids[5], add_dependencies=[loose.id])
    assert ready() == [ids[1], loose.id]
    # A blocker takes a task out; clearing it puts it back.
    ledger.update(loose.id, status="blocked", blocker="waits on a decision")
    assert ready() == [ids[1]]
    ledger.update(loose.id, status="open", blocker="")
    assert ready() == [ids[1], loose.id]
    finish(ledger, loose.id)
    for n in range(1, 5):
        finish(ledger, ids[n])
    assert ready() == [ids[5]]
    # A dependency cancelled (not done) keeps its dependents waiting.
    ledger.update(ids[5], status="cancelled", decisions=["not needed"])
    assert ready() == []
    assert ledger.inbox(None) == [] or all(t.status == "open" for t in ledger.inbox(None))
    assert [t.id for t in ledger.inbox(None)] == scan_ids(ledger.path, "inbox", None)


def test_ready_follows_a_dependency_that_arrives_later(ledger: Ledger, tmp_path: Path) -> None:
    """A task whose dependency is missing waits; when the dependency's ref arrives, done, by
    git fetch, the dependent becomes ready without being rewritten."""
    other = Ledger.open(tmp_path / "other", create=True)
    dep = other.create("made elsewhere", criteria="c")
    other.update(dep.id, evidence=["ok"], status="done")
    git(ledger.path, "fetch", "--quiet", str(other.path), f"+{task_ref(dep.id)}:{task_ref(dep.id)}")
    waiting = ledger.create("needs the other one", dependencies=[dep.id])
    assert [t.id for t in ledger.ready(10)] == [waiting.id]
    git(ledger.path, "update-ref", "-d", task_ref(dep.id))
    assert ledger.ready(10) == []
    git(ledger.path, "fetch", "--quiet", str(other.path), f"+{task_ref(dep.id)}:{task_ref(dep.id)}")
    assert [t.id for t in ledger.ready(10)] == [waiting.id]


def test_listing_agrees_with_the_ref_scan(ledger: Ledger) -> None:
    parent = ledger.create("parent", labels=["p"])
    for n in range(12):
        t = ledger.create(f"child {n}", parent=parent.id, priority=n % 5, labels=[f"l{n % 3}"])
        if n % 4 == 0:
            ledger.update(t.id, status="active")
        if n % 4 == 1:
            ledger.update(t.id, status="blocked", blocker="x")
    for method, args in (
        ("inbox", (5,)),
        ("inbox", (None,)),
        ("ready", (None,)),
        ("children", (parent.id,)),
    ):
        assert [t.id for t in getattr(ledger, method)(*args)] == scan_ids(
            ledger.path, method, *args
        ), method
    assert [t.id for t in ledger.list_tasks(limit=4, offset=3)] == [
        t.id for t in sorted(ledger.tasks(), key=lambda t: (t.updated_at, t.id), reverse=True)
    ][3:7]


def test_index_object_is_per_ledger(ledger: Ledger) -> None:
    assert ledger.index() is ledger.index()
    assert isinstance(ledger.index(), Index)


def test_prefixes_resolve_through_a_current_index_and_without_one(
    ledger: Ledger, tmp_path: Path
) -> None:
    tasks = [ledger.create(f"task {n}") for n in range(40)]
    ledger.list_tasks()
    age_refs(ledger)
    ledger.list_tasks()
    idx = ledger.index()
    assert idx is not None
    some = tasks[7].id
    assert idx.ids_if_current(some[:4]) is not None  # served by the index
    assert ledger.resolve(some[:10]) == some
    assert ledger.short_id(some) == Ledger.short_ids(t.id for t in tasks)[some]
    # A ref that arrived by git fetch: the index is not current, the directory is listed.
    other = Ledger.open(tmp_path / "other", create=True)
    arrived = other.create("arrived").id
    git(ledger.path, "fetch", "--quiet", str(other.path), "+refs/gitledger/*:refs/gitledger/*")
    assert idx.ids_if_current(arrived[:4]) is None
    assert ledger.resolve(arrived[:12]) == arrived
    # An unreadable ref still makes its prefix ambiguous rather than unknown.
    from gitledger.errors import AmbiguousId

    twin = some[:12] + "00000000"
    commit = git(ledger.path, "rev-parse", task_ref(some)).strip()
    tree = git(ledger.path, "rev-parse", f"{commit}^{{tree}}").strip()
    foreign = subprocess.run(
        ["git", "--git-dir", str(ledger.path), "commit-tree", tree, "-m", "copy"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    git(ledger.path, "update-ref", task_ref(twin), foreign)
    ledger.list_tasks()
    age_refs(ledger)
    ledger.list_tasks()
    assert any(p.ref == task_ref(twin) for p in ledger.skipped)
    with pytest.raises(AmbiguousId):
        ledger.resolve(some[:12])


def test_one_index_serves_many_threads(ledger: Ledger) -> None:
    from concurrent.futures import ThreadPoolExecutor

    made = {ledger.create(f"threaded {n}").id for n in range(5)}

    def listing(_: int) -> set[str]:
        return {t.id for t in ledger.search("threaded")}

    with ThreadPoolExecutor(max_workers=4) as pool:
        assert all(found == made for found in pool.map(listing, range(16)))


def test_gitledger_writes_keep_the_index_current_without_a_rescan(ledger: Ledger) -> None:
    import time as _time

    tasks = [ledger.create(f"task {i}") for i in range(5)]
    idx = ledger.index()
    assert idx is not None
    _time.sleep(0.1)  # past the racy window, so the stamp this read stores is trusted
    assert len(ledger.list_tasks()) == 5
    assert idx.refresh().checked is False  # current: nothing re-read

    updated = ledger.update(tasks[0].id, status="active", notes=["n"])
    fresh = ledger.create("written after the index was current")
    stats = idx.refresh()
    assert stats.checked is False, "the writes should have recorded themselves"
    assert [t.id for t in ledger.inbox(1)] == [updated.id]
    assert fresh.id in {t.id for t in ledger.list_tasks()}
    # and a foreign ref move is still noticed
    other = Ledger.open(ledger.path)
    other_task = other.create("from another Ledger object")  # also records itself
    subprocess.run(
        [
            "git",
            "--git-dir",
            str(ledger.path),
            "update-ref",
            "-d",
            f"refs/gitledger/tasks/{other_task.id}",
        ],
        check=True,
    )
    _time.sleep(0.06)
    assert other_task.id not in {t.id for t in ledger.list_tasks()}


def test_many_refs_moved_under_one_lock_record_themselves_together(ledger: Ledger) -> None:
    """What sync does after moving many task refs: the next command reads none of them again."""
    import time as _time

    from gitledger.gitstore import refs_stamp
    from gitledger.index import TASKS_DIR

    tasks = [ledger.create(f"moved {i}") for i in range(4)]
    idx = ledger.index()
    assert idx is not None
    _time.sleep(0.1)  # past the racy window
    assert len(ledger.list_tasks()) == 4
    author = ledger.author()
    with ledger.store.lock():
        before = refs_stamp(ledger.path, TASKS_DIR).encode()
        written = []
        for task in tasks[:3]:  # as a sync would: straight to the store, not through update()
            tip = ledger.store.tip(task_ref(task.id))
            new = task.replace(version=2, status="active", next="picked up elsewhere")
            files = ledger.record_files(new)
            commit = ledger.store.write(
                task_ref(task.id), files, "synced\n", author, [tip] if tip else [], tip
            )
            written.append((new, files["task.json"], commit))
        idx.wrote_many(written, before)
    stats = idx.refresh()
    assert stats.checked is False, "the moves should have recorded themselves"
    assert {t.id for t in ledger.list_tasks(status="active")} == {t.id for t in tasks[:3]}
    # Stale: a move the index did not see (written while the stamp was already behind).
    with ledger.store.lock():
        stale_before = b"not the stamp"
        tip = ledger.store.tip(task_ref(tasks[3].id))
        new = tasks[3].replace(version=2, status="blocked", blocker="waits")
        files = ledger.record_files(new)
        commit = ledger.store.write(task_ref(tasks[3].id), files, "x\n", author, [tip], tip)
        idx.wrote_many([(new, files["task.json"], commit)], stale_before.decode())
    assert idx.refresh().checked is True  # refused to trust itself; compared the tips
    assert [t.id for t in ledger.list_tasks(status="blocked")] == [tasks[3].id]


def test_an_index_failure_names_the_rebuild_each_interface_has(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    from gitledger.errors import StorageError

    ledger.create("a task")

    def fail(*_args: object, **_kwargs: object) -> None:
        raise sqlite3.OperationalError("no such column: nope")  # not damage: nothing to delete

    monkeypatch.setattr(Index, "_refresh", fail)
    with pytest.raises(StorageError) as failed:
        ledger.list_tasks()
    assert "Rebuild it with Ledger.index().rebuild()." in failed.value.message
    assert "Rebuild it with 'gitledger index rebuild'." in failed.value.worded("cli")
    assert "the shell command 'gitledger index rebuild'" in failed.value.worded("mcp")
