"""Test-wide safety: fake AWS credentials, a fixed region, and no real endpoint ever."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.update(
    {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "TRACING_MODE": "PassThrough",
        "POWERTOOLS_SERVICE_NAME": "pingback-guard",
        "POWERTOOLS_METRICS_NAMESPACE": "PingbackGuard",
    }
)
os.environ.pop("AWS_ENDPOINT_URL", None)
os.environ.pop("AWS_PROFILE", None)

_INTEGRATION_SUITE = Path(__file__).parent / "integration"


def _longest_first(item: pytest.Item) -> int:
    """Chaos runs, then the files marked long_running, then the local-stack modules, then the
    moto and DynamoDB Local suites, then the rest: `make test` spreads test files over its
    workers in this order, so the longest start first and none finishes alone."""
    if item.get_closest_marker("chaos"):
        return 0
    if item.get_closest_marker("long_running"):
        return 1
    if item.get_closest_marker("local_stack"):
        return 2
    return 3 if item.path.is_relative_to(_INTEGRATION_SUITE) else 4


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_longest_first)  # stable: each file's tests stay together and in order
