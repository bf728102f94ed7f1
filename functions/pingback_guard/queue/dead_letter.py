"""DeadLetterQueue interface, its message format, and the SQS implementation (the only SQS code).

Two kinds of write spill here when the table refuses them: a received result (the callback) and
a PENDING registration of a task the provider already accepted (submit). The replay function
applies both once the table is back, so neither is lost and no task stays unknown to the table.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from pingback_guard.domain.errors import DeadLetterError, InvalidDeadLetterError
from pingback_guard.domain.task import (
    CaptchaRequest,
    DeliveryPath,
    NewTask,
    TaskResult,
    normalise_task_id,
    required_text,
)

if TYPE_CHECKING:
    from mypy_boto3_sqs.client import SQSClient

RESULT_KIND = "result"
SUBMISSION_KIND = "submission"
DeadLetter = TaskResult | NewTask


class DeadLetterQueue(Protocol):
    def send(self, write: DeadLetter, reason: str) -> None:
        """Keep a write the table refused, for replay; raises DeadLetterError when not accepted."""


def encode_message(write: DeadLetter, reason: str) -> str:
    body: dict[str, Any]
    if isinstance(write, TaskResult):
        body = {
            "kind": RESULT_KIND,
            "task_id": write.task_id,
            "code": write.code,
            "received_at": write.received_at,
            "source": write.delivered_via.value,
            "nonce": write.nonce,
            **({"user_agent": write.user_agent} if write.user_agent else {}),
        }
    else:
        body = {
            "kind": SUBMISSION_KIND,
            "task_id": write.task_id,
            "request": write.request.to_document(),
            "submitted_at": write.submitted_at,
            "first_poll_at": write.first_poll_at,
            "nonce": write.nonce,
            "owner": write.owner,
            "forward_url": write.forward_url,
            **({"provider_account": write.provider_account} if write.provider_account else {}),
        }
    return json.dumps({**body, "reason": reason}, separators=(",", ":"))


def decode_message(body: str) -> DeadLetter:
    """A replayed result keeps its first received_at and is marked as delivered by replay."""
    try:
        document = json.loads(body)
        task_id = normalise_task_id(document["task_id"])
        if document.get("kind", RESULT_KIND) == SUBMISSION_KIND:
            return NewTask(
                task_id=task_id,
                request=CaptchaRequest.from_document(document["request"]),
                submitted_at=float(document["submitted_at"]),
                first_poll_at=float(document["first_poll_at"]),
                nonce=_optional_text(document.get("nonce")),
                owner=_optional_text(document.get("owner")),
                forward_url=_optional_text(document.get("forward_url")),
                provider_account=_optional_text(document.get("provider_account")),
            )
        return TaskResult(
            task_id=task_id,
            code=required_text(document["code"]),
            delivered_via=DeliveryPath.REPLAY,
            received_at=float(document["received_at"]),
            nonce=_optional_text(document.get("nonce")),
            user_agent=_optional_text(document.get("user_agent")),
        )
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as error:
        reason = type(error).__name__
        raise InvalidDeadLetterError(f"dead-letter message is malformed: {reason}") from None


def _optional_text(value: object) -> str | None:
    """Messages written before per-task nonces have none: they keep the legacy rule."""
    return None if value is None else required_text(value)


class SqsDeadLetterQueue:
    def __init__(self, client: SQSClient, queue_url: str) -> None:
        self._client = client
        self._queue_url = queue_url

    def send(self, write: DeadLetter, reason: str) -> None:
        kind = RESULT_KIND if isinstance(write, TaskResult) else SUBMISSION_KIND
        try:
            self._client.send_message(
                QueueUrl=self._queue_url,
                MessageBody=encode_message(write, reason),
                MessageAttributes={
                    "task_id": {"DataType": "String", "StringValue": write.task_id},
                    "kind": {"DataType": "String", "StringValue": kind},
                },
            )
        except (ClientError, BotoCoreError) as error:
            raise DeadLetterError(f"SQS SendMessage failed: {type(error).__name__}") from None
