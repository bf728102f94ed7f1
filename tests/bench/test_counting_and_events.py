"""Counting AWS calls from botocore's events, reading EMF output, shaping Lambda events."""

from __future__ import annotations

import json
from urllib.parse import parse_qs

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError
from moto import mock_aws

from bench.aws_counting import CallWindows
from bench.cost import Invocation
from bench.events import callback_event, get_task_event, recaptcha_token, sqs_event
from bench.table_paths import HandlerSamples, PathResult, emitted_metrics
from infra.local.runtime.faults import FaultRule
from infra.project_template import create_tasks_table


def test_calls_are_counted_only_inside_a_window_and_sorted_by_kind() -> None:
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        create_tasks_table(dynamodb, "tasks")
        sqs = boto3.client("sqs", region_name="us-east-1")
        windows = CallWindows()
        windows.hooks.attach(dynamodb.meta.events)
        windows.hooks.attach(sqs.meta.events)
        key = {"task_id": {"S": "1"}}
        dynamodb.put_item(TableName="tasks", Item=key)
        with windows.window("path") as tally:
            dynamodb.put_item(TableName="tasks", Item=key)
            dynamodb.scan(TableName="tasks")
            windows.hooks.set_rules((FaultRule(mode="unavailable", service="sqs"),))
            with pytest.raises(EndpointConnectionError):
                sqs.send_message(QueueUrl="https://sqs.us-east-1.amazonaws.com/1/q", MessageBody="")
    assert (tally.table_writes, tally.table_reads, tally.table_queries) == (1, 1, 0)
    assert tally.count("sqs") == 1
    assert tally.scanned_counts == [1]
    assert dict(tally.by_kind(answered=False)) == {"sqs.SendMessage": 1}


def test_emitted_metrics_are_name_plus_dimension_values() -> None:
    line = json.dumps(
        {
            "_aws": {
                "CloudWatchMetrics": [
                    {
                        "Namespace": "N",
                        "Dimensions": [["service"]],
                        "Metrics": [{"Name": "A"}, {"Name": "B"}],
                    }
                ]
            },
            "service": "svc",
        }
    )
    found = emitted_metrics([f'{{"level":"INFO"}}\n{line}\n'])
    assert found == {("A", ("service=svc",)), ("B", ("service=svc",))}


def test_samples_give_the_median_invocation_and_paths_count_per_task() -> None:
    samples = HandlerSamples(durations_ms=[3.0, 9.0, 4.0], log_bytes=[700, 800, 900])
    assert samples.median_invocation() == Invocation(4.0, 800)
    result = PathResult("callback_first", tasks=4, handlers={"callback": samples})
    assert (result.invocations, result.per_task(2)) == (3, 0.5)


def test_a_token_is_url_safe_and_as_long_as_asked() -> None:
    token = recaptcha_token(2200)
    assert len(token) == 2200 and token.startswith("03AF")
    assert all(character.isalnum() or character in "-_" for character in token)


def test_a_callback_event_carries_id_and_code_in_the_query() -> None:
    event = callback_event("s3cret", "123", "tok-en")
    assert event["pathParameters"] == {"secret": "s3cret"}
    assert event["rawPath"] == event["requestContext"]["http"]["path"] == "/callback/s3cret"
    assert parse_qs(event["rawQueryString"]) == {"id": ["123"], "code": ["tok-en"]}
    assert get_task_event("77")["pathParameters"] == {"task_id": "77"}


def test_an_sqs_event_has_one_record_per_message() -> None:
    message = {"MessageId": "m1", "ReceiptHandle": "r1", "Body": "{}", "Attributes": {}}
    records = sqs_event([message])["Records"]
    assert [(r["messageId"], r["receiptHandle"], r["body"]) for r in records] == [
        ("m1", "r1", "{}")
    ]
    assert records[0]["attributes"]["ApproximateReceiveCount"] == "1"
