"""CompatSubmitFunction: in.php on the stack's API (GET|POST /in.php, key= auth): a 2captcha
client's submit becomes a POST /tasks for the key's owner (our pingback URL, record, three nets)."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from pingback_guard import aws_clients
from pingback_guard.data.key_threads import DynamoDbKeyThreads
from pingback_guard.data.worker_keys import DynamoDbWorkerKeys
from pingback_guard.handlers.pingbacks import PingbackIssuer
from pingback_guard.handlers.protocol import (
    MAX_SUBMIT_BODY_BYTES,
    FieldsRead,
    MalformedRequestError,
    protocol_pairs,
    protocol_response,
)
from pingback_guard.handlers.services.budgets import key_budget
from pingback_guard.handlers.services.submit import submit_service
from pingback_guard.logic.compat import BAD_PARAMETERS, Event, Outcome, ProtocolAnswer, wants_json
from pingback_guard.logic.compat_submit import CompatSubmit
from pingback_guard.logic.key_threads import KeyThreads
from pingback_guard.logic.request_budgets import Endpoint
from pingback_guard.logic.worker_keys import WorkerKeys
from pingback_guard.observability import (
    count_provider_threads_busy,
    instrumented,
    logger,
    metrics,
    note_provider_account_refused,
)
from pingback_guard.provider.configured_client import provider_accounts
from pingback_guard.settings.compat_submit import CompatSubmitSettings

settings = CompatSubmitSettings.from_env(os.environ)
pingbacks = PingbackIssuer(settings.submit.pingbacks)
dynamodb = aws_clients.dynamodb_client()
service = CompatSubmit(
    WorkerKeys(DynamoDbWorkerKeys(dynamodb, settings.worker_keys_table)),
    # One provider request per in.php request: the key's budget counts provider requests, and
    # the worker's client retries (a 503 ERROR_NO_SLOT_AVAILABLE) within it.
    submit_service(
        settings.submit,
        pingbacks,
        dynamodb,
        provider_accounts(
            settings.submit.provider,
            single_attempt=True,
            on_threads_busy=count_provider_threads_busy,
            on_account_refused=note_provider_account_refused,
        ),
    ),
    budget=key_budget(settings.budget, Endpoint.IN_PHP, dynamodb),
    threads=KeyThreads(DynamoDbKeyThreads(dynamodb, settings.budget.table_name)),
    allow_loopback_pingbacks=settings.allow_loopback_pingbacks,
)


@instrumented
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # Read as the submit takes them: an unknown key stops the body's parsing where it is read.
    fields = FieldsRead(protocol_pairs(event, MAX_SUBMIT_BODY_BYTES))
    try:
        outcome = service.submit(fields, lambda: pingbacks.issue(event))
    except MalformedRequestError as error:
        outcome = Outcome(ProtocolAnswer.error(BAD_PARAMETERS), Event.REJECTED)
        logger.warning("in.php request unreadable", extra={"reason": str(error)})
        return _answered(outcome, as_json=False)
    # json=1 read after a refused key is never reached: that refusal is plain text.
    return _answered(outcome, wants_json(fields.seen))


def _answered(outcome: Outcome, as_json: bool) -> dict[str, Any]:
    metrics.add_metric(name=outcome.event.value, unit=MetricUnit.Count, value=1)
    if outcome.event is not Event.SUBMITTED:
        # The answer is a protocol code: never the key, never a field's value.
        logger.warning(
            "in.php refused",
            extra={
                "answer": outcome.answer.request,
                "task_id": outcome.task_id,
                "key_id": outcome.key_id,
            },
        )
    return protocol_response(outcome.answer, as_json)
