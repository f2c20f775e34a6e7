"""Property tests (hypothesis) over the storage layer's hostile inputs: remote URLs and their
secrets, loose object files, loose ref files and packed-refs (issue 17).

Each property holds for every generated input: secrets never survive redaction; a damaged loose
object is always named, never passed to libgit2 (which spins on a truncated one); a ref file
that is no object id is always reported; no reader raises on any bytes.
"""

from __future__ import annotations

import hashlib
import os
import zlib
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gitledger.gitstore.raw import broken_refs, loose_object_problem, read_packed_refs
from gitledger.gitstore.urls import is_local_url, redact_text, redact_url

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
WORD = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=1
)
SECRET = st.text(alphabet="abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789_-", min_size=8)


@FAST
@given(
    scheme=st.sampled_from(["https", "http", "ssh", "git", "ftp"]),
    user=st.one_of(st.none(), WORD),
    secret=SECRET,
    host=WORD,
    path=st.lists(WORD, min_size=1, max_size=3),
    where=st.sets(st.sampled_from(["password", "query", "fragment"]), min_size=1),
    key=WORD,
)
def test_a_secret_never_survives_redaction(
    scheme: str,
    user: str | None,
    secret: str,
    host: str,
    path: list[str],
    where: set[str],
    key: str,
) -> None:
    assume(not any(secret in part for part in (host, key, user or "", *path, scheme)))
    userinfo = ""
    if "password" in where:
        userinfo = f"{user}:{secret}@" if user else f"{secret}@"
    url = f"{scheme}://{userinfo}{host}.example/{'/'.join(path)}"
    if "query" in where:
        url += f"?{key}={secret}"
    if "fragment" in where:
        url += f"#{secret}"
    shown = redact_url(url)
    assert secret not in shown
    assert f"{host}.example" in shown  # still says where
    said = f"fatal: could not read from {url}: token {secret} refused; '{user}:{secret}@{host}'"
    assert secret not in redact_text(said, url)


@FAST
@given(st.text(min_size=1, max_size=40).filter(lambda s: "\x00" not in s))
def test_local_or_remote_follows_gits_rule(text: str) -> None:
    """git's url_is_local_not_ssh: a path has no ':' or a '/' before its first ':'; file:// is a
    path; anything else with a ':' (scheme://, host:path) is dialled."""
    if text.startswith("file://") or ":" not in text:
        expected = True
    else:
        expected = "/" in text[: text.index(":")]
    assert is_local_url(text) is expected


def _loose_object(tmp: Path, body: bytes) -> tuple[str, Path, bytes]:
    data = b"blob %d\x00" % len(body) + body
    oid = hashlib.sha1(data).hexdigest()
    path = tmp / "objects" / oid[:2] / oid[2:]
    path.parent.mkdir(parents=True, exist_ok=True)
    return oid, path, zlib.compress(data)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(body=st.binary(max_size=3000), cut=st.floats(min_value=0.0, max_value=1.0))
def test_every_truncation_of_a_loose_object_is_named(
    tmp_path: Path, body: bytes, cut: float
) -> None:
    oid, path, packed = _loose_object(tmp_path, body)
    keep = int(len(packed) * cut)
    path.write_bytes(packed[:keep])
    problem = loose_object_problem(tmp_path, oid)
    if keep == len(packed):
        assert problem is None
    else:
        assert problem is not None


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(garbage=st.binary(max_size=2000))
def test_no_bytes_make_the_object_check_raise(tmp_path: Path, garbage: bytes) -> None:
    oid = "ab" + "0" * 38
    path = tmp_path / "objects" / "ab" / ("0" * 38)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(garbage)
    problem = loose_object_problem(tmp_path, oid)
    assert problem is None or isinstance(problem, str)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(content=st.binary(max_size=200))
def test_a_ref_file_naming_no_object_is_reported(tmp_path: Path, content: bytes) -> None:
    folder = tmp_path / "refs" / "gitledger" / "tasks"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "t1").write_bytes(content)
    found = broken_refs(tmp_path, "refs/gitledger/")
    stripped = content.strip()
    sound = (
        len(stripped) == 40 and all(c in b"0123456789abcdef" for c in stripped)
    ) or stripped.startswith(b"ref:")
    assert ("refs/gitledger/tasks/t1" in found) is not sound


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(content=st.binary(max_size=4000))
def test_no_packed_refs_bytes_make_the_reader_raise(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "packed-refs").write_bytes(content)
    refs = read_packed_refs(tmp_path)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in refs.items())
    os.unlink(tmp_path / "packed-refs")
