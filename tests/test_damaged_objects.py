"""Broken objects and refs on disk: a clear error naming what is damaged, never a hang, never a
task silently left out (issue 17: D7, D6, D25).

Each case damages a real ledger file the way a crash or a bad disk would and runs the real CLI
as a subprocess with a timeout: a command that spins (libgit2 1.9.7 did, at 100% CPU, on a
truncated loose object) fails the test instead of hanging it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitledger.ledger import Ledger

TIMEOUT_S = 30


def gl(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **(env or {})}
    try:
        return subprocess.run(
            [sys.executable, "-m", "gitledger", *args],
            capture_output=True,
            text=True,
            env=full,
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"gitledger {' '.join(args)} hung for {TIMEOUT_S} s") from exc


def loose(ledger: Ledger, oid: str) -> Path:
    return ledger.path / "objects" / oid[:2] / oid[2:]


def git(ledger: Ledger, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(ledger.path), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def damage(path: Path, keep: int | None, garbage: bytes | None = None) -> None:
    data = path.read_bytes()
    path.chmod(0o644)
    path.write_bytes(garbage if garbage is not None else data[: keep if keep is not None else 0])


# --- D7: truncated or garbage loose objects -----------------------------------------------------

CUTS = {"2-bytes": 2, "quarter": 0.25, "half": 0.5, "all-but-one": -1, "empty": 0}
KINDS = ("commit", "tree", "blob")


def object_of(ledger: Ledger, task_id: str, kind: str) -> str:
    ref = f"refs/gitledger/tasks/{task_id}"
    if kind == "commit":
        return git(ledger, "rev-parse", ref)
    if kind == "tree":
        return git(ledger, "rev-parse", f"{ref}^{{tree}}")
    return git(ledger, "rev-parse", f"{ref}:task.json")


@pytest.mark.parametrize("cut", sorted(CUTS))
@pytest.mark.parametrize("kind", KINDS)
def test_a_truncated_loose_object_is_named_and_nothing_hangs(
    ledger: Ledger, kind: str, cut: str
) -> None:
    task = ledger.create("will be damaged", criteria="c")
    ledger.update(task.id, next="step two")
    other = ledger.create("stays readable")
    oid = object_of(ledger, task.id, kind)
    path = loose(ledger, oid)
    size = path.stat().st_size
    share = CUTS[cut]
    keep = int(size * share) if isinstance(share, float) else (size + share if share < 0 else share)
    damage(path, keep)
    must_fail = [
        ("task", "show", task.id),
        ("task", "history", task.id),
        ("task", "update", task.id, "--next", "x"),
        ("task", "context", task.id),
        ("verify",),
    ]
    for args in [*must_fail, ("index", "rebuild"), ("task", "export"), ("task", "list")]:
        out = gl(*args)
        assert "Traceback" not in out.stderr, (args, out.stderr)
        if args in must_fail:
            assert out.returncode != 0, (args, out.stdout)
            assert oid in out.stdout + out.stderr, (args, out.stdout, out.stderr)
    verify = json.loads(gl("verify", "--json").stdout)
    assert not verify["ok"]
    assert any(oid in p["message"] for p in verify["problems"])
    assert gl("task", "show", other.id).returncode == 0  # the rest of the ledger still reads


@pytest.mark.parametrize(
    "garbage", [b"\x00" * 40, b"not zlib at all", os.urandom(64)], ids=["zeros", "text", "random"]
)
def test_a_garbage_loose_object_is_named(ledger: Ledger, garbage: bytes) -> None:
    task = ledger.create("garbage inside")
    oid = object_of(ledger, task.id, "blob")
    damage(loose(ledger, oid), None, garbage)
    out = gl("task", "show", task.id)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert oid in out.stderr


# --- D6: an empty or garbage loose ref ---------------------------------------------------------

BROKEN_REFS = {
    "empty": b"",
    "newline": b"\n",
    "garbage": b"garbage\n",
    "short-hex": b"abc123\n",
    "binary": b"\x00\xff\xfe\x00",
}


@pytest.mark.parametrize("content", sorted(BROKEN_REFS))
def test_a_broken_task_ref_is_named_with_the_commit_that_restores_it(
    ledger: Ledger, tmp_path: Path, content: str
) -> None:
    keep = ledger.create("stays")
    lost = ledger.create("loses its ref", criteria="c")
    ledger.update(lost.id, next="second version")
    tip = git(ledger, "rev-parse", f"refs/gitledger/tasks/{lost.id}")
    ref_file = ledger.path / "refs" / "gitledger" / "tasks" / lost.id
    ref_file.write_bytes(BROKEN_REFS[content])

    out = gl("verify", "--json")
    assert out.returncode != 0
    report = json.loads(out.stdout)
    assert not report["ok"]
    [problem] = [p for p in report["problems"] if lost.id in p["ref"]]
    assert tip in problem["message"] and "restore it with echo" in problem["message"]

    exported = gl("task", "export")
    assert exported.returncode != 0 and lost.id in exported.stderr
    assert keep.id in exported.stdout  # the rest is still exported

    backup = gl("backup", str(tmp_path / "backup.git"))
    assert backup.returncode != 0 and lost.id in backup.stderr and "Traceback" not in backup.stderr
    pushed = subprocess.run(
        ["git", "--git-dir", str(tmp_path / "backup.git"), "for-each-ref"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert keep.id in pushed  # everything readable was backed up

    bundle = gl("backup", "--bundle", str(tmp_path / "l.bundle"))
    assert bundle.returncode != 0 and lost.id in bundle.stderr

    # The advice works: the command verify printed restores the task as it was.
    command = problem["message"].split("restore it with ", 1)[1]
    subprocess.run(["sh", "-c", command], check=True)
    assert gl("verify").returncode == 0
    shown = json.loads(gl("task", "show", lost.id, "--json").stdout)
    assert shown["version"] == 2 and shown["next"] == "second version"


# --- D25: a garbage packed-refs ---------------------------------------------------------------


@pytest.mark.parametrize(
    "garbage",
    [b"garbage line\n", b"\x00\xff\n", b"# pack-refs with: peeled\nnot-an-oid refs/x\n"],
    ids=["text", "binary", "bad-line"],
)
def test_a_garbage_packed_refs_names_the_file_not_verify(ledger: Ledger, garbage: bytes) -> None:
    task = ledger.create("one")
    (ledger.path / "packed-refs").write_bytes(garbage)
    for args in (("verify",), ("task", "create", "two"), ("task", "show", task.id)):
        out = gl(*args)
        assert "Traceback" not in out.stderr
        if out.returncode != 0:
            assert "packed-refs" in out.stderr, (args, out.stderr)
            assert "Run 'gitledger verify'" not in out.stderr


# --- RELIABILITY.md finding 1: an import killed mid-way leaves a ref lock ----------------------


@pytest.mark.parametrize("which", ["new-task", "existing-task"])
def test_an_import_heals_a_stale_ref_lock_as_writes_do(
    ledger: Ledger, tmp_path: Path, which: str
) -> None:
    source = Ledger.open(tmp_path / "source", create=True)
    tasks = [source.create(f"exported {n}") for n in range(3)]
    export = tmp_path / "export.jsonl"
    if which == "existing-task":  # the ledger holds version 1; the import brings version 2
        assert gl("--ledger", str(source.path), "task", "export", "-o", str(export)).returncode == 0
        assert gl("task", "import", str(export)).returncode == 0
        source.update(tasks[0].id, next="v2")
    assert gl("--ledger", str(source.path), "task", "export", "-o", str(export)).returncode == 0
    folder = ledger.path / "refs" / "gitledger" / "tasks"
    folder.mkdir(parents=True, exist_ok=True)
    lock = folder / f"{tasks[0].id}.lock"
    lock.write_text("")  # what an import killed between taking the lock and renaming it leaves
    old = os.path.getmtime(lock) - 60
    os.utime(lock, (old, old))
    out = gl("task", "import", str(export), "--json")
    assert out.returncode == 0, out.stderr
    assert "removed a stale lock" in out.stderr
    assert not lock.exists()
    assert ledger.show(tasks[0].id).version == (2 if which == "existing-task" else 1)
