"""``task import --from beads|taskwarrior|github``: real exports in, a second run changes nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import run_cli

from gitledger.ledger import Ledger
from gitledger.trackers import derived_id

FIXTURES = Path(__file__).parent / "fixtures" / "trackers"


def refs(ledger: Ledger) -> dict[str, str]:
    return dict(ledger.store.refs("refs/gitledger/tasks/"))


def import_twice(source: str, file: Path, ledger: Ledger) -> dict[str, Ledger]:
    out = run_cli("task", "import", "--from", source, str(file), "--json")
    assert out.returncode == 0, out.stderr
    first = json.loads(out.stdout)
    before = refs(ledger)
    out = run_cli("task", "import", "--from", source, str(file), "--json")
    assert out.returncode == 0, out.stderr
    second = json.loads(out.stdout)
    assert second["created"] == second["updated"] == second["versions"] == 0
    assert second["unchanged"] == first["created"]
    assert refs(ledger) == before  # a second run changes nothing
    return first


def test_beads_export(ledger: Ledger) -> None:
    file = FIXTURES / "beads-issues.jsonl"
    lines = [json.loads(line) for line in file.read_text().splitlines()]
    report = import_twice("beads", file, ledger)
    assert report["created"] == len(lines) == 19
    tasks = {t.id: t for t in ledger.tasks()}
    by_bead = {b["id"]: tasks[derived_id("beads", b["id"])] for b in lines}
    epic = by_bead["bd-wisp-psxiw"]
    children = [b for b in lines if b["id"] != "bd-wisp-psxiw" and b["id"].startswith("bd-wisp")]
    assert len(children) == 11
    for bead in children:
        task = by_bead[bead["id"]]
        assert task.parent == epic.id
        assert f"beads:{bead['id']}" in task.labels
        for dep in bead["dependencies"]:
            if dep["type"] == "blocks":
                assert derived_id("beads", dep["depends_on_id"]) in task.dependencies
    two = by_bead["bd-2ws"]
    source = next(b for b in lines if b["id"] == "bd-2ws")
    assert two.goal == source["title"] and two.status == "done"
    assert {"dolt", "solo-ux", "type:task"} <= set(two.labels)
    assert two.owner == source["assignee"]
    texts = [n.text for n in two.notes]
    assert source["description"] in texts and source["notes"] in texts
    assert "beads blocks: bd-wisp-yurwc8 (not in this export)" in texts
    assert f"Closed: {source['close_reason']}" in texts
    designed = next(b for b in lines if b.get("design"))
    assert [d.text for d in by_bead[designed["id"]].decisions] == [f"Design: {designed['design']}"]
    assert by_bead["bd-xmf"].status == "active"  # hooked: claimed by a worker
    assert by_bead["bd-5ua"].status == "active"  # in_progress
    assert "pinned" in by_bead["bd-pr-sheriff"].labels
    ee1 = [n.text for n in by_bead["bd-ee1"].notes]
    assert "beads discovered-from: bd-da96-baseline-lint" in ee1


def test_beads_update_after_a_change_at_the_source(ledger: Ledger, tmp_path: Path) -> None:
    lines = (FIXTURES / "beads-issues.jsonl").read_text().splitlines()
    file = tmp_path / "issues.jsonl"
    file.write_text("\n".join(lines) + "\n")
    import_twice("beads", file, ledger)
    first = json.loads(lines[-1])
    first["status"] = "closed"
    first["notes"] = "Finished after the first import."
    file.write_text("\n".join([*lines[:-1], json.dumps(first)]) + "\n")
    out = run_cli("task", "import", "--from", "beads", str(file), "--json")
    report = json.loads(out.stdout)
    assert report["updated"] == 1 and report["created"] == 0
    task = ledger.show(derived_id("beads", first["id"]))
    assert task.status == "done" and task.version == 2
    assert "Finished after the first import." in [n.text for n in task.notes]


TW = shutil.which("task")


@pytest.mark.skipif(TW is None, reason="Taskwarrior's 'task' is not installed")
def test_taskwarrior_real_program(ledger: Ledger, tmp_path: Path) -> None:
    env = dict(os.environ, TASKDATA=str(tmp_path / "tw"), TASKRC=str(tmp_path / "taskrc"))
    (tmp_path / "taskrc").write_text("")

    def tw(*args: str) -> str:
        done = subprocess.run(
            [TW, "rc.confirmation=off", "rc.verbose=nothing", "rc.hooks=off", *args],
            env=env, capture_output=True, text=True, timeout=60, input="",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    tw("add", "Write the parser", "project:Home.Code", "+parser", "priority:H")
    tw("add", "Test the parser", "depends:1", "+tests")
    tw("1", "annotate", "Use a streaming reader")
    tw("1", "start")
    tw("add", "Old idea")
    tw("3", "delete")
    tw("add", "Ship it", "depends:1,2", "due:2026-12-24", "priority:L")
    exported = json.loads(tw("export"))
    file = tmp_path / "tw.json"
    file.write_text(json.dumps(exported))
    report = import_twice("taskwarrior", file, ledger)
    assert report["created"] == 4
    tasks = {t.id: t for t in ledger.tasks()}
    by_uuid = {t["uuid"]: tasks[derived_id("taskwarrior", t["uuid"])] for t in exported}
    for source in exported:
        task = by_uuid[source["uuid"]]
        assert task.goal == source["description"]
        assert f"taskwarrior:{source['uuid']}" in task.labels
        for tag in source.get("tags", []):
            assert tag in task.labels
        assert sorted(task.dependencies) == sorted(
            derived_id("taskwarrior", u) for u in source.get("depends", [])
        )
        notes = [n.text for n in task.notes]
        for note in source.get("annotations", []):
            assert note["description"] in notes
    by_goal = {t.goal: t for t in tasks.values()}
    assert by_goal["Write the parser"].status == "active"  # started
    assert by_goal["Write the parser"].priority == 1
    assert "project:Home.Code" in by_goal["Write the parser"].labels
    assert by_goal["Old idea"].status == "cancelled"
    assert by_goal["Ship it"].priority == 3
    assert "Due 2026-12-24" in by_goal["Ship it"].notes[0].text

    # Done there, imported again: done here, one new version, nothing else moves.
    tw("1", "done")
    file.write_text(tw("export"))
    before = refs(ledger)
    out = run_cli("task", "import", "--from", "taskwarrior", str(file), "--json")
    assert json.loads(out.stdout)["updated"] == 1
    after = refs(ledger)
    moved = [r for r in after if after[r] != before.get(r)]
    assert moved == [f"refs/gitledger/tasks/{by_goal['Write the parser'].id}"]
    assert ledger.show(by_goal["Write the parser"].id).status == "done"


def test_github_issue_list(ledger: Ledger) -> None:
    file = FIXTURES / "github-issues.json"
    issues = json.loads(file.read_text())
    report = import_twice("github", file, ledger)
    assert report["created"] == 3
    by_number = {i["number"]: ledger.show(derived_id("github", f"#{i['number']}")) for i in issues}
    first = by_number[21]
    assert first.goal == "Come from the tracker you use" and first.status == "open"
    assert first.owner == "maria"
    assert {"github:21", "enhancement", "good-first-issue"} <= set(first.labels)
    notes = [(n.actor, n.text) for n in first.notes]
    assert notes[0][1].startswith("`task import` refuses")
    assert ("sam", "Errors should name the line and the field.") in notes
    assert by_number[15].status == "done"
    assert by_number[18].owner == "sam" and "assignee:maria" in by_number[18].labels


@pytest.mark.parametrize(
    ("source", "text", "wanted"),
    [
        ("github", "{}", "is a JSON array"),
        ("github", "[{\"title\": \"no number\"}]", "line 1: a GitHub issue is an object with its number"),
        ("taskwarrior", "[1", "is not JSON"),
        ("beads", "{\"title\": \"no id\"}\n", "line 1: id: a beads issue needs its id"),
        ("beads", "{\"id\": \"bd-1\", \"priority\": 9, \"title\": \"t\"}\nnot json\n", "line 2 is not JSON"),
    ],
)  # fmt: skip
def test_bad_exports_change_nothing(
    ledger: Ledger, tmp_path: Path, source: str, text: str, wanted: str
) -> None:
    file = tmp_path / "bad"
    file.write_text(text)
    out = run_cli("task", "import", "--from", source, str(file))
    assert out.returncode == 2, out.stderr
    assert wanted in out.stderr and "Traceback" not in out.stderr
    assert refs(ledger) == {}


def test_export_to_taskwarrior_imports_in_the_real_program(ledger: Ledger, tmp_path: Path) -> None:
    if TW is None:
        pytest.skip("Taskwarrior's 'task' is not installed")
    base = ledger.create("Write the parser", labels=["parser", "project:Home"], priority=1)
    ledger.update(base.id, status="active", notes=["Use a streaming reader"])
    ledger.create("Ship it", dependencies=[base.id], priority=3)
    gone = ledger.create("Old idea")
    ledger.update(gone.id, status="cancelled", decisions=["Not needed"])
    out = run_cli("task", "export", "--to", "taskwarrior", "-o", str(tmp_path / "tw.json"))
    assert out.returncode == 0, out.stderr
    env = dict(os.environ, TASKDATA=str(tmp_path / "tw"), TASKRC=str(tmp_path / "taskrc"))
    (tmp_path / "taskrc").write_text("")
    run = [TW, "rc.confirmation=off", "rc.verbose=nothing", "rc.hooks=off"]
    done = subprocess.run([*run, "import", str(tmp_path / "tw.json")], env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    exported = json.loads(subprocess.run([*run, "export"], env=env, capture_output=True,
                                         text=True, timeout=60).stdout)  # fmt: skip
    by_goal = {t["description"]: t for t in exported}
    parser, ship = by_goal["Write the parser"], by_goal["Ship it"]
    assert parser["status"] == "pending" and "start" in parser and parser["priority"] == "H"
    assert parser["project"] == "Home" and parser["tags"] == ["parser"]
    assert [a["description"] for a in parser["annotations"]] == ["Use a streaming reader"]
    assert ship["depends"] == [parser["uuid"]] and ship["priority"] == "L"
    assert by_goal["Old idea"]["status"] == "deleted"
    # Back again: the same uuids, so the tasks come home as themselves (new ids derived from them).
    file = tmp_path / "back.json"
    file.write_text(json.dumps(exported))
    fresh = Ledger.init(tmp_path / "fresh").path
    out = run_cli("--ledger", str(fresh), "task", "import", "--from", "taskwarrior", str(file))
    assert out.returncode == 0, out.stderr
    back = {t.goal: t for t in Ledger.open(fresh).tasks()}
    assert back["Ship it"].dependencies == [back["Write the parser"].id]
    assert back["Write the parser"].status == "active" and back["Old idea"].status == "cancelled"


def test_export_to_beads_reads_back_as_the_same_work(ledger: Ledger, tmp_path: Path) -> None:
    out = run_cli("task", "import", "--from", "beads", str(FIXTURES / "beads-issues.jsonl"))
    assert out.returncode == 0, out.stderr
    out = run_cli("task", "export", "--to", "beads")
    assert out.returncode == 0, out.stderr
    lines = [json.loads(x) for x in out.stdout.splitlines()]
    source = {
        json.loads(x)["id"] for x in (FIXTURES / "beads-issues.jsonl").read_text().splitlines()
    }
    assert {x["id"] for x in lines} == source  # each keeps its beads id
    file = tmp_path / "again.jsonl"
    file.write_text(out.stdout)
    out = run_cli("task", "import", "--from", "beads", str(file), "--json")
    report = json.loads(out.stdout)
    assert report["created"] == 0  # the same tasks, by the same derived ids
    mine = {t.id: t for t in ledger.tasks()}
    for line in lines:
        task = mine[derived_id("beads", line["id"])]
        assert task.goal == line["title"]
        assert {"done": "closed", "active": "in_progress"}.get(task.status, task.status) == line[
            "status"
        ]
        for dep in line.get("dependencies", []):
            other = derived_id("beads", dep["depends_on_id"])
            assert (
                other == task.parent
                if dep["type"] == "parent-child"
                else other in task.dependencies
            )
