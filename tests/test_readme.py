"""Every command the README quotes works as pasted.

The test reads README.md's fenced ``bash`` blocks and runs each command line, in order, in one
temporary project (a Git work tree with a bare local ``origin``), through the real CLI as a
subprocess (``gitledger`` and ``git-ledger`` on PATH run this checkout), with an isolated HOME. The
README's placeholders are filled in the way a reader would: ``ID`` with the short id the task
create line printed, ``FACT_ID`` with the id ``remember`` printed, ``SESSION.jsonl`` and
``facts.jsonl`` with files made beforehand. Its ``python`` block runs too.

The lines that cannot run here are listed in ``NOT_RUN`` with the reason; keep that list short.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"

# Lines (as they start, after the prompt) that this test does not run, and why.
NOT_RUN: dict[str, str] = {
    "python3 -m venv .venv && . .venv/bin/activate && pip install": (
        "installs into a new virtual environment; the demo it runs is tests/test_demo.py"
    ),
    "python3 -m venv .venv && . .venv/bin/activate && make test": (
        "runs this very suite (it is what .ci/run runs)"
    ),
    "claude plugin marketplace add": (
        "drives Claude Code; tests/e2e/test_e2e_plugin.py runs these two lines for real"
    ),
    "gh issue list": "needs GitHub; gh.json is a fixture of its output's shape",
    "claude plugin install": (
        "drives Claude Code; tests/e2e/test_e2e_plugin.py runs these two lines for real"
    ),
}

# Lines known to fail today, with the issue that fixes them: each must still fail (so the entry is
# removed when it is fixed), and is reported, not run silently.
KNOWN_BROKEN: dict[str, str] = {}

# What a line must print (stdout), beyond exiting 0: the README's promises about its output.
MUST_PRINT: dict[str, str] = {
    "gitledger log ID -p": "+",
    "gitledger recall deploy": "Deploys need the VPN",
    "gitledger task search release": "Ship the release",
}


@dataclass
class Line:
    block: int
    lineno: int
    text: str


def fenced_blocks(text: str, lang: str) -> list[tuple[int, list[tuple[int, str]]]]:
    """The fenced blocks of one language: (first line number, [(line number, line)])."""
    blocks: list[tuple[int, list[tuple[int, str]]]] = []
    current: list[tuple[int, str]] | None = None
    start = 0
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if current is None:
            if stripped == f"```{lang}":
                current, start = [], number
        elif stripped == "```":
            blocks.append((start, current))
            current = None
        else:
            current.append((number, line))
    return blocks


def readme_commands(text: str) -> list[Line]:
    """Each command line of the README's bash blocks, continuation lines joined."""
    lines: list[Line] = []
    for index, (_, block) in enumerate(fenced_blocks(text, "bash")):
        pending = ""
        pending_no = 0
        for number, raw in block:
            if not pending:
                pending_no = number
            if raw.rstrip().endswith("\\"):
                pending += raw.rstrip()[:-1] + " "
                continue
            command = (pending + raw).strip()
            pending = ""
            if command and not command.startswith("#"):
                lines.append(Line(index, pending_no, command))
    return lines


def not_run_reason(command: str) -> str | None:
    for start, reason in NOT_RUN.items():
        if command.startswith(start):
            return reason
    return None


def test_readme_parser_joins_continuations_and_drops_comments() -> None:
    text = "x\n```bash\ngitledger a \\\n    --b c   # note\n# only a comment\n\n```\n"
    assert [(c.lineno, c.text) for c in readme_commands(text)] == [
        (3, "gitledger a      --b c   # note")
    ]


def test_every_not_run_entry_still_names_a_readme_line() -> None:
    commands = [c.text for c in readme_commands(README.read_text())]
    for start in NOT_RUN:
        assert any(c.startswith(start) for c in commands), f"NOT_RUN entry {start!r} is stale"
    for start in [*MUST_PRINT, *KNOWN_BROKEN]:
        assert any(c.startswith(start) for c in commands), f"entry {start!r} is stale"


def test_readme_has_no_pseudo_pipelines() -> None:
    # "a | b | c" meant as alternatives runs as a shell pipeline when pasted.
    for command in readme_commands(README.read_text()):
        code = command.text.split(" #", 1)[0]
        for part in code.split("|")[1:]:
            word = part.split()[0] if part.split() else ""
            assert word in {"gitledger", "git", "jq", "head", "grep", "tee"}, (
                f"README line {command.lineno} pipes into {word!r}: {command.text}"
            )


def shims(folder: Path) -> Path:
    """``gitledger`` and ``git-ledger`` commands that run this checkout with this interpreter."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("gitledger", "git-ledger"):
        shim = folder / name
        shim.write_text(
            "#!/bin/sh\n"
            f'PYTHONPATH="{REPO}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" '
            '-m gitledger "$@"\n'
        )
        shim.chmod(0o755)
    return folder


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """One README line (or block) as a reader's shell runs it: no input, output captured."""
    return subprocess.run(
        argv, cwd=cwd, env=env, input="", capture_output=True, text=True, timeout=180
    )


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)


@pytest.mark.slow
def test_readme_commands_run_as_pasted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gitledger.transcripts.synthetic import write_demo_session

    monkeypatch.delenv("GITLEDGER_DIR")  # the README's ledger is the one in the work tree
    env = dict(os.environ)
    env["PATH"] = f"{shims(tmp_path / 'bin')}{os.pathsep}{env['PATH']}"
    env.pop("PYTHONPATH", None)
    root = tmp_path / "work"
    project = root / "your-project"
    project.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=project)
    (project / "README.md").write_text("A project\n")
    git("add", "README.md", cwd=project)
    git("commit", "-q", "-m", "First commit", cwd=project)
    git("init", "-q", "--bare", str(root / "origin.git"), cwd=root)
    git("remote", "add", "origin", str(root / "origin.git"), cwd=project)
    write_demo_session(project / "SESSION.jsonl")
    # The trackers section imports a beads export and a gh issue list (real-shaped fixtures), and
    # runs the real Taskwarrior, given an empty configuration of its own.
    trackers = Path(__file__).parent / "fixtures" / "trackers"
    (project / ".beads").mkdir()
    shutil.copy(trackers / "beads-issues.jsonl", project / ".beads" / "issues.jsonl")
    shutil.copy(trackers / "github-issues.json", project / "gh.json")
    (tmp_path / "home" / ".taskrc").write_text("")
    (project / "facts.jsonl").write_text(
        '{"text": "The staging database is reset nightly", "kind": "pitfall", '
        '"tags": ["ops"], "importance": 3}\n'
    )
    signing = shutil.which("ssh-keygen") is not None
    if signing:  # the README's signing lines sign with the reader's Git setup: give it one
        key = tmp_path / "home" / "signing_key"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
            check=True,
            capture_output=True,
        )
        git("config", "--global", "gpg.format", "ssh", cwd=project)
        git("config", "--global", "user.signingKey", f"{key}.pub", cwd=project)

    cwd = root
    values: dict[str, str] = {}
    create_block: int | None = None
    failures: list[str] = []
    ran = 0
    for command in readme_commands(README.read_text()):
        reason = not_run_reason(command.text)
        if reason or (not signing and "gitledger.sign" in command.text):
            continue
        if command.text.startswith("task export") and shutil.which("task") is None:
            continue  # Taskwarrior is not installed (scripts/install-test-deps installs it)
        text = command.text
        if create_block is not None and command.block > create_block:
            # Past the task ledger's walk-through (which ends with the task done), ID stands for
            # any task of the reader's: an open one.
            create_block = None
            spare = run(
                ["gitledger", "task", "create", "Fix the flaky parser test", "--criteria", "Green"],
                project,
                env,
            )
            assert spare.returncode == 0, spare.stderr
            values["ID"] = spare.stdout.split()[0]
        if text.startswith("cd "):
            cwd = cwd / text.split()[1]
            continue
        for name, value in values.items():
            text = re.sub(rf"\b{name}\b", value, text)
        if re.search(r"\b(ID|FACT_ID)\b", text):
            failures.append(f"line {command.lineno}: no value yet for a placeholder: {text}")
            continue
        done = run(["bash", "-o", "pipefail", "-c", text], cwd, env)
        ran += 1
        where = (
            f"README line {command.lineno}: {command.text}\n  ran: {text}\n  exit {done.returncode}"
        )
        broken = next(
            (why for start, why in KNOWN_BROKEN.items() if command.text.startswith(start)), None
        )
        if broken is not None:
            if done.returncode == 0:
                failures.append(f"{where}\n  now works: remove it from KNOWN_BROKEN ({broken})")
            continue
        if done.returncode != 0:
            failures.append(f"{where}\n  {done.stdout[-600:]}{done.stderr[-600:]}")
            continue
        for start, expected in MUST_PRINT.items():
            if command.text.startswith(start) and expected not in done.stdout:
                failures.append(f"{where}\n  does not print {expected!r}:\n  {done.stdout[-600:]}")
        if " task create " in f" {text}" and "ID" not in values:
            values["ID"] = done.stdout.split()[0]
            create_block = command.block
        found = re.search(r"^Remembered (\S+)", done.stdout, re.M)
        if found and "FACT_ID" not in values:
            values["FACT_ID"] = found.group(1)

    for number, (start, block) in enumerate(fenced_blocks(README.read_text(), "python")):
        script = tmp_path / f"readme_{number}.py"
        script.write_text("\n".join(line for _, line in block) + "\n")
        done = run([sys.executable, str(script)], project, {**env, "PYTHONPATH": str(REPO)})
        ran += 1
        if done.returncode != 0:
            failures.append(f"README python block at line {start}: {done.stderr[-800:]}")

    assert ran > 40
    assert not failures, "\n\n".join(failures)
