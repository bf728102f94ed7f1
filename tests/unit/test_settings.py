from __future__ import annotations

import pytest

from pingback_guard.domain.errors import ConfigurationError
from pingback_guard.settings import (
    CallbackSettings,
    PollerSettings,
    SubmitSettings,
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
    assert submit.callback_timeout_seconds == 120
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
