"""Per-fact memory on a real ledger: remember, recall, reinforcement, decay, capacity, damage."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from gitledger.cli import cli
from gitledger.errors import FactNotFound, InvalidInput
from gitledger.ledger import Ledger
from gitledger.memory import DAY, MEMORY_PREFIX, Memory, fingerprint, strength_curve


class FakeClock:
    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, days: float) -> None:
        self.now += days * DAY


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def memory(ledger: Ledger, clock: FakeClock) -> Memory:
    return Memory(ledger, clock=clock)


def test_remember_and_recall(memory: Memory) -> None:
    fact, new = memory.remember(
        "Use pygit2 for storage because libgit2 maps errors", kind="decision", tags=["storage"]
    )
    assert new and fact.version == 1
    memory.remember("The CI runner has no network", kind="constraint")
    memory.remember("Parallel test runs corrupt the fixture database", kind="pitfall")
    hits = memory.recall("which storage library", k=3)
    assert hits[0].fact.id == fact.id
    assert all("storage" in h.fact.text or "storage" in h.fact.tags for h in hits)
    assert memory.recall("nothing matches this", k=3) == []
    # a fact is a ref with a commit per version
    assert memory.store.tip(MEMORY_PREFIX + fact.id) is not None


def test_recall_reinforces_and_time_decays(memory: Memory, clock: FakeClock) -> None:
    used, _ = memory.remember("Release notes go in CHANGELOG.md", kind="preference")
    idle, _ = memory.remember("Release tags are signed", kind="preference")
    for _ in range(3):
        memory.recall("CHANGELOG release notes", k=1)
    assert memory.get(used.id).uses == 3
    assert memory.get(idle.id).uses == 0
    clock.advance(30)
    now = clock()
    assert memory.get(used.id).strength(now) > memory.get(idle.id).strength(now)
    # decay: strength falls with idle time, slower for a fact used more
    fresh, later = strength_curve(3, 0, [0, 10])
    assert later < fresh
    assert strength_curve(3, 4, [10])[0] > later
    # --no-reinforce looks without counting a use
    memory.recall("release", k=2, reinforce=False)
    assert memory.get(used.id).uses == 3


def test_duplicates_reinforce_instead_of_copying(memory: Memory) -> None:
    first, new = memory.remember("Never force-push main", kind="constraint", tags=["git"])
    again, new_again = memory.remember("never force push MAIN!", kind="constraint", tags=["ci"])
    assert new and not new_again and again.id == first.id
    assert again.uses == 1 and again.tags == ["git", "ci"]
    assert fingerprint("constraint", "Never force-push main") == fingerprint(
        "constraint", "never  force push main"
    )
    # the same words as another kind are another fact
    other, new_other = memory.remember("Never force-push main", kind="pitfall")
    assert new_other and other.id != first.id
    assert memory.stats()["active"] == 2


def test_capacity_evicts_the_weakest_and_restore_brings_it_back(
    memory: Memory, clock: FakeClock
) -> None:
    memory.set_capacity(3)
    weak, _ = memory.remember("an old unimportant fact", kind="todo", importance=1)
    clock.advance(20)
    strong = [memory.remember(f"important fact number {i}", importance=5)[0] for i in range(3)]
    stats = memory.stats()
    assert stats["active"] == 3 and stats["forgotten"] == 1
    evicted = memory.get(weak.id)
    assert not evicted.active and "evicted" in (evicted.forgotten_reason or "")
    assert all(memory.get(f.id).active for f in strong)
    assert memory.recall("unimportant", k=5) == []  # forgotten facts are not recalled
    # restoring it brings it back and evicts the then-weakest instead, keeping capacity
    restored = memory.restore(weak.id[:8])
    assert restored.active
    assert memory.stats()["active"] == 3
    # history keeps every version
    log = subprocess.run(
        [
            "git",
            "--git-dir",
            str(memory.ledger.path),
            "log",
            "--format=%s",
            MEMORY_PREFIX + weak.id,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert log[0].startswith("restore") and log[1].startswith("evict")


def test_forget_and_bad_input(memory: Memory) -> None:
    fact, _ = memory.remember("temporary", kind="todo")
    assert not memory.forget(fact.id).active
    assert memory.recall("temporary", k=1) == []
    with pytest.raises(FactNotFound):
        memory.forget("zzzzzzzz")
    for kwargs in (
        {"text": ""},
        {"text": "x", "kind": "rumour"},
        {"text": "x", "importance": 9},
        {"text": "x" * 5000},
        {"text": "nul\x00"},
        {"text": "x", "tags": ["two words"]},
    ):
        with pytest.raises(InvalidInput):
            memory.remember(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        memory.recall("!!!", k=3)
    assert memory.stats()["active"] == 0 and memory.stats()["forgotten"] == 1


def test_import_export_round_trip(memory: Memory, tmp_path: Path) -> None:
    rows = [
        {"text": "Deploys need the VPN", "kind": "constraint", "tags": ["ops"], "importance": 4},
        {"text": "The flaky test is test_upload", "kind": "pitfall"},
        {"text": "Deploys need the VPN", "kind": "constraint"},
    ]
    assert memory.import_facts(rows) == {"created": 2, "duplicates": 1}
    exported = list(memory.export())
    assert {r["text"] for r in exported} == {
        "Deploys need the VPN",
        "The flaky test is test_upload",
    }
    assert memory.recall("VPN deploys", k=1)[0].fact.importance == 4
    with pytest.raises(InvalidInput, match="Line 2"):
        memory.import_facts([{"text": "ok"}, {"text": "bad", "kind": "nope"}])
    assert memory.stats()["active"] == 2  # the bad import wrote nothing
    fsck = subprocess.run(
        ["git", "--git-dir", str(memory.ledger.path), "fsck", "--strict"],
        capture_output=True,
        text=True,
    )
    assert fsck.returncode == 0, fsck.stderr


def test_damaged_index_and_corrupt_fact_ref(memory: Memory, ledger: Ledger) -> None:
    good, _ = memory.remember("good fact about caching", kind="decision")
    bad, _ = memory.remember("fact that will be damaged", kind="decision")
    # garbage instead of the index file: rebuilt silently
    memory.index.delete()
    (ledger.path / "gitledger-memory.sqlite").write_bytes(b"not a database" * 100)
    fresh = Memory(ledger)
    assert fresh.recall("caching", k=1)[0].fact.id == good.id
    # a fact ref pointing at a task commit: reported, the rest keeps working
    task = ledger.create("a task")
    tip = ledger.store.tip(f"refs/gitledger/tasks/{task.id}")
    subprocess.run(
        ["git", "--git-dir", str(ledger.path), "update-ref", MEMORY_PREFIX + bad.id, tip],
        check=True,
    )
    again = Memory(ledger)
    assert again.stats()["unreadable"] == 1
    assert again.recall("caching", k=3)[0].fact.id == good.id
    # hints never raise, even with the store gone
    broken = Memory(ledger)
    broken.index.file = Path("/nonexistent/dir/memory.sqlite")
    assert broken.hints("caching") == []
    # and the task ledger never notices
    assert ledger.show(task.id).goal == "a task"


def test_cli(isolated: Path) -> None:
    runner = CliRunner()

    def run(*args: str, input: str | None = None):  # type: ignore[no-untyped-def]
        return runner.invoke(cli, list(args), input=input, catch_exceptions=False)

    assert run("init").exit_code == 0
    out = run("remember", "Prefer small commits", "--kind", "preference", "--tag", "git", "--json")
    fact = json.loads(out.output)
    assert fact["new"] is True and fact["kind"] == "preference"
    hits = json.loads(run("recall", "small", "commits", "--json").output)
    assert hits[0]["id"] == fact["id"] and hits[0]["uses"] == 1
    assert run("recall", "small", "--no-reinforce").exit_code == 0
    assert json.loads(run("memory", "stats", "--json").output)["active"] == 1
    assert run("memory", "forget", fact["id"][:8]).exit_code == 0
    assert json.loads(run("memory", "list", "--forgotten", "--json").output)[0]["id"] == fact["id"]
    assert run("memory", "restore", fact["id"][:8]).exit_code == 0
    bad = run("memory", "import", "-", input='{"text": "x"}\nnot json\n')
    assert bad.exit_code == 2 and "Line 2" in bad.output
    ok = run(
        "memory", "import", "-", input='{"text": "Ship on Fridays never", "kind": "constraint"}\n'
    )
    assert ok.exit_code == 0
    lines = run("memory", "export").output.splitlines()
    assert len(lines) == 2 and all(json.loads(line)["id"] for line in lines)
    assert run("remember", "x", "--kind", "rumour").exit_code == 2
    assert run("memory", "forget", "zzzzzzzz").exit_code == 1
    assert json.loads(run("memory", "config", "--capacity", "1", "--json").output)["capacity"] == 1
    assert json.loads(run("memory", "stats", "--json").output)["active"] == 1


def test_fuse_snapshots_are_split_into_facts(ledger: Ledger, tmp_path: Path) -> None:
    from gitledger import fuse

    transcript = tmp_path / "session.jsonl"
    lines = [
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": "Port the exporter to streaming. Never load the whole file into memory.",
            },
        },
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": "I chose a generator pipeline because it keeps memory flat.",
                    },
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "TodoWrite",
                        "input": {
                            "todos": [
                                {"content": "Write the streaming reader", "status": "completed"},
                                {"content": "Benchmark peak memory", "status": "pending"},
                            ]
                        },
                    },
                ],
            },
        },
    ]
    transcript.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    fuse.save(ledger, "sess-1", transcript)
    memory = Memory(ledger)
    facts = {(f.kind, f.text) for f in memory.list_facts(limit=None)}
    kinds = {k for k, _ in facts}
    # only what was stated as a decision, constraint or pitfall: todos and accomplishments are the
    # session's state, not facts for other tasks' handoffs
    assert kinds and not kinds & {"todo", "accomplishment"}, facts
    assert any("generator pipeline" in t for _, t in facts) or any(k == "constraint" for k in kinds)
    before = memory.stats()["active"]
    fuse.save(ledger, "sess-1", transcript)  # the same snapshot again adds and reinforces nothing
    assert memory.stats()["active"] == before
    assert all(f.uses == 0 for f in memory.list_facts(limit=None))
    assert all(f.source_session == "sess-1" for f in memory.list_facts(limit=None))


def test_fuse_restore_offers_hints_from_other_sessions_labelled(
    ledger: Ledger, tmp_path: Path
) -> None:
    from gitledger import fuse

    memory = Memory(ledger)
    memory.remember("The exporter must stream: the nightly file is 40 GB", kind="constraint")
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(
        json.dumps(
            {"type": "user", "message": {"role": "user", "content": "Fix the exporter crash"}}
        )
        + "\n"
    )
    fuse.save(ledger, "sess-2", transcript)
    text, _ = fuse.restore_text(ledger, "sess-2", 6000)
    assert "HINTS FROM MEMORY" in text
    hint_part = text.split("HINTS FROM MEMORY", 1)[1]
    assert "nightly file is 40 GB" in hint_part
    assert text.index("Fix the exporter crash") < text.index("HINTS FROM MEMORY")
    # a damaged memory index does not fail the restore
    (ledger.path / "gitledger-memory.sqlite").write_bytes(b"garbage" * 50)
    text2, _ = fuse.restore_text(ledger, "sess-2", 6000)
    assert "Fix the exporter crash" in text2
    small, _ = fuse.restore_text(ledger, "sess-2", 600)
    assert len(small.encode()) <= 600 and "Fix the exporter crash" in small


def test_task_context_offers_memory_hints_labelled(ledger: Ledger) -> None:
    from gitledger.context import task_context

    task = ledger.create("Speed up the nightly exporter", criteria="under 10 minutes")
    Memory(ledger).remember(
        "The exporter must stream: the nightly file is 40 GB", kind="constraint"
    )
    text = task_context(ledger, task.id, budget=2048).text
    assert "memory hints" in text and "nightly file is 40 GB" in text
    assert text.index("goal:") < text.index("memory hints")
    assert "nightly file" not in task_context(ledger, task.id, budget=2048, hints=()).text
    # a damaged memory store never fails a handoff
    (ledger.path / "gitledger-memory.sqlite").write_bytes(b"garbage" * 50)
    assert "Speed up the nightly exporter" in task_context(ledger, task.id, budget=2048).text


def test_a_fact_changed_on_two_machines_merges_on_sync(tmp_path: Path) -> None:
    from gitledger import sync
    from gitledger.memory import merge_facts

    remote = tmp_path / "remote.git"
    a = Ledger.open(tmp_path / "a", create=True)
    fact, _ = Memory(a).remember("Deploys need the VPN", kind="constraint", tags=["ops"])
    sync.backup(a, str(remote))
    b = Ledger.open(tmp_path / "b", create=True)
    sync.restore(b, str(remote))
    Memory(a).recall("deploys vpn", k=1)  # a use on machine a
    Memory(b).recall("deploys vpn", k=1)  # and one on machine b
    Memory(b).remember("Deploys need the VPN", kind="constraint", tags=["network"])  # and again
    for side in (a, b, a):
        sync.sync(side, str(remote))
    tips = {led.store.tip(MEMORY_PREFIX + fact.id) for led in (a, b)}
    assert len(tips) == 1, "both machines end on the same merged version"
    merged = Memory(a).get(fact.id)
    assert merged.uses == 3 and merged.tags == ["ops", "network"] and merged.active
    # forgetting on one side wins over a use on the other; both changing it keeps it active
    base = merged
    forgot = base.replace(**{"active": False, "forgotten_reason": "x", "version": 9})
    used = base.replace(**{"uses": base.uses + 1, "version": 9})
    assert merge_facts(base, used, forgot).active is False
    assert merge_facts(base, forgot, used).active is False
    restored = base.replace(**{"active": True})
    assert merge_facts(forgot, restored, forgot.replace(**{"tags": ["x"]})).active is True


def test_recall_finds_a_fact_by_the_stem_of_its_words(memory: Memory) -> None:
    # The README's example: "Deploys" is found by "deploy", and other forms of the word too.
    fact, _ = memory.remember("Deploys need the VPN", kind="constraint", tags=["ops"])
    memory.remember("The parser crashed on empty input", kind="pitfall")
    for query in ("deploy", "deploying", "deployed", "Deploys", "deploy vpn"):
        hits = memory.recall(query, k=3, reinforce=False)
        assert [h.fact.id for h in hits] == [fact.id], query
    assert memory.recall("parsers crashing", k=3, reinforce=False)[0].fact.text.startswith("The")


def test_an_index_of_the_old_unstemmed_schema_is_rebuilt(memory: Memory, ledger: Ledger) -> None:
    import sqlite3

    from gitledger.memory import INDEX_FILE

    fact, _ = memory.remember("Deploys need the VPN", kind="constraint")
    assert memory.recall("deploy", k=1, reinforce=False)
    memory.index.delete()
    # An index file as schema 3 left it: no stemming, and the fact indexed under its own words.
    conn = sqlite3.connect(Path(ledger.path) / INDEX_FILE)
    conn.executescript(
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO meta VALUES ('schema', '3');"
        "CREATE VIRTUAL TABLE fts USING fts5(text, tags, kind, content='', tokenize='unicode61');"
    )
    conn.close()
    again = Memory(ledger)
    assert [h.fact.id for h in again.recall("deploy", k=1, reinforce=False)] == [fact.id]
    conn = sqlite3.connect(Path(ledger.path) / INDEX_FILE)
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("4",)
    conn.close()
