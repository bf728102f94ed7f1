# SAM tooling, included by the top-level Makefile (which defines VENV, PY, STAMP, PYTHON312).
#
# 1.170 or later: it expands the template's AWS::LanguageExtensions (samconfig.toml turns it on).
# The SAM CLI lives in its own virtualenv: aws-sam-cli pins boto3/botocore exactly, which would
# fight the project's own environment. It is installed once (stamp file) from the registry.
# Everything here works offline: no AWS account, no Docker.

SAM_VENV := .venv-sam
SAM_STAMP := $(SAM_VENV)/.installed
SAM := $(SAM_VENV)/bin/sam
SAM_PYTHON := $(PYTHON312)
# `sam build` of a python3.12 function needs python3.12 on PATH: prepend its bin directory.
PYTHON312_BIN := $(patsubst %/,%,$(dir $(SAM_PYTHON)))
# Offline and quiet: a region is needed by `sam validate`, telemetry would try the network.
SAM_ENV := AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1 SAM_CLI_TELEMETRY=0 \
	PATH="$(PYTHON312_BIN):$$PATH"
SAM_TEMPLATE := template.yaml
SAM_BUILD_DIR := .aws-sam/build
# The template after AWS::LanguageExtensions and the SAM transform, as CloudFormation receives it.
TRANSFORMED_TEMPLATE := .aws-sam/transformed-template.json

.PHONY: sam-venv template-check cfn-lint cfn-lint-transformed loop-identifiers sam-validate sam-build \
	sam-events sam-local-events

$(SAM_STAMP):
	@test -n "$(SAM_PYTHON)" || { echo "python3.12 not found (the Lambda runtime's version)"; exit 1; }
	$(SAM_PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/python -m pip install -q --upgrade pip
	$(SAM_VENV)/bin/python -m pip install -q 'aws-sam-cli>=1.170,<2'
	touch $(SAM_STAMP)

sam-venv: $(SAM_STAMP)

cfn-lint: $(STAMP)
	$(VENV)/bin/cfn-lint $(SAM_TEMPLATE)

# cfn-lint of the SAM template misses what only the created resource types' schemas say (a Lambda
# Description over 256 characters on an AWS::Serverless::Function): lint what CloudFormation gets.
# Conditions stay in it, so conditional resources are linted whatever the parameters. W7001
# (mapping unused) is expected there: the transform has already resolved every Fn::FindInMap.
cfn-lint-transformed: $(STAMP)
	$(PY) -m infra.sam.transformed_template $(TRANSFORMED_TEMPLATE)
	$(VENV)/bin/cfn-lint --ignore-checks W7001 -- $(TRANSFORMED_TEMPLATE)

# A Fn::ForEach identifier in a plain string stays as typed on AWS (only keys, Fn::Sub and Ref get
# the element): refused here, since the twin's expansion, like AWS's, would deploy it silently.
loop-identifiers: $(STAMP)
	$(PY) -m infra.sam.loop_identifiers $(SAM_TEMPLATE)

sam-validate: $(SAM_STAMP)
	$(SAM_ENV) $(SAM) validate --lint --template-file $(SAM_TEMPLATE)

sam-build: $(SAM_STAMP)
	$(SAM_ENV) $(SAM) build --template-file $(SAM_TEMPLATE) --build-dir $(SAM_BUILD_DIR)

# The whole template gate run by `make test`: both linters clean on the SAM template, cfn-lint
# clean on the transformed one, no loop identifier left as typed, and the artifact builds.
template-check: cfn-lint cfn-lint-transformed loop-identifiers sam-validate sam-build

# Regenerate the raw events in tests/events/ from `sam local generate-event` (offline), then
# the events derived from them (tests/events/callback_*.json and events/*.json).
sam-events: $(SAM_STAMP) $(STAMP)
	$(SAM_ENV) $(SAM) local generate-event apigateway http-api-proxy > tests/events/http_api_proxy.json
	$(SAM_ENV) $(SAM) local generate-event sqs receive-message > tests/events/sqs_receive_message.json
	$(SAM_ENV) $(SAM) local generate-event cloudwatch scheduled-event > tests/events/scheduled_event.json
	PYTHONPATH=functions $(PY) -m infra.sam.make_events

# `sam local invoke ... --env-vars env.json` against the moto server env.json names: records two
# PENDING tasks in its table (creating what env.json names first) and rewrites events/ with their
# ids and pingback capabilities (docs/operations.md, "Local runs").
sam-local-events: $(STAMP)
	PYTHONPATH=functions $(PY) -m infra.sam.local_events $(if $(ENDPOINT_URL),--endpoint-url $(ENDPOINT_URL))
