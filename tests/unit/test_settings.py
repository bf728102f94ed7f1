from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

from pingback_guard.domain.errors import ConfigurationError
from pingback_guard.settings.callback import CallbackSettings
from pingback_guard.settings.callback_secret import CallbackSecretSettings
from pingback_guard.settings.compat_submit import CompatSubmitSettings
from pingback_guard.settings.forward import ForwardSettings
from pingback_guard.settings.poller import PollerSettings, clamped_poller_settings
from pingback_guard.settings.register import RegisterSettings
from pingback_guard.settings.replay import ReplaySettings
from pingback_guard.settings.submit import SubmitSettings
from pingback_guard.settings.worker_tasks import GetTaskSettings, ReportSettings
from tests.support import template, template_environment

SETTINGS_BY_FUNCTION: dict[str, Callable[[Mapping[str, str]], object]] = {
    "CallbackFunction": CallbackSettings.from_env,
    "ReplayFunction": ReplaySettings.from_env,
    "SubmitFunction": SubmitSettings.from_env,
    "RegisterFunction": RegisterSettings.from_env,
    "GetTaskFunction": GetTaskSettings.from_env,
    "ReportFunction": ReportSettings.from_env,
    "PollerFunction": PollerSettings.from_env,
}
POLLER = template_environment("PollerFunction")


@pytest.mark.parametrize("function", SETTINGS_BY_FUNCTION)
def test_each_function_starts_with_what_the_template_gives_it(function: str) -> None:
    SETTINGS_BY_FUNCTION[function](template_environment(function))


def test_the_templates_defaults_are_the_ones_in_force() -> None:
    defaults = {name: spec["Default"] for name, spec in template()["Parameters"].items()}
    submit = SubmitSettings.from_env(template_environment("SubmitFunction"))
    poller = PollerSettings.from_env(POLLER)
    assert submit.pingbacks.callback_timeout_seconds == defaults["CallbackTimeoutSeconds"]
    assert submit.provider.base_url == defaults["ProviderBaseUrl"]
    assert poller.policy.retention_seconds == defaults["RetentionSeconds"]
    assert poller.expected_solve_seconds == defaults["ExpectedSolveSeconds"]
    assert poller.policy.ids_per_request == 100  # ProviderBatchIds "true": res.php's largest batch
    assert poller.table.due_shards == int(defaults["DueShards"])
    assert poller.table.result_ttl_seconds == int(defaults["ResultTtlDays"]) * 86400


@pytest.mark.parametrize(
    "variable",
    ["RETENTION_SECONDS", "EXPECTED_SOLVE_SECONDS", "PROVIDER_BATCH_IDS", "DUE_SHARDS"],
)
def test_a_variable_the_template_sets_has_no_second_default_in_the_code(variable: str) -> None:
    environment = {name: value for name, value in POLLER.items() if name != variable}
    with pytest.raises(ConfigurationError, match=f"{variable} must be set"):
        PollerSettings.from_env(environment)


def test_batching_off_asks_one_id_per_request() -> None:
    poller = PollerSettings.from_env({**POLLER, "PROVIDER_BATCH_IDS": "false"})
    assert poller.policy.ids_per_request == 1


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"TASKS_TABLE_NAME": ""}, "TASKS_TABLE_NAME"),
        ({"DUE_SHARDS": "0"}, "DUE_SHARDS"),
        ({"DUE_SHARDS": "2.5"}, "whole number"),
        ({"RETENTION_SECONDS": "soon"}, "RETENTION_SECONDS"),
        ({"PROVIDER_BATCH_IDS": "maybe"}, "PROVIDER_BATCH_IDS"),
        ({"PROVIDER_BASE_URL": "ftp://x"}, "PROVIDER_BASE_URL"),
    ],
)
def test_invalid_settings_fail_at_cold_start_naming_the_variable(
    override: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        PollerSettings.from_env({**POLLER, **override})


def test_callback_requires_its_queue() -> None:
    environment = template_environment("CallbackFunction")
    del environment["DEAD_LETTER_QUEUE_URL"]
    with pytest.raises(ConfigurationError, match="DEAD_LETTER_QUEUE_URL"):
        CallbackSettings.from_env(environment)


CALLBACK_SECRET_READERS: dict[str, Callable[[Mapping[str, str]], CallbackSecretSettings]] = {
    "CallbackFunction": lambda environ: CallbackSettings.from_env(environ).callback_secret,
    "SubmitFunction": lambda environ: SubmitSettings.from_env(environ).pingbacks.callback_secret,
    "RegisterFunction": lambda environ: (
        RegisterSettings.from_env(environ).pingbacks.callback_secret
    ),
}


@pytest.mark.parametrize("function", CALLBACK_SECRET_READERS)
def test_the_callback_secret_is_cached_60_s_so_a_revoked_one_stops_within_a_minute(
    function: str,
) -> None:
    callback_secret, environment = CALLBACK_SECRET_READERS[function], template_environment(function)
    assert callback_secret(environment).cache_seconds == 60
    # The API key's cache setting does not stretch the callback secret's.
    assert callback_secret({**environment, "SECRET_CACHE_SECONDS": "900"}).cache_seconds == 60
    with pytest.raises(ConfigurationError, match="CALLBACK_SECRET_CACHE_SECONDS"):
        callback_secret({**environment, "CALLBACK_SECRET_CACHE_SECONDS": "301"})


def test_capabilities_and_provisional_results_follow_the_retention_and_admin_is_optional() -> None:
    callback = CallbackSettings.from_env(template_environment("CallbackFunction"))
    assert callback.table.provisional_ttl_seconds == 600
    assert callback.callback_secret.registration_window_seconds == 600
    assert callback.callback_secret.capability_max_age_seconds == 1200
    assert (
        GetTaskSettings.from_env(template_environment("GetTaskFunction")).admin_principal_arn == ""
    )
    admin = "arn:aws:iam::123456789012:role/ops"
    environment = template_environment("ReportFunction", ADMIN_PRINCIPAL_ARN=admin)
    assert ReportSettings.from_env(environment).admin_principal_arn == admin


def test_backoff_base_above_its_maximum_is_clamped_with_a_warning_not_a_failed_cold_start() -> None:
    settings = PollerSettings.from_env(
        {**POLLER, "POLL_BACKOFF_BASE_SECONDS": "100", "POLL_BACKOFF_MAX_SECONDS": "10"}
    )
    clamped, warnings = clamped_poller_settings(settings)
    assert (clamped.policy.backoff_base_seconds, clamped.policy.backoff_max_seconds) == (10, 10)
    assert len(warnings) == 1
    assert "POLL_BACKOFF_BASE_SECONDS" in warnings[0]
    assert "POLL_BACKOFF_MAX_SECONDS" in warnings[0]


def test_consistent_poller_settings_are_kept_as_they_are() -> None:
    settings = PollerSettings.from_env(POLLER)
    assert clamped_poller_settings(settings) == (settings, [])


LOOPBACK_PINGBACK_READERS: dict[str, Callable[[Mapping[str, str]], bool]] = {
    "CompatSubmitFunction": lambda environ: (
        CompatSubmitSettings.from_env(environ).allow_loopback_pingbacks
    ),
    "PingbackForwardFunction": lambda environ: (
        ForwardSettings.from_env(environ).allow_loopback_pingbacks
    ),
}


@pytest.mark.parametrize("function", LOOPBACK_PINGBACK_READERS)
def test_loopback_pingbacks_fail_the_cold_start_outside_a_local_run(function: str) -> None:
    # On AWS, loopback is the function's own Lambda Runtime API; a local run has an endpoint.
    read = LOOPBACK_PINGBACK_READERS[function]
    on_aws = template_environment(function, ALLOW_LOOPBACK_PINGBACKS="true")
    assert "AWS_ENDPOINT_URL" not in on_aws
    with pytest.raises(ConfigurationError, match="ALLOW_LOOPBACK_PINGBACKS"):
        read(on_aws)
    assert read({**on_aws, "AWS_ENDPOINT_URL": "http://127.0.0.1:5000"}) is True


def test_every_poller_call_is_bounded_by_its_clients_timeouts_and_retries() -> None:
    """At the template's values a table request takes at most 1 + 3 s (one attempt) and a
    res.php request 1 + 5 s: the deadline check leaves 6 s for the call in progress."""
    settings = PollerSettings.from_env(POLLER)
    assert settings.store_calls.bound_seconds == 4
    assert settings.policy.store_call_seconds == 4
    assert settings.policy.slowest_call_seconds == 6
    # Two more attempts add each attempt's timeouts and the waits before them: 1 + 5, 2 + 5 s.
    retried = PollerSettings.from_env({**POLLER, "POLLER_STORE_MAX_ATTEMPTS": "3"})
    assert retried.store_calls.bound_seconds == 3 * 4 + 6 + 7


def test_a_deadline_margin_without_room_for_two_slow_store_calls_is_raised_with_a_warning() -> None:
    settings = PollerSettings.from_env({**POLLER, "POLLER_STORE_READ_TIMEOUT_SECONDS": "9"})
    clamped, warnings = clamped_poller_settings(settings)
    assert clamped.policy.deadline_margin_seconds == 20
    assert len(warnings) == 1 and "POLLER_DEADLINE_MARGIN_SECONDS" in warnings[0]


def test_the_poller_has_as_many_res_php_requests_in_flight_as_the_template_says() -> None:
    assert PollerSettings.from_env(POLLER).policy.request_workers == 64
    fewer = PollerSettings.from_env({**POLLER, "POLLER_REQUEST_WORKERS": "8"})
    assert fewer.policy.request_workers == 8
    with pytest.raises(ConfigurationError, match="POLLER_REQUEST_WORKERS"):
        PollerSettings.from_env({**POLLER, "POLLER_REQUEST_WORKERS": "129"})
