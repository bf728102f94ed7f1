"""DeadLetterQueue interface, its message format, and the SQS implementation (the only SQS code)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from pingback_guard.domain.errors import DeadLetterError, InvalidCallbackError
from pingback_guard.domain.task import DeliveryPath, TaskResult, normalise_task_id

if TYPE_CHECKING:
    from mypy_boto3_sqs.client import SQSClient


class DeadLetterQueue(Protocol):
    def send(self, result: TaskResult, reason: str) -> None:
        """Park a received result for replay; raises DeadLetterError when not accepted."""


def encode_message(result: TaskResult, reason: str) -> str:
    return json.dumps(
        {
            "task_id": result.task_id,
            "code": result.code,
            "received_at": result.received_at,
            "source": result.delivered_via.value,
            "reason": reason,
        },
        separators=(",", ":"),
    )


def decode_message(body: str) -> TaskResult:
    """A replayed result keeps its first received_at and is marked as delivered by replay."""
    try:
        document = json.loads(body)
        return TaskResult(
            task_id=normalise_task_id(document["task_id"]),
            code=str(document["code"]),
            delivered_via=DeliveryPath.REPLAY,
            received_at=float(document["received_at"]),
        )
    except (ValueError, KeyError, TypeError) as error:
        reason = type(error).__name__
        raise InvalidCallbackError(f"dead-letter message is malformed: {reason}") from None


class SqsDeadLetterQueue:
    def __init__(self, client: SQSClient, queue_url: str) -> None:
        self._client = client
        self._queue_url = queue_url

    def send(self, result: TaskResult, reason: str) -> None:
        try:
            self._client.send_message(
                QueueUrl=self._queue_url,
                MessageBody=encode_message(result, reason),
                MessageAttributes={
                    "task_id": {"DataType": "String", "StringValue": result.task_id}
                },
            )
        except (ClientError, BotoCoreError) as error:
            raise DeadLetterError(f"SQS SendMessage failed: {type(error).__name__}") from None
