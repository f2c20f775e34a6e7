"""The step judge: each rule on small fixtures, the gate (floor, hysteresis, compaction), the
transcript adapter and `gitledger judge step` as users and hooks run it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import run_cli

from gitledger import Ledger, judge
from gitledger.cli import cli
from gitledger.judge import NEXT, SAME, Call, Message, Step, StepContext, calls

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures" / "judge"))
from build import Transcript  # noqa: E402
from build import bash as t_bash  # noqa: E402
from build import edit as t_edit  # noqa: E402
from build import read as t_read  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "judge"
REQUEST = Message("user", "Fix issues 1 to 4 from ISSUES.md, one commit each.")


def said(text: str, *calls: Call) -> Message:
    return Message("assistant", text, calls)


def edit(path: str) -> Call:
    return Call("Edit", {"file_path": path, "old_string": "a", "new_string": "b"})


def commit(message: str = "Issue 1") -> Call:
    return Call("Bash", {"command": f"git commit -qam '{message}'"})


def rules(history: list[Message], text: str, *calls: Call) -> judge.Verdict:
    return judge.judge_rules([REQUEST, *history], Step(text, calls))


# --- rule 1: asking or proposing is SAME -------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Issue 1 passes. Should I move on to issue 2?",
        "Issue 1 is done. Would you like me to start issue 2 now?",
        "Issue 1 passes. I could also refactor the lexer if you'd like.",
        "Issue 1 passes, now issue 2. Let me know if the API change is fine.",
    ],
)
def test_asking_or_proposing_is_same(text: str) -> None:
    verdict = rules([said("Starting with issue 1.")], text, Call("Read", {"file_path": "x"}))
    assert verdict.decision == SAME
    assert verdict.rule == "asks"


def test_ask_user_question_tool_is_same() -> None:
    verdict = rules([], "Issue 1 done. Now issue 2.", Call("AskUserQuestion", {"questions": []}))
    assert verdict.decision == SAME and verdict.rule == "asks"


# --- rule 2: a finished piece and a move to another is NEXT ------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Issue 1 passes. Now issue 2.",
        "Issue 1 is done: all five tests pass. On to Issue 2 (the lexer).",
        "Issue 1 is committed. Issue 2: the lexer drops escapes.",
        "Issue 1's tests pass. Committing, then moving on to issue 2.",
        "Task 1 confirmed: answer.txt has the number. Moving to task 2.",
        "Clean. Issue 2: the lexer.",
        "第 1 个问题已经提交，开始第 2 个。",
        "Issue 1 passes; I'm committing 1 and starting 2.",
    ],
)
def test_finish_and_move_on_is_next(text: str) -> None:
    verdict = rules([said("Starting with issue 1.", edit("a.py"))], text, bash_call())
    assert verdict.decision == NEXT, verdict
    assert verdict.rule == "moves-on"


def bash_call(command: str = "pytest -q") -> Call:
    return Call("Bash", {"command": command})


def test_starting_the_next_piece_right_after_a_commit_is_next() -> None:
    history = [said("Now issue 1.", edit("a.py")), said("", commit("Issue 1"))]
    verdict = rules(history, "Issue 2 is the biggest, so I'm reading its tests first.", bash_call())
    assert verdict.decision == NEXT and verdict.rule == "starts-next"


def test_starting_the_next_piece_right_after_saying_done_is_next() -> None:
    history = [said("Now issue 1.", edit("a.py")), said("Issue 1 done.", bash_call())]
    verdict = rules(history, "Issue 2: the lexer.", bash_call("cat lexer.py"))
    assert verdict.decision == NEXT


def test_a_new_piece_after_silent_work_is_same() -> None:
    # The commit closed issue 1, but files were changed since without a word: issue 2 had
    # already begun, and this step is inside it.
    history = [
        said("Now issue 1.", edit("a.py")),
        said("", commit("Issue 1")),
        said("", edit("b.py")),
    ]
    verdict = rules(history, "Issue 2 needs an import in b.py. Adding it.", edit("b.py"))
    assert verdict.decision == SAME


def test_naming_the_piece_in_hand_again_is_same() -> None:
    history = [said("Issue 1 passes. Now issue 2.", bash_call()), said("", edit("b.py"))]
    verdict = rules(history, "Status: issue 1 is done; I'm on issue 2.", bash_call())
    assert verdict.decision == SAME


def test_a_move_announced_for_later_is_same() -> None:
    history = [said("Now issue 1.", edit("a.py"))]
    text = "Issue 1 passes. I'll run the full suite before moving on to issue 2."
    verdict = rules(history, text, bash_call())
    assert verdict.decision == SAME
    assert verdict.unsure  # a piece finished: the model judge may be asked


def test_the_last_piece_finishing_is_same() -> None:
    history = [said("Issue 3 passes. Now issue 4.", edit("d.py"))]
    verdict = rules(
        history, "Issue 4 passes, so all four are done. Final full-suite run.", bash_call()
    )
    assert verdict.decision == SAME


def test_a_failing_piece_is_not_finished() -> None:
    history = [said("Now issue 1.", edit("a.py"))]
    verdict = rules(
        history, "Issue 1 still fails on Windows paths. Now the path helper.", bash_call()
    )
    assert verdict.decision == SAME


def test_work_inside_a_piece_is_same_and_sure() -> None:
    verdict = rules([said("Now issue 1.")], "The parser drops the escape. Fixing it.", edit("a.py"))
    assert verdict.decision == SAME and not verdict.unsure


# --- rule 3: the task list ---------------------------------------------------------------


def task_create(subject: str) -> Call:
    return Call("TaskCreate", {"subject": subject, "description": subject})


def task_update(task: str, status: str) -> Call:
    return Call("TaskUpdate", {"taskId": task, "status": status})


def test_task_list_item_completed_while_the_next_starts_is_next() -> None:
    history = [
        said("", task_create("parser"), task_create("lexer"), task_update("1", "in_progress"))
    ]
    verdict = rules(
        history,
        "Updating the list.",
        task_update("1", "completed"),
        task_update("2", "in_progress"),
    )
    assert verdict.decision == NEXT and verdict.rule == "task-list"


def test_task_list_item_completed_alone_is_same() -> None:
    history = [
        said("", task_create("parser"), task_create("lexer"), task_update("1", "in_progress"))
    ]
    verdict = rules(history, "Marking the parser task complete.", task_update("1", "completed"))
    assert verdict.decision == SAME


def test_todowrite_handover_is_next() -> None:
    def todos(first: str, second: str) -> Call:
        return Call(
            "TodoWrite",
            {
                "todos": [
                    {"content": "Fix parser", "status": first, "activeForm": "Fixing parser"},
                    {"content": "Fix lexer", "status": second, "activeForm": "Fixing lexer"},
                ]
            },
        )

    history = [said("", todos("in_progress", "pending"))]
    assert rules(history, "Parser fixed.", todos("completed", "in_progress")).decision == NEXT
    assert rules(history, "Parser fixed.", todos("completed", "pending")).decision == SAME


# --- reading calls -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        ("cat a.py | head -5", "read"),
        ("git status && git diff", "read"),
        ("sed -n 1,20p a.py", "read"),
        ("sed -i s/a/b/ a.py", "write"),
        ("echo x > a.py", "write"),
        ("pytest -q 2>&1 | tail -3", "other"),
        ("git add -A && git commit -m 'Issue 1'", "commit"),
        ("python3 - <<'E'\nopen('a').write('b')\nE", "write"),
    ],
)
def test_bash_commands_are_classified(command: str, kind: str) -> None:
    assert calls._kind(Call("Bash", {"command": command})) == kind


# --- the gate ----------------------------------------------------------------------------


def ctx(**overrides: object) -> StepContext:
    base: dict[str, object] = {
        "history": (REQUEST, said("Now issue 1.", edit("a.py"))),
        "step": Step("Issue 1 passes. Now issue 2.", (bash_call(),)),
        "context_tokens": 100_000,
        "window": 200_000,
    }
    base.update(overrides)
    return StepContext(**base)  # type: ignore[arg-type]


def test_a_step_past_the_floor_is_judged() -> None:
    verdict = judge.judge_step(ctx())
    assert verdict.judged and verdict.decision == NEXT and verdict.fill == 50.0


@pytest.mark.parametrize(
    ("overrides", "rule"),
    [
        ({"first_in_turn": True}, "first-step"),
        ({"step": Step("", (bash_call(),))}, "no-text"),
        ({"ends_turn": True}, "end-of-turn"),
        ({"context_tokens": 60_000}, "below-floor"),
        ({"context_tokens": None}, "no-usage"),
        ({"after_compaction": True, "work_since_compaction": False}, "after-compaction"),
    ],
)
def test_not_judged(overrides: dict[str, object], rule: str) -> None:
    verdict = judge.judge_step(ctx(**overrides))
    assert not verdict.judged and verdict.decision == SAME and verdict.rule == rule


def test_floor_zero_judges_regardless_of_fill() -> None:
    assert judge.judge_step(ctx(context_tokens=None), floor=0).decision == NEXT
    assert judge.judge_step(ctx(context_tokens=1_000), floor=0).decision == NEXT


def test_floor_boundaries() -> None:
    assert not judge.judge_step(ctx(context_tokens=69_999), floor=35).judged
    assert judge.judge_step(ctx(context_tokens=70_000), floor=35).judged
    assert not judge.judge_step(ctx(context_tokens=100_000), floor=60).judged


def test_hysteresis_after_a_compaction_that_left_the_context_above_the_floor() -> None:
    # The compaction left 50% (above the 35% floor): judging waits for 55%.
    after = {
        "after_compaction": True,
        "work_since_compaction": True,
        "post_compaction_tokens": 100_000,
    }
    assert not judge.judge_step(ctx(context_tokens=108_000, **after)).judged
    assert judge.judge_step(ctx(context_tokens=110_000, **after)).judged
    # A compaction that went below the floor leaves the floor where it was.
    low = {**after, "post_compaction_tokens": 40_000}
    assert judge.judge_step(ctx(context_tokens=71_000, **low)).judged


def test_after_compaction_work_reopens_judging() -> None:
    verdict = judge.judge_step(ctx(after_compaction=True, work_since_compaction=True))
    assert verdict.judged


# --- transcripts -------------------------------------------------------------------------


def test_contexts_from_a_claude_code_transcript(tmp_path: Path) -> None:
    from gitledger.transcripts import read_events

    t = Transcript().user("Fix issues 1 and 2.")
    t.step("Starting with issue 1.", t_read("a.py"), tokens=80_000)
    t.step("", t_edit("a.py"), tokens=81_000)
    t.step("", ("Task", {"description": "helper"}), sidechain=True)
    t.step("Issue 1 passes. Now issue 2.", t_bash("git commit -qam 'Issue 1'"), tokens=82_000)
    t.step("Both are done.", tokens=83_000, results=False)
    contexts = judge.contexts_from_events(read_events(t.write(tmp_path / "t.jsonl")))
    assert [c.step.text for c in contexts] == [
        "Starting with issue 1.",
        "",
        "Issue 1 passes. Now issue 2.",
        "Both are done.",
    ]
    first, _, boundary, last = contexts
    assert first.first_in_turn and not boundary.first_in_turn
    assert [c.name for c in first.step.calls] == ["Read"]
    assert boundary.context_tokens == 82_000 and boundary.window == 200_000
    assert last.ends_turn and not boundary.ends_turn
    assert all(m.text != "TOOL-OUTPUT-NEVER-READ" for m in boundary.history)
    assert judge.judge_step(boundary).decision == NEXT
    assert not judge.judge_step(last).judged


def test_one_response_is_one_step_even_with_results_between_its_blocks(tmp_path: Path) -> None:
    # Claude Code writes each block of a response as a record, and when the calls run one by
    # one each result lands before the next block: the response is still one step.
    from gitledger.transcripts import read_events

    t = Transcript().user("Fix issues 1 and 2.")
    t.step("Starting with issue 1.", t_read("a"))
    t.step("", t_bash("git commit -qam 'Issue 1'"))
    t.step(
        "Issue 1 is done. Now issue 2.",
        ("TaskUpdate", {"taskId": "1", "status": "completed"}),
        t_read("b"),
        interleaved=True,
    )
    contexts = judge.contexts_from_events(read_events(t.write(tmp_path / "t.jsonl")))
    assert [c.step.text for c in contexts][-1] == "Issue 1 is done. Now issue 2."
    assert [c.name for c in contexts[-1].step.calls] == ["TaskUpdate", "Read"]
    assert judge.judge_step(contexts[-1], floor=0).decision == NEXT


def test_a_compaction_starts_a_new_history(tmp_path: Path) -> None:
    contexts = judge.contexts_from_events(
        __import__("gitledger.transcripts", fromlist=["read_events"]).read_events(
            FIXTURES / "compacted.jsonl"
        )
    )
    last = contexts[-1]
    assert last.after_compaction and not last.work_since_compaction
    assert last.history[0].role == "summary"
    assert last.post_compaction_tokens == 30_000


def test_a_session_past_200k_tokens_has_a_1m_window(tmp_path: Path) -> None:
    t = Transcript().user("Go.")
    t.step("", t_read("a"), tokens=250_000)
    t.step("Reading on.", t_read("b"), tokens=400_000)
    context = judge.last_step_context(t.write(tmp_path / "big.jsonl"))
    assert context is not None and context.window == 1_000_000 and context.fill == 40.0


# --- the command ---------------------------------------------------------------------------


def invoke(*args: str, input: str | None = None) -> object:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def test_step_command_on_a_transcript() -> None:
    result = invoke("judge", "step", "--transcript", str(FIXTURES / "boundary.jsonl"))
    assert result.exit_code == 0  # type: ignore[attr-defined]
    assert result.output.startswith("NEXT: ")  # type: ignore[attr-defined]
    result = invoke("judge", "step", "--transcript", str(FIXTURES / "mid_piece.jsonl"), "--json")
    data = json.loads(result.output)  # type: ignore[attr-defined]
    assert data["decision"] == "SAME" and data["judged"] is True and data["by"] == "rules"


def test_step_command_floor_option() -> None:
    path = str(FIXTURES / "boundary.jsonl")  # the boundary step is at 45%
    data = json.loads(
        invoke("judge", "step", "--transcript", path, "--floor", "50", "--json").output
    )  # type: ignore[attr-defined]
    assert data["judged"] is False and data["rule"] == "below-floor"
    data = json.loads(
        invoke("judge", "step", "--transcript", path, "--floor", "0", "--json").output
    )  # type: ignore[attr-defined]
    assert data["decision"] == "NEXT"


def test_step_command_reads_a_hook_payload_as_a_subprocess() -> None:
    payload = {"session_id": "s1", "transcript_path": str(FIXTURES / "boundary.jsonl")}
    result = run_cli("judge", "step", "--json", input=json.dumps(payload))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["decision"] == "NEXT"


def test_step_command_judges_a_step_handed_over_by_the_hook() -> None:
    payload = {
        "transcript_path": str(FIXTURES / "mid_piece.jsonl"),
        "step": {
            "text": "Issue 2 passes. Now issue 3.",
            "calls": [{"name": "Bash", "input": {"command": "pytest -q"}}],
            "context_tokens": 120_000,
        },
    }
    result = invoke("judge", "step", "--json", input=json.dumps(payload))
    data = json.loads(result.output)  # type: ignore[attr-defined]
    assert data["decision"] == "NEXT" and data["fill"] == 60.0


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        ((), "not json", "not JSON"),
        ((), "[1, 2]", "JSON object"),
        ((), "{}", "Nothing to judge"),
        (("--transcript", "/nonexistent/t.jsonl"), None, "No transcript"),
        ((), '{"step": "text"}', "must be an object"),
        ((), '{"step": {"text": "x", "calls": [{"input": {}}]}}', "needs a string 'name'"),
    ],
)
def test_step_command_refuses_bad_input(
    args: tuple[str, ...], stdin: str | None, message: str
) -> None:
    result = run_cli("judge", "step", *args, input=stdin)
    assert result.returncode == 2
    assert message in result.stderr
    assert result.stdout == ""


def test_step_command_with_the_judge_disabled(ledger: object) -> None:
    assert invoke("judge", "config", "enabled=false").exit_code == 0  # type: ignore[attr-defined]
    result = invoke("judge", "step", "--transcript", str(FIXTURES / "boundary.jsonl"), "--json")
    data = json.loads(result.output)  # type: ignore[attr-defined]
    assert data["decision"] == "SAME" and data["rule"] == "off" and not data["judged"]


def test_step_command_environment_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITLEDGER_JUDGE", "0")
    result = invoke("judge", "step", "--transcript", str(FIXTURES / "boundary.jsonl"))
    assert "disabled" in result.output  # type: ignore[attr-defined]


def test_every_judge_command_has_help() -> None:
    for name in ("step", "turn", "status", "config"):
        result = invoke("judge", name, "--help")
        assert result.exit_code == 0 and "--json" in result.output  # type: ignore[attr-defined]


def test_step_command_takes_a_function_hooks_messages() -> None:
    """What the Claude Code function hook sends: $.session.messages() and the step."""
    messages = [
        {"role": "user", "text": "Do tasks 1 and 2, one at a time.", "toolUses": []},
        {"role": "assistant", "text": "Task 1.", "toolUses": []},
        {
            "role": "assistant",
            "text": "",
            "toolUses": [{"tool_use_id": "t1", "tool": "Write", "input": {"file_path": "a"}}],
        },
        {
            "role": "user",
            "text": "",
            "toolUses": [],
            "toolResults": [{"tool_use_id": "t1", "text": ""}],
        },
        # The conversation may already hold the step being judged: it is not history.
        {"role": "assistant", "text": "Task 1 done. Moving to task 2.", "toolUses": []},
        {
            "role": "assistant",
            "text": "",
            "toolUses": [{"tool": "Read", "input": {"file_path": "b"}}],
        },
    ]
    step = {
        "text": "Task 1 done. Moving to task 2.",
        "calls": [{"name": "Read", "input": {"file_path": "b"}}],
    }
    payload = {"messages": messages, "step": step, "context_tokens": 90_000, "window": 200_000}
    data = json.loads(invoke("judge", "step", "--json", input=json.dumps(payload)).output)  # type: ignore[attr-defined]
    assert data["decision"] == "NEXT" and data["fill"] == 45.0
    below = {**payload, "context_tokens": 20_000}
    data = json.loads(invoke("judge", "step", "--json", input=json.dumps(below)).output)  # type: ignore[attr-defined]
    assert data["rule"] == "below-floor"
    first = {**payload, "first_in_turn": True}
    data = json.loads(invoke("judge", "step", "--json", input=json.dumps(first)).output)  # type: ignore[attr-defined]
    assert data["rule"] == "first-step"
    result = run_cli("judge", "step", input=json.dumps({**payload, "messages": "nope"}))
    assert result.returncode == 2 and "messages" in result.stderr


def test_checkpoint_at_a_boundary_commits_one_fuse_snapshot(ledger: object, tmp_path: Path) -> None:
    payload = {
        "session_id": "sess-cp",
        "transcript_path": str(FIXTURES / "boundary.jsonl"),
        "cwd": str(tmp_path),
    }
    first = run_cli("judge", "step", "--checkpoint", "--json", input=json.dumps(payload))
    assert first.returncode == 0, first.stderr
    commit = json.loads(first.stdout)["checkpoint"]
    assert commit and ledger.store.tip("refs/gitledger/fuse/sess-cp") == commit  # type: ignore[attr-defined]
    # A command hook runs once per tool call of the step: the same step checkpoints once.
    again = run_cli("judge", "step", "--checkpoint", "--json", input=json.dumps(payload))
    assert json.loads(again.stdout)["checkpoint"] is None
    assert ledger.store.tip("refs/gitledger/fuse/sess-cp") == commit  # type: ignore[attr-defined]
    from gitledger import fuse

    saved = fuse.load(ledger, "sess-cp")  # type: ignore[arg-type]
    assert saved is not None and saved.trigger == "boundary"


def test_checkpoint_names_the_agent_given_by_flag(ledger: Ledger, tmp_path: Path) -> None:
    # --agent (global, before or after the command) reaches the checkpoint's ledger, on the
    # fast path and through click alike: the snapshot goes with the task that agent holds.
    from gitledger import fuse

    mine, theirs = ledger.create("Pinned agent's task"), ledger.create("Another agent's task")
    ledger.claim(mine.id, agent="pinned")
    ledger.claim(theirs.id, agent="other")
    for n, where in enumerate(
        (("--agent", "pinned", "judge", "step"), ("judge", "step", "--agent=pinned"))
    ):
        payload = {
            "session_id": f"sess-agent-{n}",
            "transcript_path": str(FIXTURES / "boundary.jsonl"),
            "cwd": str(tmp_path),
        }
        out = run_cli(*where, "--checkpoint", "--json", input=json.dumps(payload))
        assert out.returncode == 0, out.stderr
        saved = fuse.load(ledger, f"sess-agent-{n}")
        assert saved is not None and saved.snapshot.task_id == mine.id


def test_checkpoint_is_not_taken_on_same(ledger: object) -> None:
    payload = {"session_id": "sess-same", "transcript_path": str(FIXTURES / "mid_piece.jsonl")}
    result = run_cli("judge", "step", "--checkpoint", "--json", input=json.dumps(payload))
    assert json.loads(result.stdout)["checkpoint"] is None
    assert ledger.store.refs("refs/gitledger/fuse/") == []  # type: ignore[attr-defined]


def test_hook_mode_never_fails_the_agent() -> None:
    result = run_cli("judge", "step", "--hook", input="not json")
    assert result.returncode == 0
    assert "judged SAME; the agent goes on" in result.stderr and result.stdout == ""


def test_step_command_on_a_payload_recorded_from_claude_code() -> None:
    """What the function-hook module sent from a live Claude Code 2.1.332 session (stand-in
    model): by then the conversation holds the step and its tool result too."""
    raw = (FIXTURES / "function_hook_payload.json").read_text()
    data = json.loads(invoke("judge", "step", "--json", input=raw).output)  # type: ignore[attr-defined]
    assert data["decision"] == "NEXT" and data["judged"] is True
    assert data["fill"] == 45.5


# --- pieces named by short codes, headings, checkups and recaps ----------------------------


@pytest.mark.parametrize(
    "text",
    [
        "R2 checked, the suite is green. Launch R3 (the parser cache).",
        "#4 is fixed. Now fix #5, the retry loop.",
        "Item 1 is complete. Now let me address item 2, the flaky timer.",
    ],
)
def test_short_codes_and_verbs_of_taking_up_a_piece(text: str) -> None:
    verdict = rules([said("Starting with the first one.")], text, Call("Read", {"file_path": "x"}))
    assert verdict.decision == NEXT, verdict


def test_a_new_heading_after_changing_files_for_the_last_one_is_next() -> None:
    history = [
        said("K1 — the cache keeps stale keys:", edit("cache.py")),
        said("", edit("cache.py")),
    ]
    verdict = rules(
        history, "K2 — the retry loop never backs off:", Call("Read", {"file_path": "r"})
    )
    assert verdict.decision == NEXT and verdict.rule == "next-heading"


def test_a_new_heading_without_any_change_for_the_last_one_is_not_next() -> None:
    history = [said("K1 — the cache keeps stale keys:", Call("Read", {"file_path": "c"}))]
    verdict = rules(
        history, "K2 — the retry loop never backs off:", Call("Read", {"file_path": "r"})
    )
    assert verdict.decision == SAME


def test_a_heading_for_a_piece_of_the_same_group_is_not_a_move() -> None:
    history = [said("K1/K2 — both in the cache:", edit("cache.py"))]
    verdict = rules(history, "K2 — now the eviction half:", Call("Read", {"file_path": "c"}))
    assert verdict.decision == SAME


def test_a_piece_mentioned_inside_a_paragraph_is_not_a_heading() -> None:
    history = [said("Starting with step 2.", edit("a.py")), said("Step 2 works.")]
    verdict = rules(
        history,
        "Looks right. Let me check one more path. Step 4 reads this value too, so I will look.",
        Call("Read", {"file_path": "b"}),
    )
    assert verdict.decision == SAME


def test_turning_to_a_final_check_is_not_a_move() -> None:
    history = [said("Phase 3: the writer.", edit("w.py")), said("Phase 3 done.")]
    verdict = rules(history, "Phase 4 — final verification of everything.", t_call_bash("make"))
    assert verdict.decision == SAME and verdict.rule == "checkup" and verdict.unsure


def test_a_list_of_pieces_is_a_recap() -> None:
    verdict = rules(
        [said("Starting with task 1.", edit("a.py"))],
        "Task 1 is committed. What is left:\n- Task 2: the parser\n- Task 3: the docs",
        Call("Read", {"file_path": "x"}),
    )
    assert verdict.decision == SAME and verdict.rule == "recap"


def t_call_bash(command: str) -> Call:
    return Call("Bash", {"command": command})


def test_a_word_joined_by_a_hyphen_is_not_a_finishing_claim() -> None:
    assert judge.completions("K4 — count the spans in the pre-pass first:") == []


def test_then_a_piece_in_a_sentence_about_later_is_a_plan_not_a_move() -> None:
    assert judge.started_pieces("R1 is in review; I will check its diff, then R2.") == []
    assert judge.started_pieces("Committing, then moving on to R2.") == ["r2"]
    history = [said("R1 is running. I will check its diff, then R2 after it.")]
    verdict = rules(history + [said("R1 verified, all green.")], "Launch R2.", t_call_bash("ls"))
    assert verdict.decision == NEXT


def todo(*items: tuple[str, str]) -> Call:
    return Call("TodoWrite", {"todos": [{"content": c, "status": s} for c, s in items]})


def test_opening_the_next_asked_for_item_right_after_completing_one_is_next() -> None:
    request = Message("user", "Make the parser keep comments, and add a benchmark for large files.")
    history = [
        request,
        said("Starting.", todo(("Parser keeps comments", "in_progress"), ("Benchmark", "pending"))),
        said("", edit("parser.py")),
        said(
            "",
            todo(("Parser keeps comments", "completed"), ("Benchmark large files", "in_progress")),
        ),
        said("", t_call_bash("make build")),
    ]
    verdict = judge.judge_rules(history, Step("Now the benchmark.", (edit("bench.py"),)))
    assert verdict.decision == NEXT and verdict.rule == "list-then-start"


def test_an_item_of_the_assistants_own_breakdown_is_not_a_piece_asked_for() -> None:
    request = Message("user", "Make the parser keep comments.")
    history = [
        request,
        said("Plan.", todo(("Lexer tokens", "in_progress"), ("Grammar rule", "pending"))),
        said("", edit("lexer.py")),
        said("", todo(("Lexer tokens", "completed"), ("Grammar rule", "in_progress"))),
    ]
    verdict = judge.judge_rules(history, Step("Now the grammar rule.", (edit("grammar.py"),)))
    assert verdict.decision == SAME


def test_after_the_last_item_completes_nothing_is_next() -> None:
    request = Message("user", "Make the parser keep comments.")
    history = [
        request,
        said("", todo(("Parser keeps comments", "in_progress"))),
        said("", todo(("Parser keeps comments", "completed"))),
    ]
    verdict = judge.judge_rules(history, Step("Now a last look at the parser.", (edit("p.py"),)))
    assert verdict.decision == SAME


def test_a_piece_in_brackets_after_words_of_moving_on() -> None:
    assert judge.started_pieces("All green. Now the docs pass (K12) and its examples:") == ["k12"]
    verdict = rules(
        [said("K11 — the cache:", edit("c.py"))], "All green. Now docs (K12):", edit("d")
    )
    assert verdict.decision == NEXT


def test_turning_to_the_persons_question_after_work_is_next() -> None:
    history = [
        Message("user", "Make the exporter skip empty rows."),
        said("", edit("export.py")),
        said("Tests pass."),
        Message("user", "Does it also skip rows of spaces?", queued=True),
    ]
    verdict = judge.judge_rules(
        history, Step("To answer your question: not yet.", (read_call("e"),))
    )
    assert verdict.decision == NEXT and verdict.rule == "answers"


def test_answering_the_only_question_of_the_turn_is_not_a_move() -> None:
    history = [
        Message("user", "Why does the exporter skip rows?"),
        said("", read_call("export.py")),
    ]
    verdict = judge.judge_rules(
        history, Step("To answer your question: a filter.", (read_call("f"),))
    )
    assert verdict.decision == SAME


def read_call(path: str) -> Call:
    return Call("Read", {"file_path": path})


def test_opening_new_work_after_changes_is_unsure_not_next() -> None:
    history = [
        Message("user", "Speed up the importer and document the flags."),
        said("Profiling the importer loop.", edit("importer.py")),
        said("", edit("importer.py")),
    ]
    fresh = judge.judge_rules(history, Step("Now the README section on flags.", (edit("R.md"),)))
    assert fresh.decision == SAME and fresh.unsure
    same_words = judge.judge_rules(history, Step("Now the importer loop again.", (edit("i.py"),)))
    assert same_words.decision == SAME and not same_words.unsure


# --- the session's model for unsure steps (the function hook's side) ----------------------


def test_step_prompt_is_given_for_unsure_steps_only() -> None:
    payload = {
        "messages": [
            {
                "role": "user",
                "text": "Speed up the importer and document the flags.",
                "toolUses": [],
            },
            {
                "role": "assistant",
                "text": "Profiling the importer loop.",
                "toolUses": [{"tool": "Edit", "input": {"file_path": "importer.py"}}],
            },
        ],
        "step": {
            "text": "Now the README section on flags.",
            "calls": [{"name": "Edit", "input": {}}],
        },
        "context_tokens": 90_000,
        "window": 200_000,
    }
    out = invoke("judge", "step", "--json", "--prompt", input=json.dumps(payload))
    data = json.loads(out.output)  # type: ignore[attr-defined]
    assert data["decision"] == SAME and data["unsure"] is True
    assert data["system"].startswith("You judge one step")
    assert "Now the README section on flags." in data["prompt"]
    assert "Speed up the importer" in data["prompt"]
    sure = {
        **payload,
        "step": {"text": "Profiling more.", "calls": [{"name": "Read", "input": {}}]},
    }
    data = json.loads(invoke("judge", "step", "--json", "--prompt", input=json.dumps(sure)).output)  # type: ignore[attr-defined]
    assert data["unsure"] is False and "prompt" not in data


def test_model_spend_is_counted_per_session_and_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITLEDGER_DIR", str(tmp_path / "ledger"))
    for args in (
        ["--input-tokens", "1200", "--output-tokens", "30"],
        ["--failed"],
        ["--input-tokens", "800", "--output-tokens", "10"],
    ):
        assert invoke("judge", "spend", "--session", "s-1", *args).exit_code == 0  # type: ignore[attr-defined]
    data = json.loads(invoke("judge", "status", "--json").output)  # type: ignore[attr-defined]
    assert data["model_spend"] == {
        "calls": 3,
        "failures": 1,
        "input_tokens": 2000,
        "output_tokens": 40,
    }
    shown = invoke("judge", "status").output  # type: ignore[attr-defined]
    assert "model calls 3 (1 failed), 2,000 tokens in, 40 out" in shown


def test_bad_spend_is_refused_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITLEDGER_DIR", str(tmp_path / "ledger"))
    bad = CliRunner().invoke(cli, ["judge", "spend", "--session", "../x", "--input-tokens", "5"])
    assert bad.exit_code == 2
    negative = CliRunner().invoke(cli, ["judge", "spend", "--session", "s", "--input-tokens", "-1"])
    assert negative.exit_code == 2
    assert not (tmp_path / "ledger").exists()  # refused before a ledger was made


def test_session_model_setting_turns_the_model_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITLEDGER_DIR", str(tmp_path / "ledger"))
    invoke("init")
    out = invoke("judge", "config", "session_model=false", "--json")
    assert json.loads(out.output)["session_model"] is False  # type: ignore[attr-defined]
    assert "off (session_model=false)" in invoke("judge", "status").output  # type: ignore[attr-defined]


def test_a_function_hook_conversation_past_one_mib_is_still_judged() -> None:
    from conftest import run_cli

    filler = [
        {
            "role": "assistant",
            "text": "Reading " + "x" * 1_000,
            "toolUses": [{"tool": "Read", "input": {}}],
        }
        for _ in range(2_500)
    ]
    payload = {
        "messages": [{"role": "user", "text": "Fix issues 1 and 2.", "toolUses": []}, *filler],
        "step": {"text": "Issue 1 passes. Now issue 2.", "calls": [{"name": "Read", "input": {}}]},
        "context_tokens": 90_000,
        "window": 200_000,
    }
    raw = json.dumps(payload)
    assert len(raw) > 2 << 20
    out = run_cli("judge", "step", "--json", input=raw)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["judged"] is True


def test_going_down_the_list_the_person_approved_is_next() -> None:
    findings = (
        "Review done.\n\n**1. The cache key ignores the locale.** `cache.py:40` builds it.\n\n"
        "**2. The retry loop never backs off.** `net.py:12` sleeps a fixed second.\n"
    )
    history = [
        Message("user", "Review the branch."),
        said(findings),
        Message("user", "fix both"),
        said("The cache key first.", Call("Edit", {"file_path": "src/cache.py"})),
    ]
    verdict = judge.judge_rules(history, Step("Now the retry loop: back off.", (read_call("n"),)))
    assert verdict.decision == NEXT and verdict.rule == "list-item"
    # Still on the first item: not a move.
    same = judge.judge_rules(history, Step("Now the cache key and the locale.", (edit("c"),)))
    assert same.decision == SAME


def test_a_long_list_is_a_plan_not_pieces_asked_for() -> None:
    plan = "Plan:\n" + "".join(f"- step about part{i} with words w{i}a w{i}b\n" for i in range(12))
    history = [
        Message("user", "Build the exporter."),
        said(plan),
        Message("user", "yes"),
        said("", Call("Edit", {"file_path": "part1.py"})),
    ]
    verdict = judge.judge_rules(history, Step("Now part7 w7a w7b.", (edit("p7"),)))
    assert verdict.rule != "list-item"


def test_turning_to_the_next_piece_a_request_joins_with_then_is_next() -> None:
    request = Message(
        "user",
        "Open a tracker ticket for the flaky upload test, then link that ticket in the release notes.",
    )
    history = [
        request,
        said("", Call("mcp__tracker__create_ticket", {"title": "Flaky upload test"})),
    ]
    step = Step("Opened TICK-12. Now let me link it in the release notes.", (read_call("n"),))
    verdict = judge.judge_rules(history, step)
    assert verdict.decision == NEXT and verdict.rule == "joined-piece"
    # Also joins pieces ("Can we …? Also …").
    asked = Message("user", "Can we log the retry failures? Also rename the upload helper module.")
    worked = [asked, said("Logging first.", edit("net.py"))]
    verdict = judge.judge_rules(worked, Step("Now rename the upload helper module.", (edit("u"),)))
    assert verdict.decision == NEXT and verdict.rule == "joined-piece"


@pytest.mark.parametrize(
    ("history_texts", "step_text"),
    [
        # Nothing done since the request: the first move is the start, not a boundary.
        ([], "Now let me link it in the release notes."),
        # Still on the first piece.
        (["Opening the ticket."], "Now the ticket for the flaky upload test."),
        # The later piece was turned to already: saying it again is no move.
        (["Now let me link it in the release notes."], "Now the release notes link."),
    ],
)
def test_a_joined_request_without_a_move_is_same(history_texts: list[str], step_text: str) -> None:
    request = Message(
        "user",
        "Open a tracker ticket for the flaky upload test, then link that ticket in the release notes.",
    )
    history: list[Message] = [request]
    for text in history_texts:
        history.append(said(text, Call("mcp__tracker__create_ticket", {"title": "x"})))
    if not history_texts:
        history.append(said("", read_call("t")))
    verdict = judge.judge_rules(history, Step(step_text, (read_call("n"),)))
    assert verdict.rule != "joined-piece" and verdict.decision == SAME
