"""An untraced function's cold start imports no X-Ray SDK (Powertools' Tracer imports it even
when disabled); a traced one keeps Powertools' X-Ray Tracer. Each case imports the callback
handler in a fresh interpreter with the function's template environment."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pingback_guard.domain.errors import ConfigurationError
from pingback_guard.settings import env as settings_env
from pingback_guard.tracing import UnrecordedProvider
from tests.support import (
    FUNCTIONS_DIR,
    LAMBDA_RUNTIME_ENVIRONMENT,
    handler_module,
    template_environment,
)

XRAY_CORE = "aws_xray_sdk.core"
LOADED = (
    "import importlib, json, sys\n"
    "importlib.import_module(sys.argv[1])\n"
    "from pingback_guard.observability import tracer\n"
    "print(json.dumps([sorted(sys.modules), type(tracer.provider).__name__]))\n"
)


def loaded_with(mode: str) -> tuple[list[str], str]:
    finished = subprocess.run(
        [sys.executable, "-c", LOADED, handler_module("CallbackFunction")],
        cwd=FUNCTIONS_DIR,
        env={
            **LAMBDA_RUNTIME_ENVIRONMENT,
            **template_environment("CallbackFunction"),
            "LAMBDA_TASK_ROOT": str(FUNCTIONS_DIR),
            "TRACING_MODE": mode,
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr[-2000:]
    modules, provider = json.loads(finished.stdout)
    return modules, provider


def test_an_untraced_functions_cold_start_imports_no_xray_sdk() -> None:
    modules, provider = loaded_with("PassThrough")
    assert XRAY_CORE not in modules and provider == UnrecordedProvider.__name__


def test_a_traced_function_keeps_powertools_xray_tracer() -> None:
    modules, provider = loaded_with("Active")
    assert XRAY_CORE in modules and provider != UnrecordedProvider.__name__


@pytest.mark.parametrize("name", ["res.php get", "in.php"])
def test_the_unrecorded_provider_takes_annotations_and_records_nothing(name: str) -> None:
    with UnrecordedProvider().in_subsegment(name=name) as subsegment:
        subsegment.put_annotation("ids", "3")
        subsegment.put_metadata("outcome", "ok")


@pytest.mark.parametrize(("mode", "traced"), [("Active", True), ("PassThrough", False)])
def test_the_tracing_mode_is_one_of_lambdas_two(mode: str, traced: bool) -> None:
    assert settings_env.traced(settings_env.Env({"TRACING_MODE": mode})) is traced


@pytest.mark.parametrize("environ", [{}, {"TRACING_MODE": "Disabled"}, {"TRACING_MODE": "active"}])
def test_a_missing_or_unknown_tracing_mode_fails_the_cold_start_by_name(
    environ: dict[str, str],
) -> None:
    with pytest.raises(ConfigurationError, match="TRACING_MODE"):
        settings_env.traced(settings_env.Env(environ))
