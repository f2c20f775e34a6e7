"""A full disk and a read-only ledger: a message that says so and what to do, never a traceback,
never advice to delete what was only read (issue 17: D17, D26).

The ledger lives on a real mount the test makes: a 1 MB tmpfs filled to the last block, or a
read-only bind mount. Mounting needs root; elsewhere these tests skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


def _mount(*args: str) -> bool:
    return subprocess.run(["mount", *args], capture_output=True).returncode == 0


def _umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True)


needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("mount") is None, reason="mounting needs root"
)


def gl(ledger: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GITLEDGER_DIR": str(ledger)}
    return subprocess.run(
        [sys.executable, "-m", "gitledger", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=ledger.parent.parent,
    )


def seeded(ledger: Path) -> str:
    assert gl(ledger, "init").returncode == 0
    made = gl(ledger, "task", "create", "written before", "--json")
    assert made.returncode == 0, made.stderr
    assert gl(ledger, "remember", "use pygit2 for storage").returncode == 0
    return str(json.loads(made.stdout)["id"])


WRITES = [
    ("task", "create", "two"),
    ("task", "update", "@", "--next", "x"),
    ("task", "claim", "@"),
    ("remember", "another fact"),
    ("repair",),
]


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    mnt = tmp_path / "small"
    mnt.mkdir()
    if not _mount("-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)):
        pytest.skip("cannot mount a tmpfs here")
    try:
        ledger = mnt / "ledger"
        task_id = seeded(ledger)
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
        try:  # fill to the last block
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        yield ledger, task_id
    finally:
        _umount(mnt)


@needs_root
@pytest.mark.parametrize("command", WRITES, ids=[" ".join(c[:2]) for c in WRITES])
def test_a_full_disk_says_no_space_left_and_what_to_free(
    full_disk: tuple[Path, str], command: tuple[str, ...]
) -> None:
    ledger, task_id = full_disk
    before = gl(ledger, "task", "show", task_id, "--json").stdout
    out = gl(ledger, *(task_id if part == "@" else part for part in command))
    assert "Traceback" not in out.stderr, out.stderr
    if out.returncode != 0:
        assert "no space left" in out.stderr.lower(), out.stderr
        assert "free space" in out.stderr.lower()
        assert "target OID" not in out.stderr
    assert gl(ledger, "task", "show", task_id, "--json").stdout == before or command[0] != "task"
    assert gl(ledger, "verify").returncode == 0  # nothing half-written


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    src = tmp_path / "src"
    mnt = tmp_path / "ro"
    src.mkdir()
    mnt.mkdir()
    if not _mount("--bind", str(src), str(mnt)):
        pytest.skip("cannot bind-mount here")
    try:
        ledger = mnt / "ledger"
        task_id = seeded(ledger)
        for cache in ledger.glob("*.sqlite*"):
            cache.unlink()
        if not _mount("-o", "remount,ro,bind", str(mnt)):
            pytest.skip("cannot remount read-only here")
        yield ledger, task_id
    finally:
        _umount(mnt)


@needs_root
@pytest.mark.parametrize(
    "command",
    [*WRITES, ("index", "rebuild"), ("recall", "pygit2")],
    ids=[" ".join(c[:2]) for c in [*WRITES, ("index", "rebuild"), ("recall", "pygit2")]],
)
def test_a_read_only_ledger_gets_messages_not_tracebacks(
    read_only: tuple[Path, str], command: tuple[str, ...]
) -> None:
    ledger, task_id = read_only
    out = gl(ledger, *(task_id if part == "@" else part for part in command))
    assert out.returncode != 0
    assert "Traceback" not in out.stderr and "PermissionError" not in out.stderr, out.stderr
    assert "read-only" in out.stderr.lower() or "cannot be written" in out.stderr
    assert "delete it" not in out.stderr  # nothing to delete: it was only read
    # Reading still works.
    assert gl(ledger, "task", "show", task_id).returncode == 0
    assert gl(ledger, "task", "list").returncode == 0
    # Queries too, from an index built in memory (none is written).
    for query in (("task", "search", "written"), ("task", "ready", "5"), ("task", "inbox")):
        out = gl(ledger, *query)
        assert out.returncode == 0 and task_id[:6] in out.stdout, (query, out.stdout, out.stderr)
    assert not list(ledger.glob("*.sqlite*"))
