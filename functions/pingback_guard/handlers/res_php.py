"""CompatResultFunction: res.php on the stack's API (GET|POST /res.php, key= auth): get (id or
ids, from the table with the read-through), reportgood/reportbad and getbalance, for the key's
owner only (another owner's task answers ERROR_WRONG_CAPTCHA_ID, as an unknown one)."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from pingback_guard import aws_clients
from pingback_guard.data.key_threads import DynamoDbKeyThreads
from pingback_guard.data.worker_keys import DynamoDbWorkerKeys
from pingback_guard.handlers.protocol import (
    MAX_RESULT_BODY_BYTES,
    FieldsRead,
    MalformedRequestError,
    protocol_pairs,
    protocol_response,
)
from pingback_guard.handlers.read_through import record_read_through
from pingback_guard.handlers.services.budgets import key_budget, shared_balance
from pingback_guard.handlers.services.tasks import report_service, task_query
from pingback_guard.logic.compat import BAD_PARAMETERS, Event, ProtocolAnswer, wants_json
from pingback_guard.logic.compat_results import CompatResults
from pingback_guard.logic.key_threads import KeyThreads
from pingback_guard.logic.request_budgets import Endpoint
from pingback_guard.logic.worker_keys import WorkerKeys
from pingback_guard.observability import instrumented, logger, metrics
from pingback_guard.provider.configured_client import accounts_on_first_use
from pingback_guard.settings.compat_result import CompatResultSettings

settings = CompatResultSettings.from_env(os.environ)
reads = settings.get_task
dynamodb = aws_clients.dynamodb_client()
service = CompatResults(
    WorkerKeys(DynamoDbWorkerKeys(dynamodb, settings.worker_keys_table)),
    task_query(reads, dynamodb),
    report_service(
        reads.table,
        # Made at the first reportgood/reportbad: most requests are gets, which never need it.
        accounts_on_first_use(reads.provider),
        settings.report_window_seconds,
        reads.admin_principal_arn,
        dynamodb,
    ),
    shared_balance(settings.budget, reads.provider, settings.balance_cache_seconds, dynamodb),
    budget=key_budget(settings.budget, Endpoint.RES_PHP, dynamodb),
    threads=KeyThreads(DynamoDbKeyThreads(dynamodb, settings.budget.table_name)),
)


@instrumented
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # Read as the answer takes them: the key is checked (and charged) where it is read, so an
    # unknown key in the query string never has its body read.
    fields = FieldsRead(protocol_pairs(event, MAX_RESULT_BODY_BYTES))
    try:
        outcome = service.answer(fields)
    except MalformedRequestError as error:
        logger.warning("res.php request unreadable", extra={"reason": str(error)})
        return protocol_response(ProtocolAnswer.error(BAD_PARAMETERS), as_json=False)
    metrics.add_metric(name=outcome.event.value, unit=MetricUnit.Count, value=1)
    for task_id, found in outcome.lookups:
        record_read_through(task_id, found)
    if outcome.event in {Event.KEY_REFUSED, Event.OVER_BUDGET, Event.STORE_UNAVAILABLE}:
        logger.warning(
            "res.php refused", extra={"answer": outcome.answer.request, "key_id": outcome.key_id}
        )
    return protocol_response(outcome.answer, wants_json(fields.seen))
