"""template.yaml as the test suites read it (its Fn::ForEach loops expanded)."""

from __future__ import annotations

from typing import Any

from infra.project_template import function_environment, project_template


def template() -> dict[str, Any]:
    return project_template()


class _PlaceholderIds(dict[str, str]):
    """Any resource's physical id: URL-shaped, so queue URLs pass their validation too."""

    def __missing__(self, logical_id: str) -> str:
        return f"https://resource.test/{logical_id}"


def template_environment(function: str, **overrides: str) -> dict[str, str]:
    """A function's variables as a deploy with default parameters sets them, its resources'
    ids replaced by placeholders; `overrides` change or add variables."""
    environment = function_environment(template(), function, _PlaceholderIds(), "us-east-1")
    return {**environment, **overrides}
