"""What a deployment needs of the account besides the template, checked as AWS checks it.

API Gateway writes the logs of a WebSocket or REST stage (access logs, execution logs) through
the account's CloudWatch role, a per-region account setting (``apigateway update-account``,
``cloudwatchRoleArn``). Without it, creating a stage that logs fails: "CloudWatch Logs role ARN
must be set in account settings to enable logging" (BadRequestException). HTTP API stages write
access logs without it. A fresh account has none, and neither has the twin's moto account until
someone sets it. https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-logging.html
"""

from collections.abc import Mapping
from typing import Any

from infra.local.cloudformation.intrinsics import PSEUDO_NO_VALUE, Resolver
from infra.local.cloudformation.template import TemplateError
from infra.local.runtime.aws import AwsEndpoint

SET_UP_LOGGING_DOC = (
    "https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-logging.html"
)
_WEBSOCKET_STAGE = "AWS::ApiGatewayV2::Stage"
_REST_STAGE = "AWS::ApiGateway::Stage"
_LOGGING_LEVELS = ("ERROR", "INFO")


def refuse_stages_that_cannot_log(
    translated: Mapping[str, Any], resolver: Resolver, endpoint: AwsEndpoint
) -> None:
    """TemplateError if a stage logs while the account's API Gateway CloudWatch role is unset."""
    logging_stages = [
        logical_id
        for logical_id, definition in translated["Resources"].items()
        if _deployed(definition, resolver) and _logs(translated, definition, resolver)
    ]
    if not logging_stages or cloudwatch_role_arn(endpoint):
        return
    raise TemplateError(
        f"{', '.join(logging_stages)}: CloudWatch Logs role ARN must be set in account settings"
        f" to enable logging: a WebSocket or REST stage that logs needs the account's API Gateway"
        f" CloudWatch role in {endpoint.region} (apigateway update-account, cloudwatchRoleArn;"
        f" {SET_UP_LOGGING_DOC}), or no logging on the stage"
    )


def cloudwatch_role_arn(endpoint: AwsEndpoint) -> str | None:
    """The account's API Gateway CloudWatch role in the endpoint's region, if set."""
    role: str | None = endpoint.client("apigateway").get_account().get("cloudwatchRoleArn")
    return role or None


def set_cloudwatch_role_arn(endpoint: AwsEndpoint, role_arn: str) -> None:
    """Set the account's API Gateway CloudWatch role in the endpoint's region (update-account)."""
    endpoint.client("apigateway").update_account(
        patchOperations=[{"op": "replace", "path": "/cloudwatchRoleArn", "value": role_arn}]
    )


def _deployed(definition: Mapping[str, Any], resolver: Resolver) -> bool:
    return "Condition" not in definition or resolver.condition(definition["Condition"])


def _logs(translated: Mapping[str, Any], definition: Mapping[str, Any], resolver: Resolver) -> bool:
    properties = _without_false_branches(definition.get("Properties", {}), resolver)
    if definition["Type"] == _WEBSOCKET_STAGE:
        if _protocol(translated, properties.get("ApiId")) == "HTTP":
            return False
        route_settings = [properties.get("DefaultRouteSettings", {})]
        route_settings += list(properties.get("RouteSettings", {}).values())
        return "AccessLogSettings" in properties or any(map(_execution_logs, route_settings))
    if definition["Type"] == _REST_STAGE:
        method_settings = properties.get("MethodSettings", [])
        return "AccessLogSetting" in properties or any(map(_execution_logs, method_settings))
    return False


def _execution_logs(settings: Mapping[str, Any]) -> bool:
    data_trace = str(settings.get("DataTraceEnabled", "false")).lower() == "true"
    return settings.get("LoggingLevel") in _LOGGING_LEVELS or data_trace


def _protocol(translated: Mapping[str, Any], api_id: Any) -> str | None:
    """The ProtocolType of the template's API a stage belongs to (None: not in the template)."""
    if not (isinstance(api_id, dict) and isinstance(api_id.get("Ref"), str)):
        return None
    properties = translated["Resources"].get(api_id["Ref"], {}).get("Properties", {})
    protocol = properties.get("ProtocolType")
    if isinstance(protocol, str):
        return protocol
    # An API imported from an OpenAPI definition (SAM's HttpApi) is an HTTP API: only those
    # take one, and they need no ProtocolType then (AWS::ApiGatewayV2::Api, ProtocolType).
    return "HTTP" if {"Body", "BodyS3Location"} & set(properties) else None


def _without_false_branches(value: Any, resolver: Resolver) -> Any:
    """The value as the deployment sees it: each Fn::If takes its branch, AWS::NoValue drops."""
    if isinstance(value, list):
        items = [_without_false_branches(item, resolver) for item in value]
        return [item for item in items if not _no_value(item)]
    if not isinstance(value, dict):
        return value
    if set(value) == {"Fn::If"}:
        condition, when_true, when_false = value["Fn::If"]
        chosen = when_true if resolver.condition(condition) else when_false
        return _without_false_branches(chosen, resolver)
    pruned = {key: _without_false_branches(item, resolver) for key, item in value.items()}
    return {key: item for key, item in pruned.items() if not _no_value(item)}


def _no_value(value: Any) -> bool:
    return isinstance(value, dict) and value == {"Ref": PSEUDO_NO_VALUE}
