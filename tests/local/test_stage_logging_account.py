"""The twin deploys a logging WebSocket stage only where AWS would: once the account's API Gateway
CloudWatch role is set in the region (a fresh account, like a fresh moto, has none).
https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-logging.html"""

from typing import Any

import pytest

from infra.local.cloudformation.account_settings import (
    cloudwatch_role_arn,
    refuse_stages_that_cannot_log,
    set_cloudwatch_role_arn,
)
from infra.local.cloudformation.deploy import deploy_stack
from infra.local.cloudformation.intrinsics import NoResources, Resolver
from infra.local.cloudformation.template import SamTemplate, TemplateError
from infra.local.runtime.aws import ACCOUNT_ID, AwsEndpoint
from infra.local.runtime.moto_process import MotoEndpoint
from infra.project_template import TEMPLATE_PATH

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(120)]

REGION = "eu-west-1"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT_ID}:role/api-gateway-cloudwatch"


def _translated(template: SamTemplate, overrides: dict[str, str]) -> tuple[Any, Resolver]:
    values = template.parameter_values(overrides)
    translated = template.translate(values, REGION)
    return translated, Resolver(
        values, NoResources(), translated.get("Conditions", {}), translated.get("Mappings", {})
    )


def test_a_logging_websocket_stage_deploys_only_once_the_account_role_is_set(
    moto: MotoEndpoint,
) -> None:
    endpoint = AwsEndpoint(moto.url, REGION)
    template = SamTemplate.load(TEMPLATE_PATH)
    assert cloudwatch_role_arn(endpoint) is None
    # The default: the push API does not log; the HTTP API does, and needs no role.
    refuse_stages_that_cannot_log(*_translated(template, {}), endpoint)

    logging = template.parameter_values({"PushApiAccessLogs": "true"})
    with pytest.raises(TemplateError) as refused:
        deploy_stack(template, logging, endpoint, moto.cloudformation_types, "logging")
    assert str(refused.value).startswith(
        "PushApiStage: CloudWatch Logs role ARN must be set in account settings to enable logging"
    )
    assert (
        "https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-logging.html"
        in str(refused.value)
    )
    # Refused before anything was created, as CloudFormation fails the stage.
    assert endpoint.client("cloudformation").list_stacks()["StackSummaries"] == []

    set_cloudwatch_role_arn(endpoint, ROLE_ARN)
    assert cloudwatch_role_arn(endpoint) == ROLE_ARN
    refuse_stages_that_cannot_log(*_translated(template, {"PushApiAccessLogs": "true"}), endpoint)
