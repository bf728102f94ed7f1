"""The dead-letter and parking queues: peek without consuming, redrive, purge."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from pingback_guard_cli.stack import Aws

# Message fields an operator may see; `code` and `request` carry tokens and provider input.
_SHOWN_FIELDS = ("kind", "task_id", "source", "reason", "received_at", "submitted_at")
# An endpoint without the action; moto answers it with a bare HTML 500, which botocore reports as
# code "500" (AWS's own server errors carry a real code such as InternalError).
_MISSING_OPERATION_CODES = frozenset(
    {"InvalidAction", "NotImplemented", "UnknownOperation", "UnknownOperationException", "500"}
)


@dataclass(frozen=True)
class PeekedMessage:
    message_id: str
    receive_count: int
    sent_at: float | None
    fields: dict[str, Any]


def peek(aws: Aws, queue_url: str, limit: int) -> list[PeekedMessage]:
    """Up to `limit` messages, made visible again at once (a peek still counts as a receive)."""
    sqs = aws.client("sqs")
    found: dict[str, PeekedMessage] = {}
    handles: list[str] = []
    while len(found) < limit:
        answer = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=min(10, limit - len(found)),
            VisibilityTimeout=30,
            AttributeNames=["ApproximateReceiveCount", "SentTimestamp"],
            WaitTimeSeconds=0,
        )
        messages = answer.get("Messages", [])
        if not messages:
            break
        for message in messages:
            handles.append(message["ReceiptHandle"])
            found[message["MessageId"]] = _peeked(message)
    for handle in handles:
        sqs.change_message_visibility(QueueUrl=queue_url, ReceiptHandle=handle, VisibilityTimeout=0)
    return list(found.values())


def _peeked(message: dict[str, Any]) -> PeekedMessage:
    attributes = message.get("Attributes", {})
    try:
        body = json.loads(message.get("Body", ""))
    except ValueError:
        body = {}
    fields = {key: body[key] for key in _SHOWN_FIELDS if isinstance(body, dict) and key in body}
    sent = attributes.get("SentTimestamp")
    return PeekedMessage(
        message_id=message["MessageId"],
        receive_count=int(attributes.get("ApproximateReceiveCount", 0)),
        sent_at=int(sent) / 1000 if sent else None,
        fields=fields,
    )


@dataclass(frozen=True)
class Redrive:
    method: str
    """"message-move-task" (SQS moves them) or "receive-send-delete" (moved here, one by one)."""
    task_handle: str | None
    moved: int | None


def redrive(aws: Aws, source_url: str, destination_url: str, per_second: int) -> Redrive:
    """StartMessageMoveTask to the dead-letter queue; by hand where the endpoint lacks it."""
    sqs = aws.client("sqs")
    source_arn = _arn(sqs, source_url)
    try:
        started = sqs.start_message_move_task(
            SourceArn=source_arn,
            DestinationArn=_arn(sqs, destination_url),
            MaxNumberOfMessagesPerSecond=per_second,
        )
    except ClientError as error:
        if str(error.response.get("Error", {}).get("Code")) not in _MISSING_OPERATION_CODES:
            raise
        return Redrive("receive-send-delete", None, move_by_hand(sqs, source_url, destination_url))
    return Redrive("message-move-task", started["TaskHandle"], None)


def move_by_hand(sqs: Any, source_url: str, destination_url: str) -> int:
    """Each message sent to the destination before it is deleted from the source (at least once)."""
    moved = 0
    while True:
        messages = sqs.receive_message(
            QueueUrl=source_url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=60,
            MessageAttributeNames=["All"],
            WaitTimeSeconds=0,
        ).get("Messages", [])
        if not messages:
            return moved
        for message in messages:
            attributes = message.get("MessageAttributes")
            sqs.send_message(
                QueueUrl=destination_url,
                MessageBody=message["Body"],
                **({"MessageAttributes": attributes} if attributes else {}),
            )
            sqs.delete_message(QueueUrl=source_url, ReceiptHandle=message["ReceiptHandle"])
            moved += 1


def purge(aws: Aws, queue_url: str) -> int:
    """Purges the queue; the number of messages it held just before."""
    sqs = aws.client("sqs")
    held = int(
        sqs.get_queue_attributes(
            QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"].get("ApproximateNumberOfMessages", 0)
    )
    sqs.purge_queue(QueueUrl=queue_url)
    return held


def _arn(sqs: Any, queue_url: str) -> str:
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])
    return str(attributes["Attributes"]["QueueArn"])
