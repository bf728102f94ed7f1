# pingback-guard developer commands. `make demo` and `make test` are the two that matter.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# The Lambda runtime's Python. A pyenv shim may exist and still fail (3.12 not selected), so take
# the first candidate that really runs as 3.12.
PYTHON312 ?= $(shell for p in "$$(command -v python3.12)" $$HOME/.pyenv/versions/3.12*/bin/python3.12; do \
	"$$p" -c 'import sys; assert sys.version_info[:2] == (3, 12); print(sys.executable)' \
	2>/dev/null && break; done)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: help venv lint typecheck unit integration local chaos test demo bench clean

help:
	@echo "make demo   - run the whole stack locally against moto + the simulator, with the chaos proof"
	@echo "make chaos  - the chaos run (PROFILE=ci|full|soak, TASKS=N, SEED=S); report in out/chaos/"
	@echo "make test   - lint, type checks, template checks and every test suite"
	@echo "make bench  - benchmarks (bench/results.json + Markdown table)"

$(STAMP): requirements-dev.txt functions/requirements.txt
	@test -n "$(PYTHON312)" || { echo "python3.12 not found (the Lambda runtime's version)"; exit 1; }
	$(PYTHON312) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $(STAMP)

venv: $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy

unit: $(STAMP)
	$(VENV)/bin/pytest -q tests/unit

integration: $(STAMP)
	$(VENV)/bin/pytest -q tests/integration

test: lint typecheck template-check $(STAMP)
	$(VENV)/bin/pytest -q

demo: $(STAMP)
	$(PY) -m infra.chaos --profile demo --out out/chaos

chaos: $(STAMP)
	$(PY) -m infra.chaos --profile $(or $(PROFILE),ci) --out out/chaos $(if $(TASKS),--tasks $(TASKS)) $(if $(SEED),--seed $(SEED))

bench: $(STAMP)
	$(PY) -m bench

clean:
	rm -rf $(VENV) $(SAM_VENV) .aws-sam .pytest_cache .mypy_cache .ruff_cache

include infra/sam/sam.mk
