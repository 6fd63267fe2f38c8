# Entry points for humans and CI. Every target that runs project code depends on `bootstrap`,
# which is idempotent (stamp files), so `make test` on a ready checkout costs ~1 s of set-up.
SHELL := /bin/bash
.DEFAULT_GOAL := test

VENV_PY := .venv/bin/python
PYTEST_ARGS ?=

FAST_TIER := not browser and not server and not e2e and not slow

.PHONY: bootstrap test test-fast typecheck demo lint

bootstrap:
	./scripts/bootstrap.sh

# Every tier: what CI runs (.ci/run) and what the README documents.
test: bootstrap typecheck
	$(VENV_PY) -m pytest -q $(PYTEST_ARGS)

# The fast tier for development: no browser, no servers, no end-to-end jobs (markers in tests/conftest.py).
test-fast: bootstrap
	$(VENV_PY) -m pytest -q -m "$(FAST_TIER)" $(PYTEST_ARGS)

demo: bootstrap
	.venv/bin/trajforge demo

lint: bootstrap
	$(VENV_PY) -m ruff check .

# mypy over the library packages listed in pyproject.toml's [tool.mypy] (mypy and the stubs it needs are pinned
# in requirements.txt).
typecheck: bootstrap
	$(VENV_PY) -m mypy
