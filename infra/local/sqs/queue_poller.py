"""The SQS event source mapping: long-polls a queue in moto and invokes the function in batches.

Like Lambda: messages the function handled are deleted; on a function error nothing is deleted;
with ReportBatchItemFailures only the messages not listed in `batchItemFailures` are deleted (an
invalid list fails the whole batch). Undeleted messages come back after the queue's visibility
timeout (divided by the time scale, passed on each receive; renewed while the invocation runs:
infra.local.sqs.in_flight) and moto's redrive policy moves them to the dead-letter queue once
received maxReceiveCount times.

The mapping polls with the function's execution role, as on AWS
(https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html, "Setting up Lambda
execution role permissions"): the runtime gives it an SQS client whose calls are authorized as
that role (infra/local/iam/service_roles.py). A refused call is the poll failing: nothing is
delivered and the messages stay in the queue. Lambda also checks the role when the mapping is
created, and CloudFormation's create fails then: `refuse_unauthorized_mapping`.
"""

import base64
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from infra.local.apigateway.gateway import Invoker
from infra.local.cloudformation.template import TemplateError
from infra.local.iam.authorizer import Authorizer
from infra.local.iam.calls import ApiCall
from infra.local.lambda_.pool import Invocation, PoolClosed
from infra.local.lambda_.triggers import QueueSource
from infra.local.runtime.stats import SharedStats
from infra.local.runtime.threads import BackgroundThreads
from infra.local.sqs.in_flight import KeptInvisible

logger = logging.getLogger(__name__)

_LONG_POLL_SECONDS = 1
_RETRY_PAUSE_SECONDS = 1.0
# What CreateEventSourceMapping checks the execution role for (the permissions the docs list).
# Its refusal, as CloudFormation reports it, e.g. for DeleteMessage: 'Resource handler returned
# message: "Invalid request provided: The provided execution role does not have permissions to
# call DeleteMessage on SQS (Service: Lambda, Status Code: 400, ...)"' (InvalidParameterValue-
# Exception; reported in https://github.com/aws/aws-cdk/issues/6770 for ReceiveMessage).
MAPPING_CHECKED_ACTIONS = ("ReceiveMessage", "DeleteMessage", "GetQueueAttributes")


def refuse_unauthorized_mapping(source: QueueSource, authorizer: Authorizer) -> None:
    """TemplateError, as CloudFormation's, if the function's role may not poll the queue."""
    for operation in MAPPING_CHECKED_ACTIONS:
        call = ApiCall("sqs", operation, {"QueueUrl": source.queue_url})
        if authorizer.refusal(call) is not None:
            raise TemplateError(
                f'{source.logical_id}: Resource handler returned message: "Invalid request'
                f" provided: The provided execution role does not have permissions to call"
                f' {operation} on SQS (Service: Lambda, Status Code: 400)"'
            )


def refuse_visibility_below_timeout(
    source: QueueSource, visibility_timeout_seconds: int, function_timeout_seconds: float
) -> None:
    """TemplateError, as CloudFormation's, when the queue's visibility timeout is shorter than
    the function's timeout: Lambda validates it when it creates or updates the mapping
    (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html). The message is
    CloudFormation's, as quoted in https://github.com/getlift/lift/issues/388."""
    if function_timeout_seconds > visibility_timeout_seconds:
        raise TemplateError(
            f'{source.logical_id}: Resource handler returned message: "Invalid request provided:'
            f" Queue visibility timeout: {visibility_timeout_seconds} seconds is less than"
            f" Function timeout: {function_timeout_seconds:g} seconds (Service: Lambda, Status"
            f' Code: 400)"'
        )


def sqs_event(messages: Sequence[Mapping[str, Any]], queue_arn: str, region: str) -> dict[str, Any]:
    return {"Records": [_record(message, queue_arn, region) for message in messages]}


def _record(message: Mapping[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": dict(message.get("Attributes", {})),
        "messageAttributes": {
            name: _message_attribute(value)
            for name, value in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


def _message_attribute(value: Mapping[str, Any]) -> dict[str, Any]:
    binary = value.get("BinaryValue")
    return {
        "stringValue": value.get("StringValue"),
        "binaryValue": base64.b64encode(binary).decode() if binary is not None else None,
        "stringListValues": list(value.get("StringListValues", [])),
        "binaryListValues": [
            base64.b64encode(item).decode() for item in value.get("BinaryListValues", [])
        ],
        "dataType": value.get("DataType", "String"),
    }


def handled_message_ids(
    message_ids: Sequence[str], invocation: Invocation, report_batch_item_failures: bool
) -> list[str]:
    """The messages to delete after an invocation."""
    if not invocation.ok:
        return []
    if not report_batch_item_failures:
        return list(message_ids)
    failed = _reported_failures(invocation.result, set(message_ids))
    if failed is None:
        return []
    return [message_id for message_id in message_ids if message_id not in failed]


def _reported_failures(result: Any, batch: set[str]) -> set[str] | None:
    """The ids listed in batchItemFailures; None when the response fails the whole batch."""
    if result is None:
        return set()
    if not isinstance(result, dict):
        return None
    failures = result.get("batchItemFailures") or []
    if not isinstance(failures, list):
        return None
    identifiers = {
        failure.get("itemIdentifier") if isinstance(failure, dict) else None for failure in failures
    }
    if not identifiers <= batch:
        return None
    return {str(identifier) for identifier in identifiers}


class MessageObserver(Protocol):
    """Told what the poller received and deleted (the local CloudWatch's message ages)."""

    def received(self, queue_url: str, messages: Iterable[Mapping[str, Any]]) -> None: ...

    def deleted(self, queue_url: str, message_ids: Iterable[str]) -> None: ...


@dataclass
class PollerStats(SharedStats):
    batches: int = 0
    messages: int = 0
    deleted: int = 0
    failed_polls: int = 0
    """Receives or deletes that failed (a refused role, moto down): nothing delivered."""


class QueuePoller:
    def __init__(
        self,
        *,
        source: QueueSource,
        new_sqs_client: Callable[[], Any],
        runtime_sqs: Any,
        invoke: Invoker,
        time_scale: float,
        region: str,
        pollers: int,
        observer: MessageObserver | None = None,
    ) -> None:
        self.source = source
        self._observer = observer
        self._new_sqs_client = new_sqs_client
        self._runtime_sqs = runtime_sqs
        self._invoke = invoke
        self._time_scale = time_scale
        self._region = region
        self._pollers = pollers
        self._threads = BackgroundThreads()
        self.stats = PollerStats()

    def start(self) -> None:
        for _ in range(self._pollers):
            self._threads.start(self._poll, self._new_sqs_client())

    def stop(self, timeout: float) -> None:
        self._threads.stop(timeout)

    def _scaled_visibility_timeout(self, sqs: Any) -> int:
        attributes = sqs.get_queue_attributes(
            QueueUrl=self.source.queue_url, AttributeNames=["VisibilityTimeout"]
        )["Attributes"]
        return max(1, round(int(attributes["VisibilityTimeout"]) / self._time_scale))

    def _poll(self, sqs: Any) -> None:
        visibility_timeout: int | None = None
        while not self._threads.stopping.is_set():
            try:
                if visibility_timeout is None:
                    visibility_timeout = self._scaled_visibility_timeout(sqs)
                self._poll_once(sqs, visibility_timeout)
            except PoolClosed:
                return
            except (BotoCoreError, ClientError) as failure:
                self.stats.add(failed_polls=1)
                logger.warning("%s: polling failed: %s", self.source.logical_id, failure)
                self._threads.stopping.wait(_RETRY_PAUSE_SECONDS)

    def _poll_once(self, sqs: Any, visibility_timeout: int) -> None:
        messages = sqs.receive_message(
            QueueUrl=self.source.queue_url,
            MaxNumberOfMessages=self.source.batch_size,
            WaitTimeSeconds=_LONG_POLL_SECONDS,
            VisibilityTimeout=visibility_timeout,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not messages:
            return
        if self._observer is not None:
            self._observer.received(self.source.queue_url, messages)
        with KeptInvisible(self._runtime_sqs, self.source.queue_url, messages, visibility_timeout):
            invocation = self._invoke(
                self.source.function, sqs_event(messages, self.source.queue_arn, self._region)
            )
        handled = set(
            handled_message_ids(
                [message["MessageId"] for message in messages],
                invocation,
                self.source.report_batch_item_failures,
            )
        )
        entries = [
            {"Id": str(index), "ReceiptHandle": message["ReceiptHandle"]}
            for index, message in enumerate(messages)
            if message["MessageId"] in handled
        ]
        if entries:
            sqs.delete_message_batch(QueueUrl=self.source.queue_url, Entries=entries)
            if self._observer is not None:
                self._observer.deleted(self.source.queue_url, handled)
        self.stats.add(batches=1, messages=len(messages), deleted=len(entries))
