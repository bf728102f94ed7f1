"""template.yaml as the test suites read it (its Fn::ForEach loops expanded)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from infra.project_template import placeholder_environment, project_template

# The one code tree every function deploys (CodeUri), as /var/task holds it.
FUNCTIONS_DIR = Path(__file__).resolve().parents[1] / "functions"


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


def handler_module(logical_id: str) -> str:
    handler = str(template()["Resources"][logical_id]["Properties"]["Handler"])
    return handler.rsplit(".", 1)[0]


def at_cold_start(script: str, logical_id: str, task_root: Path, *python_flags: str) -> Any:
    """The JSON `script` prints after it imports (argv[1]) the function's handler module in a
    fresh interpreter whose working directory plays /var/task, with the function's environment."""
    finished = subprocess.run(
        [sys.executable, *python_flags, "-c", script, handler_module(logical_id)],
        cwd=task_root,
        env={**LAMBDA_RUNTIME_ENVIRONMENT, **template_environment(logical_id)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr[-2000:]
    return json.loads(finished.stdout)
