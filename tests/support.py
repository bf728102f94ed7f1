"""template.yaml as the test suites read it (its Fn::ForEach loops expanded)."""

from __future__ import annotations

from typing import Any

from infra.project_template import placeholder_environment, project_template


def template() -> dict[str, Any]:
    return project_template()


def template_environment(function: str, **overrides: str) -> dict[str, str]:
    """A function's variables as a deploy with default parameters sets them (placeholder ids
    for its resources); `overrides` change or add variables."""
    return {**placeholder_environment(function), **overrides}


# What the Lambda runtime sets beside a function's own variables, for a handler imported in a
# fresh interpreter as its init would run (no real credentials: nothing is called).
LAMBDA_RUNTIME_ENVIRONMENT = {
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
}


def cold_start_environment(function: str) -> dict[str, str]:
    """The environment a function's handler is imported with at its cold start."""
    return {**LAMBDA_RUNTIME_ENVIRONMENT, **template_environment(function)}
