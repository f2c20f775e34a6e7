"""The public API: what is exported, the error tree, and record round trips."""

from __future__ import annotations

import inspect

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gitledger
from gitledger import errors
from gitledger.ledger import Ledger
from gitledger.model import decode_record, encode_record


def test_all_names_are_exported_and_importable() -> None:
    for name in gitledger.__all__:
        assert getattr(gitledger, name) is not None, name
    assert set(errors.__all__) <= set(gitledger.__all__)


def test_error_tree_is_drawn_in_the_docstring() -> None:
    doc = errors.__doc__ or ""
    for name, value in vars(errors).items():
        if inspect.isclass(value) and issubclass(value, errors.LedgerError):
            assert name in doc, f"{name} missing from the tree in errors.py"


def test_exit_codes() -> None:
    assert errors.InvalidInput("x").exit_code == 2
    assert errors.VersionConflict("t", 1, 2).exit_code == 3
    assert errors.TaskNotFound("x").exit_code == 1


texts = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=200
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    goal=texts.filter(lambda s: s.strip()),
    criteria=texts,
    notes=st.lists(texts.filter(lambda s: s.strip()), max_size=4),
    priority=st.integers(0, 4),
    labels=st.lists(
        st.from_regex(r"[a-z][a-z0-9_-]{0,10}", fullmatch=True), max_size=4, unique=True
    ),
)
def test_record_round_trip_through_git(
    ledger: Ledger, goal: str, criteria: str, notes: list[str], priority: int, labels: list[str]
) -> None:
    task = ledger.create(goal, criteria=criteria, priority=priority, labels=labels)
    if notes:
        task = ledger.update(task.id, notes=notes)
    shown = ledger.show(task.id)
    assert shown == task
    assert decode_record(encode_record(shown), where="test") == shown
    assert [n.text for n in shown.notes] == notes
