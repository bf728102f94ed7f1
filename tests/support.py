"""template.yaml as the test suites read it (its Fn::ForEach loops expanded)."""

from __future__ import annotations

from typing import Any

from infra.project_template import project_template


def template() -> dict[str, Any]:
    return project_template()
