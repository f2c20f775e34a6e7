"""Claims held by agents: two agents of one person on two machines (two HOMEs, two clones of one
project served by ``git daemon`` on loopback), two MCP servers on one machine, the lease, release
and steal, all through the real CLI and the real MCP server."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import Daemon

from gitledger.errors import ClaimConflict, GateRefused, InvalidInput
from gitledger.ledger import Ledger
from gitledger.merge import merge_tasks

NAME = "Sam Same"


class Machine:
    """One machine: its own HOME (the same Git identity), its own clone of the project."""

    def __init__(self, root: Path, name: str, origin: str) -> None:
        self.name = name
        home = root / name / "home"
        home.mkdir(parents=True)
        (home / ".gitconfig").write_text(f"[user]\n\tname = {NAME}\n\temail = sam@example.com\n")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("GITLEDGER_", "GIT_"))}
        self.env.update(
            HOME=str(home),
            XDG_DATA_HOME=str(home / ".local/share"),
            XDG_CONFIG_HOME=str(home / ".config"),
            GIT_CONFIG_NOSYSTEM="1",
            GITLEDGER_NODE=name,
        )
        self.clone = root / name / "project"
        subprocess.run(["git", "clone", "-q", origin, str(self.clone)], check=True, env=self.env)
        self.run("init")

    def run(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "gitledger", *args],
            cwd=self.clone,
            capture_output=True,
            text=True,
            env={**self.env, **(env or {})},
            timeout=120,
        )

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "gitledger", *args],
            cwd=self.clone,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
        )

    def ok(self, *args: str) -> str:
        out = self.run(*args)
        assert out.returncode == 0, (self.name, args, out.stdout, out.stderr)
        return out.stdout

    def task(self, task_id: str) -> dict[str, Any]:
        return json.loads(self.ok("task", "show", task_id, "--json"))  # type: ignore[no-any-return]


def shared_task(a: Machine, b: Machine, goal: str) -> str:
    """A task created on a and synced to b; its id."""
    task_id: str = json.loads(a.ok("task", "create", goal, "--json"))["id"]
    a.ok("sync")
    b.ok("sync")
    return task_id


@pytest.fixture
def machines(tmp_path: Path, daemon: Daemon) -> tuple[Machine, Machine]:  # noqa: F811
    seed = tmp_path / "seed"
    subprocess.run(["git", "init", "-q", "-b", "main", str(seed)], check=True)
    (seed / "README").write_text("project\n")
    subprocess.run(["git", "-C", str(seed), "add", "README"], check=True)
    subprocess.run(["git", "-C", str(seed), "commit", "-qm", "start"], check=True)
    bare = daemon.bare("project.git")
    subprocess.run(["git", "-C", str(seed), "push", "-q", str(bare), "main"], check=True)
    subprocess.run(["git", "-C", str(bare), "symbolic-ref", "HEAD", "refs/heads/main"], check=True)
    url = daemon.url("project.git")
    return Machine(tmp_path, "laptop", url), Machine(tmp_path, "desktop", url)


def test_two_agents_of_one_person_on_two_machines(machines: tuple[Machine, Machine]) -> None:
    a, b = machines
    task_id = shared_task(a, b, "Port the parser")
    # Both machines claim at once with --push: exactly one wins, the other exits 3 naming it.
    procs = [m.start("task", "claim", task_id, "--push", "--json") for m in (a, b)]
    results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 3], results
    winner, loser = (a, b) if results[0][0] == 0 else (b, a)
    lost_err = results[1][2] if winner is a else results[0][2]
    assert f"already claimed by {NAME} (agent cli@{winner.name})" in lost_err
    held = winner.task(task_id)
    assert (held["owner"], held["agent"], held["status"]) == (NAME, f"cli@{winner.name}", "active")
    # The holder's re-claim changes nothing and says so (with and without --push).
    again = winner.run("task", "claim", task_id)
    assert again.returncode == 0 and "Already yours" in again.stdout
    pushed_again = json.loads(winner.ok("task", "claim", task_id, "--push", "--json"))
    assert pushed_again["claim"] == "already yours"
    assert pushed_again["version"] == held["version"]
    # Without --push the loser is refused too, once it has synced: same person, other agent.
    loser.ok("sync")
    refused = loser.run("task", "claim", task_id)
    assert refused.returncode == 3 and f"agent cli@{winner.name}" in refused.stderr
    # Release hands it back; after a sync the other machine wins it.
    released = winner.run("task", "release", task_id)
    assert released.returncode == 0 and "Released" in released.stdout
    assert winner.task(task_id)["owner"] is None and winner.task(task_id)["status"] == "open"
    winner.ok("sync")
    loser.ok("task", "claim", task_id, "--push")
    winner.ok("sync")
    assert winner.task(task_id)["agent"] == f"cli@{loser.name}"
    # The former holder cannot release what is no longer its claim.
    stranger = winner.run("task", "release", task_id)
    assert stranger.returncode == 3 and "only its holder releases it" in stranger.stderr


def test_offline_claims_on_two_machines_merge_to_the_first(
    machines: tuple[Machine, Machine],
) -> None:
    a, b = machines
    task_id = shared_task(a, b, "One winner offline")
    a.ok("task", "claim", task_id)  # earlier, not pushed
    time.sleep(0.05)
    b.ok("task", "claim", task_id)  # later, not pushed
    b.ok("sync")  # b's claim reaches the server first
    out = a.ok("sync")
    # The server took b's claim first: that claim stands, and sync says which rule decided.
    assert a.task(task_id)["agent"] == "cli@desktop"
    assert "agent (the claim the remote accepted first won)" in out, out
    assert "later write won" not in out


def test_lease_lapses_and_steal_needs_a_decision(machines: tuple[Machine, Machine]) -> None:
    a, b = machines
    task_id = json.loads(a.ok("task", "create", "Lease me", "--json"))["id"]
    a.ok("task", "claim", task_id, "--push")
    b.ok("sync")
    # A live claim: refused, with the way out in the message.
    live = b.run("task", "claim", task_id)
    assert live.returncode == 3 and "--steal and --decision TEXT" in live.stderr
    # Stealing needs a decision saying why, and changes nothing without one.
    before = b.task(task_id)["version"]
    no_why = b.run("task", "claim", task_id, "--steal")
    assert no_why.returncode != 0 and "needs a decision" in no_why.stderr
    assert b.task(task_id)["version"] == before
    bad = b.run("config", "claim.lease=soon")
    assert bad.returncode != 0 and "duration" in bad.stderr
    # A short lease on b: a's claim lapses when a writes nothing, and b takes it over.
    b.ok("config", "claim.lease=1s")
    assert "claim.lease = 1s" in b.ok("config")
    time.sleep(1.5)
    took = json.loads(b.ok("task", "claim", task_id, "--push", "--json"))
    assert took["claim"] == "took over a lapsed claim" and took["agent"] == "cli@desktop"
    assert any("it had lapsed" in n["text"] and "cli@laptop" in n["text"] for n in took["notes"])
    # a steals it back with a decision: the decision is recorded on the task.
    a.ok("sync")
    stolen = json.loads(
        a.ok("task", "claim", task_id, "--push", "--steal", "--decision",
             "desktop is off for the night", "--json")
    )  # fmt: skip
    assert stolen["claim"] == "stolen" and stolen["agent"] == "cli@laptop"
    assert [d["text"] for d in stolen["decisions"]] == ["desktop is off for the night"]
    # A write by the holder renews its lease (the note's time is the claim's new held_at).
    noted = json.loads(a.ok("task", "update", task_id, "--note", "still on it", "--json"))
    assert noted["held_at"] == noted["notes"][-1]["at"] > stolen["held_at"]
    # A write by another agent of the same person does not.
    other = a.run("--agent", "session-9", "task", "update", task_id, "--note", "looked", "--json")
    assert json.loads(other.stdout)["held_at"] == noted["held_at"]


def test_two_mcp_servers_on_one_machine_one_winner(ledger: Ledger) -> None:
    from mcp import Client, StdioServerParameters

    task = ledger.create("Only one server gets it")

    async def go() -> list[dict[str, Any]]:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "gitledger", "mcp"], env=dict(os.environ)
        )
        pinned = StdioServerParameters(
            command=sys.executable,
            args=["-m", "gitledger", "mcp"],
            env={**os.environ, "GITLEDGER_AGENT": "session-42"},
        )
        async with Client(params, read_timeout_seconds=60) as one:
            async with Client(pinned, read_timeout_seconds=60) as two:
                results = await asyncio.gather(
                    one.call_tool("task_claim", {"id": task.id}),
                    two.call_tool("task_claim", {"id": task.id}),
                )
                again = [await c.call_tool("task_claim", {"id": task.id}) for c in (one, two)]
        return [r.structured_content | {"is_error": r.is_error} for r in (*results, *again)]

    first, second, one_again, two_again = asyncio.run(go())
    assert sorted([first["is_error"], second["is_error"]]) == [False, True]
    won = first if not first["is_error"] else second
    lost = second if won is first else first
    assert lost["error"] == "claim_conflict"
    assert won["claim"] == "claimed"
    # The winner's re-claim is "already yours"; the other server is still refused.
    again_won, again_lost = (one_again, two_again) if won is first else (two_again, one_again)
    assert again_won["claim"] == "already yours" and again_lost["is_error"]
    held = ledger.show(task.id)
    assert held.owner == "Test Person"
    assert held.agent == won["agent"]
    assert (held.agent == "session-42") == (won is second)


def test_claim_api_rules(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    task = ledger.create("rules")
    with pytest.raises(InvalidInput, match="goes with steal=True"):
        ledger.claim(task.id, decision="why")
    with pytest.raises(GateRefused, match="needs a decision"):
        ledger.claim(task.id, steal=True)
    assert ledger.show(task.id).version == 1  # refused: nothing written
    ledger.claim(task.id, agent="one")
    assert ledger.last_claim == "claimed"
    with pytest.raises(ClaimConflict):
        ledger.claim(task.id, agent="two")
    monkeypatch.setenv("GITLEDGER_AGENT", "two")
    with pytest.raises(ClaimConflict):
        ledger.release(task.id)
    # Assigning with --owner drops the agent's claim (it is a hand-over, not a claim); another
    # agent's hand-over of a live claim needs a decision.
    assigned = ledger.update(task.id, owner="Other Person", decisions=["one is gone"])
    assert (assigned.owner, assigned.agent, assigned.held_at) == ("Other Person", None, None)
    # Released or unclaimed: release says so and writes nothing.
    free = ledger.create("free")
    assert ledger.release(free.id).version == 1 and ledger.last_claim == "not claimed"


def test_merge_decides_owner_and_agent_together(ledger: Ledger) -> None:
    base = ledger.create("merge the claim")
    one = ledger.claim(base.id, agent="one")
    ledger.release(base.id, agent="one")
    # Two sides that each claimed the free task: the earlier claim wins, both fields from it.
    early = one
    late = one.replace(
        agent="two", held_at="2099-01-01T00:00:00.000Z", clock={**one.clock, "owner": "9" * 13}
    )
    for ours, theirs in ((early, late), (late, early)):
        reasons: dict[str, str] = {}
        merged = merge_tasks(base, ours, theirs, at="now", actor="x", reasons=reasons)
        assert (merged.owner, merged.agent, merged.held_at) == (
            early.owner,
            early.agent,
            early.held_at,
        )
        assert reasons == {"agent": "the earlier claim won"}


def test_conflicts_show_in_handoffs_until_an_update_resolves_them(
    machines: tuple[Machine, Machine],
) -> None:
    a, b = machines
    task_id = shared_task(a, b, "Pick a parser")
    a.ok("task", "update", task_id, "--next", "try lark")
    b.ok("task", "update", task_id, "--next", "try a hand-written parser")
    a.ok("sync")
    out = b.ok("sync")
    assert "next (the later write won)" in out
    context = b.ok("task", "context", task_id)
    assert "merge conflicts: 1 unresolved (next)" in context
    assert '- next: the other side had "try lark"' in context
    assert "1 merge conflict(s)" in b.ok("prime", "--budget", "4000")
    # The fuse's linked task carries it too.
    transcript = b.clone / "t.jsonl"
    transcript.write_text(
        json.dumps({"type": "user", "sessionId": "s", "message": {"role": "user",
                    "content": "Choose the parser"}}) + "\n"
    )  # fmt: skip
    b.ok("fuse", "save", "--session", "s", "--transcript", str(transcript))
    b.ok("fuse", "link", task_id, "--session", "s")
    assert "merge conflicts: 1 unresolved" in b.ok("fuse", "restore", "--session", "s", "--plain")
    # Setting the field resolves it; the resolution travels and a merge does not bring it back.
    b.ok("task", "update", task_id, "--next", "try a hand-written parser")
    assert b.task(task_id)["conflicts"] == []
    assert "merge conflicts" not in b.ok("task", "context", task_id)
    a.ok("task", "update", task_id, "--note", "meanwhile on a")
    b.ok("sync")
    a.ok("sync")
    assert a.task(task_id)["conflicts"] == [] and b.task(task_id)["conflicts"] == []


def test_evidence_citing_a_commit_only_the_other_machine_has_is_unverified(
    machines: tuple[Machine, Machine],
) -> None:
    a, b = machines
    (a.clone / "fix.py").write_text("fixed = True\n")
    subprocess.run(["git", "-C", str(a.clone), "add", "fix.py"], check=True, env=a.env)
    subprocess.run(["git", "-C", str(a.clone), "commit", "-qm", "fix"], check=True, env=a.env)
    sha = subprocess.run(
        ["git", "-C", str(a.clone), "rev-parse", "HEAD"],
        check=True, capture_output=True, text=True, env=a.env,
    ).stdout.strip()  # fmt: skip
    task_id = json.loads(a.ok("task", "create", "Fix it", "--criteria", "fixed", "--json"))["id"]
    a.ok("task", "update", task_id, "--evidence", f"commit:{sha} fixes it")
    assert "UNVERIFIED" not in a.ok("verify")
    a.ok("sync")  # the ledger travels; the code commit is not pushed
    b.ok("sync")
    out = b.run("verify")
    assert out.returncode == 0, out.stdout  # listed, not a failure
    assert f"UNVERIFIED  refs/gitledger/tasks/{task_id}: evidence cites commit {sha}" in out.stdout
    report = json.loads(b.ok("verify", "--json"))
    assert report["ok"] is True and len(report["unverified"]) == 1
    assert "unverified: evidence cites" in b.ok("task", "show", task_id)
    # Once the code arrives, it is verified.
    subprocess.run(
        ["git", "-C", str(a.clone), "push", "-q", "origin", "main"], check=True, env=a.env
    )
    subprocess.run(["git", "-C", str(b.clone), "pull", "-q"], check=True, env=b.env)
    assert "UNVERIFIED" not in b.ok("verify")


def transcript(path: Path, session: str, texts: list[str]) -> Path:
    lines = [
        {"type": "user", "sessionId": session, "timestamp": f"2026-12-01T10:0{i}:00.000Z",
         "message": {"role": "user", "content": text}}
        for i, text in enumerate(texts)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_a_fuse_ref_saved_on_both_machines_converges(machines: tuple[Machine, Machine]) -> None:
    a, b = machines
    a.ok("fuse", "save", "--session", "shared", "--transcript",
         str(transcript(a.clone / "t.jsonl", "shared", ["Make the lexer streaming"])))  # fmt: skip
    a.ok("sync")
    b.ok("sync")
    # The same session saved again on both machines before either syncs: the ref diverges.
    a.ok("fuse", "save", "--session", "shared", "--transcript",
         str(transcript(a.clone / "t.jsonl", "shared",
                        ["Make the lexer streaming", "Keep the old API as a wrapper"])))  # fmt: skip
    b.ok("fuse", "save", "--session", "shared", "--transcript",
         str(transcript(b.clone / "t.jsonl", "shared",
                        ["Make the lexer streaming", "Keep the old API as a wrapper",
                         "Now make the parser streaming too"])))  # fmt: skip
    a.ok("sync")
    out = b.run("sync")
    assert out.returncode == 0, (out.stdout, out.stderr)
    assert "diverged" not in out.stdout
    a.ok("sync")
    b.ok("sync")
    ref = "refs/gitledger/fuse/shared"
    tips = {
        m.name: subprocess.run(
            ["git", "--git-dir", m.ok("where").strip(), "rev-parse", ref],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
        for m in (a, b)
    }  # fmt: skip
    assert tips["laptop"] == tips["desktop"], tips
    restored = a.ok("fuse", "restore", "--session", "shared", "--plain")
    assert "parser streaming" in restored  # b's later request reached a


def test_sync_fuse_false_keeps_snapshots_and_memory_local(
    machines: tuple[Machine, Machine],
) -> None:
    a, b = machines
    a.ok("config", "sync.fuse=false")
    a.ok("remember", "The staging server needs VPN", "--kind", "pitfall")
    a.ok("fuse", "save", "--session", "private", "--transcript",
         str(transcript(a.clone / "t.jsonl", "private", ["Rotate the deploy keys"])))  # fmt: skip
    task_id = shared_task(a, b, "Tasks still travel")
    listed = subprocess.run(
        ["git", "ls-remote", str(a.clone.parent.parent / "served" / "project.git")],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert f"refs/gitledger/tasks/{task_id}" in listed
    assert "refs/gitledger/fuse/" not in listed and "refs/gitledger/memory/" not in listed
    assert b.task(task_id)["goal"] == "Tasks still travel"
    assert "sync.fuse = false" in a.ok("config")


def test_a_new_session_on_the_other_machine_gets_the_task_line(
    machines: tuple[Machine, Machine],
) -> None:
    a, b = machines
    # Two active tasks of this person on a: one claimed from the shell, one by the session.
    other = json.loads(a.ok("task", "create", "Review the importer", "--json"))["id"]
    a.ok("task", "claim", other, "--push")
    task_id = json.loads(a.ok("task", "create", "Make the exporter streaming", "--json"))["id"]
    a.ok("--agent", "sess-a", "task", "claim", task_id, "--push")
    a.ok("--agent", "sess-a", "task", "update", task_id, "--next", "benchmark peak memory")
    # The PreCompact hook saves; nobody links the session: its agent's claim links it.
    saved = a.clone / "t.jsonl"
    transcript(saved, "sess-a", ["Make the exporter streaming, never load the whole file"])
    payload = {"session_id": "sess-a", "transcript_path": str(saved), "cwd": str(a.clone),
               "hook_event_name": "PreCompact", "trigger": "auto"}  # fmt: skip
    hooked = subprocess.run(
        [sys.executable, "-m", "gitledger", "fuse", "save", "--hook"], cwd=a.clone,
        input=json.dumps(payload), capture_output=True, text=True, env=a.env, timeout=120,
    )  # fmt: skip
    assert hooked.returncode == 0 and "Traceback" not in hooked.stderr, hooked.stderr
    a.ok("sync")
    b.ok("sync")
    payload = json.dumps({"session_id": "fresh-b", "source": "startup", "cwd": str(b.clone)})
    out = subprocess.run(
        [sys.executable, "-m", "gitledger", "prime", "--hook"],
        cwd=b.clone, input=payload, capture_output=True, text=True, env=b.env, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    context = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    assert len(context) <= 10_000
    assert f'held by "{NAME}" (agent "cli@laptop")' in context
    assert f"You most likely resume task {task_id}" in context
    assert "benchmark peak memory" in context  # the task's handoff
    assert "never load the whole file" in context  # its latest fuse snapshot
    assert "last sync just now with" in context or "last sync 1 min ago" in context
    # the same snapshot by task, and prime lists the snapshots and the last sync
    assert "never load the whole file" in b.ok("fuse", "restore", "--task", task_id, "--plain")
    status = [line for line in b.ok("fuse", "status").splitlines() if "sess-a" in line]
    assert status and task_id[:8] in status[0]  # the task column
    primed = b.ok("prime", "--budget", "4000")
    assert "sess-a" in primed and "last sync" in primed
    missing = b.run("fuse", "restore", "--task", json.loads(
        b.ok("task", "create", "unlinked", "--json"))["id"], "--plain")  # fmt: skip
    assert missing.returncode != 0 and "No fuse snapshot is linked" in missing.stderr


# --- hooks write as their session; reassigning; lapsed claims in the ready queue ----------------


def _tasklist_call(session: str, n: int, subject: str, status: str | None = None) -> str:
    """A Claude Code PostToolUse payload of TaskCreate (no status) or TaskUpdate (shape as in
    tests/test_tasklist.py, captured from the real client)."""
    if status is None:
        tool, given, response = "TaskCreate", {"subject": subject}, {"task": {"id": str(n)}}
    else:
        tool, given = "TaskUpdate", {"taskId": str(n), "status": status}
        response = {"success": True, "statusChange": {"from": "in_progress", "to": status}}
    return json.dumps(
        {"session_id": session, "hook_event_name": "PostToolUse", "tool_name": tool,
         "tool_input": given, "tool_response": response}
    )  # fmt: skip


def test_a_hook_writes_as_its_session(ledger: Ledger) -> None:
    from conftest import run_cli

    from gitledger.hooks import hook_agent

    session = "5e551011-aaaa-bbbb-cccc-000000000001"
    for n, subject in ((1, "Write the parser"), (2, "Test the parser")):
        out = run_cli("hook", "tasklist", input=_tasklist_call(session, n, subject))
        assert out.returncode == 0 and out.stderr == "", out.stderr
    subs = {t.goal: t for t in ledger.tasks()}
    one, two = subs["Write the parser"], subs["Test the parser"]
    for sub in (one, two):  # the session claims its items (as through the MCP server pinned to it)
        claimed = json.loads(run_cli("--agent", session, "task", "claim", sub.id, "--json").stdout)
        assert claimed["agent"] == session
    held = {t.id: ledger.show(t.id).held_at for t in (one, two)}
    time.sleep(0.05)
    # The hook's write names the session as its agent: it is the holder, so its lease renews.
    out = run_cli("hook", "tasklist", input=_tasklist_call(session, 1, "", "completed"))
    assert out.returncode == 0, out.stderr
    done = ledger.show(one.id)
    assert done.status == "done" and done.agent == session
    assert done.held_at is not None and done.held_at > str(held[one.id])
    # An agent the person pinned (--agent / GITLEDGER_AGENT) wins over the session id: that
    # writer is not the holder, and the lease stays as it was.
    out = run_cli(
        "hook", "tasklist", input=_tasklist_call(session, 2, "", "completed"),
        env={"GITLEDGER_AGENT": "pinned-agent"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    other = ledger.show(two.id)
    assert other.status == "done" and other.held_at == held[two.id]
    assert hook_agent(None, session) == session and hook_agent("pinned", session) == "pinned"
    assert hook_agent(None, {"not": "text"}) is None and hook_agent(None, "a\x00b") is None


def test_reassigning_a_held_task_needs_a_decision(ledger: Ledger) -> None:
    from conftest import run_cli

    task = ledger.create("Held by agent one")
    ledger.claim(task.id, agent="one")
    # Another agent (or person) reassigning it: refused, nothing written, the fix named.
    refused = run_cli("--agent", "two", "task", "update", task.id, "--owner", "Bob", "--json")
    assert refused.returncode == 1, refused.stderr
    error = json.loads(refused.stderr)
    assert (error["error"], error["rule"], error["field"]) == (
        "gate_refused", "reassign-needs-decision", "owner",
    )  # fmt: skip
    assert "--decision" in error["message"] and "agent one" in error["message"]
    cleared = run_cli("--agent", "two", "task", "update", task.id, "--owner", "")
    assert cleared.returncode == 1 and "needs a decision" in cleared.stderr
    assert ledger.show(task.id).version == 2 and ledger.show(task.id).agent == "one"
    with pytest.raises(GateRefused) as caught:
        ledger.update(task.id, owner="Bob", agent="two")
    assert caught.value.rule == "reassign-needs-decision"
    # With a decision: Bob is assigned, agent one's claim is dropped and a note says whose.
    moved = json.loads(run_cli(
        "--agent", "two", "task", "update", task.id, "--owner", "Bob",
        "--decision", "agent one crashed; Bob takes the parser", "--json",
    ).stdout)  # fmt: skip
    assert (moved["owner"], moved.get("agent"), moved.get("held_at")) == ("Bob", None, None)
    assert "dropping the live claim of Test Person (agent one)" in moved["notes"][-1]["text"]
    # Bob claims his assignment as any assignee does; then moving it on needs a decision again.
    assert ledger.claim(task.id, actor="Bob", agent="bob-cli").agent == "bob-cli"
    with pytest.raises(GateRefused, match="Bob \\(agent bob-cli\\) holds a live claim"):
        ledger.update(task.id, owner="Carol")
    # The holder hands its own claim over without one; a lapsed claim needs none either.
    own = ledger.create("Mine to hand over")
    ledger.claim(own.id, agent="one")
    assert ledger.update(own.id, owner="Bob", agent="one").owner == "Bob"
    quiet = ledger.create("Gone quiet")
    ledger.claim(quiet.id, agent="one")
    lapsed = run_cli(
        "--agent", "two", "task", "update", quiet.id, "--owner", "Bob", "--json",
        env={"GITLEDGER_CLAIM_LEASE": "0.01s"},
    )  # fmt: skip
    assert lapsed.returncode == 0, lapsed.stderr
    assert "dropping the lapsed claim" in json.loads(lapsed.stdout)["notes"][-1]["text"]


def test_reassigning_over_mcp_needs_a_decision(ledger: Ledger) -> None:
    from mcp import Client, StdioServerParameters

    task = ledger.create("Held by another server")
    ledger.claim(task.id, agent="other-server")

    async def go() -> tuple[Any, Any]:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "gitledger", "mcp"], env=dict(os.environ)
        )
        async with Client(params, read_timeout_seconds=60) as client:
            bare = await client.call_tool("task_update", {"id": task.id, "owner": "Bob"})
            why = await client.call_tool(
                "task_update",
                {"id": task.id, "owner": "Bob", "decisions": ["other-server is gone"]},
            )
        return bare, why

    bare, why = asyncio.run(go())
    assert bare.is_error and bare.structured_content["rule"] == "reassign-needs-decision"
    assert "decisions" in bare.structured_content["message"]
    assert not why.is_error and why.structured_content["owner"] == "Bob"
    assert ledger.show(task.id).agent is None


@pytest.mark.parametrize("indexed", [True, False])
def test_ready_offers_lapsed_claims(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch, indexed: bool
) -> None:
    from conftest import run_cli

    if not indexed:
        monkeypatch.setenv("GITLEDGER_NO_INDEX", "1")
    waiting = ledger.create("Open and waiting", priority=2)
    quiet = ledger.create("Claimed, then its agent went quiet", priority=1)
    busy = ledger.create("Claimed and busy", priority=1)
    epic = ledger.create("An epic with an open child", priority=0)
    ledger.create("The epic's child", parent=epic.id, priority=3)
    stuck = ledger.create("Claimed, quiet and blocked", priority=0)
    for t in (quiet, busy, epic, stuck):
        ledger.claim(t.id, agent="agent-one")
    ledger.update(stuck.id, status="blocked", blocker="waits on ops", agent="agent-one")
    assert [t.id for t in ledger.ready()] == [waiting.id, ledger.children(epic.id)[0].id]
    time.sleep(1.2)
    ledger.update(busy.id, notes=["still here"], agent="agent-one")  # renews busy's lease
    lease = {"GITLEDGER_CLAIM_LEASE": "1s"}
    monkeypatch.setenv("GITLEDGER_CLAIM_LEASE", "1s")
    ready = [t.id for t in ledger.ready()]
    assert ready == [quiet.id, waiting.id, ledger.children(epic.id)[0].id]
    # The CLI marks it (a subprocess starts later: busy may have lapsed too by then, so only
    # quiet and waiting are looked at).
    listed = json.loads(run_cli("task", "ready", "--json", env=lease).stdout)
    claims = {t["id"]: t["claim"] for t in listed}
    assert (claims[quiet.id], claims[waiting.id]) == ("lapsed", "open")
    lines = run_cli("task", "ready", env=lease).stdout.splitlines()
    line = {ln.split()[0]: ln for ln in lines}
    mark = "[claim lapsed: Test Person (agent agent-one)]"
    assert mark in line[ledger.short_id(quiet.id)]
    assert "[claim" not in line[ledger.short_id(waiting.id)]
    assert [t.id for t in ledger.ready(limit=1)] == [quiet.id]
    # A lapsed claim behind the last open task the limit keeps is not in the page.
    urgent = ledger.create("Urgent and open", priority=0)
    assert [t.id for t in ledger.ready(limit=1)] == [urgent.id]
    assert [t.id for t in ledger.ready(limit=2)] == [urgent.id, quiet.id]
    # It is offered to be taken: claim takes the lapsed claim over.
    taken = json.loads(
        run_cli("--agent", "two", "task", "claim", quiet.id, "--json", env=lease).stdout
    )
    assert taken["claim"] == "took over a lapsed claim"
    assert quiet.id not in [t.id for t in ledger.ready()]


def test_ready_fills_a_page_the_claim_check_thins(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The index picks lapsed claims by their stamp; claim_state has the last word (a stamp it
    # reads as live, written with another offset by another tool). A row it drops is replaced
    # from further down the queue, so ready(N) is not short while more tasks are ready.
    import gitledger.ledger as ledger_module

    seeming = [ledger.create(f"Claimed {n}", priority=0) for n in range(3)]
    for t in seeming:
        ledger.claim(t.id, agent="agent-one")
    opened = [ledger.create(f"Open {n}", priority=2) for n in range(3)]
    monkeypatch.setenv("GITLEDGER_CLAIM_LEASE", "1s")
    time.sleep(1.2)
    monkeypatch.setattr(ledger_module, "claim_state", lambda *_a, **_k: "live")
    # ready's order within a priority: created_at (milliseconds), then id for two made in one
    opened.sort(key=lambda t: (t.created_at, t.id))
    assert [t.id for t in ledger.ready(limit=2)] == [o.id for o in opened[:2]]
    assert [t.id for t in ledger.ready(limit=None)] == [o.id for o in opened]


def test_ready_over_mcp_marks_lapsed_claims(ledger: Ledger) -> None:
    from mcp import Client, StdioServerParameters

    quiet = ledger.create("Quiet claim")
    ledger.claim(quiet.id, agent="gone")
    time.sleep(1.1)

    async def go() -> Any:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "gitledger", "mcp"],
            env={**os.environ, "GITLEDGER_CLAIM_LEASE": "1s"},
        )
        async with Client(params, read_timeout_seconds=60) as client:
            return await client.call_tool("task_ready", {})

    result = asyncio.run(go())
    rows = result.structured_content["tasks"]
    assert [(r["id"], r["claim"], r["agent"]) for r in rows] == [(quiet.id, "lapsed", "gone")]


def test_judge_state_and_settings_changed_on_both_machines_merge(
    machines: tuple[Machine, Machine],
) -> None:
    a, b = machines
    a.ok("judge", "config", "floor=50")
    a.ok("memory", "config", "--capacity", "500")
    a.ok("judge", "spend", "--session", "shared-s", "--input-tokens", "10")
    a.ok("sync")
    b.ok("sync")
    # Both machines change the settings and the same session's judge state before syncing.
    a.ok("judge", "config", "floor=60", "idle_turns=4")
    a.ok("memory", "config", "--capacity", "600")
    a.ok("judge", "spend", "--session", "shared-s", "--input-tokens", "20")
    time.sleep(1.1)  # commit times are whole seconds: b's writes are the later ones
    b.ok("judge", "config", "floor=70", "compaction_turns=30")
    b.ok("judge", "spend", "--session", "shared-s", "--input-tokens", "300")
    b.ok("judge", "spend", "--session", "shared-s", "--input-tokens", "400")
    a.ok("sync")
    out = b.run("sync")
    assert out.returncode == 0, out.stdout + out.stderr  # nothing stranded: no exit 3
    assert "diverged" not in out.stdout
    assert (
        "merged refs/gitledger/config/judge: floor (both machines changed it; the later write "
        "won (this machine's))" in out.stdout
    ), out.stdout
    assert "merged refs/gitledger/judge/shared-s: state (the newer save won" in out.stdout
    a.ok("sync")  # a fast-forwards to the merge
    for m in (a, b):
        config = json.loads(m.ok("judge", "config", "--json"))
        # each side's own key kept; the key both changed went to the later write (b's)
        assert (config["floor"], config["idle_turns"], config["compaction_turns"]) == (70, 4, 30)
        assert json.loads(m.ok("memory", "config", "--json"))["capacity"] == 600
        status = json.loads(m.ok("judge", "status", "--json"))
        spend = {s["session"]: s for s in status["sessions"]}["shared-s"]["model_spend"]
        assert spend["calls"] == 3 and spend["input_tokens"] == 710  # b's newer state
    assert "merged" not in a.ok("sync") and "diverged" not in a.ok("sync")


def test_a_save_nobody_linked_goes_with_the_task_its_agent_holds(ledger: Ledger) -> None:
    from conftest import run_cli

    from gitledger import fuse

    path = transcript(ledger.path.parent / "t.jsonl", "s", ["Tidy the fixtures"])
    first = ledger.create("The one active task")
    ledger.claim(first.id)  # from the shell (cli@HOST), not by the session
    # The saving session holds nothing: this person's single active task is the one.
    out = run_cli("--agent", "s-one", "fuse", "save", "--session", "s-one", "--transcript",
                  str(path), "--json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["snapshot"]["task_id"] == first.id
    # Two active tasks and the session holds neither: nothing is guessed.
    second = ledger.create("Another active task")
    ledger.claim(second.id, agent="elsewhere")
    out = run_cli("--agent", "s-two", "fuse", "save", "--session", "s-two", "--transcript",
                  str(path), "--json")  # fmt: skip
    assert json.loads(out.stdout)["snapshot"].get("task_id") is None
    # The session claims one: its next save goes with it, and restore --task finds it.
    run_cli("--agent", "s-two", "task", "claim", second.id, "--steal", "--decision", "mine now")
    out = run_cli("--agent", "s-two", "fuse", "save", "--session", "s-two", "--transcript",
                  str(path), "--json")  # fmt: skip
    assert json.loads(out.stdout)["snapshot"]["task_id"] == second.id
    assert fuse.load(ledger, "s-two") is not None
    restored = run_cli("fuse", "restore", "--task", second.id, "--plain")
    assert restored.returncode == 0 and "Tidy the fixtures" in restored.stdout


def test_commands_and_servers_inside_a_claude_code_session_claim_as_it(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Claude Code puts CLAUDE_CODE_SESSION_ID in the environment of its Bash tool's commands and
    # of its stdio MCP servers, the session_id its hooks get: all three claim as that session,
    # so a hook's write renews a claim made over MCP or from Bash. A pinned agent still wins.
    from conftest import run_cli

    from gitledger.mcp_server.server import Server

    session = "0c0de5e5-1111-2222-3333-444455556666"
    inside = {"CLAUDE_CODE_SESSION_ID": session}
    task = ledger.create("Claimed from a Bash tool")
    claimed = json.loads(run_cli("task", "claim", task.id, "--json", env=inside).stdout)
    assert claimed["agent"] == session
    again = json.loads(run_cli("task", "claim", task.id, "--json", env=inside).stdout)
    assert again["claim"] == "already yours"
    pinned = run_cli("--agent", "pinned", "task", "claim", task.id, "--json", env=inside)
    assert pinned.returncode == 3 and json.loads(pinned.stderr)["rule"] == "claim-held"
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", session)
    assert Server(ledger.path).agent == session
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "  ")
    assert Server(ledger.path).agent.startswith("mcp-")
    monkeypatch.setenv("GITLEDGER_AGENT", "pinned")
    assert Server(ledger.path).agent == "pinned"
