from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

from pingback_guard.domain.errors import ConfigurationError
from pingback_guard.settings import (
    CallbackSecretSettings,
    CallbackSettings,
    PollerSettings,
    RegisterSettings,
    SubmitSettings,
    WorkerTaskSettings,
    clamped_poller_settings,
)

BASE = {
    "TASKS_TABLE_NAME": "tasks",
    "CALLBACK_SECRET_ID": "arn:secret",
    "DEAD_LETTER_QUEUE_URL": "https://sqs.test/1/dlq",
    "PROVIDER_API_KEY_PARAMETER": "/pg/key",
}


def test_defaults_follow_the_seed() -> None:
    submit = SubmitSettings.from_env(BASE)
    poller = PollerSettings.from_env(BASE)
    assert submit.pingbacks.callback_timeout_seconds == 120
    assert submit.provider.base_url == "https://ocr.captchaai.com"
    assert poller.retention_seconds == 600 and poller.provider.batch_ids is True
    assert poller.table.due_shards == 8 and poller.table.result_ttl_seconds == 7 * 86400


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
        PollerSettings.from_env({**BASE, **override})


def test_callback_requires_its_queue() -> None:
    with pytest.raises(ConfigurationError, match="DEAD_LETTER_QUEUE_URL"):
        CallbackSettings.from_env({k: v for k, v in BASE.items() if k != "DEAD_LETTER_QUEUE_URL"})


CALLBACK_SECRET_READERS: dict[str, Callable[[Mapping[str, str]], CallbackSecretSettings]] = {
    "callback": lambda environ: CallbackSettings.from_env(environ).callback_secret,
    "submit": lambda environ: SubmitSettings.from_env(environ).pingbacks.callback_secret,
    "register": lambda environ: RegisterSettings.from_env(environ).pingbacks.callback_secret,
}


@pytest.mark.parametrize("function", CALLBACK_SECRET_READERS)
def test_the_callback_secret_is_cached_60_s_so_a_revoked_one_stops_within_a_minute(
    function: str,
) -> None:
    callback_secret = CALLBACK_SECRET_READERS[function]
    assert callback_secret(BASE).cache_seconds == 60
    # The API key's cache setting does not stretch the callback secret's.
    assert callback_secret({**BASE, "SECRET_CACHE_SECONDS": "900"}).cache_seconds == 60
    with pytest.raises(ConfigurationError, match="CALLBACK_SECRET_CACHE_SECONDS"):
        callback_secret({**BASE, "CALLBACK_SECRET_CACHE_SECONDS": "301"})


def test_unregistered_results_are_kept_a_day_and_admin_is_optional() -> None:
    assert CallbackSettings.from_env(BASE).table.unregistered_result_ttl_seconds == 86400
    assert WorkerTaskSettings.from_env(BASE).admin_principal_arn == ""
    admin = "arn:aws:iam::123456789012:role/ops"
    assert (
        WorkerTaskSettings.from_env({**BASE, "ADMIN_PRINCIPAL_ARN": admin}).admin_principal_arn
        == admin
    )


def test_the_pollers_defaults_are_the_templates_defaults() -> None:
    from pingback_guard.settings import PollerSettings
    from tests.support import template

    parameters = template()["Parameters"]
    settings = PollerSettings.from_env(
        {"TASKS_TABLE_NAME": "t", "PROVIDER_API_KEY_PARAMETER": "/k"}
    )
    assert (
        settings.backoff_base_seconds,
        settings.backoff_max_seconds,
        settings.expected_solve_seconds,
        settings.sweep_interval_seconds,
        settings.max_requests_per_sweep,
        settings.retention_seconds,
    ) == tuple(
        float(parameters[name]["Default"])
        for name in (
            "PollBackoffBaseSeconds",
            "PollBackoffMaxSeconds",
            "ExpectedSolveSeconds",
            "PollSweepIntervalSeconds",
            "PollerMaxRequestsPerSweep",
            "RetentionSeconds",
        )
    )


def test_backoff_base_above_its_maximum_is_clamped_with_a_warning_not_a_failed_cold_start() -> None:
    settings = PollerSettings.from_env(
        {**BASE, "POLL_BACKOFF_BASE_SECONDS": "100", "POLL_BACKOFF_MAX_SECONDS": "10"}
    )
    clamped, warnings = clamped_poller_settings(settings)
    assert (clamped.backoff_base_seconds, clamped.backoff_max_seconds) == (10, 10)
    assert len(warnings) == 1
    assert "POLL_BACKOFF_BASE_SECONDS" in warnings[0]
    assert "POLL_BACKOFF_MAX_SECONDS" in warnings[0]


def test_consistent_poller_settings_are_kept_as_they_are() -> None:
    settings = PollerSettings.from_env(BASE)
    assert clamped_poller_settings(settings) == (settings, [])
