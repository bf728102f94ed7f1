"""A deployed (or local) stack, found by name: its outputs and parameters name every resource."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from pingback_guard_cli.errors import CliFailure, ExitCode

_CONFIG = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=5)
DUE_INDEX = "DueIndex"
DEFAULT_DUE_SHARDS = 8
METRICS_SERVICE = "pingback-guard"


def metrics_namespace(stack_name: str) -> str:
    """Each stack counts under its own namespace (template.yaml: POWERTOOLS_METRICS_NAMESPACE)."""
    return f"PingbackGuard/{stack_name}"


@dataclass(frozen=True)
class Aws:
    """Makes clients with one session, region and (local stack) endpoint URL."""

    session: boto3.Session
    endpoint_url: str | None = None

    def client(self, service: str) -> Any:
        return self.session.client(  # type: ignore[call-overload]
            service, endpoint_url=self.endpoint_url, config=_CONFIG
        )


@dataclass(frozen=True)
class Stack:
    name: str
    outputs: dict[str, str]
    parameters: dict[str, str]

    def output(self, key: str) -> str:
        value = self.outputs.get(key)
        if not value:
            raise CliFailure(
                ExitCode.STACK_NOT_FOUND,
                f"stack {self.name} has no output {key}: is it this product?",
            )
        return value

    def api_url(self, given: str | None = None) -> str:
        """The HTTP API's base URL: ``given`` (--api-url), else the ApiUrl output. The local
        stack's ApiUrl names an API Gateway host that does not exist on this machine."""
        return given or self.output("ApiUrl")

    @property
    def due_shards(self) -> int:
        return int(self.parameters.get("DueShards") or DEFAULT_DUE_SHARDS)


def find_stack(aws: Aws, name: str) -> Stack:
    try:
        found = aws.client("cloudformation").describe_stacks(StackName=name)["Stacks"]
    except ClientError as error:
        message = str(error.response.get("Error", {}).get("Message", ""))
        if "does not exist" in message:
            raise CliFailure(
                ExitCode.STACK_NOT_FOUND,
                f"no stack named {name} in {aws.session.region_name}: check --stack-name/--region",
            ) from None
        raise
    stack = found[0]
    return Stack(
        name=name,
        outputs={o["OutputKey"]: o.get("OutputValue", "") for o in stack.get("Outputs", [])},
        parameters={
            p["ParameterKey"]: p.get("ParameterValue", "") for p in stack.get("Parameters", [])
        },
    )
