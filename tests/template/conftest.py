"""Fixtures of the template tests: template.yaml as the SAM transform receives it (its
Fn::ForEach loops expanded), and as SAM translates it."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

import pytest
from samtranslator.translator.transform import (  # type: ignore[import-untyped, unused-ignore]
    transform,
)

from infra.project_template import TEMPLATE_PATH
from tests.support import template as project_template

ROOT = TEMPLATE_PATH.parent

# architecture.md: logical id -> handler, and the variables each function is given.
FUNCTIONS = {
    "SubmitFunction": "pingback_guard.handlers.submit.handler",
    "GetTaskFunction": "pingback_guard.handlers.get_task.handler",
    "CallbackFunction": "pingback_guard.handlers.callback.handler",
    "ReplayFunction": "pingback_guard.handlers.replay.handler",
    "PollerFunction": "pingback_guard.handlers.poller.handler",
    "RegisterFunction": "pingback_guard.handlers.register.handler",
    "ReportFunction": "pingback_guard.handlers.report.handler",
    "PushFunction": "pingback_guard.handlers.push.handler",
    "CompatSubmitFunction": "pingback_guard.handlers.in_php.handler",
    "CompatResultFunction": "pingback_guard.handlers.res_php.handler",
    "PingbackForwardFunction": "pingback_guard.handlers.forward.handler",
}
# Every stack's own metrics (custom and access-log): two stacks in one account and region never
# read each other's datapoints (issue 39, item 7).
STACK_NAMESPACE = {"Fn::Sub": "PingbackGuard/${AWS::StackName}"}
# Not the product: examples/ deployed only with DeployExampleConsumer=true (docs/events.md).
EXAMPLE_FUNCTIONS = {"ResultConsumerFunction": "result_consumer.handler.handler"}


@pytest.fixture(scope="session")
def template() -> dict[str, Any]:
    return project_template()


@pytest.fixture(scope="session")
def resources(template: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = template["Resources"]
    return found


class _NoManagedPolicies:
    """The translator asks for AWS managed policy ARNs only if a function names one by name."""

    def load(self) -> dict[str, str]:
        return {}


@pytest.fixture(scope="session")
def translated(template: dict[str, Any]) -> dict[str, Any]:
    """The plain CloudFormation SAM produces (what CloudFormation really creates)."""
    document = copy.deepcopy(template)
    # `sam deploy` uploads functions/ and puts its S3 location here; the translator insists.
    document["Globals"]["Function"]["CodeUri"] = "s3://example-bucket/functions.zip"
    for name in EXAMPLE_FUNCTIONS:
        document["Resources"][name]["Properties"]["CodeUri"] = "s3://example-bucket/examples.zip"
    output: dict[str, Any] = transform(document, {"AWS::Region": "us-east-1"}, _NoManagedPolicies())
    return output


def of_type(resources: dict[str, Any], kind: str) -> dict[str, Any]:
    return {name: body for name, body in resources.items() if body["Type"] == kind}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def sub_text(value: dict[str, Any]) -> str:
    """The text of a Fn::Sub with its literal variables filled in (the others stay ${...})."""
    argument = value["Fn::Sub"]
    if isinstance(argument, str):
        return argument
    text, variables = argument
    for name, literal in variables.items():
        if isinstance(literal, str | int):
            text = text.replace(f"${{{name}}}", str(literal))
    return str(text)


def walk(value: Any) -> Iterator[Any]:
    """Every node of a JSON-like value, depth first."""
    yield value
    if isinstance(value, dict):
        for item in value.values():
            yield from walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from walk(item)


def referenced_names(value: Any) -> set[str]:
    """Logical ids and parameters a value refers to (Ref, GetAtt, ${Name} in Sub)."""
    names: set[str] = set()
    for node in walk(value):
        if not isinstance(node, dict) or len(node) != 1:
            continue
        ((key, argument),) = node.items()
        if key == "Ref" and isinstance(argument, str):
            names.add(argument)
        elif key == "Fn::GetAtt":
            target = argument[0] if isinstance(argument, list) else str(argument).split(".")[0]
            names.add(target)
        elif key == "Fn::Sub":
            text = argument[0] if isinstance(argument, list) else argument
            names.update(match.split(".")[0] for match in re.findall(r"\$\{([^}!]+)\}", text))
    return names
