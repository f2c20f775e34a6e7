"""The MCP server through the SDK's own client over stdio: a real server process on a real ledger."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from jsonschema import Draft202012Validator

from gitledger import mcp_server

T = TypeVar("T")
TOOL_NAME = r"^[A-Za-z0-9_-]{1,64}$"


def run(make: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(make())  # type: ignore[arg-type]


@contextlib.asynccontextmanager
async def connect(env: dict[str, str] | None = None) -> AsyncIterator[Any]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "gitledger", "mcp"],
        env={**os.environ, **(env or {})},
    )
    async with Client(params, read_timeout_seconds=60) as client:
        yield client


async def call(client: Any, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    """A tool call that must succeed; its structured result."""
    result = await client.call_tool(name, args or {})
    assert not result.is_error, (name, result.structured_content)
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content  # type: ignore[no-any-return]


async def fail(client: Any, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    """A tool call that must come back as a tool error; its error object."""
    result = await client.call_tool(name, args or {})
    assert result.is_error, (name, result.structured_content)
    error = result.structured_content
    assert set(error) >= {"error", "message"}
    assert json.loads(result.content[0].text) == error
    return error  # type: ignore[no-any-return]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI as another process."""
    return subprocess.run(
        [sys.executable, "-m", "gitledger", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=120,
    )


def cli_error(*args: str) -> dict[str, Any]:
    """What the CLI prints on stderr for the same failure with --json."""
    proc = run_cli(*args, "--json")
    assert proc.returncode != 0, proc.stdout
    return json.loads(proc.stderr.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_tools_list_schemas_are_valid_and_small(ledger: Any) -> None:
    async def go() -> list[Any]:
        async with connect() as client:
            return list((await client.list_tools()).tools)

    tools = run(go)
    names = [t.name for t in tools]
    assert len(names) == len(set(names))
    assert {
        "task_create",
        "task_update",
        "task_show",
        "task_list",
        "task_inbox",
        "task_ready",
        "task_search",
        "task_history",
        "task_children",
        "task_claim",
        "verify",
    } <= set(names)
    assert set(names) == {t.name for t in mcp_server.available_tools()}
    for tool in tools:
        assert __import__("re").match(TOOL_NAME, tool.name)
        assert tool.description and len(tool.description) > 10
        schema = tool.input_schema
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        assert set(schema.get("required", [])) <= set(schema["properties"])
        for name, prop in schema["properties"].items():
            assert prop.get("description"), (tool.name, name)
            assert "type" in prop, (tool.name, name)
        assert tool.annotations is not None and tool.annotations.read_only_hint is not None
    by_name = {t.name: t for t in tools}
    update = by_name["task_update"].input_schema
    assert update["required"] == ["id"]
    assert update["properties"]["status"]["enum"] == [
        "open",
        "active",
        "blocked",
        "done",
        "cancelled",
    ]
    assert update["properties"]["expect_version"]["type"] == "integer"
    assert by_name["task_create"].input_schema["required"] == ["goal"]
    assert by_name["task_show"].annotations.read_only_hint is True
    assert by_name["task_update"].annotations.read_only_hint is False


def test_tools_list_fits_the_token_budget() -> None:
    tokens = pytest.importorskip("gitledger.tokens")
    text = mcp_server.tools_list_json()
    assert tokens.count(text) < 4000


def test_every_tool_on_a_real_ledger(ledger: Any, tmp_path: Path) -> None:
    called: set[str] = set()

    async def go() -> None:
        async with connect() as client:
            listed = {t.name for t in (await client.list_tools()).tools}

            async def c(name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
                called.add(name)
                return await call(client, name, args)

            parent = await c("task_create", {"goal": "Ship the parser", "priority": 1})
            dep = await c("task_create", {"goal": "Write the grammar", "labels": ["parser"]})
            child = await c(
                "task_create",
                {
                    "goal": "Parse numbers",
                    "criteria": "pytest tests/test_numbers.py passes",
                    "parent": parent["id"][:7],
                    "dependencies": [dep["id"]],
                    "next": "Write the failing test",
                    "labels": "parser",  # a lone string where a list is expected is forgiven
                },
            )
            assert child["version"] == 1 and child["parent"] == parent["id"]
            assert child["labels"] == ["parser"] and "clock" not in child
            assert "short_id" not in child  # full ids only: a prefix may become ambiguous

            updated = await c(
                "task_update",
                {
                    "id": child["id"],
                    "expect_version": 1,
                    "notes": ["numbers may have a sign"],
                    "decisions": ["Use a hand-written lexer because the grammar is tiny"],
                    "next": "Handle exponents",
                },
            )
            assert updated["version"] == 2 and updated["next"] == "Handle exponents"
            old = await c("task_show", {"id": child["id"][:8], "at": 1})
            assert old["version"] == 1 and old["next"] == "Write the failing test"
            assert (await c("task_show", {"id": child["id"]}))["version"] == 2

            listed_tasks = await c("task_list", {"status": ["open"], "label": "parser"})
            assert {t["id"] for t in listed_tasks["tasks"]} == {dep["id"], child["id"]}
            assert (await c("task_list", {"limit": 1}))["tasks"][0]["id"] == child["id"]
            inbox = await c("task_inbox", {"limit": 10})
            assert len(inbox["tasks"]) == 3
            ready = await c("task_ready", {})
            # the parent waits for its open child; the child waits for its dependency
            assert [t["id"] for t in ready["tasks"]] == [dep["id"]]
            found = await c("task_search", {"query": "hand-written lexer"})
            assert [t["id"] for t in found["tasks"]] == [child["id"]]
            history = await c("task_history", {"id": child["id"]})
            assert [v["version"] for v in history["versions"]] == [2, 1]
            kids = await c("task_children", {"id": parent["id"]})
            assert [t["id"] for t in kids["tasks"]] == [child["id"]]
            claimed = await c("task_claim", {"id": dep["id"]})
            assert claimed["status"] == "active" and claimed["owner"] == "Test Person"
            assert claimed["claim"] == "claimed" and claimed["agent"].startswith("mcp-")
            again = await c("task_claim", {"id": dep["id"]})
            assert again["claim"] == "already yours" and again["version"] == claimed["version"]
            released = await c("task_release", {"id": dep["id"]})
            assert released["claim"] == "released" and released["owner"] is None
            assert released["status"] == "open"
            await c("task_claim", {"id": dep["id"]})
            done = await c(
                "task_update",
                {
                    "id": dep["id"],
                    "criteria": "grammar file exists",
                    "decisions": ["Criteria written down late, it is small"],
                },
            )
            done = await c(
                "task_update",
                {"id": dep["id"], "status": "done", "evidence": ["grammar.ebnf committed"]},
            )
            assert done["status"] == "done"
            report = await c("verify", {})
            assert report["ok"] is True and report["tasks"] == 3

            if "task_context" in listed:
                handoff = await c("task_context", {"id": child["id"], "budget": 4096})
                assert "Parse numbers" in handoff["text"] and handoff["size"] <= 4096
                small = await c(
                    "task_context", {"id": child["id"], "unit": "tokens", "budget": 400}
                )
                assert small["unit"] == "tokens"
            if "prime" in listed:
                digest = await c("prime", {"budget": 2000})
                assert "Parse numbers" in digest["text"]
                # the calls it offers are the MCP tools (edits.COMMANDS), no CLI command
                assert (
                    "\nuse: task_context (full handoff) | task_show | task_claim | "
                    in (digest["text"])
                )
                assert "gitledger task" not in digest["text"]
            if "backup" in listed:
                remote = tmp_path / "backup.git"
                await c("backup", {"remote": str(remote)})
                assert remote.exists()
                await c("sync", {"remote": str(remote)})
                await c("restore", {"source": str(remote)})

            if "fuse_save" in listed:
                # fuse_save reads only an agent's transcript folder (here Claude Code's)
                transcript = Path.home() / ".claude" / "projects" / "p" / "session.jsonl"
                transcript.parent.mkdir(parents=True)
                lines = [
                    {
                        "type": "user",
                        "sessionId": "s1",
                        "message": {"role": "user", "content": "Make the parser resumable"},
                    }
                ]
                transcript.write_text("".join(json.dumps(x) + "\n" for x in lines))
                saved = await c("fuse_save", {"session": "s1", "transcript": str(transcript)})
                assert saved["session"] == "s1"
                linked = await c("fuse_link", {"session": "s1", "id": child["id"][:8]})
                assert linked["link"] == child["id"]
                restored = await c("fuse_restore", {})
                assert "Make the parser resumable" in restored["text"]
                assert "Parse numbers" in restored["text"]  # the linked task's state
                missing = await fail(
                    client, "fuse_save", {"session": "s2", "transcript": str(tmp_path / "nope")}
                )
                assert missing["error"] == "invalid_input"

            if "remember" in listed:
                fact = await c(
                    "remember",
                    {
                        "text": "The parser tests need the fixtures directory on PYTHONPATH",
                        "kind": "pitfall",
                        "tags": ["parser"],
                        "importance": 4,
                        "task": child["id"],
                    },
                )
                assert fact["new"] is True and fact["kind"] == "pitfall"
                again = await c(
                    "remember",
                    {"text": "the parser tests need the fixtures directory on PYTHONPATH!",
                     "kind": "pitfall"},
                )  # fmt: skip
                assert again["new"] is False and again["id"] == fact["id"]
                hints = await c("recall", {"query": "parser fixtures", "k": 3})
                assert [h["id"] for h in hints["hints"]] == [fact["id"]]
                imported = await c(
                    "memory_import",
                    {"facts": [{"text": "Prefer small commits", "kind": "preference"}]},
                )
                assert imported
                assert len((await c("memory_list", {}))["facts"]) == 2
                await c("memory_forget", {"id": fact["id"]})
                forgotten = await c("memory_list", {"forgotten": True})
                assert [f["id"] for f in forgotten["facts"]] == [fact["id"]]
                stats = await c("memory_stats", {})
                assert stats["active"] == 1 and stats["forgotten"] == 1
                back = await c("memory_restore", {"id": fact["id"][:8]})
                assert back["active"] is True

            if "fuse_save" in listed:  # last: this save adds memory facts
                from gitledger.transcripts.synthetic import write_demo_session

                write_demo_session(transcript.with_name("demo.jsonl"))
                demo = {"session": "demo", "transcript": str(transcript.with_name("demo.jsonl"))}
                await c("fuse_save", demo)
                shortened = await c("fuse_restore", {"session": "demo", "budget": 2000})
                # its last line names the whole restore as the fuse_restore tool
                assert shortened["text"].endswith(
                    'More: fuse_restore {"session": "demo", "budget": 9500}.'
                )
                if "prime" in listed:
                    digest = await c("prime", {})
                    assert (
                        'recent fuse snapshots (fuse_restore {"session": ID}):' in (digest["text"])
                    )

            assert called == listed, listed - called

    run(go)


def test_errors_carry_the_cli_kind_and_message(ledger: Any) -> None:
    task = ledger.create("Fix the flaky test", criteria="ten green runs")
    # Enough tasks that two share a first character (32 letters in the id alphabet).
    others = [ledger.create(f"filler {i}") for i in range(40)]
    firsts = [t.id[0] for t in [task, *others]]
    shared = next(ch for ch in firsts if firsts.count(ch) > 1)
    claimed = run_cli("--actor", "Other Agent", "task", "claim", others[0].id)
    assert claimed.returncode == 0, claimed.stderr

    async def go() -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        async with connect() as client:
            out["unknown_tool"] = await fail(client, "task_delete", {"id": task.id})
            out["missing"] = await fail(client, "task_update", {"status": "done"})
            out["wrong_type"] = await fail(client, "task_show", {"id": task.id, "at": "one"})
            out["extra"] = await fail(client, "task_show", {"id": task.id, "colour": "red"})
            out["enum"] = await fail(client, "task_update", {"id": task.id, "status": "finished"})
            out["priority"] = await fail(client, "task_create", {"goal": "x", "priority": 9})
            out["not_found"] = await fail(client, "task_show", {"id": "zzzzzzzz"})
            out["ambiguous"] = await fail(client, "task_show", {"id": shared})
            out["conflict"] = await fail(
                client, "task_update", {"id": task.id, "expect_version": 7, "notes": ["x"]}
            )
            out["gate"] = await fail(client, "task_update", {"id": task.id, "status": "done"})
            out["claim"] = await fail(client, "task_claim", {"id": others[0].id})
            out["nothing"] = await fail(client, "task_update", {"id": task.id})
            out["blank"] = await fail(client, "task_create", {"goal": "   "})
            out["search"] = await fail(client, "task_search", {"query": "  "})
            out["history"] = await fail(client, "task_history", {"id": "!!"})
            listed = {t.name for t in (await client.list_tools()).tools}
            if "task_context" in listed:
                out["budget"] = await fail(client, "task_context", {"id": task.id, "budget": 10})
            if "restore" in listed:
                out["restore"] = await fail(client, "restore", {"source": "/no/such/ledger.git"})
            if "backup" in listed:
                out["backup"] = await fail(client, "backup", {"remote": "no-such-remote"})
            if "fuse_restore" in listed:
                out["fuse"] = await fail(client, "fuse_restore", {"session": "never-saved"})
            if "remember" in listed:
                out["fact"] = await fail(client, "memory_forget", {"id": "zzzzzzzz"})
                out["kind"] = await fail(client, "remember", {"text": "x", "kind": "rumour"})
                out["recall"] = await fail(client, "recall", {"query": " "})
                out["import"] = await fail(
                    client, "memory_import", {"facts": [{"text": "ok"}, {"kind": "todo"}]}
                )
                stats = await call(client, "memory_stats", {})
                assert stats["active"] == 0  # the refused import wrote nothing
            # Nothing above changed the task.
            assert (await call(client, "task_show", {"id": task.id}))["version"] == 1
        return out

    out = run(go)
    for key in ("unknown_tool", "missing", "wrong_type", "extra", "enum", "priority"):
        assert out[key]["error"] == "invalid_input", (key, out[key])
    assert "task_show" in out["unknown_tool"]["message"]  # names the tools there are
    assert "'id' is a required property" in out["missing"]["message"]
    assert "colour" in out["extra"]["message"] and "Arguments it takes" in out["extra"]["message"]
    assert "finished" in out["enum"]["message"]
    assert out["not_found"]["error"] == "task_not_found"
    assert out["ambiguous"]["error"] == "ambiguous_id" and len(out["ambiguous"]["candidates"]) > 1
    assert out["conflict"]["error"] == "version_conflict"
    assert (out["conflict"]["expected"], out["conflict"]["actual"]) == (7, 1)
    assert out["gate"]["error"] == "gate_refused"
    assert out["claim"]["error"] == "claim_conflict"
    assert out["nothing"]["error"] == "invalid_input"
    assert out["blank"]["error"] == "invalid_input"
    assert out["search"]["error"] == "invalid_input"
    assert out["history"]["error"] == "task_not_found"
    if "budget" in out:
        assert out["budget"]["error"] in ("budget_too_small", "invalid_input")
        assert same_refusal(out["budget"], cli_error("task", "context", task.id, "--budget", "10"))

    if "restore" in out:
        assert out["restore"] == cli_error("restore", "/no/such/ledger.git")
    if "backup" in out:
        assert out["backup"]["error"] in ("invalid_input", "remote_error")
        backup_cli = cli_error("backup", "no-such-remote")
        rest = {k: v for k, v in out["backup"].items() if k != "message"}
        assert rest == {k: v for k, v in backup_cli.items() if k != "message"}
        # the next step as each interface offers it: no MCP tool sets up a remote
        setup = "run the shell command 'gitledger remote setup no-such-remote URL'."
        assert setup in out["backup"]["message"]
        assert "run 'gitledger remote setup no-such-remote URL'." in backup_cli["message"]
    if "fuse" in out:
        assert out["fuse"]["error"] == "not_found"
        assert (
            "List sessions with the shell command 'gitledger fuse status'."
            in (out["fuse"]["message"])
        )
        fuse_cli = cli_error("fuse", "restore", "--session", "never-saved")
        assert "List sessions with 'gitledger fuse status'." in fuse_cli["message"]

    if "fact" in out:
        assert out["fact"]["error"] == "fact_not_found"
        assert out["kind"]["error"] == "invalid_input" and "rumour" in out["kind"]["message"]
        assert out["recall"]["error"] == "invalid_input"
        assert out["import"]["error"] == "invalid_input"

    # The same failures through the CLI: the same kind, rule and field, and the same message
    # but for the fix, which each interface words in its own terms.
    not_found = cli_error("task", "show", "zzzzzzzz")
    assert {k: v for k, v in out["not_found"].items() if k != "message"} == {
        k: v for k, v in not_found.items() if k != "message"
    }
    assert "the task_list tool" in out["not_found"]["message"]
    assert "'gitledger task list'" in not_found["message"]
    assert out["ambiguous"] == cli_error("task", "show", shared)
    assert same_refusal(
        out["conflict"],
        cli_error("task", "update", task.id, "--expect-version", "7", "--note", "x"),
    )
    assert '"expect_version": 1' in out["conflict"]["message"]
    assert same_refusal(out["gate"], cli_error("task", "update", task.id, "--status", "done"))
    assert out["gate"]["rule"] == "done-needs-evidence" and out["gate"]["field"] == "evidence"
    assert '"evidence": [...]' in out["gate"]["message"]
    assert '"notes": [...]' in out["nothing"]["message"]
    assert same_refusal(out["claim"], cli_error("task", "claim", others[0].id))
    assert '"steal": true and "decision": "..."' in out["claim"]["message"]


def same_refusal(mcp: dict[str, Any], cli: dict[str, Any]) -> bool:
    """The same error but for the wording of its fix: '--flag' on the CLI, never over MCP."""
    rest = {k: v for k, v in mcp.items() if k != "message"}
    assert rest == {k: v for k, v in cli.items() if k != "message"}
    assert "--" not in mcp["message"] and "--" in cli["message"], (mcp, cli)
    return True


def test_no_ledger_is_a_tool_error_not_a_crash(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"

    async def go() -> tuple[dict[str, Any], dict[str, Any]]:
        async with connect({"GITLEDGER_DIR": str(missing)}) as client:
            first = await fail(client, "task_list", {})
            # Created meanwhile by someone else: the next call finds it.
            proc = subprocess.run(
                [sys.executable, "-m", "gitledger", "init"],
                env={**os.environ, "GITLEDGER_DIR": str(missing)},
                capture_output=True,
                text=True,
            )
            assert proc.returncode == 0, proc.stderr
            second = await call(client, "task_list", {})
        return first, second

    first, second = run(go)
    assert first["error"] == "no_ledger" and "gitledger init" in first["message"]
    # The steps as an MCP client takes them: no tool makes a ledger, a shell command does.
    assert (
        "(named by --ledger PATH in the MCP server's command or GITLEDGER_DIR)"
        in (first["message"])
    )
    assert f"with the shell command 'gitledger init --ledger {missing}'." in first["message"]
    assert second == {"tasks": []}


def test_a_lock_in_the_way_names_repair_as_a_shell_command(ledger: Any) -> None:
    task = ledger.create("locked by a killed writer")
    (ledger.path / "refs" / "gitledger" / "tasks" / f"{task.id}.lock").write_text("")

    async def go() -> dict[str, Any]:
        async with connect() as client:
            return await fail(client, "task_update", {"id": task.id, "notes": ["blocked"]})

    refused = run(go)
    assert refused["error"] == "storage_error"
    assert "run the shell command 'gitledger repair' to remove stale locks." in (refused["message"])
    assert ledger.show(task.id).version == 1


def test_concurrent_calls_lose_nothing(ledger: Any) -> None:
    task = ledger.create("Collect notes")

    async def go() -> dict[str, Any]:
        async with connect() as client:
            writes = [
                client.call_tool("task_update", {"id": task.id, "notes": [f"note {i}"]})
                for i in range(20)
            ]
            reads = [client.call_tool("task_show", {"id": task.id}) for _ in range(20)]
            results = await asyncio.gather(*writes, *reads)
            assert not any(r.is_error for r in results), [
                r.structured_content for r in results if r.is_error
            ]
            versions = sorted(r.structured_content["version"] for r in results[:20])
            assert versions == list(range(2, 22))  # every write its own version
            return await call(client, "task_show", {"id": task.id})

    final = run(go)
    assert final["version"] == 21
    assert sorted(n["text"] for n in final["notes"]) == sorted(f"note {i}" for i in range(20))


def test_writes_by_other_processes_are_seen_by_the_next_call(ledger: Any) -> None:
    task = ledger.create("Keep the line", criteria="all seen")

    async def go() -> None:
        async with connect() as client:
            first = await call(client, "task_show", {"id": task.id})
            assert first["version"] == 1
            proc = run_cli("task", "update", task.id, "--next", "from the CLI", "--json")
            assert proc.returncode == 0, proc.stderr
            second = await call(client, "task_show", {"id": task.id})
            assert second["version"] == 2 and second["next"] == "from the CLI"
            # A write based on the old version is refused, not lost.
            stale = await fail(
                client, "task_update", {"id": task.id, "expect_version": 1, "next": "stale"}
            )
            assert stale["error"] == "version_conflict"
            # A task created by another process is listed and found.
            made = run_cli("task", "create", "Brand new from elsewhere", "--json")
            assert made.returncode == 0, made.stderr
            new_id = json.loads(made.stdout)["id"]
            found = await call(client, "task_search", {"query": "elsewhere"})
            assert [t["id"] for t in found["tasks"]] == [new_id]
            inbox = await call(client, "task_inbox", {})
            assert new_id in {t["id"] for t in inbox["tasks"]}

    run(go)


def test_mcp_and_cli_writers_racing_lose_no_update(ledger: Any) -> None:
    task = ledger.create("Race")

    async def go() -> dict[str, Any]:
        async with connect() as client:
            cli = [
                asyncio.create_subprocess_exec(
                    sys.executable, "-m", "gitledger", "task", "update", task.id,
                    "--note", f"cli {i}",
                    stdout=asyncio.subprocess.DEVNULL,
                    stderr=asyncio.subprocess.PIPE,
                )
                for i in range(4)
            ]  # fmt: skip
            procs = await asyncio.gather(*cli)
            mcp_calls = [
                client.call_tool("task_update", {"id": task.id, "notes": [f"mcp {i}"]})
                for i in range(8)
            ]
            results = await asyncio.gather(*mcp_calls)
            for proc in procs:
                _, err = await proc.communicate()
                assert proc.returncode == 0, err
            assert not any(r.is_error for r in results)
            return await call(client, "task_show", {"id": task.id})

    final = run(go)
    assert final["version"] == 13
    assert len(final["notes"]) == 12


def test_context_resource(ledger: Any) -> None:
    task = ledger.create("Read me as a resource", criteria="it reads")

    async def go() -> tuple[Any, Any, str]:
        from mcp.shared.exceptions import MCPError

        async with connect() as client:
            templates = await client.list_resource_templates()
            result = await client.read_resource(f"gitledger://task/{task.id[:8]}/context")
            with pytest.raises(MCPError) as caught:
                await client.read_resource("gitledger://task/zzzzzzzz/context")
            return templates, result, str(caught.value)

    templates, result, missing = run(go)
    assert [t.uri_template for t in templates.resource_templates] == [mcp_server.CONTEXT_URI]
    text = result.contents[0].text
    assert "Read me as a resource" in text and task.id in text
    assert "zzzzzzzz" in missing


def test_in_process_call_matches_the_schema_checks(ledger: Any) -> None:
    srv = mcp_server.Server()
    result, is_error = srv.call("task_create", {"goal": "direct"})
    assert not is_error and result["goal"] == "direct"
    result, is_error = srv.call("task_create", {"goal": 5})
    assert is_error and result["error"] == "invalid_input"
    assert "argument 'goal'" in result["message"]
    # Several problems at once, in a list item and a field: one clear message, no crash.
    result, is_error = srv.call("task_create", {"goal": 5, "labels": [1, "ok"], "priority": -1})
    assert is_error and result["error"] == "invalid_input"
    assert result["message"].startswith("task_create: argument")


def test_the_server_names_itself_with_the_package_version(ledger: Any) -> None:
    # The distribution is git-ledger: a lookup of "gitledger" metadata would find nothing and
    # announce version "0".
    import gitledger

    async def go() -> Any:
        async with connect() as client:
            return client.server_info

    info = run(go)
    assert info is not None and info.version == gitledger.__version__
