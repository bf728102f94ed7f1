"""The result-event wiring the template declares: EventBridge Pipes from DynamoDB streams to an
event bus, and the event-pattern rules on a bus whose targets are local functions."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from infra.local.cloudformation.deploy import DeployedStack
from infra.local.events.event_patterns import parse_pattern
from infra.local.lambda_.triggers import FunctionIndex

logger = logging.getLogger(__name__)

DEFAULT_BUS = "default"
# Lambda's own retries of an asynchronous invocation (EventBridge invokes Lambda targets so).
LAMBDA_ASYNC_RETRIES = 2
_UNSUPPORTED_TARGET_KEYS = ("Input", "InputPath", "InputTransformer")


@dataclass(frozen=True)
class PipeSpec:
    logical_id: str
    name: str
    arn: str
    stream_arn: str
    starting_position: str
    batch_size: int
    maximum_retry_attempts: int
    """-1: until the record leaves the stream (never, locally)."""
    dead_letter_arn: str | None
    filters: tuple[dict[str, Any], ...]
    input_template: str | None
    target_arn: str
    bus_name: str
    source: str
    detail_type: str
    role_arn: str = ""
    """Its execution role (RoleArn): what it reads, puts and dead-letters with."""


@dataclass(frozen=True)
class RuleSpec:
    logical_id: str
    name: str
    arn: str
    bus_name: str
    pattern: dict[str, Any]
    functions: tuple[str, ...]
    """Logical ids of the local functions it targets."""
    queues: tuple[str, ...] = ()
    """ARNs of the SQS queues it targets (rules made at run time: event_bus.RunTimeRules)."""


def bus_name_of(name_or_arn: str) -> str:
    if name_or_arn.startswith("arn:"):
        return name_or_arn.rsplit("event-bus/", 1)[-1]
    return name_or_arn


def pipe_specs(stack: DeployedStack) -> list[PipeSpec]:
    found: list[PipeSpec] = []
    for logical_id, definition in stack.resources_of_type("AWS::Pipes::Pipe"):
        properties = stack.resolver.resolve(definition.get("Properties", {}))
        spec = _pipe_spec(stack, logical_id, properties)
        if spec is not None:
            found.append(spec)
    return found


def _pipe_spec(
    stack: DeployedStack, logical_id: str, properties: Mapping[str, Any]
) -> PipeSpec | None:
    source = str(properties.get("Source", ""))
    target = str(properties.get("Target", ""))
    if ":dynamodb:" not in source or "/stream/" not in source or ":event-bus/" not in target:
        logger.warning("%s: only DynamoDB stream -> event bus pipes run locally", logical_id)
        return None
    if properties.get("DesiredState", "RUNNING") != "RUNNING":
        return None
    if properties.get("Enrichment"):
        logger.warning("%s: enrichment is not emulated locally: not run", logical_id)
        return None
    source_parameters = properties.get("SourceParameters", {})
    stream = source_parameters.get("DynamoDBStreamParameters", {})
    bus_parameters = properties.get("TargetParameters", {}).get("EventBridgeEventBusParameters", {})
    for key in ("Source", "DetailType"):
        if str(bus_parameters.get(key, "")).startswith("$"):
            logger.warning("%s: a JSON path %s is not emulated locally: not run", logical_id, key)
            return None
    return PipeSpec(
        logical_id=logical_id,
        name=stack.resources.physical_id(logical_id),
        arn=str(stack.resources.attribute(logical_id, "Arn")),
        stream_arn=source,
        starting_position=str(stream.get("StartingPosition", "LATEST")),
        batch_size=int(stream.get("BatchSize", 100)),
        maximum_retry_attempts=int(stream.get("MaximumRetryAttempts", -1)),
        dead_letter_arn=stream.get("DeadLetterConfig", {}).get("Arn"),
        filters=tuple(
            parse_pattern(entry["Pattern"])
            for entry in source_parameters.get("FilterCriteria", {}).get("Filters", [])
        ),
        input_template=properties.get("TargetParameters", {}).get("InputTemplate"),
        target_arn=target,
        bus_name=bus_name_of(target),
        # What Pipes puts when the parameters leave them out.
        source=str(bus_parameters.get("Source", "Pipe " + stack.resources.physical_id(logical_id))),
        detail_type=str(bus_parameters.get("DetailType", "Event from aws:dynamodb")),
        role_arn=str(properties.get("RoleArn", "")),
    )


def rule_specs(stack: DeployedStack, functions: FunctionIndex) -> list[RuleSpec]:
    found: list[RuleSpec] = []
    for logical_id, definition in stack.resources_of_type("AWS::Events::Rule"):
        properties = stack.resolver.resolve(definition.get("Properties", {}))
        if "EventPattern" not in properties or properties.get("State", "ENABLED") != "ENABLED":
            continue
        pattern = properties["EventPattern"]
        targets = tuple(
            function
            for target in properties.get("Targets", [])
            if (function := _local_target(logical_id, target, functions)) is not None
        )
        found.append(
            RuleSpec(
                logical_id=logical_id,
                name=stack.resources.physical_id(logical_id),
                arn=str(stack.resources.attribute(logical_id, "Arn")),
                bus_name=bus_name_of(str(properties.get("EventBusName", DEFAULT_BUS))),
                pattern=parse_pattern(pattern if isinstance(pattern, str) else json.dumps(pattern)),
                functions=targets,
            )
        )
    return found


def _local_target(rule: str, target: Mapping[str, Any], functions: FunctionIndex) -> str | None:
    function = functions.find(str(target.get("Arn", "")))
    if function is None:
        logger.warning("%s: target %s is not a local function: not delivered", rule, target["Id"])
        return None
    if any(key in target for key in _UNSUPPORTED_TARGET_KEYS):
        logger.warning("%s: target input transformation is not emulated: not delivered", rule)
        return None
    return function
