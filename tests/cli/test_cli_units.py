"""The CLI's AWS paths that the local stack cannot show (moto lacks StartMessageMoveTask and runs
no pipe)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, NoCredentialsError
from botocore.stub import Stubber

from pingback_guard_cli import queues, status
from pingback_guard_cli.errors import ExitCode, failure_of
from pingback_guard_cli.stack import Stack

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


STACK = Stack(
    "stack",
    outputs={"TasksTableName": "stack-TasksTable-1", "EventBusName": "stack-results"},
    parameters={},
)
OURS = {
    "Source": "arn:aws:dynamodb:eu-west-1:123456789012:table/stack-TasksTable-1/stream/2026-12-01",
    "Target": "arn:aws:events:eu-west-1:123456789012:event-bus/stack-results",
}
# Another stack's pipe from a table whose name starts the same, to the same account's other bus.
THEIRS = {
    "Source": "arn:aws:dynamodb:eu-west-1:123456789012:table/stack-TasksTable-10/stream/2026",
    "Target": "arn:aws:events:eu-west-1:123456789012:event-bus/stack-results-2",
}


def pipes_listing(*pages: list[dict[str, str]]) -> tuple[Any, Stubber]:
    client = boto3.Session(
        aws_access_key_id="a", aws_secret_access_key="b", region_name="eu-west-1"
    ).client("pipes")
    stubber = Stubber(client)
    for number, pipes in enumerate(pages):
        answer: dict[str, Any] = {"Pipes": pipes}
        asked = {} if number == 0 else {"NextToken": f"page-{number}"}
        if number + 1 < len(pages):
            answer["NextToken"] = f"page-{number + 1}"
        stubber.add_response("list_pipes", answer, asked)
    return client, stubber


def status_with_pipe(pipe_state: str | None) -> status.Status:
    return status.Status(
        stack="stack",
        queues=[status.QueueState("dead-letter", 0, 0, None)],
        alarms_in_alarm=[],
        pipe_state=pipe_state,
        pending=0,
        due=0,
        last_hour=dict.fromkeys(status.HOURLY_METRICS, 0.0),
    )


@pytest.mark.parametrize(
    ("state", "healthy"),
    [("RUNNING", True), ("UPDATING", True), ("STOPPED", False), ("START_FAILED", False)],
)
def test_status_reads_the_pipe_s_state_and_a_stopped_or_failed_pipe_needs_attention(
    state: str, healthy: bool
) -> None:
    # The stack's pipe is on the second page, after another stack's stopped pipe.
    client, stubber = pipes_listing(
        [{**THEIRS, "CurrentState": "STOPPED"}], [{**OURS, "CurrentState": state}]
    )
    with stubber:
        found = status_with_pipe(status.pipe_state(StubbedAws(client), STACK))  # type: ignore[arg-type]
    assert found.pipe_state == state
    assert found.healthy is healthy
    assert found.notes == []
    if not healthy:
        assert found.attention == [
            f"the result events pipe is {state}: results are stored, not published"
        ]


def test_an_endpoint_without_the_pipe_gives_no_state_and_says_why() -> None:
    client, stubber = pipes_listing([{**THEIRS, "CurrentState": "STOPPED"}])
    with stubber:
        found = status_with_pipe(status.pipe_state(StubbedAws(client), STACK))  # type: ignore[arg-type]
    assert found.pipe_state is None and found.healthy
    assert found.notes == [status.NO_PIPE_STATE]


def test_a_refused_pipe_listing_is_a_missing_permission_not_a_blank() -> None:
    client, stubber = pipes_listing()
    stubber.add_client_error("list_pipes", "AccessDeniedException", http_status_code=403)
    with stubber, pytest.raises(ClientError) as raised:
        status.pipe_state(StubbedAws(client), STACK)  # type: ignore[arg-type]
    assert failure_of(raised.value).code == ExitCode.ACCESS_DENIED
