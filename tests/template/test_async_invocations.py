"""Every function Lambda invokes asynchronously (an EventBridge rule's or a schedule's target)
says how many times Lambda retries a failed event and where the event goes when Lambda gives up
on it: an SQS queue its own role may send to, with an alarm on it. Without MaximumRetryAttempts
Lambda retries twice (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html);
without an on-failure destination, an event Lambda gives up on is gone without a trace
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html: the record is
sent with the function's execution role, so the role needs sqs:SendMessage on the queue)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.template.conftest import EXAMPLE_FUNCTIONS, FUNCTIONS

ASYNC_EVENT_TYPES = frozenset({"EventBridgeRule", "Schedule", "ScheduleV2", "CloudWatchEvent"})
# function -> (MaximumRetryAttempts, its on-failure queue)
KEPT_WHEN_GIVEN_UP = {
    "PollerFunction": (0, "PollerFailedEventsQueue"),
    "ResultConsumerFunction": (2, "ResultConsumerFailedQueue"),
    "PingbackForwardFunction": (2, "PingbackForwardFailedQueue"),
}
# An accelerator (DESIGN.md: GET stays the source of truth): Lambda's defaults suffice.
BEST_EFFORT = frozenset({"PushFunction"})


def asynchronously_invoked(resources: dict[str, Any]) -> set[str]:
    return {
        logical_id
        for logical_id in {*FUNCTIONS, *EXAMPLE_FUNCTIONS}
        if any(
            event["Type"] in ASYNC_EVENT_TYPES
            for event in resources[logical_id]["Properties"].get("Events", {}).values()
        )
    }


def test_every_asynchronously_invoked_function_is_listed_here(resources: dict[str, Any]) -> None:
    assert asynchronously_invoked(resources) == set(KEPT_WHEN_GIVEN_UP) | BEST_EFFORT


@pytest.mark.parametrize("function", sorted(KEPT_WHEN_GIVEN_UP))
def test_retries_are_explicit_and_what_lambda_gives_up_on_is_kept(
    resources: dict[str, Any], function: str
) -> None:
    retries, queue = KEPT_WHEN_GIVEN_UP[function]
    config = resources[function]["Properties"]["EventInvokeConfig"]
    assert config["MaximumRetryAttempts"] == retries
    assert 60 <= config["MaximumEventAgeInSeconds"] <= 21600
    destination = {"Fn::GetAtt": [queue, "Arn"]}
    assert config["DestinationConfig"]["OnFailure"] == {"Type": "SQS", "Destination": destination}
    assert resources[queue]["Type"] == "AWS::SQS::Queue"


@pytest.mark.parametrize("function", sorted(KEPT_WHEN_GIVEN_UP))
def test_the_functions_role_may_send_to_its_failure_queue(
    resources: dict[str, Any], function: str
) -> None:
    _, queue = KEPT_WHEN_GIVEN_UP[function]
    role = resources[function]["Properties"]["Role"]["Fn::GetAtt"][0]
    statements = [
        statement
        for policy in resources[role]["Properties"]["Policies"]
        for statement in policy["PolicyDocument"]["Statement"]
    ]
    assert any(
        statement["Effect"] == "Allow"
        and "sqs:SendMessage" in _listed(statement["Action"])
        and {"Fn::GetAtt": [queue, "Arn"]} in _listed(statement["Resource"])
        for statement in statements
    )


@pytest.mark.parametrize("function", sorted(KEPT_WHEN_GIVEN_UP))
def test_a_filled_failure_queue_raises_an_alarm(translated: dict[str, Any], function: str) -> None:
    _, queue = KEPT_WHEN_GIVEN_UP[function]
    alarms = [
        resource["Properties"]
        for resource in translated["Resources"].values()
        if resource["Type"] == "AWS::CloudWatch::Alarm"
        and resource["Properties"].get("MetricName") == "ApproximateNumberOfMessagesVisible"
        and {"Fn::GetAtt": [queue, "QueueName"]} in _dimension_values(resource["Properties"])
    ]
    assert alarms, f"no alarm on {queue}"
    assert all(
        (alarm["Threshold"], alarm["ComparisonOperator"]) == (0, "GreaterThanThreshold")
        for alarm in alarms
    )


def test_sam_makes_one_event_invoke_config_per_function(translated: dict[str, Any]) -> None:
    configs = {
        resource["Properties"]["FunctionName"]["Ref"]: resource["Properties"]
        for resource in translated["Resources"].values()
        if resource["Type"] == "AWS::Lambda::EventInvokeConfig"
    }
    assert set(configs) == set(KEPT_WHEN_GIVEN_UP)
    for function, (retries, _) in KEPT_WHEN_GIVEN_UP.items():
        assert configs[function]["MaximumRetryAttempts"] == retries
        assert configs[function]["Qualifier"] == "$LATEST"


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _dimension_values(properties: dict[str, Any]) -> list[Any]:
    return [dimension["Value"] for dimension in properties.get("Dimensions", [])]
