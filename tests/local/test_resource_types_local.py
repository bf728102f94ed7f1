"""Every resource type a template declares is created in the twin (by moto's CloudFormation or
by API) or modelled by a part of it, and the start says which, once; a type that is neither is
a start-up error, never a stack quietly running without it (issue 41)."""

import json
from pathlib import Path

import pytest

from infra.local.cloudformation.deploy import deploy_stack
from infra.local.cloudformation.template import SamTemplate, TemplateError
from infra.local.runtime.aws import AwsEndpoint
from infra.local.runtime.moto_process import MotoEndpoint
from infra.project_template import TEMPLATE_PATH

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(120)]

REGION = "us-east-1"
DEPLOY_LOGGER = "infra.local.cloudformation.deploy"


def test_the_projects_types_are_each_created_or_modelled_and_said_so_once(
    moto: MotoEndpoint, caplog: pytest.LogCaptureFixture
) -> None:
    template = SamTemplate.load(TEMPLATE_PATH)
    values = template.parameter_values({"DeployExampleConsumer": "true"})
    caplog.set_level("INFO", logger=DEPLOY_LOGGER)

    stack = deploy_stack(
        template, values, AwsEndpoint(moto.url, REGION), moto.cloudformation_types, "types"
    )

    said = [record.getMessage() for record in caplog.records if record.name == DEPLOY_LOGGER]
    [summary] = [line for line in said if line.startswith("resource types created:")]
    for kind in (
        "AWS::Lambda::EventInvokeConfig",
        "AWS::DynamoDB::Table",
        "AWS::SQS::Queue",
        "AWS::CloudWatch::Alarm",
    ):
        assert kind in summary.split("; modelled")[0]
    for kind in ("AWS::Logs::MetricFilter", "AWS::SQS::QueuePolicy", "AWS::Pipes::Pipe"):
        assert f"{kind} by infra/local/" in summary
    assert not [line for line in said if "does not exist locally" in line]
    assert {resource.origin for resource in stack.resources.resources.values()} <= {
        "cloudformation",
        "api",
        "runtime",
    }
    # The EventInvokeConfigs exist in moto's Lambda, where the runtime reads them.
    lambda_client = AwsEndpoint(moto.url, REGION).client("lambda")
    poller = stack.resources.physical_id("PollerFunction")
    config = lambda_client.get_function_event_invoke_config(FunctionName=poller)
    assert config["MaximumRetryAttempts"] == 0
    assert config["DestinationConfig"]["OnFailure"]["Destination"].endswith(
        stack.resources.physical_id("PollerFailedEventsQueue").rsplit("/", 1)[-1]
    )


def test_a_type_neither_created_nor_modelled_stops_the_start(
    moto: MotoEndpoint, tmp_path: Path
) -> None:
    document = {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Resources": {
            "Queue": {"Type": "AWS::SQS::Queue"},
            "Firewall": {"Type": "AWS::WAFv2::WebACL", "Properties": {"Name": "acl"}},
        },
    }
    path = tmp_path / "template.yaml"
    path.write_text(json.dumps(document))  # JSON is YAML too
    template = SamTemplate.load(path)

    with pytest.raises(TemplateError) as refused:
        deploy_stack(
            template,
            template.parameter_values({}),
            AwsEndpoint(moto.url, REGION),
            moto.cloudformation_types,
            "unmodelled",
        )

    assert "neither created nor modelled by the twin: AWS::WAFv2::WebACL (Firewall)" in str(
        refused.value
    )
