"""The README's first command: the demo tour runs every step for real and exits 0."""

from __future__ import annotations

from conftest import run_cli


def test_demo_tour_completes() -> None:
    result = run_cli("demo")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    out = result.stdout
    assert "Tour complete" in out
    for step in ("Gates keep the ledger honest", "refused as it should be: exit 3", "verify"):
        assert step in out
