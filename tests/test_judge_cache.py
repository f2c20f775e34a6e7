"""The step judge's transcript read cache (``gitledger.judge.cache``) and its settings cache: a
growing transcript read from where the last run left off gives what a whole read gives, and a
cache that does not match is ignored."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import CORPUS, run_cli

from gitledger.judge.cache import read_step_context
from gitledger.judge.contexts import contexts_from_events
from gitledger.transcripts import read_events

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "judge"))
from build import Transcript  # noqa: E402
from build import bash as t_bash  # noqa: E402
from build import edit as t_edit  # noqa: E402
from build import read as t_read  # noqa: E402


def whole(path: Path) -> object:
    contexts = contexts_from_events(read_events(path), last_only=True)
    return contexts[-1] if contexts else None


def cached(path: Path, folder: Path) -> object:
    context, kept = read_step_context(path, cache=folder)
    assert kept is not None
    kept.save()
    return context


def session() -> Transcript:
    t = Transcript().user("Fix issues 1 and 2.")
    t.step("Starting with issue 1.", t_read("a.py"), tokens=80_000)
    t.step("", t_edit("a.py"), tokens=81_000)
    t.step("Issue 1 passes. Now issue 2.", t_bash("git commit -qam 'Issue 1'"), tokens=82_000)
    t.step("Working on it.", t_edit("b.py"), ("Read", {"file_path": "c.py"}), interleaved=True)
    t.compact()
    t.user("Go on.")
    t.step("Back on issue 2.", t_read("b.py"))
    t.step("Fixing it.", t_edit("b.py"), tokens=250_000)
    t.step("Both done.", results=False)
    return t


def test_a_growing_transcript_read_from_the_cache_is_read_as_a_whole(tmp_path: Path) -> None:
    records = session().records
    path, folder = tmp_path / "t.jsonl", tmp_path / "cache"
    lines = [json.dumps(r) + "\n" for r in records]
    for end in range(1, len(lines) + 1):
        path.write_text("".join(lines[:end]), encoding="utf-8")
        assert cached(path, folder) == whole(path), end
        # A line still being written: the state before it is kept, and the next run reads on.
        if end < len(lines):
            path.write_text("".join(lines[:end]) + lines[end][:20], encoding="utf-8")
            assert cached(path, folder) == whole(path), end
    assert list(folder.glob("*.json")), "the cache was kept"


def test_a_cache_that_does_not_match_is_ignored(tmp_path: Path) -> None:
    path, folder = tmp_path / "t.jsonl", tmp_path / "cache"
    session().write(path)
    first = cached(path, folder)
    # Another session written at the same path, shorter than the offset kept.
    other = Transcript(session="other").user("Fix issue 7.")
    other.step("Issue 7: the parser.", t_edit("p.py"))
    other.write(path)
    assert cached(path, folder) == whole(path) != first
    # The same length but rewritten before the offset.
    session().write(path)
    cached(path, folder)
    text = path.read_text(encoding="utf-8").replace(
        "Starting with issue 1.", "Starting with issue 9."
    )
    path.write_text(text, encoding="utf-8")
    assert cached(path, folder) == whole(path)
    # Damaged cache files: read whole.
    for kept in folder.iterdir():
        kept.write_bytes(b"{not json")
    assert cached(path, folder) == whole(path)


@pytest.mark.skipif(
    not (CORPUS / "eval" / "boundaries.json").is_file(), reason="no ../shared/corpus/eval"
)
def test_the_development_sets_cuts_read_from_the_cache(tmp_path: Path) -> None:
    """The first 40 labelled steps of a real session, cut as score_judge.py cuts them, one
    after another at the same path."""
    data = json.loads((CORPUS / "eval" / "boundaries.json").read_text(encoding="utf-8"))
    transcript = data["transcripts"][0]
    raw = (CORPUS / "claude-code" / transcript["file"]).read_bytes().splitlines(True)
    path, folder = tmp_path / "cut.jsonl", tmp_path / "cache"
    for step in transcript["steps"][:40]:
        path.write_bytes(b"".join(raw[: step["line"] + 1]))
        assert cached(path, folder) == whole(path), step["line"]


def test_the_step_command_keeps_a_cache_in_the_ledger_and_answers_alike(
    ledger: object, tmp_path: Path
) -> None:
    path = tmp_path / "t.jsonl"
    records = session().records
    answers = []
    for end in (6, 9, len(records)):
        path.write_text("".join(json.dumps(r) + "\n" for r in records[:end]), encoding="utf-8")
        result = run_cli("judge", "step", "--transcript", str(path), "--floor", "0", "--json")
        assert result.returncode == 0, result.stderr
        answers.append({k: v for k, v in json.loads(result.stdout).items() if k != "elapsed_ms"})
    folder = tmp_path / "ledger" / "gitledger-judge"
    assert list(folder.glob("*.json")), "a cache beside the ledger"
    for end, answer in zip((6, 9, len(records)), answers, strict=True):
        path.write_text("".join(json.dumps(r) + "\n" for r in records[:end]), encoding="utf-8")
        for kept in folder.glob("*"):
            kept.unlink()
        result = run_cli("judge", "step", "--transcript", str(path), "--floor", "0", "--json")
        fresh = {k: v for k, v in json.loads(result.stdout).items() if k != "elapsed_ms"}
        assert fresh == answer
    assert answers[1]["decision"] == "NEXT"


def test_a_disabled_judge_keeps_no_cache(ledger: object, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    records = session().records[:9]  # up to a step that is judged: "Issue 1 passes. Now …"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    folder = tmp_path / "ledger" / "gitledger-judge"
    step = ("judge", "step", "--transcript", str(path), "--floor", "0")
    assert run_cli(*step, env={"GITLEDGER_JUDGE": "0"}).returncode == 0
    assert not folder.exists()
    assert run_cli(*step).returncode == 0
    assert list(folder.glob("*.json"))
    assert run_cli("judge", "config", "enabled=false").returncode == 0
    result = run_cli(*step[:-2], "--json")  # judged past the gate: the settings are read
    assert json.loads(result.stdout)["rule"] == "off"
    assert list(folder.iterdir()) == [] or all(p.suffix == ".lock" for p in folder.iterdir())


def test_changed_settings_are_seen_through_the_settings_cache(
    ledger: object, tmp_path: Path
) -> None:
    t = Transcript().user("Fix issues 1 and 2.")
    t.step("Starting with issue 1.", t_edit("a.py"), tokens=80_000)
    t.step("Issue 1 passes. Now issue 2.", t_bash("git commit -qam 'Issue 1'"), tokens=90_000)
    path = t.write(tmp_path / "t.jsonl")  # the step is at 45% of the window
    step = ("judge", "step", "--transcript", str(path), "--json")
    assert json.loads(run_cli(*step).stdout)["decision"] == "NEXT"
    assert (tmp_path / "ledger" / "gitledger-judge" / "settings.json").exists()
    assert json.loads(run_cli(*step).stdout)["decision"] == "NEXT"  # from the kept settings
    assert run_cli("judge", "config", "floor=50").returncode == 0
    assert json.loads(run_cli(*step).stdout)["rule"] == "below-floor"
    assert run_cli("judge", "config", "floor=40").returncode == 0
    assert json.loads(run_cli(*step).stdout)["decision"] == "NEXT"


def test_a_run_beside_another_does_not_write_and_a_dead_runs_lock_is_taken_over(
    tmp_path: Path,
) -> None:
    import os

    from gitledger.judge import cache

    path, folder = tmp_path / "t.jsonl", tmp_path / "cache"
    session().write(path)
    cached(path, folder)
    state = next(folder.glob("*.json"))
    before = state.read_bytes()
    lock = state.with_suffix(".lock")
    lock.write_bytes(b"")  # another run is writing
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(Transcript().user("More.").records[0]) + "\n")
    assert cached(path, folder) == whole(path)
    assert state.read_bytes() == before and lock.exists()
    old = lock.stat().st_mtime - cache.STALE_LOCK_SECONDS - 1
    os.utime(lock, (old, old))  # that run died
    assert cached(path, folder) == whole(path)
    assert state.read_bytes() != before and not lock.exists()
