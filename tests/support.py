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
