"""Secrets never reach a commit: a transcript with an AWS key, a GitHub token and a URL with a
password goes through a real `fuse save` (and its memory intake) and `remember`, and no object in
the ledger, nor in the remote after a sync, holds any of them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import run_cli

from gitledger.redact import redact

AWS_KEY = "AKIAQ3EGUY7LNXR5WZTB"
AWS_SECRET = "kT9vQ2xLmP4rS7wY1zB8nC5dF3gH6jK0aE2iU9oR"
GITHUB = "ghp_R8sLq2VwX9mZk4TnB7yC1dF6gH3jP0aE5uQi"
PASSWORD = "s3cr3tPassw0rd"
URL = f"https://deploy:{PASSWORD}@git.example.com/team/app.git"
SECRETS = (AWS_KEY, AWS_SECRET, GITHUB, PASSWORD)


def all_objects(git_dir: Path) -> bytes:
    out = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch-all-objects", "--batch"],
        check=True,
        capture_output=True,
    )
    return out.stdout


def write_transcript(path: Path) -> Path:
    events = [
        {"type": "user", "sessionId": "s1", "timestamp": "2026-12-01T10:00:00.000Z",
         "message": {"role": "user", "content":
                     f"Deploy with AWS_ACCESS_KEY_ID={AWS_KEY} AWS_SECRET_ACCESS_KEY={AWS_SECRET}"
                     f" and push to {URL}. We decided to keep the token {GITHUB} in CI only."}},
        {"type": "assistant", "sessionId": "s1", "timestamp": "2026-12-01T10:01:00.000Z",
         "message": {"role": "assistant", "content": [
             {"type": "text", "text": f"Decision: use {URL} as the deploy remote. Pitfall: "
                                      f"{GITHUB} expires in May."},
             {"type": "tool_use", "id": "t1", "name": "Bash",
              "input": {"command": f"git push {URL} main"}}]}},
        {"type": "user", "sessionId": "s1", "timestamp": "2026-12-01T10:02:00.000Z",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "t1",
              "content": f"export GITHUB_TOKEN={GITHUB}\naws_secret_access_key = {AWS_SECRET}"}]}},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def test_planted_secrets_never_reach_a_commit(tmp_path: Path, isolated: Path) -> None:
    ledger_dir = isolated / "ledger"
    assert run_cli("init").returncode == 0
    transcript = write_transcript(tmp_path / "session.jsonl")
    saved = run_cli("fuse", "save", "--session", "s1", "--transcript", str(transcript), "--json")
    assert saved.returncode == 0, saved.stderr
    # what the fuse kept is still there, with the secrets cut out
    restored = run_cli("fuse", "restore", "--session", "s1", "--plain").stdout
    assert "git.example.com" in restored and "[redacted:" in restored
    remembered = run_cli("remember", f"CI pushes with {GITHUB} to {URL}", "--kind", "pitfall")
    assert remembered.returncode == 0, remembered.stderr
    imported = tmp_path / "facts.jsonl"
    imported.write_text(json.dumps({"text": f"key {AWS_KEY}", "kind": "constraint"}) + "\n")
    assert run_cli("memory", "import", str(imported)).returncode == 0
    task = json.loads(run_cli("task", "create", "Deploy", "--json").stdout)
    assert run_cli("fuse", "link", task["id"], "--session", "s1").returncode == 0
    objects = all_objects(ledger_dir)
    assert objects  # the scan read the ledger
    for secret in SECRETS:
        assert secret.encode() not in objects, secret
    # and a sync pushes nothing that holds one
    remote = tmp_path / "remote.git"
    assert run_cli("sync", str(remote)).returncode == 0
    pushed = all_objects(remote)
    for secret in SECRETS:
        assert secret.encode() not in pushed, secret


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("commit 3c0f4e4a1b2c3d4e5f60718293a4b5c6d7e8f901 fixed it", True),
        ("see gitledger/fuse/store.py and tests/test_claims.py", True),
        ("session 0f3a2b1c-4d5e-6f70-8192-a3b4c5d6e7f8, task 8fpvat3zzgh9pczd4qr6", True),
        ("test_two_agents_of_one_person_on_two_machines passes", True),
        ("token validation failed; api_key = $API_KEY", True),
        (f"git clone {URL}", False),
        (f"GITHUB_TOKEN={GITHUB}", False),
        ("password: correcthorsebattery", False),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----",
            False,
        ),
        ("Authorization: Bearer eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4", False),
        ("the key is xQ7vR2mN9pL4kT8wZ3bY6cH1dF5gJ0aS", False),
    ],
)
def test_what_is_redacted(text: str, kept: bool) -> None:
    assert (redact(text) == text) is kept, redact(text)


def test_a_url_keeps_its_user_and_host() -> None:
    assert redact(URL) == "https://deploy:[redacted: password]@git.example.com/team/app.git"
