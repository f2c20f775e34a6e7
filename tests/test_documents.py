"""``gitstore/documents.py``: the one reader and writer of small JSON documents on refs, as the
fuse, the judge and memory's settings use it. Real ledgers in ``tmp_path``."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from gitledger.errors import CorruptRecord, InvalidInput
from gitledger.gitstore import RefMoved
from gitledger.gitstore.documents import (
    decode,
    depth,
    encode,
    load_json,
    read_document,
    update_document,
    write_document,
    write_version,
)
from gitledger.ledger import Ledger
from gitledger.memory import CONFIG_REF, DEFAULT_CAPACITY, Memory

REF = "refs/gitledger/test/doc"
AUTHOR = ("Test Person", "test@example.com")


def test_load_json_names_what_does_not_read() -> None:
    assert load_json(b'{"a": [1, {"b": 2}]}', "x") == {"a": [1, {"b": 2}]}
    with pytest.raises(CorruptRecord, match=r"^delta\.json is not JSON"):
        load_json(b"not json", "delta.json")
    with pytest.raises(CorruptRecord, match="nests too deeply"):
        load_json(b"[" * 100_000 + b"]" * 100_000, "snapshot.json")
    with pytest.raises(CorruptRecord, match="nests deeper than 2 levels"):
        load_json(b"[[[1]]]", "link.json", max_depth=2)
    assert load_json(b"[[1]]", "link.json", max_depth=2) == [[1]]
    with pytest.raises(CorruptRecord, match="is not JSON"):
        load_json(b'"\xff"', "state.json")  # not UTF-8


def test_depth_counts_without_recursion() -> None:
    assert depth(1) == 0 and depth([]) == 1 and depth({"a": [{}]}) == 3
    deep: list[object] = []
    for _ in range(50_000):  # deeper than Python's stack
        deep = [deep]
    assert depth(deep) == 50_001
    assert depth(deep, stop=10) == 11  # stops counting once past the limit


def test_decode_reads_damage_as_empty() -> None:
    assert decode(None) == ({}, False)
    assert decode(encode({"k": "é"})) == ({"k": "é"}, False)
    assert decode(b"[1, 2]") == ({}, True)
    assert decode(b"{") == ({}, True)
    assert encode({"b": 1, "a": "é"}) == '{\n "a": "é",\n "b": 1\n}\n'.encode()


def test_write_version_moves_the_ref_only_from_the_version_read(ledger: Ledger) -> None:
    store = ledger.store
    with store.lock():
        first = write_document(store, REF, "d.json", {"n": 1}, "one\n", AUTHOR, expected_tip=None)
        with pytest.raises(RefMoved):
            write_document(store, REF, "d.json", {"n": 9}, "lost\n", AUTHOR, expected_tip=None)
        second = write_version(
            store, REF, {"d.json": encode({"n": 2})}, "two\n", AUTHOR, expected_tip=first
        )
        with pytest.raises(RefMoved):
            write_version(store, REF, {"d.json": b"{}"}, "stale\n", AUTHOR, expected_tip=first)
    assert read_document(store, REF, "d.json").data == {"n": 2}
    assert [c.oid for c in store.first_parent_chain(second)] == [second, first]
    with store.lock():
        merge = write_version(
            store,
            REF,
            {"d.json": encode({"n": 3})},
            "merge\n",
            AUTHOR,
            expected_tip=second,
            parents=[second, first],
        )
        alone = write_version(
            store, REF, {"d.json": b"{}"}, "key\n", AUTHOR, expected_tip=merge, history=False
        )
    assert store.commit_info(merge).parents == (second, first)
    assert store.commit_info(alone).parents == ()


def test_update_document_writes_nothing_when_the_change_says_so(ledger: Ledger) -> None:
    after = update_document(ledger.store, REF, "d.json", lambda d: {"n": 1}, "one\n", AUTHOR)
    same = update_document(ledger.store, REF, "d.json", lambda d: None, "none\n", AUTHOR)
    assert same.tip == after.tip and same.data == {"n": 1}


def test_memory_settings_are_a_document_and_damage_reads_as_defaults(ledger: Ledger) -> None:
    memory = Memory(ledger)
    assert memory.config() == {"capacity": DEFAULT_CAPACITY}
    memory.set_capacity(7)
    assert read_document(ledger.store, CONFIG_REF, "config.json").data == {"capacity": 7}
    tip = ledger.store.tip(CONFIG_REF)
    with pytest.raises(InvalidInput):
        memory.set_capacity(0)
    assert ledger.store.tip(CONFIG_REF) == tip  # refused: nothing written
    with ledger.store.lock():  # a damaged settings document, as a sync could bring one
        write_version(
            ledger.store, CONFIG_REF, {"config.json": b"[1"}, "bad\n", AUTHOR, expected_tip=tip
        )
    assert memory.config() == {"capacity": DEFAULT_CAPACITY}
    out = run_cli("memory", "config", "--capacity", "5", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["capacity"] == 5
    assert memory.config() == {"capacity": 5}
