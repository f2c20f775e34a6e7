"""Commit signing and checking, with the user's own tools (ssh-keygen or gpg).

Optional, and off unless asked for: ``gitledger.sign = true`` in the ledger's Git config (which
also reads the user's global config) or ``GITLEDGER_SIGN=1``. The key and format are the user's
Git signing settings (``user.signingKey``, ``gpg.format``, ``gpg.program``,
``gpg.ssh.program``), so a ledger commit is signed exactly as ``git commit -S`` would sign it.
Checking uses ``gpg.ssh.allowedSignersFile`` for SSH signatures and the user's keyring for
OpenPGP ones. libgit2 neither signs nor verifies; it stores and returns the raw pieces.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pygit2

from ..errors import StorageError
from .errors import strerror

_SIGN_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class SignatureCheck:
    status: str  # "good", "unsigned", "bad" or "unverifiable"
    detail: str


def config_bool(config: pygit2.Config, name: str) -> bool:
    try:
        return bool(config.get_bool(name))
    except (KeyError, pygit2.GitError, ValueError):
        return False


def config_str(config: pygit2.Config, name: str) -> str | None:
    try:
        value = config[name]
    except (KeyError, pygit2.GitError, ValueError):
        return None
    return str(value) if value else None


@dataclass(frozen=True)
class Signer:
    """Signs commit content with ssh-keygen (``gpg.format = ssh``) or gpg (``openpgp``)."""

    format: str
    key: str
    program: str

    def sign(self, content: str) -> str:
        if self.format == "ssh":
            with tempfile.TemporaryDirectory(prefix="gitledger-sign-") as tmp:
                key = self.key
                if key.startswith("key::"):  # a literal public key: the agent holds the secret
                    literal = Path(tmp) / "key.pub"
                    literal.write_text(key[len("key::") :] + "\n")
                    key = str(literal)
                out = self._run([self.program, "-Y", "sign", "-n", "git", "-f", key], content)
        else:
            out = self._run([self.program, "--status-fd=2", "-bsau", self.key], content)
        if "-----BEGIN" not in out:
            raise StorageError(
                f"Signing the ledger commit with {self.program} gave no signature; nothing was "
                f"written. Check user.signingKey, or turn signing off (gitledger.sign=false)."
            )
        return out

    def _run(self, argv: list[str], content: str) -> str:
        try:
            done = subprocess.run(
                argv,
                input=content.encode("utf-8"),
                capture_output=True,
                timeout=_SIGN_TIMEOUT_S,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise StorageError(
                f"Cannot sign the ledger commit with {argv[0]} ({strerror(exc)}); nothing was "
                f"written. Install it, set gpg.program / gpg.ssh.program, or turn signing off "
                f"(gitledger.sign=false)."
            ) from exc
        if done.returncode != 0:
            why = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise StorageError(
                f"Signing the ledger commit failed ({why[-1] if why else 'no message'}); nothing "
                f"was written. Check user.signingKey and gpg.format, or turn signing off "
                f"(gitledger.sign=false)."
            )
        return done.stdout.decode("utf-8", "replace")


def signer_from_config(config: pygit2.Config) -> Signer | None:
    """The signer the user's Git configuration asks for, or None when signing is off."""
    env = os.environ.get("GITLEDGER_SIGN")
    wanted = env == "1" if env is not None else config_bool(config, "gitledger.sign")
    if not wanted:
        return None
    key = config_str(config, "user.signingKey")
    fmt = (config_str(config, "gpg.format") or "openpgp").lower()
    if fmt not in ("ssh", "openpgp"):
        raise StorageError(
            f"Ledger signing is on but gpg.format is {fmt!r}; gitledger signs with 'ssh' or "
            f"'openpgp'. Set gpg.format, or turn signing off (gitledger.sign=false)."
        )
    if fmt == "ssh":
        if not key:
            raise StorageError(
                "Ledger signing is on (gitledger.sign) with gpg.format=ssh but user.signingKey "
                "is not set. Set it to your key file: git config user.signingKey ~/.ssh/id_ed25519"
            )
        if not key.startswith("key::"):
            key = str(Path(key).expanduser())
        program = config_str(config, "gpg.ssh.program") or "ssh-keygen"
    else:
        program = config_str(config, "gpg.program") or "gpg"
        if not key:
            key = config_str(config, "user.email") or ""
        if not key:
            raise StorageError(
                "Ledger signing is on (gitledger.sign) but neither user.signingKey nor "
                "user.email is set. Set user.signingKey to your key id."
            )
    return Signer(fmt, key, program)


def verify_signature(sig: bytes, payload: bytes, config: pygit2.Config) -> SignatureCheck:
    """Check one signature over ``payload``: SSH against the allowed-signers file, OpenPGP with
    gpg's keyring. Never raises for a bad signature; reports it."""
    with tempfile.TemporaryDirectory(prefix="gitledger-verify-") as tmp:
        sig_file = Path(tmp) / "commit.sig"
        sig_file.write_bytes(sig)
        if sig.lstrip().startswith(b"-----BEGIN SSH SIGNATURE-----"):
            return _verify_ssh(sig_file, payload, config)
        return _verify_gpg(sig_file, payload, config)


def _run_check(argv: list[str], payload: bytes | None) -> subprocess.CompletedProcess[bytes] | None:
    try:
        return subprocess.run(argv, input=payload, capture_output=True, timeout=_SIGN_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None


def _verify_ssh(sig_file: Path, payload: bytes, config: pygit2.Config) -> SignatureCheck:
    allowed = config_str(config, "gpg.ssh.allowedSignersFile")
    if not allowed:
        return SignatureCheck(
            "unverifiable",
            "has an SSH signature that cannot be checked: set gpg.ssh.allowedSignersFile",
        )
    allowed = str(Path(allowed).expanduser())
    program = config_str(config, "gpg.ssh.program") or "ssh-keygen"
    found = _run_check([program, "-Y", "find-principals", "-f", allowed, "-s", str(sig_file)], None)
    if found is None:
        return SignatureCheck("unverifiable", f"has an SSH signature but {program} did not run")
    principals = found.stdout.decode("utf-8", "replace").split()
    if found.returncode != 0 or not principals:
        return SignatureCheck("bad", "is signed by a key that is not in the allowed signers file")
    for principal in principals:
        done = _run_check(
            [
                program,
                "-Y",
                "verify",
                "-f",
                allowed,
                "-I",
                principal,
                "-n",
                "git",
                "-s",
                str(sig_file),
            ],
            payload,
        )
        if done is not None and done.returncode == 0:
            return SignatureCheck("good", f"has a good SSH signature by {principal}")
    return SignatureCheck("bad", "has a bad SSH signature (the content does not match it)")


def _verify_gpg(sig_file: Path, payload: bytes, config: pygit2.Config) -> SignatureCheck:
    program = config_str(config, "gpg.program") or "gpg"
    done = _run_check([program, "--status-fd=1", "--verify", str(sig_file), "-"], payload)
    if done is None:
        return SignatureCheck("unverifiable", f"has an OpenPGP signature but {program} did not run")
    status = done.stdout.decode("utf-8", "replace")
    if "[GNUPG:] GOODSIG" in status and "[GNUPG:] VALIDSIG" in status and done.returncode == 0:
        who = next(
            (ln.split(" ", 3)[-1] for ln in status.splitlines() if "[GNUPG:] GOODSIG" in ln), ""
        )
        return SignatureCheck("good", f"has a good OpenPGP signature by {who}")
    if "[GNUPG:] NO_PUBKEY" in status or "[GNUPG:] ERRSIG" in status:
        return SignatureCheck("bad", "is signed by an OpenPGP key that is not in your keyring")
    return SignatureCheck("bad", "has a bad OpenPGP signature (the content does not match it)")


__all__ = [
    "SignatureCheck",
    "Signer",
    "config_bool",
    "config_str",
    "signer_from_config",
    "verify_signature",
]
