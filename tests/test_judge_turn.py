"""The turn-end pipeline: its rules in order, the five-field verdict, the backoff, the urgent
rule, state per session in the ledger, `judge turn`, `judge status` and `judge config`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from conftest import run_cli

from gitledger import judge
from gitledger.cli import cli
from gitledger.judge import JudgeConfig, TurnSignals, TurnState, TurnVerdict, decide_turn

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures" / "judge"))
from build import Transcript, bash, edit  # noqa: E402

GOOD = TurnVerdict(task_finished=True, impact="low", unsaved_work=False, reason="issue done")
NOT_YET = TurnVerdict(task_finished=False, impact="medium", unsaved_work=False, reason="mid-fix")


def signals(**overrides: Any) -> TurnSignals:
    base: dict[str, Any] = {
        "turn": 10,
        "in_progress": 0,
        "plan_items": 0,
        "plan_done_now": False,
        "long_task_finished": False,
        "longest_finished_turns": 0,
        "fill": 40.0,
        "idle_turns": 0,
        "turns_since_compaction": 3,
    }
    base.update(overrides)
    return TurnSignals(**base)


def decide(state: TurnState | None = None, verdict: TurnVerdict | None = None, **kw: Any) -> Any:
    return decide_turn(signals(**kw), state or TurnState("s"), JudgeConfig(), verdict)


# --- the rules in order --------------------------------------------------------------------


def test_no_candidate_is_no() -> None:
    assert decide().decision == "no"


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"plan_done_now": True, "plan_items": 3}, "every plan item"),
        ({"long_task_finished": True, "longest_finished_turns": 6}, "spanning 6 turns"),
        ({"fill": 70.0}, "context at 70%"),
        ({"idle_turns": 3}, "3 turns with no edit"),
        ({"turns_since_compaction": 25}, "25 turns since"),
    ],
)
def test_each_candidate_rule(kw: dict[str, Any], words: str) -> None:
    decision = decide(**kw)
    assert decision.decision == "candidate"
    assert any(words in c for c in decision.candidates)


@pytest.mark.parametrize(
    "kw",
    [{"fill": 69.9}, {"idle_turns": 2}, {"turns_since_compaction": 24}],
)
def test_just_below_each_threshold_is_no(kw: dict[str, Any]) -> None:
    assert decide(**kw).decision == "no"


def test_tasks_in_progress_come_first() -> None:
    decision = decide(verdict=GOOD, in_progress=1, fill=90.0, plan_done_now=True)
    assert decision.decision == "no" and "in progress" in decision.reason


def test_a_verdict_confirms_a_candidate() -> None:
    state = TurnState("s", deferrals=2)
    decision = decide(state, GOOD, idle_turns=4)
    assert decision.decision == "compact"
    assert state.deferrals == 0 and state.last_compaction_turn == 10


@pytest.mark.parametrize(
    "verdict",
    [
        NOT_YET,
        TurnVerdict(True, "medium", False, "r"),
        TurnVerdict(True, "low", True, "unsaved edits"),
    ],
)
def test_normal_confirmation_needs_finished_low_and_safe(verdict: TurnVerdict) -> None:
    assert decide(verdict=verdict, fill=75.0).decision == "defer"


def test_backoff_5_10_20_then_stays_at_20() -> None:
    state = TurnState("s")
    turn = 10
    waits = []
    for _ in range(4):
        decision = decide(state, NOT_YET, turn=turn, idle_turns=5)
        assert decision.decision == "defer"
        waits.append(state.cooldown_until - turn)
        # During the cooldown nothing is proposed, even with the rule still true.
        assert decide(state, None, turn=state.cooldown_until - 1, idle_turns=9).decision == "no"
        turn = state.cooldown_until
    assert waits == [5, 10, 20, 20]
    assert decide(state, GOOD, turn=turn, idle_turns=5).decision == "compact"
    assert state.deferrals == 0


def test_urgent_fill_needs_only_safe_and_impact_not_high() -> None:
    mid_task = TurnVerdict(False, "medium", False, "mid-task, but the window is nearly full")
    assert decide(verdict=mid_task, fill=85.0).decision == "compact"
    assert decide(verdict=mid_task, fill=84.9).decision == "defer"
    assert decide(verdict=TurnVerdict(False, "high", False, "r"), fill=90.0).decision == "defer"
    assert decide(verdict=TurnVerdict(True, "low", True, "r"), fill=90.0).decision == "defer"


def test_disabled_is_inert() -> None:
    state = TurnState("s")
    config = JudgeConfig(enabled=False)
    decision = decide_turn(signals(fill=99.0), state, config, GOOD)
    assert decision.decision == "off"
    assert state == TurnState("s")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"impact": "low", "unsaved_work": False, "reason": "r"}, "lacks task_finished"),
        ({"task_finished": True, "impact": "huge", "unsaved_work": False, "reason": "r"}, "impact"),
        (
            {"task_finished": "maybe", "impact": "low", "unsaved_work": False, "reason": "r"},
            "true or false",
        ),
        (
            {
                "task_finished": 1,
                "impact": "low",
                "unsaved_work": 0,
                "reason": "r",
                "urgency": "now",
            },
            "urgency",
        ),
    ],
)
def test_bad_verdicts_are_refused(raw: dict[str, Any], message: str) -> None:
    from gitledger.errors import InvalidInput

    with pytest.raises(InvalidInput, match=message):
        TurnVerdict.from_dict(raw)


# --- signals from a transcript ---------------------------------------------------------------


def test_signals_from_a_transcript(tmp_path: Path) -> None:
    from gitledger.transcripts import read_events

    t = Transcript().user("Build the parser and the lexer.")
    t.step(
        "",
        (
            "TodoWrite",
            {
                "todos": [
                    {"content": "parser", "status": "in_progress", "activeForm": "p"},
                    {"content": "lexer", "status": "pending", "activeForm": "l"},
                ]
            },
        ),
        tokens=50_000,
    )
    t.step("", edit("parser.py"))
    for _ in range(5):  # five quiet turns on the parser
        t.user("Keep going.")
        t.step("Still on the parser.", bash("pytest -q"))
    t.user("Finish up.")
    t.step(
        "",
        (
            "TodoWrite",
            {
                "todos": [
                    {"content": "parser", "status": "completed", "activeForm": "p"},
                    {"content": "lexer", "status": "completed", "activeForm": "l"},
                ]
            },
        ),
        tokens=150_000,
    )
    s = judge.turn_signals(read_events(t.write(tmp_path / "t.jsonl")))
    assert s.turn == 7 and s.in_progress == 0 and s.plan_items == 2
    assert s.plan_done_now and s.long_task_finished and s.longest_finished_turns == 7
    assert s.fill == 75.0
    assert s.idle_turns == 6 and s.turns_since_compaction == 7


def test_signals_count_failures_and_compactions(tmp_path: Path) -> None:
    from gitledger.transcripts import read_events

    t = Transcript().user("One.")
    t.step("", bash("pytest"), error=True)
    t.compact()
    t.user("Two.")
    t.step("Reading.", ("Read", {"file_path": "a"}))
    s = judge.turn_signals(read_events(t.write(tmp_path / "t.jsonl")))
    assert s.turn == 2 and s.turns_since_compaction == 1 and s.idle_turns == 1


# --- the commands ----------------------------------------------------------------------------


def invoke(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def quiet_session(tmp_path: Path, turns: int = 4) -> Path:
    t = Transcript().user("Look around.")
    t.step("", bash("ls"), tokens=60_000)
    for _ in range(turns - 1):
        t.user("And?")
        t.step("Looking.", ("Read", {"file_path": "README.md"}))
    return t.write(tmp_path / "quiet.jsonl")


def test_turn_command_candidate_then_defer_then_status(ledger: Any, tmp_path: Path) -> None:
    path = quiet_session(tmp_path)
    result = invoke("judge", "turn", "--transcript", str(path), "--session", "s1", "--json")
    data = json.loads(result.output)
    assert data["decision"] == "candidate" and data["signals"]["idle_turns"] == 4
    verdict = json.dumps(NOT_YET.to_dict())
    result = invoke(
        "judge", "turn", "--transcript", str(path), "--session", "s1", "--verdict", verdict
    )
    assert result.output.startswith("defer: ")
    state = judge.load_state(ledger, "s1")
    assert state.deferrals == 1 and state.cooldown_until == 4 + 5
    status = invoke("judge", "status")
    assert "s1: turn 4: defer" in status.output and "cooling down until turn 9" in status.output
    data = json.loads(invoke("judge", "status", "--json").output)
    assert data["sessions"][0]["session"] == "s1"
    assert ledger.store.tip("refs/gitledger/judge/s1") is not None


def test_turn_command_asking_twice_writes_once(ledger: Any, tmp_path: Path) -> None:
    path = quiet_session(tmp_path)
    invoke("judge", "turn", "--transcript", str(path), "--session", "s2")
    tip = ledger.store.tip("refs/gitledger/judge/s2")
    invoke("judge", "turn", "--transcript", str(path), "--session", "s2")
    assert ledger.store.tip("refs/gitledger/judge/s2") == tip


def test_turn_command_from_a_hook_payload(ledger: Any, tmp_path: Path) -> None:
    path = quiet_session(tmp_path)
    payload = {"session_id": "hook-1", "transcript_path": str(path), "cwd": str(tmp_path)}
    result = run_cli("judge", "turn", "--json", input=json.dumps(payload))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["session"] == "hook-1"
    assert ledger.store.tip("refs/gitledger/judge/hook-1") is not None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--verdict", "{not json"), "not JSON"),
        (("--verdict", "[]"), "JSON object"),
        (("--verdict", '{"task_finished": true}'), "lacks"),
        (("--session", "../escape"), "not usable"),
    ],
)
def test_turn_command_bad_input_changes_nothing(
    ledger: Any, tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    path = quiet_session(tmp_path)
    result = run_cli("judge", "turn", "--transcript", str(path), *args)
    assert result.returncode == 2 and message in result.stderr
    assert ledger.store.refs("refs/gitledger/judge/") == []


def test_turn_command_without_transcript_is_a_usage_error(ledger: Any) -> None:
    result = run_cli("judge", "turn", input="{}")
    assert result.returncode == 2 and "transcript" in result.stderr


def test_config_disables_everything(ledger: Any, tmp_path: Path) -> None:
    assert "enabled = False" in invoke("judge", "config", "enabled=false").output
    path = quiet_session(tmp_path)
    data = json.loads(
        invoke("judge", "turn", "--transcript", str(path), "--session", "s3", "--json").output
    )
    assert data["decision"] == "off"
    assert ledger.store.tip("refs/gitledger/judge/s3") is None
    assert "disabled" in invoke("judge", "status").output
    invoke("judge", "config", "enabled=true", "floor=40", "backoff=3,6")
    config = judge.load_config(ledger)
    assert config.enabled and config.floor == 40.0 and config.backoff == (3, 6)


@pytest.mark.parametrize(
    "setting",
    ["floor=abc", "floor=120", "nope=1", "enabled=maybe", "backoff=0", "novalue", "window=5"],
)
def test_config_refuses_bad_settings_and_keeps_the_old_ones(ledger: Any, setting: str) -> None:
    invoke("judge", "config", "floor=40")
    tip = ledger.store.tip(judge.CONFIG_REF)
    result = run_cli("judge", "config", "idle_turns=9", setting)
    assert result.returncode == 2, result.stderr
    assert ledger.store.tip(judge.CONFIG_REF) == tip
    assert judge.load_config(ledger).idle_turns == 3


def test_a_confirmed_compaction_commits_a_checkpoint(ledger: Any, tmp_path: Path) -> None:
    path = quiet_session(tmp_path)
    verdict = json.dumps(GOOD.to_dict())
    result = invoke(
        "judge", "turn", "--transcript", str(path), "--session", "s5", "--verdict", verdict
    )
    assert result.output.startswith("compact: ")
    assert "Checkpoint: fuse snapshot" in result.output
    from gitledger import fuse

    saved = fuse.load(ledger, "s5")
    assert saved is not None and saved.trigger == "turn-boundary"
    state = judge.load_state(ledger, "s5")
    assert state.last_compaction_turn == 4 and state.deferrals == 0


def test_stop_hook_asks_the_agent_for_the_verdict_once(ledger: Any, tmp_path: Path) -> None:
    path = quiet_session(tmp_path)
    payload = {"session_id": "s6", "transcript_path": str(path), "cwd": str(tmp_path)}
    result = run_cli("judge", "turn", "--hook", input=json.dumps(payload))
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["decision"] == "block"
    assert "gitledger judge turn --session s6" in out["reason"] and "--verdict" in out["reason"]
    # Claude Code is already continuing because of a Stop hook: do not ask again.
    again = run_cli(
        "judge", "turn", "--hook", input=json.dumps({**payload, "stop_hook_active": True})
    )
    assert again.returncode == 0 and again.stdout == ""


def test_stop_hook_never_fails_the_agent() -> None:
    result = run_cli("judge", "turn", "--hook", input="{not json")
    assert result.returncode == 0
    assert "nothing decided" in result.stderr


def test_a_damaged_judge_state_reads_as_fresh_and_the_next_write_repairs_it(tmp_path: Path) -> None:
    from gitledger.ledger import Ledger

    ledger = Ledger.init(tmp_path / "ledger")
    refname = judge.judge_ref("s-1")
    with ledger.store.lock():
        ledger.store.write(
            refname, {"state.json": b"{not json"}, "damaged\n", ledger.author(), [], None
        )
    assert judge.load_state(ledger, "s-1").model_spend == {}
    state = judge.record_spend(ledger, "s-1", input_tokens=5, output_tokens=1)
    assert state.model_spend == {"calls": 1, "failures": 0, "input_tokens": 5, "output_tokens": 1}
    assert judge.load_state(ledger, "s-1").model_spend["calls"] == 1
    # The settings are read straight from the store, the same document reader.
    judge.save_config(ledger, {"floor": "40"})
    assert judge.config_at(ledger.store.path).floor == 40.0
