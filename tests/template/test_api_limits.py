"""The twin holds the requests it makes itself to the limits of botocore's service model."""

from __future__ import annotations

import boto3
import pytest

from infra.local.cloudformation.api_limits import (
    length_limit,
    out_of_limits,
    refusing_out_of_limits,
)
from infra.local.cloudformation.intrinsics import NoResources, Resolver
from infra.local.cloudformation.local_resources import LocalResourceContext
from infra.local.cloudformation.template import TemplateError
from infra.local.runtime.aws import AwsEndpoint, fake_session


def _put_metric_alarm() -> object:
    client = boto3.Session(region_name="us-east-1").client("cloudwatch")
    return client.meta.service_model.operation_model("PutMetricAlarm")


def test_what_aws_refuses_is_named_with_the_model_s_limit() -> None:
    request = {
        "AlarmName": "pingback-guard-errors",
        "AlarmDescription": "d" * 1025,
        "EvaluationPeriods": 0,
        "ComparisonOperator": "BiggerThan",
        "Dimensions": [{"Name": "FunctionName", "Value": "f"}] * 31,
        "Threshold": 1.0,
    }
    description, periods, operator, dimensions = out_of_limits(
        _put_metric_alarm(),  # type: ignore[arg-type]
        request,
    )
    assert description == (
        "PutMetricAlarm.AlarmDescription has 1025 characters, at most 1024 allowed"
    )
    assert periods == "PutMetricAlarm.EvaluationPeriods has 0, at least 1 allowed"
    assert operator.startswith("PutMetricAlarm.ComparisonOperator 'BiggerThan' is not one of [")
    assert "'GreaterThanThreshold'" in operator
    assert dimensions == "PutMetricAlarm.Dimensions has 31 items, at most 30 allowed"


def test_a_request_within_the_model_passes() -> None:
    request = {
        "AlarmName": "pingback-guard-errors",
        "AlarmDescription": "d" * 1024,
        "EvaluationPeriods": 1,
        "ComparisonOperator": "GreaterThanThreshold",
        "Threshold": 0.0,
    }
    assert out_of_limits(_put_metric_alarm(), request) == []  # type: ignore[arg-type]


def test_the_client_refuses_before_sending() -> None:
    """Refused before the request is built: no endpoint is ever reached (none listens here)."""
    client = refusing_out_of_limits(
        fake_session("us-east-1").client("cloudwatch", endpoint_url="http://127.0.0.1:9")
    )
    with pytest.raises(
        TemplateError,
        match=r"cloudwatch PutMetricAlarm would refuse it: .*"
        r"AlarmDescription has 1025 characters, at most 1024 allowed",
    ):
        client.put_metric_alarm(
            AlarmName="a",
            AlarmDescription="d" * 1025,
            EvaluationPeriods=1,
            ComparisonOperator="GreaterThanThreshold",
            Threshold=0.0,
        )


def test_names_the_twin_generates_fit_the_api_as_cloudformation_s_do() -> None:
    """CloudFormation shortens stack-LogicalId-SUFFIX to fit; PutRule takes 64 characters."""
    context = LocalResourceContext(
        AwsEndpoint("http://127.0.0.1:9", "us-east-1"),
        "pingback-guard-local",
        Resolver({}, NoResources()),
    )
    long_name = context.generated_name("ResultConsumerFunctionFinalResults", "events", "PutRule")
    assert len(long_name) == length_limit("events", "PutRule", "Name") == 64
    assert long_name.startswith("pingback-guard-local-ResultConsumerFunction")
    short = context.generated_name("Errors", "events", "PutRule")
    assert short.startswith("pingback-guard-local-Errors-") and len(short) == 40
