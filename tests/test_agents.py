"""The agent registry: one record per agent, read by the fuse, the judge and setup alike."""

from __future__ import annotations

import os

import pytest

from gitledger import agents
from gitledger.agents.base import TOOL_KINDS
from gitledger.errors import InvalidInput
from gitledger.judge.calls import _kind
from gitledger.judge.shapes import Call


def test_every_agent_is_registered_under_its_cli_name() -> None:
    assert set(agents.AGENTS) == {"claude", "codex", "gemini", "cursor"}
    assert agents.with_hooks() == ("claude", "codex", "gemini")
    with pytest.raises(InvalidInput, match="Unknown agent 'vim'"):
        agents.get("vim")


@pytest.mark.parametrize("name", sorted(agents.AGENTS))
def test_a_tool_has_one_kind_per_agent(name: str) -> None:
    tools = agents.get(name).tools
    seen: dict[str, str] = {}
    for kind in TOOL_KINDS:
        for tool in tools.of(kind):
            assert tool not in seen, f"{tool} is both {seen[tool]} and {kind}"
            seen[tool] = kind


def test_tool_kinds_across_agents_do_not_contradict() -> None:
    for a in TOOL_KINDS:
        for b in TOOL_KINDS:
            if a < b:
                assert not agents.tool_names(a) & agents.tool_names(b), (a, b)


@pytest.mark.parametrize(
    ("call", "kind"),
    [
        (Call("Bash", {"command": "git commit -m x"}), "commit"),
        (Call("shell", {"command": ["bash", "-lc", "rg foo src"]}), "read"),
        (Call("shell", {"command": ["bash", "-lc", "sed -i s/a/b/ f.py"]}), "write"),
        (Call("exec_command", {"cmd": "git commit -am wip"}), "commit"),
        (Call("run_shell_command", {"command": "ls -la"}), "read"),
        (Call("run_terminal_cmd", {"command": "echo hi > out.txt"}), "write"),
        (Call("write_file", {"file_path": "a.py"}), "write"),
        (Call("apply_patch", {"input": "*** Begin Patch"}), "write"),
        (Call("read_file", {"path": "a.py"}), "read"),
    ],
)
def test_the_judge_reads_every_agents_shell_and_edit_calls(call: Call, kind: str) -> None:
    assert _kind(call) == kind


def test_the_fuse_records_files_edited_by_any_agent() -> None:
    from gitledger.fuse import Extractor
    from gitledger.transcripts import Event, ToolCall

    extractor = Extractor()
    for name, data in [
        ("Edit", {"file_path": "/p/a.py"}),
        ("write_file", {"file_path": "/p/b.py"}),
        ("replace", {"file_path": "/p/c.py"}),
        ("edit_file", {"path": "/p/d.py"}),
        ("apply_patch", {"input": "*** Begin Patch\n*** Update File: e.py\n*** End Patch"}),
    ]:
        extractor.feed(
            Event(kind="assistant", tool_calls=(ToolCall(id=name, name=name, input=data),))
        )
    files = extractor.finish().files_edited
    assert {f.rsplit("/", 1)[-1] for f in files} >= {"a.py", "b.py", "c.py", "d.py", "e.py"}


def test_session_variables_end_as_claims_looks_for_them() -> None:
    # claims.named_agent loads the registry only when a variable with this ending is set.
    from gitledger.claims import SESSION_SUFFIX

    named = [a.session_env for a in agents.AGENTS.values() if a.session_env]
    assert named and all(name.endswith(SESSION_SUFFIX) for name in named)
    for name in named:
        assert agents.session_from_env({name: " s-1 "}) == "s-1"
    assert agents.session_from_env({"OTHER_SESSION_ID": "x"}) is None


def test_a_write_outside_an_agent_session_does_not_load_the_registry() -> None:
    import subprocess
    import sys

    code = (
        "import os, sys\n"
        "from gitledger.claims import named_agent\n"
        "assert named_agent() is None\n"
        "assert 'gitledger.agents' not in sys.modules\n"
        "os.environ['CLAUDE_CODE_SESSION_ID'] = 'sess-9'\n"
        "assert named_agent() == 'sess-9'\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.endswith("_SESSION_ID")}
    env.pop("GITLEDGER_AGENT", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
