# One task runner. `make test` is the README's test command and what .ci/run runs:
# it installs what the suite needs, lints, type-checks the core and runs pytest.
PYTHON ?= python3

.PHONY: install test lint typecheck pytest demo

install:
	$(PYTHON) -m pip install -q -e '.[test]'
	bash scripts/install-test-deps

lint:
	$(PYTHON) -m ruff check gitledger tests benchmarks
	$(PYTHON) -m ruff format --check gitledger tests benchmarks

typecheck:
	$(PYTHON) -m mypy

pytest:
	$(PYTHON) -m pytest -q -p no:cacheprovider

test: install lint typecheck pytest

demo:
	$(PYTHON) -m pip install -q -e . && gitledger demo
