"""The twin's SQS mapping keeps a batch invisible while its invocation runs, as the visibility
timeout Lambda requires (at least the function's timeout) does on AWS, although the local stack
divides that timeout by its time scale (infra/local/sqs/in_flight.py)."""

from __future__ import annotations

import time
from typing import Any

import boto3
from moto import mock_aws

from infra.local.lambda_.pool import Invocation
from infra.local.lambda_.triggers import QueueSource
from infra.local.sqs.queue_poller import QueuePoller
from tests.waiting import wait_until

REGION = "us-east-1"
TIME_SCALE = 60
INVOCATION_SECONDS = 2.5  # longer than the queue's 60 s visibility at that scale (1 s)


@mock_aws
def test_a_batch_is_not_received_again_while_its_invocation_runs() -> None:
    # Given a queue whose 60 s visibility timeout the stack runs as 1 s, one message in it,
    # two pollers, and a function that takes 2.5 s
    sqs = boto3.client("sqs", region_name=REGION)
    url = sqs.create_queue(QueueName="work", Attributes={"VisibilityTimeout": "60"})["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
    sqs.send_message(QueueUrl=url, MessageBody="{}")
    receive_counts: list[str] = []

    def invoke(function: str, event: Any) -> Invocation:
        receive_counts.extend(r["attributes"]["ApproximateReceiveCount"] for r in event["Records"])
        time.sleep(INVOCATION_SECONDS)
        return Invocation("request")

    poller = QueuePoller(
        source=QueueSource("Work", "WorkFunction", arn["QueueArn"], url, 10, False, None),
        new_sqs_client=lambda: boto3.client("sqs", region_name=REGION),
        runtime_sqs=sqs,
        invoke=invoke,
        time_scale=TIME_SCALE,
        region=REGION,
        pollers=2,
    )

    # When the pollers run until the message is deleted
    poller.start()
    try:
        wait_until(lambda: poller.stats.to_json()["deleted"] >= 1, timeout=30)
    finally:
        poller.stop(INVOCATION_SECONDS + 3)

    # Then the function got it once: the second poller never received it in the meantime
    assert receive_counts == ["1"]
