# One task runner. `make test` is the README's test command and what .ci/run runs:
# it installs what the suite needs, lints, type-checks the core and runs pytest.
PYTHON ?= python3

.PHONY: install test lint typecheck pytest demo test-latest lock

# Installs at the versions in requirements/constraints.txt, so a fresh machine tests what CI tests.
install:
	$(PYTHON) -m pip install -q -c requirements/constraints.txt -e '.[test]'
	bash scripts/install-test-deps

lint:
	$(PYTHON) -m ruff check gitledger tests benchmarks
	$(PYTHON) -m ruff format --check gitledger tests benchmarks

typecheck:
	$(PYTHON) -m mypy

pytest:
	$(PYTHON) -m pytest -q -p no:cacheprovider

test: install lint typecheck pytest

# The suite against the newest releases of everything (not CI: run it by hand or on a schedule to
# learn of a break before a user does). It uses its own virtual environment, .venv-latest.
test-latest:
	$(PYTHON) -m venv --clear .venv-latest
	.venv-latest/bin/python -m pip install -q -U pip
	.venv-latest/bin/python -m pip install -q -U --upgrade-strategy eager -e . \
		ruff mypy pytest hypothesis
	bash scripts/install-test-deps
	$(MAKE) lint typecheck pytest PYTHON=.venv-latest/bin/python

# Rewrites requirements/constraints.txt from a fresh environment at today's newest releases
# (review the diff, run `make test`, commit).
lock:
	$(PYTHON) -m venv --clear .venv-lock
	.venv-lock/bin/python -m pip install -q -e '.[test]'
	{ sed -n '1,2p' requirements/constraints.txt; \
	  .venv-lock/bin/python -m pip freeze --exclude-editable | grep -vi '^git-ledger'; } \
		> requirements/constraints.txt.new
	mv requirements/constraints.txt.new requirements/constraints.txt

demo:
	$(PYTHON) -m pip install -q -e . && gitledger demo
