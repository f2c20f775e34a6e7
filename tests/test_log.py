"""``gitledger log ID [-p]``: a task's history read as a changelog, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

from gitledger import sync
from gitledger.changes import commit_message, diff_tasks
from gitledger.ledger import Ledger

DECISION = "Keep the index in SQLite because it ships with Python and needs no server at all"


def test_log_takes_a_prefix_and_shows_the_markdown_diff(ledger: Ledger) -> None:
    task = ledger.create("Ship the release", criteria="Tests pass")
    ledger.update(task.id, status="active", next="Run the tests")
    ledger.update(task.id, decisions=[DECISION])
    short = ledger.short_id(task.id)

    out = run_cli("log", short[:4])
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("\ncommit ") + out.stdout.startswith("commit ") == 3
    assert "--- a/task.md" not in out.stdout  # no -p, no diff

    out = run_cli("log", short[:4], "-p")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "\n-- status: open\n" in text and "\n+- status: active\n" in text
    assert "+- next: Run the tests" in text
    assert f": {DECISION}" in text  # the decision's whole text in the view's diff
    assert "task.json" not in text and '"clock"' not in text
    assert text.index("Version: 3") < text.index("Version: 2") < text.index("Version: 1")


def test_subjects_keep_a_decisions_words_whole(ledger: Ledger) -> None:
    task = ledger.create("Ship the release")
    ledger.update(task.id, decisions=[DECISION])
    entries = json.loads(run_cli("log", task.id[:6], "--json").stdout)
    subject = entries[0]["subject"]
    assert len(subject) <= 72
    assert subject.startswith("update: decision: Keep the index in SQLite")
    assert subject.endswith("…")
    assert DECISION.startswith(subject[len("update: decision: ") : -1])
    assert DECISION[len(subject) - len("update: decision: ") - 1] == " "  # cut between words
    for entry in entries:
        assert len(entry["subject"]) <= 72


def test_every_subject_fits_72_characters(ledger: Ledger) -> None:
    long = " ".join(["word"] * 60)
    task = ledger.create(long, criteria="c")
    after = ledger.update(
        task.id, status="active", next=long, blocker=long, owner="someone", priority=0,
        add_labels=["a", "b"], notes=[long, long], decisions=[long, long], evidence=[long],
    )  # fmt: skip
    for message in (commit_message(task, None), commit_message(after, diff_tasks(task, after))):
        subject = message.splitlines()[0]
        assert len(subject) <= 72, subject
        assert not subject.endswith("wor…")  # never inside a word


def test_a_merge_shows_what_each_side_brought(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    a = Ledger.init(tmp_path / "a")
    b = Ledger.init(tmp_path / "b")
    task = a.create("Shared work", criteria="c")
    sync.sync(a, str(remote))
    sync.sync(b, str(remote))
    a.update(task.id, status="active")
    b.update(task.id, notes=["found by b"])
    sync.sync(a, str(remote))
    sync.sync(b, str(remote))  # b merges a's status with its own note

    out = run_cli("--ledger", str(b.path), "log", task.id[:6], "-p")
    assert out.returncode == 0, out.stderr
    head = out.stdout.split("\ncommit ")[0]
    assert "\nMerge: " in head
    brought = head.split("brought to ")
    assert len(brought) == 3  # one section per parent
    # Parent 1 is b's own tip (its note): from there the merge brought a's status; parent 2
    # is a's tip (the status): from there it brought b's note.
    from_b, from_a = brought[1], brought[2]
    assert "+- status: active" in from_b and "found by b" not in from_b
    assert "found by b" in from_a and "+- status: active" not in from_a
    data = json.loads(run_cli("--ledger", str(b.path), "log", task.id[:6], "-p", "--json").stdout)
    assert len(data[0]["parents"]) == 2 and len(data[0]["diffs"]) == 2


def test_bad_input_is_refused_clearly(ledger: Ledger) -> None:
    ledger.create("One")
    out = run_cli("log", "zzzzzz")
    assert out.returncode != 0
    assert "zzzzzz" in out.stderr and "Traceback" not in out.stderr
    out = run_cli("log", "zzzzzz", "--json")
    assert json.loads(out.stderr)["error"]
    out = run_cli("log", ledger.tasks().__next__().id, "-n", "0")
    assert out.returncode == 2
