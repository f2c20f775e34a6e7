"""The installed distribution is ``git-ledger`` (the name ``gitledger`` on PyPI is another
project's), its import package and both commands are ``gitledger``, and the development tools
are pinned exactly, so a fresh machine tests what CI tests."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

import gitledger

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_distribution_is_git_ledger_with_both_commands() -> None:
    try:
        dist = importlib.metadata.distribution("git-ledger")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("git-ledger is not installed here (make install does pip install -e .)")
    scripts = {ep.name: ep.value for ep in dist.entry_points if ep.group == "console_scripts"}
    assert scripts == {"gitledger": "gitledger.cli:main", "git-ledger": "gitledger.cli:main"}
    assert dist.version == PYPROJECT["project"]["version"]


def test_version_runs_from_the_checkout_root_and_anywhere(tmp_path: Path) -> None:
    # From the checkout root the editable install's git_ledger.egg-info sits on sys.path beside
    # the installed metadata; --version must not depend on finding exactly one of them.
    assert gitledger.__version__ == PYPROJECT["project"]["version"]
    for cwd in (ROOT, tmp_path):
        out = subprocess.run(
            [sys.executable, "-m", "gitledger", "--version"],
            capture_output=True,
            text=True,
            cwd=cwd,
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout == f"gitledger, version {gitledger.__version__}\n"


def test_pyproject_has_what_a_published_package_needs() -> None:
    project = PYPROJECT["project"]
    assert project["name"] == "git-ledger"
    for key in ("readme", "license", "classifiers", "urls", "requires-python", "description"):
        assert project.get(key), key


def test_runtime_dependencies_are_bounded_to_a_major() -> None:
    for requirement in PYPROJECT["project"]["dependencies"]:
        assert re.search(r">=[^,]+,<\d", requirement), requirement


def test_dev_tools_are_pinned_and_agree_with_the_constraints() -> None:
    pins = {}
    for line in (ROOT / "requirements" / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[name.lower().replace("_", "-")] = version
    for requirement in PYPROJECT["project"]["optional-dependencies"]["test"]:
        name, sep, version = requirement.partition("==")
        assert sep, f"{requirement} is not pinned exactly"
        assert pins.get(name.lower()) == version, requirement
    for requirement in PYPROJECT["project"]["dependencies"]:
        name = re.split(r"[<>=!~ ]", requirement, maxsplit=1)[0].lower()
        assert name in pins, f"{name} has no pin in requirements/constraints.txt"


def test_install_hints_name_the_distribution() -> None:
    hinted = ["README.md", "docs", "hooks", "gitledger"]
    for base in hinted:
        for path in [ROOT / base] if (ROOT / base).is_file() else (ROOT / base).rglob("*"):
            if path.is_file() and path.suffix in {"", ".md", ".py", ".json", ".sh", ".ts"}:
                text = path.read_text(encoding="utf-8", errors="replace")
                assert not re.search(r"(pipx|pip) install gitledger\b", text), path
