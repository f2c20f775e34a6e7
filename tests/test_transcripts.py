"""Transcript readers: every format in the corpus, the fixtures, and every kind of bad input."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from gitledger.transcripts import Event, ReadStats, ToolCall, Usage, read_events, sniff
from gitledger.transcripts import _lines as lines_module
from gitledger.transcripts.events import MAX_TEXT_CHARS

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "transcripts"
CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"

needs_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(), reason="../shared/corpus is absent (only in the development checkout)"
)


def read(path: Path, **kwargs: object) -> tuple[list[Event], ReadStats]:
    stats = ReadStats()
    events = list(read_events(path, stats=stats, **kwargs))  # type: ignore[arg-type]
    return events, stats


def corpus_files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.rglob("*.jsonl") if "taskcut" not in str(p))


# --- the corpus ---------------------------------------------------------------------------------


@needs_corpus
@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name[:40])
def test_every_corpus_transcript_reads_without_skipping_anything(path: Path) -> None:
    events, stats = read(path)
    assert events, path
    # a copy may carry comment lines its author added (the corpus README says which): not JSON
    comments = sum(1 for line in path.read_bytes().splitlines() if line.startswith(b"//"))
    assert stats.invalid_lines == comments and stats.unknown_types == 0, stats.to_dict()
    assert not stats.cut_last_line and not stats.missing
    expected = "codex" if "codex" in path.parts else "claude_code"
    assert stats.format == expected == sniff(path)
    assert {e.kind for e in events} <= {
        "user",
        "assistant",
        "tool_result",
        "summary",
        "compact_boundary",
        "title",
        "attachment",
        "system",
    }


@needs_corpus
def test_compacted_sessions_have_a_boundary_then_claudes_summary() -> None:
    sessions = sorted((CORPUS / "claude-code" / "spotter").glob("*.jsonl"))
    compacted = 0
    for path in sessions:
        kinds = [e.kind for e in read(path)[0]]
        if "compact_boundary" in kinds:
            compacted += 1
            boundary = kinds.index("compact_boundary")
            assert kinds[boundary + 1] == "summary"
    assert compacted >= 4  # the README says four; all five spotter sessions compact (one manual)


@needs_corpus
def test_compact_boundary_carries_its_trigger() -> None:
    path = CORPUS / "claude-code" / "spotter" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    boundary = next(e for e in read(path)[0] if e.kind == "compact_boundary")
    assert boundary.result["trigger"] == "auto"
    summary = next(e for e in read(path)[0] if e.kind == "summary")
    assert "Primary Request and Intent" in summary.text


@needs_corpus
def test_subagent_transcripts_are_read_as_sidechains_with_their_agent_id() -> None:
    path = CORPUS / "claude-code" / "spotter" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    main, _ = read(path)
    everything, _ = read(path, subagents=True)
    extra = everything[len(main) :]
    assert extra and all(e.sidechain for e in extra)
    assert {e.agent_id for e in extra} >= {"a881341", "acompact-fffbd0"}
    assert not any(e.sidechain for e in main)


@needs_corpus
def test_claude_code_1_0_inline_sidechain_records_keep_their_agent_id() -> None:
    path = CORPUS / "claude-code" / "claude-code-log" / "deep-manifest__agent-c8d9b115.jsonl"
    events, _ = read(path)
    assert events and all(e.sidechain and e.agent_id == "c8d9b115" for e in events)


@needs_corpus
def test_claude_code_2_1_task_tools_attachments_and_agent_results() -> None:
    path = (
        CORPUS / "claude-code" / "claude-code-log" / "experiments-worktrees__"
        "ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl"
    )
    events, _ = read(path)
    calls = Counter(c.name for e in events for c in e.tool_calls)
    assert calls["TaskCreate"] >= 3 and calls["TaskUpdate"] >= 3 and calls["Agent"] >= 3
    created = [e for e in events if e.kind == "tool_result" and e.tool_name == "TaskCreate"]
    assert created[0].result["task"]["id"] == "1"
    agent_results = [e for e in events if e.tool_name == "Agent"]
    assert agent_results and all(e.text for e in agent_results)
    reminder = next(e for e in events if e.kind == "attachment")
    assert reminder.subtype == "task_reminder" and isinstance(reminder.result, list)
    away = [e for e in events if e.subtype == "away_summary"]
    assert away and "teammate" in away[0].text


@needs_corpus
def test_queued_prompts_become_user_events() -> None:
    path = (
        CORPUS
        / "claude-code"
        / "claude-code-log"
        / ("JSSoundRecorder__7acd37a8-2745-4b58-a8a9-46164b22ad9e.jsonl")
    )
    queued = [e for e in read(path)[0] if e.queued]
    assert queued and all(e.kind == "user" for e in queued)


@needs_corpus
def test_codex_rollout_marks_harness_text_as_meta() -> None:
    events, stats = read(CORPUS / "codex" / "sample_codex_session.jsonl")
    assert stats.format == "codex"
    users = [e for e in events if e.kind == "user"]
    assert [e.is_meta for e in users] == [True, True, False]
    assert "MD files" in users[-1].text


# --- fixtures -----------------------------------------------------------------------------------


def test_claude_code_event_fields() -> None:
    events, stats = read(FIXTURES / "claude_2_1_session.jsonl")
    assistant = next(e for e in events if e.kind == "assistant" and e.tool_calls)
    assert assistant.usage == Usage(
        input_tokens=10, output_tokens=5, cache_read_tokens=3, cache_creation_tokens=None
    )
    assert assistant.stop_reason == "end_turn" and assistant.model == "claude-x"
    assert (
        assistant.timestamp and assistant.session_id == "fix-1" and assistant.cwd == "/home/dev/app"
    )
    assert isinstance(assistant.tool_calls[0], ToolCall)
    assert assistant.tool_calls[0].name == "TaskCreate"
    assert events[0].is_meta  # the caveat
    failed = next(e for e in events if e.kind == "tool_result" and e.is_error)
    assert failed.tool_name == "Bash" and "ModuleNotFoundError" in failed.text
    assert stats.unknown_types == 1 and stats.unknown_type_names == {"brand-new-record-type": 1}
    assert stats.ignored == 2  # permission-mode, progress
    assert json.dumps(events[0].to_dict())  # plain data


def test_codex_fixture_calls_outputs_and_errors() -> None:
    events, stats = read(FIXTURES / "codex_rollout.jsonl")
    assert stats.format == "codex" and stats.skipped == 0
    names = [c.name for e in events for c in e.tool_calls]
    assert names == ["update_plan", "shell", "apply_patch"]
    results = [e for e in events if e.kind == "tool_result"]
    assert [r.tool_name for r in results] == ["update_plan", "shell", "apply_patch"]
    assert [r.is_error for r in results] == [False, True, False]
    assert events[-1].kind == "summary"
    assert any(e.usage and e.usage.cache_read_tokens == 50 for e in events)


def test_plain_jsonl_roles_and_openai_tool_calls() -> None:
    events, stats = read(FIXTURES / "plain.jsonl")
    assert stats.format == "plain"
    assert [e.kind for e in events] == ["system", "user", "assistant", "tool_result", "assistant"]
    assert events[2].tool_calls[0].input == {"path": "src/parser.rs", "content": "fn main(){}"}
    assert events[3].tool_name == "write_file"
    assert stats.unknown_types == 1  # role "critic"


# --- bad input ----------------------------------------------------------------------------------


def good_line(text: str = "hello") -> str:
    return json.dumps(
        {
            "type": "user",
            "sessionId": "s",
            "uuid": "u",
            "message": {"role": "user", "content": text},
        },
        ensure_ascii=False,
    )


def test_cut_last_line_is_counted_and_the_rest_is_read(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(good_line("one") + "\n" + good_line("two")[:30])
    events, stats = read(path)
    assert [e.text for e in events] == ["one"]
    assert stats.cut_last_line and stats.invalid_lines == 0


def test_invalid_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        "\n".join([good_line("a"), "{not json", "[1, 2]", '"a string"', "", good_line("b")]) + "\n"
    )
    events, stats = read(path)
    assert [e.text for e in events] == ["a", "b"]
    assert stats.invalid_lines == 3 and stats.skipped == 3


def test_non_utf8_bytes_are_replaced_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(good_line("caf\u00e9").encode().replace(b"\xc3\xa9", b"\xe9") + b"\n")
    events, stats = read(path)
    assert stats.non_utf8_lines == 1
    assert events[0].text == "caf\ufffd"


def test_a_10_mb_line_is_read_and_its_text_clipped(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(good_line("x" * 10_000_000) + "\n" + good_line("after") + "\n")
    events, stats = read(path)
    assert len(events[0].text) == MAX_TEXT_CHARS
    assert events[1].text == "after" and stats.skipped == 0


def test_a_line_over_the_limit_is_skipped_without_being_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lines_module, "MAX_LINE_BYTES", 1_000)
    monkeypatch.setattr(lines_module, "_CHUNK", 256)
    path = tmp_path / "t.jsonl"
    path.write_text(good_line("y" * 5_000) + "\n" + good_line("after") + "\n")
    events, stats = read(path)
    assert [e.text for e in events] == ["after"]
    assert stats.oversized_lines == 1


def test_missing_and_empty_files_read_as_nothing(tmp_path: Path) -> None:
    events, stats = read(tmp_path / "absent.jsonl")
    assert events == [] and stats.missing
    (tmp_path / "empty.jsonl").write_text("")
    events, stats = read(tmp_path / "empty.jsonl")
    assert events == [] and not stats.missing and stats.format == "plain"


def test_records_with_wrong_shapes_do_not_raise(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    records = [
        {"type": "user", "sessionId": "s", "message": "not an object"},
        {"type": "assistant", "sessionId": "s", "message": {"content": [1, None, "x"]}},
        {"type": "user", "sessionId": "s", "message": {"content": [{"type": "tool_result"}]}},
        {"type": "attachment", "sessionId": "s", "attachment": None},
        {"type": "system", "sessionId": "s", "subtype": "compact_boundary", "compactMetadata": 3},
        {"type": 5},
    ]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    events, stats = read(path)
    assert [e.kind for e in events] == ["tool_result", "compact_boundary"]
    assert stats.invalid_lines == 2 and stats.unknown_types == 1 and stats.ignored == 1


def test_sniff_tells_the_formats_apart() -> None:
    assert sniff(FIXTURES / "claude_2_1_session.jsonl") == "claude_code"
    assert sniff(FIXTURES / "claude_1_0_sidechain.jsonl") == "claude_code"
    assert sniff(FIXTURES / "codex_rollout.jsonl") == "codex"
    assert sniff(FIXTURES / "plain.jsonl") == "plain"
    assert sniff(FIXTURES / "gemini_session.json") == "gemini"


def test_an_unknown_format_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown transcript format"):
        list(read_events(FIXTURES / "plain.jsonl", format="gemini-json"))


def test_gemini_cli_chat_file(tmp_path: Path) -> None:
    path = FIXTURES / "gemini_session.json"
    events, stats = read(path)
    assert stats.format == "gemini" == sniff(path)
    assert [e.kind for e in events] == [
        "user",
        "assistant",
        "tool_result",
        "tool_result",
        "tool_result",
        "system",
        "assistant",
    ]
    assert [c.name for c in events[1].tool_calls] == [
        "write_todos",
        "write_file",
        "run_shell_command",
    ]
    assert events[1].usage == Usage(input_tokens=900, output_tokens=40, cache_read_tokens=100)
    failed = events[4]
    assert failed.is_error and failed.tool_name == "run_shell_command"
    assert "cannot import name" in failed.text
    assert events[5].is_meta and events[0].session_id == "g-1"


def test_gemini_file_half_rewritten_or_too_big(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitledger.transcripts import gemini

    source = (FIXTURES / "gemini_session.json").read_text()
    half = tmp_path / "half.json"
    half.write_text(source[: len(source) // 2])
    events, stats = read(half, format="gemini")
    assert events == [] and stats.cut_last_line
    monkeypatch.setattr(gemini, "MAX_FILE_BYTES", 100)
    events, stats = read(FIXTURES / "gemini_session.json")
    assert events == [] and stats.oversized_lines == 1


def test_sniffing_reads_only_the_head_of_a_file_of_huge_lines(tmp_path: Path) -> None:
    # D8: sniffing parsed the first 20 records whole (8 lines of 30 MB took 5.86 GB)
    path = tmp_path / "huge.jsonl"
    block = '{"type": "text", "text": "ab"}, ' * 300_000
    line = '{"type": "assistant", "sessionId": "s", "message": {"content": [' + block + "{}]}}\n"
    path.write_text(line * 3, encoding="utf-8")
    assert sniff(path) == "claude_code"
    codex = tmp_path / "codex.jsonl"
    codex.write_text('{"type": "response_item", "payload": {"x": "' + "y" * 200_000 + '"}}\n')
    assert sniff(codex) == "codex"
