"""Remote URLs as git reads them, and their secrets never echoed (issue 17: D16, D18).

Real CLI runs against a live ``git daemon`` on loopback and a closed loopback port; ssh is
replaced by ``false`` so that no test can dial out.
"""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import pytest
from conftest import run_cli

from gitledger.errors import InvalidInput
from gitledger.gitstore import is_local_url, local_path, redact_url
from gitledger.gitstore.urls import redact_text
from gitledger.ledger import Ledger

NO_SSH = {"GIT_SSH_COMMAND": "false", "GIT_SSH": "false"}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- D16: which URLs are paths -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("/srv/ledger.git", True),
        ("./backup.git", True),
        ("backup.git", True),
        ("~/backups/l.git", True),
        ("./odd:name.git", True),
        ("/abs/odd:name", True),
        ("file:///srv/ledger.git", True),
        ("host:ledger.git", False),
        ("example.com:team/ledger.git", False),
        ("git@example.com:team/ledger.git", False),
        ("[::1]:ledger.git", False),
        ("ssh://host/ledger.git", False),
        ("https://host/ledger.git", False),
        ("git://host/ledger.git", False),
    ],
)
def test_local_or_remote_as_git_decides(url: str, local: bool) -> None:
    assert is_local_url(url) is local
    # git agrees: ls-remote of a local path never tries ssh (GIT_SSH_COMMAND=false would say).


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("file:///srv/ledger.git", "/srv/ledger.git"),
        ("file://localhost/srv/l.git", "/srv/l.git"),
        ("file:///a%20b/c.git", "/a b/c.git"),
    ],
)
def test_file_urls_name_the_path(url: str, path: str) -> None:
    assert str(local_path(url)) == path


@pytest.mark.parametrize(
    "url", ["file://otherhost/srv/l.git", "file:///srv/l.git?x=1", "file:///a#b", "file://"]
)
def test_file_urls_that_are_no_local_path_are_refused(url: str) -> None:
    with pytest.raises(InvalidInput):
        local_path(url)


def test_backup_to_a_file_url_writes_that_path_not_a_folder_named_file(
    tmp_path: Path, ledger: Ledger
) -> None:
    task = ledger.create("backed up by URL")
    work = tmp_path / "work"
    work.mkdir()
    target = tmp_path / "backups" / "with space.git"
    url = "file://" + str(target).replace(" ", "%20")
    out = run_cli("backup", url, cwd=work)
    assert out.returncode == 0, out.stderr
    assert (target / "HEAD").exists()
    assert not (work / "file:").exists() and not list(work.iterdir())
    refs = subprocess.run(
        ["git", "--git-dir", str(target), "for-each-ref", "--format=%(refname)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"refs/gitledger/tasks/{task.id}" in refs
    other = tmp_path / "other-ledger"
    back = run_cli("restore", url, cwd=work, env={"GITLEDGER_DIR": str(other)})
    assert back.returncode == 0, back.stderr
    assert (other / "refs" / "gitledger" / "tasks" / task.id).exists()


@pytest.mark.parametrize("url", ["host.invalid:ledger.git", "backuphost:team/l.git"])
def test_host_colon_path_is_ssh_and_never_a_local_folder(
    tmp_path: Path, ledger: Ledger, url: str
) -> None:
    ledger.create("x")
    work = tmp_path / "work"
    work.mkdir()
    out = run_cli("backup", url, cwd=work, env=NO_SSH)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert list(work.iterdir()) == []  # no folder 'host.invalid:ledger.git' made here
    assert url.split(":")[0] in out.stderr


# --- D18: secrets in the query and fragment ----------------------------------------------------

SECRET = "tok9f8e7d6c5b4aZZ"
PLACES = {
    "password": "https://alice:{s}@127.0.0.1:{port}/l.git",
    "user-only": "https://{s}@127.0.0.1:{port}/l.git",
    "query": "https://127.0.0.1:{port}/l.git?access_token={s}",
    "query-second": "https://127.0.0.1:{port}/l.git?x=1&private_token={s}",
    "fragment": "https://127.0.0.1:{port}/l.git#{s}",
    "git-query": "git://127.0.0.1:{port}/l.git?token={s}",
    "all": "https://bob:{s}@127.0.0.1:{port}/l.git?t={s}2#{s}3",
}


@pytest.mark.parametrize("place", sorted(PLACES))
def test_redact_url_masks_every_place_a_token_travels(place: str) -> None:
    url = PLACES[place].format(s=SECRET, port=1)
    shown = redact_url(url)
    assert SECRET not in shown and "***" in shown
    assert "127.0.0.1:1/l.git" in shown  # still says where
    said = f"fatal: unable to access '{url}': could not connect; token {SECRET} refused"
    assert SECRET not in redact_text(said, url)


@pytest.mark.parametrize("place", sorted(PLACES))
def test_no_command_echoes_a_token_from_a_remote_url(
    tmp_path: Path, ledger: Ledger, place: str
) -> None:
    ledger.create("a task")
    url = PLACES[place].format(s=SECRET, port=closed_port())
    for args in (
        ("backup", url),
        ("sync", url),
        ("sync", url, "--json"),
        ("restore", url),
        ("remote", "setup", "origin", url),
        ("remote", "setup", "origin", url, "--json"),
        ("where", "--json"),
    ):
        out = run_cli(*args, env=NO_SSH)
        assert SECRET not in out.stdout + out.stderr, (args, out.stdout, out.stderr)
        assert "Traceback" not in out.stderr


def test_a_live_daemon_never_sees_its_query_token_echoed(tmp_path: Path, ledger: Ledger) -> None:
    from helpers import start_daemon

    ledger.create("a task")
    server = start_daemon(tmp_path / "served")
    try:
        server.bare("real.git")
        for name in ("real.git", "missing.git"):
            url = f"git://127.0.0.1:{server.port}/{name}?access_token={SECRET}#{SECRET}"
            for args in (("backup", url), ("sync", url, "--json"), ("restore", url)):
                out = run_cli(*args)
                assert SECRET not in out.stdout + out.stderr, (args, out.stdout, out.stderr)
                if args[-1] == "--json" and out.stdout.strip().startswith("{"):
                    assert SECRET not in json.dumps(json.loads(out.stdout))
    finally:
        server.stop()
