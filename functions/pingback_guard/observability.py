"""The one Logger, Tracer and Metrics every function shares (configured by POWERTOOLS_* env)."""

import os
import time
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit, single_metric

from pingback_guard.domain.lease import PollerStart
from pingback_guard.domain.task import CaptchaRequest, NewTask, TaskResult, TokenLifetimes
from pingback_guard.logic.results import Delivery, TokenStored, judged_answer, unread_delivery
from pingback_guard.settings.env import Env, traced
from pingback_guard.tracing import function_tracer

logger = Logger()
# botocore only: the X-Ray SDK records an exception's text, and a failed requests/httplib call's
# text carries the provider URL with its API key. AWS calls record no secret (the SDK keeps only
# whitelisted request fields: table and index names, never item values).
# Validated at cold start with the function's settings: a missing or unknown mode fails it by name.
tracer = function_tracer(traced(Env(os.environ)), patch_modules=("botocore",))
metrics = Metrics()


def instrumented(handler: Callable[..., Any]) -> Callable[..., Any]:
    """A function's handler inside the invocation's log context, trace and metrics flush."""
    return logger.inject_lambda_context(
        tracer.capture_lambda_handler(
            metrics.log_metrics(handler, capture_cold_start_metric=True), capture_response=False
        ),
        log_event=False,
        clear_state=True,
    )


def emit_delivery(delivery: Delivery) -> None:
    """TokenAgeAtDelivery per delivery path (four values: a tiny dimension) in its own EMF
    document, so the path never becomes a dimension of the other metrics; the unusable count
    keeps the service dimension alone, as the alarms read it."""
    with single_metric(
        name="TokenAgeAtDelivery", unit=MetricUnit.Seconds, value=round(delivery.age_seconds, 3)
    ) as metric:
        metric.add_dimension(name="delivery_path", value=delivery.path.value)
    if not delivery.usable:
        metrics.add_metric(name="TokenDeliveredUnusable", unit=MetricUnit.Count, value=1)


def count_provisional_discarded(task: NewTask) -> None:
    """A result with another nonce (or none) sat under this new task's id: forged or stale."""
    metrics.add_metric(name="ProvisionalResultDiscarded", unit=MetricUnit.Count, value=1)
    logger.warning("provisional result discarded", extra={"task_id": task.task_id})


def count_provider_threads_busy(account: str | None) -> None:
    """A submit found a provider account's threads all in use (ProviderThreadsBusyAlarm)."""
    metrics.add_metric(name="ProviderThreadsBusy", unit=MetricUnit.Count, value=1)
    logger.info("provider account threads busy", extra={"provider_account": account or "1"})


def note_provider_account_refused(account: str | None, code: str) -> None:
    """An account refused a submit: skipped for a cool-down while another can take it (the
    account's name and the provider's code only, never its key)."""
    extra = {"provider_account": account or "1", "code": code or "no answer"}
    logger.warning("provider account refused a submit", extra=extra)


def count_poller_woken() -> None:
    metrics.add_metric(name="PollerWoken", unit=MetricUnit.Count, value=1)


def count_scheduled_run(start: PollerStart, function_name: str) -> None:
    """PollerNotRunningAlarm's metric, once a poller invocation returned: 1 for a scheduled
    start, 0 for any other (woken, an operator's). Per function too: stacks in one account and
    region share the namespace and the service, and one's schedule must not quiet another's."""
    value = int(start is PollerStart.SCHEDULED)
    with single_metric(name="PollerScheduledRuns", unit=MetricUnit.Count, value=value) as metric:
        metric.add_dimension(name="function_name", value=function_name)


def count_poller_wake_failed(reason: str) -> None:
    """The submit goes on: the schedule's next invocation checks the task (the reason is an
    error code, never a request's content)."""
    metrics.add_metric(name="PollerWakeFailed", unit=MetricUnit.Count, value=1)
    logger.warning("poller wake failed", extra={"reason": reason})


def count_registration_replaced(task: NewTask) -> None:
    """This stack's own submit took an id a worker had registered: a guessed id, or a race."""
    metrics.add_metric(name="RegistrationReplaced", unit=MetricUnit.Count, value=1)
    logger.warning("registration replaced by this stack's submit", extra={"task_id": task.task_id})


def count_claim_clash(task: NewTask, outcome: str) -> None:
    """A registration of an id another task holds (contested, or held by a submit)."""
    metrics.add_metric(name="RegistrationClash", unit=MetricUnit.Count, value=1)
    logger.warning("registration clash", extra={"task_id": task.task_id, "clash": outcome})


def note_answer(task_id: str, kind: str | None, fits: bool) -> None:
    """AnswerShapeMisfit (alarmed) for an answer its kind does not expect; never the answer."""
    if not fits:
        metrics.add_metric(name="AnswerShapeMisfit", unit=MetricUnit.Count, value=1)
        logger.warning("answer does not fit its kind", extra={"task_id": task_id, "kind": kind})


def token_stored(lifetimes: TokenLifetimes) -> TokenStored:
    """What a path (callback, replay, poll) reports of a token it newly stored: its age at
    delivery, and whether it fits its kind."""

    def report(result: TaskResult, request: CaptchaRequest | None) -> None:
        emit_delivery(unread_delivery(result, lifetimes, time.time(), request))
        note_stored_answer(result, request)

    return report


def note_stored_answer(result: TaskResult, request: CaptchaRequest | None) -> None:
    """Judge a newly stored answer against the request its task was stored with, as the storing
    write handed it back: no read."""
    judged = judged_answer(request, result)
    note_answer(result.task_id, judged.kind, judged.parsed.fits)
