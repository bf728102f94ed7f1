"""The CLI's AWS paths that the local stack cannot show (moto lacks StartMessageMoveTask)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, NoCredentialsError
from botocore.stub import Stubber

from pingback_guard_cli import queues
from pingback_guard_cli.errors import ExitCode, failure_of

PARKING = "https://sqs.eu-west-1.amazonaws.com/123456789012/stack-parking"
DLQ = "https://sqs.eu-west-1.amazonaws.com/123456789012/stack-dead-letter"


class StubbedAws:
    def __init__(self, client: Any) -> None:
        self._client = client

    def client(self, _service: str) -> Any:
        return self._client


def sqs_stub() -> tuple[Any, Stubber]:
    client = boto3.Session(
        aws_access_key_id="a", aws_secret_access_key="b", region_name="eu-west-1"
    ).client("sqs")
    return client, Stubber(client)


def arn_of(stubber: Stubber, url: str) -> None:
    name = url.rsplit("/", 1)[-1]
    stubber.add_response(
        "get_queue_attributes",
        {"Attributes": {"QueueArn": f"arn:aws:sqs:eu-west-1:123456789012:{name}"}},
        {"QueueUrl": url, "AttributeNames": ["QueueArn"]},
    )


def test_redrive_on_aws_starts_a_message_move_task_back_to_the_dead_letter_queue() -> None:
    client, stubber = sqs_stub()
    arn_of(stubber, PARKING)
    arn_of(stubber, DLQ)
    stubber.add_response(
        "start_message_move_task",
        {"TaskHandle": "handle-1"},
        {
            "SourceArn": "arn:aws:sqs:eu-west-1:123456789012:stack-parking",
            "DestinationArn": "arn:aws:sqs:eu-west-1:123456789012:stack-dead-letter",
            "MaxNumberOfMessagesPerSecond": 10,
        },
    )
    with stubber:
        done = queues.redrive(StubbedAws(client), PARKING, DLQ, 10)  # type: ignore[arg-type]
    assert (done.method, done.task_handle) == ("message-move-task", "handle-1")


def test_redrive_does_not_fall_back_when_aws_refuses_for_another_reason() -> None:
    client, stubber = sqs_stub()
    arn_of(stubber, PARKING)
    arn_of(stubber, DLQ)
    stubber.add_client_error("start_message_move_task", "AccessDenied", http_status_code=403)
    with stubber, pytest.raises(ClientError) as raised:
        queues.redrive(StubbedAws(client), PARKING, DLQ, 10)  # type: ignore[arg-type]
    assert failure_of(raised.value).code == ExitCode.ACCESS_DENIED


def test_missing_credentials_name_the_way_to_fix_them() -> None:
    failure = failure_of(NoCredentialsError())
    assert failure.code == ExitCode.NO_CREDENTIALS and "aws configure" in str(failure)
