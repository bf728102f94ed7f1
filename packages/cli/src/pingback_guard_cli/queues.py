"""The dead-letter and parking queues: peek (each message read is one receive), redrive, purge."""

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
    """SQS's ApproximateReceiveCount, this peek's receive included."""
    sent_at: float | None
    fields: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "message_id": self.message_id,
            "receive_count": self.receive_count,
            "sent_at": self.sent_at,
            **{name: self.fields.get(name) for name in _SHOWN_FIELDS},
        }


@dataclass(frozen=True)
class Peek:
    visible: int
    in_flight: int
    """Received by someone (ReplayFunction, another peek) and not visible yet: a peek cannot
    read them."""
    max_receive_count: int | None
    """The queue's redrive policy: at this many receives SQS moves a message on (None: never)."""
    messages: list[PeekedMessage]

    def to_json(self) -> dict[str, Any]:
        return {
            "visible": self.visible,
            "in_flight": self.in_flight,
            "max_receive_count": self.max_receive_count,
            "messages": [message.to_json() for message in self.messages],
        }


def peek(aws: Aws, queue_url: str, limit: int) -> Peek:
    """The queue's counts, and up to `limit` visible messages, made visible again at once.

    Each message read is a receive: it adds one to the message's receive count.
    """
    sqs = aws.client("sqs")
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue_url,
        AttributeNames=[
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "RedrivePolicy",
        ],
    )["Attributes"]
    policy = json.loads(attributes.get("RedrivePolicy") or "{}")
    return Peek(
        visible=int(attributes.get("ApproximateNumberOfMessages", 0)),
        in_flight=int(attributes.get("ApproximateNumberOfMessagesNotVisible", 0)),
        max_receive_count=int(policy["maxReceiveCount"]) if "maxReceiveCount" in policy else None,
        messages=_receive_and_release(sqs, queue_url, limit),
    )


def _receive_and_release(sqs: Any, queue_url: str, limit: int) -> list[PeekedMessage]:
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

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "task_handle": self.task_handle, "moved": self.moved}


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
