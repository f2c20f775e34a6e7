"""The documentation agrees with the code (in the manner of sqlite-utils' tests/test_docs.py).

Every command and subcommand has help text and is documented; the README's command table lists
exactly the commands there are; docs/MCP.md's tool table lists exactly the tools the server
offers; docs/ARCHITECTURE.md names every module, and nothing cites a design file outside the
repository.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from gitledger.cli import cli

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
DOCS = {p.name: p.read_text() for p in sorted((REPO / "docs").glob("*.md"))}


def walk(command: click.Command, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    ctx = click.Context(cli)
    if path:
        yield path
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, name
            yield from walk(sub, (*path, name))


def command_at(path: tuple[str, ...]) -> click.Command:
    ctx = click.Context(cli)
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        found = command.get_command(ctx, name)
        assert found is not None
        command = found
    return command


COMMANDS = list(walk(cli))


def test_there_are_commands() -> None:
    assert ("task", "create") in COMMANDS and ("memory", "export") in COMMANDS


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_every_command_has_help_text(path: tuple[str, ...]) -> None:
    command = command_at(path)
    assert (command.help or "").strip(), f"gitledger {' '.join(path)} has no help text"
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            assert (param.help or "").strip(), f"gitledger {' '.join(path)} {param.opts[0]}"


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_every_command_is_documented(path: tuple[str, ...]) -> None:
    name = " ".join(path)
    text = README + "".join(DOCS.values())
    # Quoted as a command line, or (for the ContextSpindle-compatible spellings) in backticks.
    pattern = rf"(gitledger {re.escape(name)}|`{re.escape(name)})(?![\w-])"
    assert re.search(pattern, text), f"gitledger {name} is in neither README.md nor docs/"


def readme_command_table() -> set[tuple[str, ...]]:
    section = README.split("## Commands", 1)[1].split("\n## ", 1)[0]
    listed: set[tuple[str, ...]] = set()
    for row in section.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        found = re.fullmatch(r"`gitledger ([\w-]+)`", cells[0]) if len(cells) >= 3 else None
        if not found:
            continue
        listed.add((found.group(1),))
        for sub in re.findall(r"`([\w-]+)`", cells[1]):
            listed.add((found.group(1), sub))
    return listed


def test_readme_command_table_lists_exactly_the_commands() -> None:
    listed = readme_command_table()
    assert listed, "README.md has no '## Commands' table"
    actual = set(COMMANDS)
    assert not actual - listed, f"missing from README's command table: {sorted(actual - listed)}"
    assert not listed - actual, f"in README's command table but not a command: {listed - actual}"


def mcp_doc_tools() -> set[str]:
    section = DOCS["MCP.md"].split("## Tools", 1)[1].split("\n#", 1)[0]
    names: set[str] = set()
    for row in section.splitlines():
        if row.startswith("| `"):
            names.update(re.findall(r"`([a-z_]+)`", row.split("|")[1]))
    return names


def test_mcp_tool_table_lists_exactly_the_tools() -> None:
    from gitledger.mcp_server import CORE_TOOLS, SERVICE_TOOLS, available_tools

    every = {t.name for t in (*CORE_TOOLS, *SERVICE_TOOLS)}
    assert {t.name for t in available_tools()} == every  # a full install offers them all
    documented = mcp_doc_tools()
    assert documented == every, (
        f"undocumented: {sorted(every - documented)}; not tools: {sorted(documented - every)}"
    )


def test_architecture_names_every_module() -> None:
    text = DOCS["ARCHITECTURE.md"]
    package = REPO / "gitledger"
    for path in sorted(package.iterdir()):
        if path.name.startswith("_") or path.name == "py.typed" or path.name == "__pycache__":
            continue
        name = path.stem if path.suffix == ".py" else path.name
        if path.suffix not in (".py", "") or (
            path.is_dir() and not (path / "__init__.py").exists()
        ):
            continue
        assert re.search(rf"\b{re.escape(name)}(\.py|/)", text), (
            f"docs/ARCHITECTURE.md does not describe gitledger/{path.name}: add its paragraph"
        )


def test_nothing_cites_a_design_file_outside_the_repository() -> None:
    cited = []
    for folder in ("gitledger", "docs", "tests", "benchmarks", "hooks"):
        for path in (REPO / folder).rglob("*"):
            if "node_modules" in path.parts or not path.is_file():
                continue
            if path.suffix not in (".py", ".md", ".ts", ".json", "") or path == Path(__file__):
                continue
            try:
                text = path.read_text()
            except UnicodeDecodeError:
                continue
            if "DESIGN.md" in text:
                cited.append(str(path.relative_to(REPO)))
    assert "DESIGN.md" not in README
    assert not cited, f"cite docs/ARCHITECTURE.md instead: {cited}"


# --- the README's set-up and figures ---------------------------------------------------------


def test_readme_set_up_is_two_commands_each_in_a_new_venv_and_ci_runs_the_second() -> None:
    section = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line for line in block.splitlines() if line.strip()]
    assert len(commands) == 2, commands
    demo, test = commands
    for command in commands:
        assert command.startswith("python3 -m venv .venv && . .venv/bin/activate && ")
    assert demo.endswith("pip install -e . && gitledger demo")
    assert test.endswith("&& make test")
    ci = (REPO / ".ci" / "run").read_text()
    assert [
        line for line in ci.splitlines() if line and not line.startswith(("#", "set ", "cd "))
    ] == ["make test"]
    makefile = (REPO / "Makefile").read_text()
    recipe = re.search(r"^test: (.+)$", makefile, re.M)
    assert recipe and recipe.group(1).split() == ["install", "lint", "typecheck", "pytest"]


DATA_WORDS = (
    "synthetic",
    "published",
    "corpus",
    "labelled by",
    "we scripted",
    "we generate",
    "benchmarks/",
    "our 26 tools",
)


def test_every_readme_figure_names_its_data() -> None:
    section = README.split("## Measured", 1)[1].split("\n## ", 1)[0]
    rows = [r for r in section.splitlines() if r.startswith("| ") and not r.startswith("| what")]
    assert len(rows) > 10
    for row in rows:
        what = row.split("|")[1]
        assert any(word in what for word in DATA_WORDS), (
            f"name the data this was measured on: {what}"
        )
        if "we " in what or "by us" in what:
            assert "**" in what, f"say in bold that we made or labelled the data: {what}"
