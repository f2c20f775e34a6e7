"""task export → task import round-trips every field of every version; bad input changes nothing;
a 10,000-task import runs in one process."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from gitledger.cli import cli as gitledger_cli
from gitledger.errors import GateRefused, InvalidInput, TaskNotFound
from gitledger.ledger import Ledger
from gitledger.refs import task_ref
from gitledger.transfer import export_tasks, import_tasks


def invoke(*args: str, input: str | None = None) -> tuple[int, str]:
    out = CliRunner().invoke(gitledger_cli, list(args), input=input)
    return out.exit_code, out.output


def rich_ledger(ledger: Ledger) -> list[str]:
    """Tasks using every field: versions, entries, evidence, done, blocked, cancelled, parents,
    dependencies, labels, owner, unicode and control characters."""
    parent = ledger.create("Épique: ship v2 ✨", criteria="all children done", labels=["epic"])
    dep = ledger.create("Write the parser", criteria="tests pass", owner="ann", priority=0)
    ledger.update(dep.id, status="active", next='handle "quotes"\tand tabs', notes=["started"])
    ledger.update(dep.id, decisions=["hand-written, not generated"], evidence=["142 tests pass"])
    ledger.update(dep.id, status="done")
    child = ledger.create(
        "Use the parser", parent=parent.id, dependencies=[dep.id], labels=["a", "b"], next="wire"
    )
    ledger.update(child.id, status="blocked", blocker="waits on review", notes=["line1\nline2"])
    dropped = ledger.create("Dropped idea")
    ledger.update(dropped.id, status="cancelled", decisions=["out of scope"])
    keyed = ledger.create("Idempotent one", idempotency_key="key-1")
    return [parent.id, dep.id, child.id, dropped.id, keyed.id]


def history_records(ledger: Ledger, task_id: str) -> list[dict]:
    tip = ledger.store.tip(task_ref(task_id))
    assert tip is not None
    out = []
    for info in ledger.store.first_parent_chain(tip):
        data = ledger.store.read_files(info.oid, ("task.json",))["task.json"]
        assert data is not None
        out.append(json.loads(data))
    return out


def test_export_import_round_trips_every_version(ledger: Ledger, tmp_path: Path) -> None:
    ids = rich_ledger(ledger)
    exported = list(export_tasks(ledger))
    assert [d["id"] for d in exported] == sorted(ids)
    assert sum(1 + len(d["history"]) for d in exported) == sum(
        len(history_records(ledger, i)) for i in ids
    )
    fresh = Ledger.open(tmp_path / "fresh", create=True)
    report = import_tasks(fresh, [json.dumps(d) + "\n" for d in exported])
    assert report.created == len(ids) and report.updated == 0
    for task_id in ids:
        assert fresh.show(task_id) == ledger.show(task_id)
        assert history_records(fresh, task_id) == history_records(ledger, task_id)
        assert [v.summary for v in fresh.history(task_id)] == [
            v.summary for v in ledger.history(task_id)
        ]
    assert list(export_tasks(fresh)) == exported
    assert fresh.verify().ok
    # The index of the fresh ledger was fed by the import: listing works at once.
    assert {t.id for t in fresh.search("parser")} == {ids[1], ids[2]}
    assert [t.id for t in fresh.list_tasks(status="blocked")] == [ids[2]]


def test_round_trip_through_the_cli_and_git_fsck(ledger: Ledger, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    rich_ledger(ledger)
    dump = tmp_path / "tasks.jsonl"
    out = cli("task", "export", "-o", str(dump))
    assert out.returncode == 0, out.stderr
    fresh = tmp_path / "fresh"
    env = {"GITLEDGER_DIR": str(fresh)}
    assert cli("init", env=env).returncode == 0
    out = cli("task", "import", "-", "--json", input=dump.read_text(), env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["created"] == 5
    again = cli("task", "export", env=env)
    assert again.stdout == dump.read_text()
    fsck = subprocess.run(
        ["git", "--git-dir", str(fresh), "fsck", "--strict", "--no-dangling"],
        capture_output=True,
        text=True,
    )
    assert fsck.returncode == 0, fsck.stderr
    # Importing the same file again writes nothing.
    out = cli("task", "import", str(dump), "--json", env=env)
    assert json.loads(out.stdout)["unchanged"] == 5
    assert json.loads(out.stdout)["versions"] == 0


def test_current_only_export_and_lines_without_ids(ledger: Ledger, tmp_path: Path) -> None:
    ids = rich_ledger(ledger)
    current = list(export_tasks(ledger, history=False))
    assert all("history" not in d for d in current)
    fresh = Ledger.open(tmp_path / "fresh", create=True)
    import_tasks(fresh, [json.dumps(d) for d in current])
    for task_id in ids:
        assert fresh.show(task_id) == ledger.show(task_id)
    code, out = invoke(
        "task",
        "import",
        "-",
        "--json",
        input='{"goal": "brand new", "labels": ["x"], "priority": 1}\n\n{"goal": "another"}\n',
    )
    assert code == 0, out
    assert json.loads(out)["created"] == 2
    made = {t.goal: t for t in ledger.list_tasks(label="x")}
    assert made["brand new"].priority == 1 and made["brand new"].version == 1


def test_import_updates_existing_tasks(ledger: Ledger) -> None:
    task = ledger.create("Original goal", criteria="c")
    line = ledger.show(task.id).to_json_dict()
    line["status"] = "active"
    line["notes"] = [
        {"id": "abc123", "text": "imported note", "at": "2026-01-01T00:00:00Z", "actor": "x"}
    ]
    report = import_tasks(ledger, [json.dumps(line)])
    assert report.updated == 1 and report.versions == 1
    now = ledger.show(task.id)
    assert (
        now.version == 2
        and now.status == "active"
        and [n.text for n in now.notes] == ["imported note"]
    )
    assert ledger.inbox(1)[0].id == task.id
    # An export taken later, whose history holds the current version, fast-forwards.
    ledger.update(task.id, next="step one")
    ledger.update(task.id, next="step two")
    exported = next(d for d in export_tasks(ledger) if d["id"] == task.id)
    other_line = dict(exported)
    assert import_tasks(ledger, [json.dumps(other_line)]).unchanged == 1


def test_a_line_read_before_a_claim_does_not_set_the_claim_back(ledger: Ledger) -> None:
    """A line exported at version N applies what it changed since N, not the whole record."""
    task = ledger.create("Contested", criteria="c", labels=["a"])
    line = ledger.show(task.id).to_json_dict()  # read at version 1
    ledger.claim(task.id, actor="carol")  # version 2: owner carol, status active
    ledger.update(task.id, add_labels=["b"])  # version 3
    line["next"] = "edited offline"
    line["notes"] = [{"id": "n1", "text": "from the file", "at": "2026-01-01T00:00:00Z",
                      "actor": "x"}]  # fmt: skip
    report = import_tasks(ledger, [json.dumps(line)])
    assert report.updated == 1 and report.versions == 1
    now = ledger.show(task.id)
    assert now.version == 4
    assert (now.owner, now.status, now.next) == ("carol", "active", "edited offline")
    assert now.labels == ["a", "b"]
    assert [n.text for n in now.notes] == ["from the file"]
    # The same old line again changes nothing now.
    assert import_tasks(ledger, [json.dumps(line)]).unchanged == 1
    assert ledger.show(task.id).version == 4
    # A field the line did change wins, as before: the importer's intent.
    line["status"] = "blocked"
    line["blocker"] = "waits on legal"
    import_tasks(ledger, [json.dumps(line)])
    after = ledger.show(task.id)
    assert (after.status, after.blocker, after.owner) == ("blocked", "waits on legal", "carol")


@pytest.mark.parametrize(
    ("lines", "error", "message"),
    [
        (['{"goal": "ok"}', "{not json"], InvalidInput, "line 2 is not JSON"),
        (['{"goal": "ok"}', "[1, 2]"], InvalidInput, "line 2 is not a JSON object"),
        (['{"goal": "ok"}', '{"priority": 1}'], InvalidInput, "line 2: goal"),
        (['{"goal": "x", "priority": 9}'], InvalidInput, "priority"),
        (['{"goal": "x", "status": "finished"}'], InvalidInput, "status"),
        (['{"goal": "x", "dependencies": ["00000000000000000000"]}'], TaskNotFound, "neither"),
        (
            [
                '{"id": "aaaaaaaaaaaaaaaaaaaa", "goal": "a", "version": 1, "created_at": "t", '
                '"updated_at": "t", "actor": "x"}',
                '{"id": "aaaaaaaaaaaaaaaaaaaa", "goal": "b", "version": 1, "created_at": "t", '
                '"updated_at": "t", "actor": "x"}',
            ],
            InvalidInput,
            "appears twice",
        ),
    ],
)
def test_bad_input_changes_nothing(
    ledger: Ledger, lines: list[str], error: type[Exception], message: str
) -> None:
    ledger.create("already here")
    with pytest.raises(error, match=message):
        import_tasks(ledger, lines)
    assert [t.goal for t in ledger.list_tasks()] == ["already here"]
    packs = list((ledger.path / "objects" / "pack").glob("*"))
    assert packs == []


def test_imported_dependency_cycle_is_refused(ledger: Ledger) -> None:
    a, b = "aaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbb"
    base = {
        "version": 1,
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
        "actor": "x",
    }
    lines = [
        json.dumps({**base, "id": a, "goal": "a", "dependencies": [b]}),
        json.dumps({**base, "id": b, "goal": "b", "dependencies": [a]}),
    ]
    with pytest.raises(GateRefused, match="cycle"):
        import_tasks(ledger, lines)
    assert ledger.list_tasks() == []
    code, out = invoke("task", "import", "-", input="\n".join(lines))
    assert code == 1 and "cycle" in out


def test_cli_import_bad_file_exit_code(ledger: Ledger, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"goal": "fine"}\nnot json at all\n')
    code, out = invoke("task", "import", str(bad))
    assert code == 2 and "line 2 is not JSON" in out
    assert ledger.list_tasks() == []
    code, out = invoke("task", "import", str(tmp_path / "missing.jsonl"))
    assert code == 2


@pytest.mark.slow
def test_ten_thousand_task_import(ledger: Ledger) -> None:
    words = "parser lexer cache index graph search render token budget ledger".split()
    lines = [
        json.dumps(
            {
                "goal": f"Task {n}: {words[n % 10]} {words[(n * 7) % 10]}",
                "criteria": "works",
                "labels": [words[n % 10]],
                "priority": n % 5,
            }
        )
        for n in range(10_000)
    ]
    started = time.perf_counter()
    report = import_tasks(ledger, lines)
    elapsed = time.perf_counter() - started
    assert report.created == 10_000 and report.versions == 10_000
    print(f"\n10,000-task import: {elapsed:.1f} s ({report.tasks_per_second:,.0f} tasks/s)")
    assert len(ledger.list_tasks(limit=None)) == 10_000
    assert len(ledger.list_tasks(label="graph")) == 1_000
    assert [t.priority for t in ledger.ready(3)] == [0, 0, 0]
    hits = ledger.search("Task 4242")
    assert any(t.goal.startswith("Task 4242:") for t in hits)
    assert ledger.show(ledger.ready(1)[0].id).version == 1
