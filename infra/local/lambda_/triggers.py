"""The triggers the template declares: HTTP API routes, schedules and SQS event source mappings."""

import logging
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from infra.local.cloudformation.deploy import DeployedStack
from infra.local.lambda_.functions import FunctionSpec
from infra.local.runtime.aws import AwsEndpoint

logger = logging.getLogger(__name__)

_ANY_METHOD = "x-amazon-apigateway-any-method"
_HTTP_METHODS = frozenset({"get", "put", "post", "delete", "patch", "head", "options"})
_INTEGRATION_FUNCTION_ARN = re.compile(r"functions/(arn:[^/]+)/invocations")
_RATE = re.compile(r"^rate\(\s*(\d+)\s+(minute|minutes|hour|hours|day|days)\s*\)$")
_SECONDS_PER_UNIT = {"minute": 60, "hour": 3600, "day": 86400}
_SQS_MAX_MESSAGES_PER_RECEIVE = 10


@dataclass(frozen=True)
class HttpRoute:
    api_id: str
    method: str
    """Upper case, or ANY."""
    path: str
    function: str
    iam_auth: bool

    @property
    def route_key(self) -> str:
        return f"{self.method} {self.path}"


@dataclass(frozen=True)
class ScheduleSource:
    logical_id: str
    arn: str
    function: str
    interval_seconds: float
    input: str | None
    event_source: str
    """aws.scheduler (EventBridge Scheduler) or aws.events (an EventBridge rule)."""
    target_arn: str = ""
    role_arn: str | None = None
    """A Scheduler schedule's Target.RoleArn: the role it invokes with (a rule has none: it
    invokes as events.amazonaws.com, by the function's resource policy)."""


@dataclass(frozen=True)
class QueueSource:
    logical_id: str
    function: str
    queue_arn: str
    queue_url: str
    batch_size: int
    report_batch_item_failures: bool
    maximum_concurrency: int | None


class FunctionIndex:
    """Finds a function's logical id from the name or ARN a trigger uses."""

    def __init__(self, functions: Mapping[str, FunctionSpec]) -> None:
        self._by_name = {spec.function_name: spec.logical_id for spec in functions.values()}

    def find(self, name_or_arn: str) -> str | None:
        if name_or_arn.startswith("arn:"):
            name_or_arn = name_or_arn.split(":")[6]
        return self._by_name.get(name_or_arn)


def http_routes(stack: DeployedStack, functions: FunctionIndex) -> list[HttpRoute]:
    routes: list[HttpRoute] = []
    for logical_id, definition in stack.resources_of_type("AWS::ApiGatewayV2::Api"):
        if definition.get("Properties", {}).get("ProtocolType") == "WEBSOCKET":
            continue  # served by infra.local.apigateway.websocket_api
        body = definition.get("Properties", {}).get("Body")
        if body is None:
            logger.warning("%s has no inline OpenAPI Body: its routes are not served", logical_id)
            continue
        api_id = stack.resources.physical_id(logical_id)
        routes.extend(_routes_of_api(api_id, stack.resolver.resolve(body), functions))
    return routes


def _routes_of_api(
    api_id: str, body: Mapping[str, Any], functions: FunctionIndex
) -> Iterator[HttpRoute]:
    iam_schemes = {
        name
        for name, scheme in body.get("components", {}).get("securitySchemes", {}).items()
        if scheme.get("x-amazon-apigateway-authtype") == "awsSigv4"
    }
    for path, operations in body.get("paths", {}).items():
        for method, operation in operations.items():
            if method != _ANY_METHOD and method not in _HTTP_METHODS:
                continue
            integration = operation.get("x-amazon-apigateway-integration", {})
            function = _integration_function(integration, functions)
            if function is None:
                logger.warning("%s %s: no local function behind it, not served", method, path)
                continue
            if str(integration.get("payloadFormatVersion", "2.0")) != "2.0":
                logger.warning("%s %s: only payload format 2.0 is served locally", method, path)
                continue
            security = operation.get("security", body.get("security", []))
            yield HttpRoute(
                api_id=api_id,
                method="ANY" if method == _ANY_METHOD else method.upper(),
                path=path,
                function=function,
                iam_auth=any(name in iam_schemes for entry in security for name in entry),
            )


def _integration_function(integration: Mapping[str, Any], functions: FunctionIndex) -> str | None:
    uri = str(integration.get("uri", ""))
    match = _INTEGRATION_FUNCTION_ARN.search(uri)
    return functions.find(match.group(1) if match else uri)


# The resource types that fire a function on a schedule, the key of their targets, and the
# `source` of the events they send.
_SCHEDULE_TYPES = (
    ("AWS::Scheduler::Schedule", "Target", "aws.scheduler"),
    ("AWS::Events::Rule", "Targets", "aws.events"),
)


def schedules(stack: DeployedStack, functions: FunctionIndex) -> list[ScheduleSource]:
    found: list[ScheduleSource] = []
    for resource_type, targets_key, event_source in _SCHEDULE_TYPES:
        for logical_id, definition in stack.resources_of_type(resource_type):
            properties = stack.resolver.resolve(definition.get("Properties", {}))
            if (
                "ScheduleExpression" not in properties
                or properties.get("State", "ENABLED") != "ENABLED"
            ):
                continue
            targets = properties.get(targets_key, [])
            for target in targets if isinstance(targets, list) else [targets]:
                found.extend(
                    _schedule(stack, logical_id, properties, target, functions, event_source)
                )
    return found


def _schedule(
    stack: DeployedStack,
    logical_id: str,
    properties: Mapping[str, Any],
    target: Mapping[str, Any],
    functions: FunctionIndex,
    event_source: str,
) -> Iterator[ScheduleSource]:
    function = functions.find(str(target.get("Arn", "")))
    interval = rate_seconds(str(properties["ScheduleExpression"]))
    if function is None or interval is None:
        logger.warning(
            "%s: not fired locally (only rate() schedules of local functions)", logical_id
        )
        return
    yield ScheduleSource(
        logical_id=logical_id,
        arn=str(stack.resources.attribute(logical_id, "Arn")),
        function=function,
        interval_seconds=interval,
        input=target.get("Input"),
        event_source=event_source,
        target_arn=str(target["Arn"]),
        role_arn=str(target["RoleArn"]) if "RoleArn" in target else None,
    )


def rate_seconds(expression: str) -> float | None:
    """Seconds between firings of a rate() expression; None for cron() and at()."""
    match = _RATE.match(expression.strip())
    if match is None:
        return None
    return int(match.group(1)) * _SECONDS_PER_UNIT[match.group(2).rstrip("s")]


def queue_sources(
    stack: DeployedStack, functions: FunctionIndex, endpoint: AwsEndpoint
) -> list[QueueSource]:
    sqs = endpoint.client("sqs")
    found: list[QueueSource] = []
    for logical_id, definition in stack.resources_of_type("AWS::Lambda::EventSourceMapping"):
        properties = stack.resolver.resolve(definition.get("Properties", {}))
        source_arn = str(properties.get("EventSourceArn", ""))
        function = functions.find(str(properties["FunctionName"]))
        if not source_arn.startswith("arn:aws:sqs:") or function is None:
            logger.warning("%s: only SQS sources of local functions are polled", logical_id)
            continue
        if properties.get("Enabled", True) in (False, "false"):
            continue
        batch_size = int(properties.get("BatchSize", _SQS_MAX_MESSAGES_PER_RECEIVE))
        if batch_size > _SQS_MAX_MESSAGES_PER_RECEIVE:
            logger.warning("%s: batches are limited to 10 messages locally", logical_id)
        concurrency = properties.get("ScalingConfig", {}).get("MaximumConcurrency")
        found.append(
            QueueSource(
                logical_id=logical_id,
                function=function,
                queue_arn=source_arn,
                queue_url=sqs.get_queue_url(QueueName=source_arn.rsplit(":", 1)[-1])["QueueUrl"],
                batch_size=min(batch_size, _SQS_MAX_MESSAGES_PER_RECEIVE),
                report_batch_item_failures="ReportBatchItemFailures"
                in properties.get("FunctionResponseTypes", []),
                maximum_concurrency=int(concurrency) if concurrency is not None else None,
            )
        )
    return found
