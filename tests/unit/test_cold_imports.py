"""What a worker path's cold start must not import: modules only its rare paths need (they are
imported at their first use) and other functions' logic and settings.

Each case imports one handler in a fresh interpreter with the function's template environment,
as Lambda's init does, and reads `sys.modules` after it. The timings are bench/cold_start.py's.
"""

from __future__ import annotations

import pytest

from tests.support import FUNCTIONS_DIR, at_cold_start, handler_module

LOADED_AFTER_IMPORT = (
    "import importlib, json, sys\n"
    "importlib.import_module(sys.argv[1])\n"
    "print(json.dumps(sorted(sys.modules)))\n"
)
REQUESTS = "requests"
PARAMETERS = "aws_lambda_powertools.utilities.parameters"
EVENT_CLASSES = "aws_lambda_powertools.utilities.data_classes"
CAPTCHAAI = "pingback_guard.provider.captchaai"
# The template's default `Tracing` is PassThrough: no X-Ray SDK, nor the asyncio it imports.
UNTRACED = frozenset({"aws_xray_sdk.core", "asyncio"})

# Logical id -> modules its cold start must not load.
NOT_AT_COLD_START: dict[str, frozenset[str]] = {
    # The provider only for an overdue task's read-through (ProviderOnFirstUse).
    "GetTaskFunction": UNTRACED
    | frozenset(
        {
            REQUESTS,
            CAPTCHAAI,
            PARAMETERS,
            "pingback_guard.logic.submit",
            "pingback_guard.settings.submit",
        }
    ),
    # The provider only for a read-through, a report or a balance refresh.
    "CompatResultFunction": UNTRACED
    | frozenset(
        {
            REQUESTS,
            CAPTCHAAI,
            PARAMETERS,
            EVENT_CLASSES,
            "pingback_guard.logic.compat_submit",
            "pingback_guard.logic.submit",
            "pingback_guard.settings.submit",
        }
    ),
    # Reads no secret and never calls the provider.
    "PushFunction": UNTRACED
    | frozenset(
        {
            REQUESTS,
            PARAMETERS,
            "pingback_guard.logic.pingback_secrets",
            "pingback_guard.logic.submit",
            "pingback_guard.handlers.services.tasks",
        }
    ),
    # Never calls the provider nor reads a task's view.
    "CallbackFunction": UNTRACED
    | frozenset(
        {REQUESTS, EVENT_CLASSES, "pingback_guard.logic.get_task", "pingback_guard.logic.submit"}
    ),
    # Submits: no reads of a worker's tasks, no report, no key budgets.
    "SubmitFunction": UNTRACED
    | frozenset(
        {
            EVENT_CLASSES,
            "pingback_guard.handlers.services.tasks",
            "pingback_guard.handlers.services.budgets",
            "pingback_guard.logic.report",
            "pingback_guard.settings.worker_tasks",
        }
    ),
    "CompatSubmitFunction": UNTRACED
    | frozenset(
        {
            EVENT_CLASSES,
            "pingback_guard.handlers.services.tasks",
            "pingback_guard.settings.worker_tasks",
        }
    ),
}


def modules_after_cold_start(logical_id: str) -> set[str]:
    return set(at_cold_start(LOADED_AFTER_IMPORT, logical_id, FUNCTIONS_DIR))


@pytest.mark.parametrize("logical_id", sorted(NOT_AT_COLD_START))
def test_a_worker_paths_cold_start_leaves_its_rare_paths_modules_unloaded(logical_id: str) -> None:
    loaded = modules_after_cold_start(logical_id)

    assert handler_module(logical_id) in loaded
    assert sorted(NOT_AT_COLD_START[logical_id] & loaded) == []


def test_a_handler_loads_only_its_own_functions_settings() -> None:
    """settings/ holds a module per function: the submit's cold start defines no other's."""
    loaded = modules_after_cold_start("SubmitFunction")

    settings = {name for name in loaded if name.startswith("pingback_guard.settings.")}
    assert settings == {
        f"pingback_guard.settings.{part}"
        for part in ("env", "table", "provider", "callback_secret", "pingbacks", "submit")
    }
