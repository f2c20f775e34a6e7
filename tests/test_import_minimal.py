"""``task import`` of what a person writes by hand, ``--partial``, and bounded lines (D21)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from gitledger.errors import InvalidInput, TaskNotFound
from gitledger.ledger import Ledger
from gitledger.transfer import MAX_LINE_BYTES, export_tasks, import_tasks, read_lines

THREE = [
    {"ref": "api", "goal": "Design the API", "notes": ["plain note"],
     "decisions": [{"text": "REST, not gRPC"}]},
    {"id": "impl", "goal": "Implement it", "parent": "ship", "dependencies": ["api"],
     "evidence": ["unit tests pass"]},
    {"ref": "ship", "goal": "Ship", "dependencies": ["impl", "api"], "labels": ["release"],
     "priority": 1},
]  # fmt: skip


def refs(ledger: Ledger) -> dict[str, str]:
    return dict(ledger.store.refs("refs/gitledger/"))


def test_a_hand_written_three_line_file_imports(ledger: Ledger, tmp_path: Path) -> None:
    file = tmp_path / "tasks.jsonl"
    file.write_text("".join(json.dumps(line) + "\n" for line in THREE))
    out = run_cli("task", "import", str(file), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["created"] == 3
    tasks = {t.goal: t for t in ledger.tasks()}
    api, impl, ship = tasks["Design the API"], tasks["Implement it"], tasks["Ship"]
    assert [n.text for n in api.notes] == ["plain note"]
    assert [d.text for d in api.decisions] == ["REST, not gRPC"]
    assert impl.parent == ship.id and impl.dependencies == [api.id]  # a later line, by ref
    assert impl.evidence[0].task_id == impl.id
    assert ship.dependencies == [impl.id, api.id] and ship.labels == ["release"]
    assert ship.priority == 1
    assert [t.goal for t in ledger.ready()] == ["Design the API"]


def test_existing_tasks_by_prefix_and_a_second_run_changes_nothing(ledger: Ledger) -> None:
    base = ledger.create("Existing work")
    line = {"id": None, "goal": "New", "dependencies": [base.id[:8]], "notes": ["n1", "n1"]}
    line.pop("id")
    report = import_tasks(ledger, [json.dumps(line)])
    assert report.created == 1
    new = next(t for t in ledger.tasks() if t.goal == "New")
    assert new.dependencies == [base.id]
    assert len(new.notes) == 2  # the same text twice is two notes
    again = dict(line, id=new.id)
    before = refs(ledger)
    assert import_tasks(ledger, [json.dumps(again)]).unchanged == 1
    assert refs(ledger) == before


def test_the_full_export_form_still_round_trips_exactly(ledger: Ledger) -> None:
    import_tasks(ledger, [json.dumps(line) for line in THREE])
    task = next(t for t in ledger.tasks() if t.goal == "Implement it")
    ledger.update(task.id, status="active", notes=["more"])
    exported = list(export_tasks(ledger))
    fresh = Ledger.init(ledger.path.parent / "fresh")
    import_tasks(fresh, [json.dumps(d) for d in exported])
    assert list(export_tasks(fresh)) == exported


@pytest.mark.parametrize(
    ("line", "wanted"),
    [
        ({"goal": "a", "notes": [3]}, 'line 2: notes[0]: expected text or an object with "text"'),
        ({"goal": "a", "notes": [{"txt": "x"}]}, "line 2: notes[0].txt: unknown field"),
        ({"goal": "a", "dependencies": ["nothing"]}, "line 2: dependencies[0]: 'nothing'"),
        ({"goal": "a", "parent": "x"}, "line 2: parent: 'x'"),
        ({"notes": ["no goal"]}, "line 2: goal: field required"),
        ({"goal": "a", "priority": "high"}, "line 2: priority: expected an integer"),
        ({"goal": "a", "ref": 5}, "line 2: ref: expected a name"),
        ({"goal": "a", "ref": "first"}, "line 2: the name 'first' is line 1's too"),
    ],
)
def test_errors_name_the_line_and_field_and_change_nothing(
    ledger: Ledger, line: dict, wanted: str
) -> None:
    before = refs(ledger)
    with pytest.raises(InvalidInput) as exc:
        import_tasks(ledger, [json.dumps({"goal": "fine", "ref": "first"}), json.dumps(line)])
    assert wanted in exc.value.message
    assert refs(ledger) == before


def test_partial_keeps_the_good_lines_and_says_which_it_skipped(
    ledger: Ledger, tmp_path: Path
) -> None:
    lines = [
        {"ref": "a", "goal": "good"},
        {"ref": "b", "goal": "bad", "priority": 9},
        {"goal": "leans on bad", "dependencies": ["b"]},
        "not json",
        {"goal": "leans on good", "parent": "a"},
        {"goal": "needs a missing task", "dependencies": ["0" * 20]},
    ]
    file = tmp_path / "mixed.jsonl"
    file.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    out = run_cli("task", "import", str(file))
    assert out.returncode != 0 and refs(ledger) == {}  # without --partial: nothing
    out = run_cli("task", "import", str(file), "--partial", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["created"] == 2
    assert [s["line"] for s in report["skipped"]] == [2, 3, 4, 6]
    assert "refers to line 2, which was skipped" in report["skipped"][1]["error"]
    assert sorted(t.goal for t in ledger.tasks()) == ["good", "leans on good"]
    out = run_cli("task", "import", str(file), "--partial")
    assert "skipped: line 4 is not JSON" in out.stderr


def test_a_missing_full_id_without_partial_is_task_not_found(ledger: Ledger) -> None:
    with pytest.raises(TaskNotFound):
        import_tasks(ledger, [json.dumps({"goal": "x", "dependencies": ["0" * 20]})])


def test_dev_zero_and_long_lines_are_refused_quickly(ledger: Ledger, tmp_path: Path) -> None:
    out = run_cli("task", "import", "/dev/zero")
    assert out.returncode == 2
    assert "line 1 is longer than" in out.stderr and "Traceback" not in out.stderr
    assert "with 'gitledger task export --current-only'" in out.stderr
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b'{"goal": "ok"}\n\xff\xfe\n')
    out = run_cli("task", "import", str(binary))
    assert out.returncode == 2 and "line 2 is not UTF-8" in out.stderr
    assert refs(ledger) == {}


def test_read_lines_bounds_each_line() -> None:
    import io

    assert list(read_lines(io.StringIO("ab\ncd"), limit=3)) == ["ab\n", "cd"]
    assert list(read_lines(io.StringIO("abc\n"), limit=3)) == ["abc\n"]
    with pytest.raises(InvalidInput, match="line 2 is longer than 3") as long:
        list(read_lines(io.StringIO("ab\nabcd\n"), limit=3))
    # the way out is worded for the caller: Python names the call, not the CLI flag
    assert "with transfer.export_tasks(ledger, history=False))" in long.value.message
    assert "--current-only" in long.value.worded("cli")
    assert MAX_LINE_BYTES >= 1 << 24


def test_memory_import_reads_one_bounded_line_at_a_time(ledger: Ledger, tmp_path: Path) -> None:
    file = tmp_path / "facts.jsonl"
    file.write_text(json.dumps({"text": "Deploys need the VPN"}) + "\n" + "[" * 100_000 + "\n")
    out = run_cli("memory", "import", str(file))
    assert out.returncode == 2 and "line 2 is longer than 65,536 bytes" in out.stderr
    assert "Traceback" not in out.stderr
    assert not [r for r in refs(ledger) if r.startswith("refs/gitledger/memory/")]
