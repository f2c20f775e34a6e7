"""Optional commit signing of ledger writes with the user's Git signing configuration, and
``verify`` reporting unsigned or badly signed versions when signatures are required.

Real tools only: a throwaway ed25519 key made with ssh-keygen (and a throwaway gpg key in its own
GNUPGHOME when gpg is installed); Git itself checks that the signatures are ones it accepts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_cli

from gitledger.errors import StorageError
from gitledger.ledger import Ledger

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen")

EMAIL = "test@example.com"


def git(ledger: Ledger, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "--git-dir", str(ledger.path), *args], capture_output=True, text=True, check=check
    )


def ssh_key(folder: Path, name: str = "key") -> Path:
    key = folder / name
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", EMAIL, "-f", str(key)], check=True
    )
    return key


def allow(allowed: Path, *keys: Path) -> None:
    allowed.write_text("".join(f"{EMAIL} {k.with_suffix('.pub').read_text()}" for k in keys))


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "keys"
    folder.mkdir()
    key = ssh_key(folder)
    allowed = folder / "allowed_signers"
    allow(allowed, key)
    return key, allowed


def configure_ssh(ledger: Ledger, key: Path, allowed: Path, *, sign: bool = True) -> None:
    git(ledger, "config", "gpg.format", "ssh")
    git(ledger, "config", "user.signingKey", str(key))
    git(ledger, "config", "gpg.ssh.allowedSignersFile", str(allowed))
    if sign:
        git(ledger, "config", "gitledger.sign", "true")


def reopen(ledger: Ledger) -> Ledger:
    return Ledger.open(ledger.path)  # the signer is read once per store


def tips(ledger: Ledger) -> list[str]:
    return [tip for _name, tip in ledger.store.refs("refs/gitledger/tasks/")]


def test_signing_is_off_by_default(ledger: Ledger) -> None:
    task = ledger.create("plain")
    assert not ledger.store.commit_info(tips(ledger)[0]).signed
    assert ledger.store.check_signature(tips(ledger)[0]).status == "unsigned"
    assert ledger.verify().ok  # nothing required: unsigned is fine
    assert ledger.show(task.id).goal == "plain"


def test_ssh_signed_writes_verify_and_git_accepts_them(
    ledger: Ledger, keys: tuple[Path, Path]
) -> None:
    key, allowed = keys
    configure_ssh(ledger, key, allowed)
    led = reopen(ledger)
    task = led.create("signed")
    led.update(task.id, notes=["a note"], status="active")
    history = list(led.store.walk(tips(led)[0]))
    assert len(history) == 2 and all(info.signed for info in history)
    for info in history:
        check = led.store.check_signature(info.oid)
        assert check.status == "good" and EMAIL in check.detail
        # Git itself verifies the signature gitledger wrote.
        out = git(led, "-c", f"gpg.ssh.allowedSignersFile={allowed}", "verify-commit", info.oid)
        assert out.returncode == 0, out.stderr
    git(led, "config", "gitledger.requireSigned", "true")
    report = reopen(led).verify()
    assert report.ok, report.problems
    assert report.versions == 2
    out = run_cli("verify", "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["ok"], out.stdout + out.stderr


def test_required_signatures_name_every_unsigned_version(
    ledger: Ledger, keys: tuple[Path, Path]
) -> None:
    key, allowed = keys
    old = ledger.create("from before signing")
    configure_ssh(ledger, key, allowed)
    led = reopen(ledger)
    led.update(old.id, notes=["signed now"])
    new = led.create("signed from the start")
    git(led, "config", "gitledger.requireSigned", "true")
    report = reopen(led).verify()
    assert [(p.ref.rsplit("/", 1)[-1], p.message.split(" (")[0]) for p in report.problems] == [
        (old.id, "version 1")
    ]
    assert "is unsigned" in report.problems[0].message
    assert "task import" in report.problems[0].message  # names the bulk path that never signs
    out = run_cli("verify")
    assert out.returncode == 1
    assert f"BAD  refs/gitledger/tasks/{old.id}: version 1" in out.stdout
    assert new.id not in out.stdout


def test_environment_turns_signing_and_requirement_on_and_off(
    ledger: Ledger, keys: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    key, allowed = keys
    configure_ssh(ledger, key, allowed, sign=False)
    monkeypatch.setenv("GITLEDGER_SIGN", "1")
    reopen(ledger).create("signed by the environment")
    monkeypatch.setenv("GITLEDGER_SIGN", "0")
    git(ledger, "config", "gitledger.sign", "true")
    reopen(ledger).create("not signed: the environment says no")
    signed = sorted(ledger.store.commit_info(t).signed for t in tips(ledger))
    assert signed == [False, True]
    assert reopen(ledger).verify().ok
    monkeypatch.setenv("GITLEDGER_REQUIRE_SIGNED", "1")
    assert len(reopen(ledger).verify().problems) == 1


def test_a_key_not_in_the_allowed_signers_is_reported(
    ledger: Ledger, keys: tuple[Path, Path], tmp_path: Path
) -> None:
    key, allowed = keys
    stranger = ssh_key(tmp_path / "keys", "stranger")
    configure_ssh(ledger, stranger, allowed)
    reopen(ledger).create("signed by a stranger")
    git(ledger, "config", "gitledger.requireSigned", "true")
    report = reopen(ledger).verify()
    assert len(report.problems) == 1
    assert "not in the allowed signers file" in report.problems[0].message


def test_a_tampered_signed_version_is_reported(ledger: Ledger, keys: tuple[Path, Path]) -> None:
    key, allowed = keys
    configure_ssh(ledger, key, allowed)
    led = reopen(ledger)
    led.create("the original goal")
    ref, tip = led.store.refs("refs/gitledger/tasks/")[0]
    raw = git(led, "cat-file", "commit", tip).stdout
    assert "gpgsig -----BEGIN SSH SIGNATURE-----" in raw
    forged = raw.replace("create:", "create (edited):", 1)
    assert forged != raw
    oid = subprocess.run(
        ["git", "--git-dir", str(led.path), "hash-object", "-t", "commit", "-w", "--stdin"],
        input=forged,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    git(led, "update-ref", ref, oid, tip)
    check = led.store.check_signature(oid)
    assert check.status == "bad" and "does not match" in check.detail
    git(led, "config", "gitledger.requireSigned", "true")
    report = reopen(led).verify()
    assert len(report.problems) == 1 and "bad SSH signature" in report.problems[0].message


def test_an_ssh_signature_without_an_allowed_signers_file_is_unverifiable(
    ledger: Ledger, keys: tuple[Path, Path]
) -> None:
    key, allowed = keys
    configure_ssh(ledger, key, allowed)
    reopen(ledger).create("signed")
    git(ledger, "config", "--unset", "gpg.ssh.allowedSignersFile")
    git(ledger, "config", "gitledger.requireSigned", "true")
    report = reopen(ledger).verify()
    assert len(report.problems) == 1
    assert "set gpg.ssh.allowedSignersFile" in report.problems[0].message


@pytest.mark.parametrize("problem", ["missing key file", "no key", "unknown format"])
def test_a_signing_failure_writes_nothing_and_names_the_fix(
    problem: str, ledger: Ledger, keys: tuple[Path, Path], tmp_path: Path
) -> None:
    key, allowed = keys
    configure_ssh(ledger, tmp_path / "no-such-key", allowed)
    if problem == "no key":
        git(ledger, "config", "--unset", "user.signingKey")
    if problem == "unknown format":
        git(ledger, "config", "gpg.format", "x509")
    with pytest.raises(StorageError, match="gitledger.sign|user.signingKey"):
        reopen(ledger).create("never written")
    assert tips(ledger) == []
    out = run_cli("task", "create", "never written either")
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert "signingKey" in out.stderr or "gitledger.sign=false" in out.stderr
    assert tips(ledger) == []


def test_bulk_import_writes_unsigned_versions_and_verify_says_so(
    ledger: Ledger, keys: tuple[Path, Path], tmp_path: Path
) -> None:
    key, allowed = keys
    configure_ssh(ledger, key, allowed)
    source = tmp_path / "tasks.jsonl"
    source.write_text(json.dumps({"goal": "imported"}) + "\n")
    out = run_cli("task", "import", str(source))
    assert out.returncode == 0, out.stderr
    git(ledger, "config", "gitledger.requireSigned", "true")
    report = reopen(ledger).verify()
    assert len(report.problems) == 1
    assert "is unsigned" in report.problems[0].message
    assert "'task import', which does not sign" in report.problems[0].message


# --- OpenPGP, when gpg is installed ------------------------------------------------------------


def gpg_daemons(home: Path) -> list[str]:
    """Processes (gpg-agent, keyboxd, dirmngr) serving the keyring at ``home``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if args and Path(args[0].decode(errors="replace")).name in GPG_DAEMONS:
            try:
                env = (proc / "environ").read_bytes().split(b"\0")
            except OSError:
                env = []
            if str(home).encode() in b" ".join(args) or f"GNUPGHOME={home}".encode() in env:
                found.append(proc.name)
    return found


GPG_DAEMONS = {"gpg-agent", "keyboxd", "dirmngr"}


def stop_gpg_daemons(home: Path) -> None:
    """What gpg started for a test's keyring ends with the test (gpg leaves its agent running)."""
    if shutil.which("gpgconf"):
        subprocess.run(
            ["gpgconf", "--kill", "all"],
            env={**os.environ, "GNUPGHOME": str(home)},
            capture_output=True,
            timeout=30,
        )


def make_gpg_key(home: Path) -> None:
    """A throwaway ed25519 signing key in the keyring at ``home`` (this starts a gpg-agent)."""
    subprocess.run(
        [
            "gpg",
            "--batch",
            "--passphrase",
            "",
            "--quick-gen-key",
            EMAIL,
            "ed25519",
            "sign",
            "never",
        ],
        check=True,
        capture_output=True,
        timeout=120,
        env={**os.environ, "GNUPGHOME": str(home)},
    )


@pytest.fixture
def gnupg_homes() -> Iterator[list[Path]]:
    homes: list[Path] = []
    yield homes
    for home in homes:
        stop_gpg_daemons(home)


@pytest.fixture
def gpg_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gnupg_homes: list[Path]) -> str:
    if shutil.which("gpg") is None:
        pytest.skip("needs gpg")
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    gnupg_homes.append(home)
    monkeypatch.setenv("GNUPGHOME", str(home))
    make_gpg_key(home)
    listing = subprocess.run(
        ["gpg", "--batch", "--with-colons", "--list-secret-keys", EMAIL],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return next(line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr"))


def test_gpg_signed_writes_verify(ledger: Ledger, gpg_key: str) -> None:
    git(ledger, "config", "gitledger.sign", "true")
    git(ledger, "config", "user.signingKey", gpg_key)
    led = reopen(ledger)
    task = led.create("signed with gpg")
    led.update(task.id, next="ship it")
    for info in led.store.walk(tips(led)[0]):
        assert info.signed
        check = led.store.check_signature(info.oid)
        assert check.status == "good" and EMAIL in check.detail
        assert git(led, "verify-commit", info.oid, check=False).returncode == 0
    git(led, "config", "gitledger.requireSigned", "true")
    assert reopen(led).verify().ok


def test_gpg_signature_by_an_unknown_key_is_reported(
    ledger: Ledger,
    gpg_key: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    gnupg_homes: list[Path],
) -> None:
    git(ledger, "config", "gitledger.sign", "true")
    git(ledger, "config", "user.signingKey", gpg_key)
    reopen(ledger).create("signed with gpg")
    other = tmp_path / "other-gnupg"
    other.mkdir(mode=0o700)
    gnupg_homes.append(other)
    monkeypatch.setenv("GNUPGHOME", str(other))  # a keyring that does not know the key
    git(ledger, "config", "gitledger.requireSigned", "true")
    report = reopen(ledger).verify()
    assert len(report.problems) == 1 and "not in your keyring" in report.problems[0].message
    assert os.environ["GNUPGHOME"] == str(other)


def test_the_gpg_agent_a_signing_test_starts_is_stopped(ledger: Ledger, tmp_path: Path) -> None:
    """The teardown of ``gpg_key`` (``stop_gpg_daemons``) leaves no daemon on the test's keyring."""
    if shutil.which("gpg") is None or shutil.which("gpgconf") is None:
        pytest.skip("needs gpg and gpgconf")
    home = tmp_path / "gnupg-started"
    home.mkdir(mode=0o700)
    make_gpg_key(home)
    assert gpg_daemons(home), "gpg started no agent: nothing here to stop"
    stop_gpg_daemons(home)
    for _ in range(50):
        if not gpg_daemons(home):
            break
        time.sleep(0.1)
    assert gpg_daemons(home) == []
