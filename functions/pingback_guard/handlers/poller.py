"""PollerFunction: on a schedule, recovers results whose pingback never came, from res.php."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from pingback_guard import aws_clients
from pingback_guard.data.dynamodb import DynamoDbTaskStore
from pingback_guard.domain.lease import PollerStart, helper_group_of
from pingback_guard.logic.poll_schedule import SolveTimes
from pingback_guard.logic.poller import PollerService
from pingback_guard.logic.poller_fan_out import PollerFanOut
from pingback_guard.logic.sweep_report import SweepReport
from pingback_guard.observability import (
    count_scheduled_run,
    instrumented,
    logger,
    metrics,
    token_stored,
    tracer,
)
from pingback_guard.provider.configured_client import provider_accounts
from pingback_guard.provider.traced import TracedProvider
from pingback_guard.settings.poller import PollerSettings, clamped_poller_settings
from pingback_guard.wake.poller import LambdaPollerWaker

settings, setting_warnings = clamped_poller_settings(PollerSettings.from_env(os.environ))
for setting_warning in setting_warnings:
    logger.warning("poller setting clamped", extra={"reason": setting_warning})
provider = settings.provider


store = DynamoDbTaskStore(
    aws_clients.dynamodb_client(aws_clients.bounded_config(settings.store_calls)), settings.table
)


class SweepMetrics:
    """Publishes a run's counts after each sweep and at its end, each count once."""

    def __init__(self) -> None:
        self._published = SweepReport()

    def publish(self, progress: SweepReport) -> None:
        # Counts that moved only: the run's end states every count, zeros too, once.
        _emit(progress.since(self._published), with_zeros=False)
        metrics.flush_metrics()
        self._published = progress.snapshot()

    def publish_rest(self, report: SweepReport) -> None:
        _emit(report.since(self._published), with_zeros=True)


def _helper_start_failed(reason: str) -> None:
    logger.warning("poller helper not started", extra={"reason": reason})


service = PollerService(
    store,
    provider_accounts(
        provider,
        connections=settings.policy.request_workers,
        wrap=lambda client: TracedProvider(client, tracer.provider),
    ),
    settings.policy,
    SolveTimes(default_seconds=settings.expected_solve_seconds),
    on_token_stored=token_stored(settings.table.token_lifetimes),
    fan_out=PollerFanOut(
        store,
        settings.fan_out,
        LambdaPollerWaker(aws_clients.lambda_client_on_first_use(), settings.function_name),
        settings.policy.sweep_interval_seconds,
        on_start_failed=_helper_start_failed,
    ),
)

METRIC_BY_COUNT = {
    "sweeps": "PollSweeps",
    "due": "PollDueTasks",
    "requests": "PollRequests",
    "recovered": "PollRecovered",
    "failed": "PollTaskFailed",
    "not_ready": "PollNotReady",
    "deferred": "PollDeferred",
    "expired": "TaskExpired",
    "duplicates": "PollDuplicate",
    "conflicts": "PollConflict",
    "retryable_errors": "ProviderRetryableError",
    "unreadable_answers": "ProviderAnswerUnreadable",
    "batch_refused": "PollBatchRefused",
    "budget_exhausted": "PollBudgetExhausted",
    "store_errors": "PollStoreError",
    "lease_busy": "PollLeaseBusy",
    "helpers_started": "PollerHelperStarted",
    "helper_start_failed": "PollerHelperStartFailed",
}


@instrumented
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # One per invocation, whatever its start and whatever happens next.
    metrics.add_metric(name="PollerInvocations", unit=MetricUnit.Count, value=1)
    sweep_metrics = SweepMetrics()
    start = PollerStart.of(event)
    group = (
        helper_group_of(event, settings.fan_out.helpers) if start is PollerStart.HELPER else None
    )
    if start is PollerStart.HELPER and group is None:
        # Not one of this deployment's groups (PollerHelpers changed since it was sent): as any
        # other event, it sweeps only if no invocation holds the main lease.
        logger.warning(
            "fan-out event names no helper group", extra={"helpers": settings.fan_out.helpers}
        )
        start = PollerStart.ALONE
    report = service.run(
        lambda: context.get_remaining_time_in_millis() / 1000,
        on_sweep=sweep_metrics.publish,
        start=start,
        group=group,
    )
    sweep_metrics.publish_rest(report)
    count_scheduled_run(start, context.function_name)
    summary: dict[str, Any] = {name: getattr(report, name) for name in METRIC_BY_COUNT}
    summary["start"] = start.name
    summary["group"] = group
    summary["stopped_early"] = report.stopped_early
    summary["account_error"] = report.account_error
    logger.info("sweeps done", extra=summary)
    return summary


def _emit(report: SweepReport, *, with_zeros: bool) -> None:
    for name, metric in METRIC_BY_COUNT.items():
        count = getattr(report, name)
        if count or with_zeros:
            metrics.add_metric(name=metric, unit=MetricUnit.Count, value=count)
    for delay in report.recovery_delays:
        metrics.add_metric(name="PollRecoveryDelay", unit=MetricUnit.Seconds, value=delay)
    if report.account_error:
        metrics.add_metric(name="ProviderAccountError", unit=MetricUnit.Count, value=1)
        reason = report.account_error
        logger.error("provider account error; sweep stopped", extra={"reason": reason})
