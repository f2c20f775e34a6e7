"""Checking a ledger: ``verify`` (objects re-hash, records validate, versions chain, signatures
when required, evidence that cites commits), the advice for a broken task ref, ``repair`` of
stale ref locks, and the check of the commits evidence cites.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import (
    CorruptRecord,
    InvalidInput,
    LedgerError,
)
from .gitstore import commit_exists
from .model import (
    ID_PATTERN,
    RECORD_FILES,
    Task,
    record_from_files,
)
from .refs import TASKS_PREFIX

if TYPE_CHECKING:
    from .ledger import Ledger


# Evidence citing a commit: ``commit:SHA`` and anything after it.
COMMIT_EVIDENCE = re.compile(r"^commit:([0-9a-fA-F]{7,40})\b")


@dataclass
class Problem:
    ref: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"ref": self.ref, "message": self.message}


@dataclass
class VerifyReport:
    tasks: int = 0
    versions: int = 0
    problems: list[Problem] = field(default_factory=list)
    # Evidence citing a commit this project's repository lacks: listed, not a failure (the commit
    # may be on another machine, not pushed yet).
    unverified: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "tasks": self.tasks,
            "versions": self.versions,
            "problems": [p.to_dict() for p in self.problems],
            "unverified": [p.to_dict() for p in self.unverified],
        }


def verify(ledger: Ledger) -> VerifyReport:
    """Check every task: objects re-hash to their ids, records validate, versions chain; with
    ``gitledger.requireSigned`` (or GITLEDGER_REQUIRE_SIGNED=1), every version is signed by a
    key the user trusts (gpg.ssh.allowedSignersFile, or the gpg keyring)."""
    report = VerifyReport()
    require_signed = ledger.store.signing_required()
    for name, tip in ledger.store.refs(TASKS_PREFIX):
        leaf = name[len(TASKS_PREFIX) :]
        if not ID_PATTERN.match(leaf):
            report.problems.append(Problem(name, "not a gitledger task id (a foreign ref)"))
            continue
        report.tasks += 1
        try:
            versions: dict[str, int] = {}
            infos = list(ledger.store.walk(tip))
            for info in reversed(infos):  # oldest first, so parents are known
                ledger.store.check_objects(info.oid)
                files = ledger.store.read_files(info.oid, RECORD_FILES)
                record = record_from_files(files, where=name, commit=info.oid)[0]
                if record.id != leaf:
                    raise CorruptRecord(f"version {record.version} says id {record.id}")
                expected = max((versions[p] for p in info.parents), default=0) + 1
                if record.version != expected:
                    raise CorruptRecord(
                        f"commit {info.oid[:12]} is version {record.version}, expected "
                        f"{expected}: the version chain is broken"
                    )
                versions[info.oid] = record.version
                report.versions += 1
                if require_signed:
                    check = ledger.store.check_signature(info.oid)
                    if check.status != "good":
                        why = f"version {record.version} (commit {info.oid[:12]}) {check.detail}"
                        if check.status == "unsigned":
                            # Bulk writes (task import, memory import) never sign.
                            why += (
                                ": written before signing was on (gitledger.sign), by "
                                "another tool, or by 'task import', which does not sign"
                            )
                        report.problems.append(Problem(name, why))
            if infos:
                where = "no repository here to check" if ledger.project_root is None else ""
                for sha in ledger.unverified_evidence(record):
                    report.unverified.append(
                        Problem(
                            name,
                            f"evidence cites commit {sha}, "
                            + (where or "which this repository does not have")
                            + " (fetch it, or correct the evidence)",
                        )
                    )
        except LedgerError as exc:
            report.problems.append(Problem(name, exc.message))
    for name, what in sorted(ledger.store.broken_refs(TASKS_PREFIX).items()):
        report.tasks += 1
        report.problems.append(Problem(name, broken_ref_advice(ledger, name, what)))
    return report


def broken_ref_advice(ledger: Ledger, name: str, what: str) -> str:
    """What a broken task ref means and the command that restores it, when its newest
    version is still in the object store (a ref file emptied by a crash keeps its commits)."""
    leaf = name[len(TASKS_PREFIX) :]
    said = f"the ref file {what}: the task is missing from listings, exports and backups"
    versions = []
    for info in ledger.store.lost_commits(f"Task: {leaf}\n"):
        found = re.search(r"^Version: (\d+)$", info.message, re.M)
        if found:
            versions.append((int(found.group(1)), info.time, info.oid))
    if not versions:
        return f"{said}; no version of it is left here: restore it from a backup"
    version, _when, oid = max(versions)
    # git update-ref refuses a ref whose file is broken; rewriting the file is what works.
    return (
        f"{said}; its newest version left here is {version} (commit {oid}): restore it with "
        f"echo {oid} > {shlex.quote(str(ledger.path / name))}"
    )


def repair(ledger: Ledger, older_than: float = 60.0) -> list[str]:
    """Remove ref lock files left by killed writers (only while no gitledger writer runs)."""
    removed = []
    with ledger.store.lock(timeout=5):
        for lock in ledger.store.stale_ref_locks(older_than):
            lock.unlink(missing_ok=True)
            removed.append(str(lock.relative_to(ledger.path)))
    return removed


def check_evidence_commit(ledger: Ledger, text: str) -> None:
    match = COMMIT_EVIDENCE.match(text.strip())
    if match and ledger.project_root is not None:
        if not commit_exists(ledger.project_root, match.group(1)):
            raise InvalidInput(
                f"Evidence cites commit {match.group(1)}, which this repository does not have."
            )


def unverified_evidence(ledger: Ledger, task: Task) -> list[str]:
    """The commits ``task``'s evidence cites (``commit:SHA ...``) that this project's
    repository does not have, or cannot check (no repository here): unverified evidence."""
    out = []
    for entry in task.evidence:
        match = COMMIT_EVIDENCE.match(entry.text.strip())
        if match and (
            ledger.project_root is None or not commit_exists(ledger.project_root, match.group(1))
        ):
            out.append(match.group(1))
    return out


__all__ = [
    "Problem",
    "VerifyReport",
    "broken_ref_advice",
    "check_evidence_commit",
    "repair",
    "unverified_evidence",
    "verify",
]
