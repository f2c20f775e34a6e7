"""The storage package: its one JSON-document helper, its one error reading, its boundary."""

from __future__ import annotations

import ast
import json
import subprocess
from pathlib import Path

import pytest

import gitledger
from gitledger.gitstore import GitStore, RefMoved, read_document, update_document, write_document
from gitledger.gitstore.errors import kind_of

AUTHOR = ("Tester", "tester@example.com")
REF = "refs/gitledger/test/doc"


@pytest.fixture
def store(tmp_path: Path) -> GitStore:
    return GitStore.init(tmp_path / "ledger")


def test_document_round_trip_and_compare_and_swap(store: GitStore) -> None:
    assert read_document(store, REF, "state.json").tip is None
    with store.lock():
        first = write_document(
            store, REF, "state.json", {"n": 1}, "one\n", AUTHOR, expected_tip=None
        )
    doc = read_document(store, REF, "state.json")
    assert (doc.tip, doc.data, doc.damaged) == (first, {"n": 1}, False)
    with store.lock(), pytest.raises(RefMoved):  # a writer that read no version may not replace one
        write_document(store, REF, "state.json", {"n": 9}, "lost\n", AUTHOR, expected_tip=None)
    after = update_document(
        store, REF, "state.json", lambda d: {"n": d.data["n"] + 1}, "two\n", AUTHOR
    )
    assert after.data == {"n": 2}
    assert store.commit_info(after.tip or "").parents == (first,)  # history kept
    # Git itself reads what was written.
    shown = subprocess.run(
        ["git", "--git-dir", str(store.path), "show", f"{REF}:state.json"],
        capture_output=True,
        check=True,
    ).stdout
    assert json.loads(shown) == {"n": 2}


@pytest.mark.parametrize(
    "raw",
    [b"not json", b"[1, 2]", b"\xff\xfe", b"[" * 100_000 + b"]" * 100_000, b'"text"', b""],
    ids=["text", "array", "bad-utf8", "deep", "string", "empty"],
)
def test_a_damaged_document_reads_as_damaged_not_as_a_traceback(
    store: GitStore, raw: bytes
) -> None:
    with store.lock():
        store.write(REF, {"state.json": raw}, "planted\n", AUTHOR, [], None)
    doc = read_document(store, REF, "state.json")
    assert doc.damaged and doc.data == {}
    # The next save starts fresh on top of it.
    after = update_document(store, REF, "state.json", lambda d: {"fresh": True}, "x\n", AUTHOR)
    assert read_document(store, REF, "state.json").data == {"fresh": True} == after.data


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("object hash mismatch", "corrupt"),
        ("failed to inflate object", "corrupt"),
        ("invalid pack file", "corrupt"),
        ("failed to lock file '/l/refs/x.lock' for writing", "lock"),
        ("cannot push non-fastforwardable reference", "moved"),
        ("! [rejected] (fetch first)", "moved"),
        ("reference 'refs/x' already exists", "moved"),
        ("connection refused", "other"),
    ],
)
def test_one_reading_of_git_error_words(text: str, kind: str) -> None:
    assert kind_of(text) == kind


def test_pygit2_is_imported_only_by_the_storage_package() -> None:
    root = Path(gitledger.__file__).parent
    outside = []
    for path in sorted(root.rglob("*.py")):
        if "gitstore" in path.relative_to(root).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(n.split(".")[0] == "pygit2" for n in names):
                outside.append(str(path.relative_to(root)))
    assert outside == []
