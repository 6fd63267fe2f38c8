# Entry points for humans and CI. Every target that runs project code depends on `bootstrap`,
# which is idempotent (stamp files), so `make test` on a ready checkout costs ~1 s of set-up.
SHELL := /bin/bash
.DEFAULT_GOAL := test

VENV_PY := .venv/bin/python
PYTEST_ARGS ?=

.PHONY: bootstrap test demo lint

bootstrap:
	./scripts/bootstrap.sh

test: bootstrap
	$(VENV_PY) -m pytest -q $(PYTEST_ARGS)

demo: bootstrap
	.venv/bin/trajforge demo

lint: bootstrap
	$(VENV_PY) -m ruff check .
