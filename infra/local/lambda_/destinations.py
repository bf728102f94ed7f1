"""Where Lambda sends the record of an asynchronous invocation it gave up on (or, when the
function has an on-success destination, one that succeeded), and what that record is.

https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html:
- the invocation record is JSON: ``version`` "1.0", ``timestamp``, ``requestContext``
  {requestId, functionArn (qualified: ``:$LATEST``), condition (``Success``,
  ``RetriesExhausted`` or ``EventAgeExceeded``), approximateInvokeCount}, ``requestPayload`` (the
  event), ``responseContext`` {statusCode, executedVersion, functionError} and
  ``responsePayload`` (the function's answer or error document) when the function ran;
- Lambda sends it with the function's execution role: an SQS destination needs
  ``sqs:SendMessage`` in that role (and the queue's policy must not deny it). When the send
  fails (permissions, size) the record is lost and Lambda counts ``DestinationDeliveryFailures``.
Only SQS destinations are sent here (the only kind the template uses); any other kind is counted
as a delivery failure and logged.
"""

import http.client
import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from infra.local.iam.authorizer import Authorizer
from infra.local.iam.calls import ApiCall
from infra.local.iam.evaluator import EvaluationError
from infra.local.lambda_.pool import Invocation
from infra.local.runtime.aws import AwsEndpoint

logger = logging.getLogger(__name__)

SUCCESS = "Success"
RETRIES_EXHAUSTED = "RetriesExhausted"
EVENT_AGE_EXCEEDED = "EventAgeExceeded"
RECORD_VERSION = "1.0"
LATEST = "$LATEST"
# Invoke's status for an invocation that ran (a function error is still a 200 with
# X-Amz-Function-Error: https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html).
_RAN_STATUS = 200
_UNHANDLED = "Unhandled"
_SQS_ARN_PREFIX = "arn:aws:sqs:"
# SQS's message size limit (1 MiB): a larger record is a delivery failure on AWS too.
_SQS_MAX_MESSAGE_BYTES = 1024 * 1024


def invocation_record(
    *,
    request_id: str,
    function_arn: str,
    condition: str,
    invoke_count: int,
    event: Any,
    last: Invocation | None,
) -> dict[str, Any]:
    """The record Lambda sends a destination; `last`: the last attempt, None if it never ran."""
    record: dict[str, Any] = {
        "version": RECORD_VERSION,
        "timestamp": _timestamp(time.time()),
        "requestContext": {
            "requestId": request_id,
            "functionArn": f"{function_arn}:{LATEST}",
            "condition": condition,
            "approximateInvokeCount": invoke_count,
        },
        "requestPayload": event,
    }
    if last is not None:
        response_context: dict[str, Any] = {"statusCode": _RAN_STATUS, "executedVersion": LATEST}
        if not last.ok:
            response_context["functionError"] = _UNHANDLED
        record["responseContext"] = response_context
        record["responsePayload"] = last.result if last.ok else last.error
    return record


def _timestamp(at: float) -> str:
    whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at))
    return f"{whole}.{int(at * 1000) % 1000:03d}Z"


class DestinationSender:
    """Sends records to SQS destinations as the function's execution role, authorized first by
    the twin's IAM evaluator (infra/local/iam) with the role's policies and the queue's policy."""

    def __init__(
        self,
        endpoint: AwsEndpoint,
        authorizers: Mapping[str, Authorizer | None],
        new_client: Callable[[str], Any] | None = None,
    ) -> None:
        """`authorizers` by function logical id; None: the stack does not authorize calls."""
        self._sqs = (new_client or endpoint.client)("sqs")
        self._authorizers = authorizers

    def send(self, logical_id: str, destination: str, record: Mapping[str, Any]) -> str | None:
        """None when sent, else why not (DestinationDeliveryFailures on AWS)."""
        if not destination.startswith(_SQS_ARN_PREFIX):
            return f"{destination}: only SQS destinations are sent locally"
        body = json.dumps(record)
        if len(body.encode()) > _SQS_MAX_MESSAGE_BYTES:
            return f"the {len(body.encode())}-byte record is over SQS's message size limit"
        *_, account, name = destination.split(":")
        try:
            url = self._sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)[
                "QueueUrl"
            ]
            refused = self._refusal(logical_id, url, body)
            if refused is not None:
                return refused
            self._sqs.send_message(QueueUrl=url, MessageBody=body)
        except (ClientError, BotoCoreError, OSError, http.client.HTTPException) as error:
            return f"{destination}: {type(error).__name__}"
        except EvaluationError as error:
            return f"{destination}: the IAM evaluator could not decide: {error}"
        return None

    def _refusal(self, logical_id: str, queue_url: str, body: str) -> str | None:
        authorizer = self._authorizers.get(logical_id)
        if authorizer is None:
            return None
        call = ApiCall("sqs", "SendMessage", {"QueueUrl": queue_url, "MessageBody": body})
        try:
            refusal = authorizer.refusal(call)
        except (OSError, http.client.HTTPException):
            # The evaluator closed an idle keep-alive connection; the next call opens a new one.
            refusal = authorizer.refusal(call)
        return None if refusal is None else f"the function's role may not: {refusal}"
