"""What a LocalStack is started with (LocalOptions) and what it answers once ready (ReadyInfo, the
`ready` line of `python -m infra.local`), with the outputs pointed at the local servers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from infra.local.runtime.aws import WORKER, AwsEndpoint, LocalPrincipal


@dataclass(frozen=True)
class LocalOptions:
    template: Path = Path("template.yaml")
    api_port: int = 0
    """0: any free port (the same one is kept when the gateway comes back up)."""
    api_tls_port: int = 0
    """The gateway's HTTPS listener (a test CA made at start), 0: any free port."""
    aws_port: int = 0
    control_port: int = 0
    provider_url: str | None = None
    """Sets PROVIDER_BASE_URL for every function that has it."""
    provider_api_key: str | None = None
    """Stored in the SSM parameter the template names; default: $CAPTCHAAI_API_KEY."""
    provider_account_keys: Mapping[str, str] = field(default_factory=dict)
    """More provider accounts (name -> API key), each stored as the SecureString
    ``<ProviderApiKeyParameterName>-<name>`` and named in ProviderExtraAccounts (unless the
    overrides name them): the simulator's ``extra_accounts``."""
    time_scale: float = 1.0
    """Schedules and SQS visibility timeouts run this many times faster."""
    parameter_overrides: Mapping[str, str] = field(default_factory=dict)
    workers_per_function: int = 2
    warm_start: bool = False
    """Start every function's workers with the stack (a function that cannot import is then
    reported at start), as provisioned concurrency does; default: a worker starts at its first
    invocation, as Lambda starts a sandbox on demand."""
    workers_by_function: Mapping[str, int] = field(default_factory=dict)
    """Worker processes of the functions named here (logical id), instead of the default."""
    run_dir: Path | None = None
    """Logs go to run_dir/logs; default: a new temporary directory (kept after the run)."""
    region: str = "us-east-1"
    stack_name: str = "pingback-guard-local"
    event_duplicate_rate: float = 0.0
    """Probability that a pipe puts a delivered batch of result events a second time."""
    apigateway_cloudwatch_role_arn: str | None = None
    """The account's API Gateway CloudWatch role; None: unset, as on a fresh account (a stage
    that logs, e.g. PushApiAccessLogs=true, is then refused as AWS refuses it)."""
    authorize_calls: bool = True
    """Every AWS call a function makes is authorized as on AWS (its role, the target's resource
    policy: infra/local/iam). False only for a test that says why."""


@dataclass(frozen=True)
class ReadyInfo:
    api_url: str
    aws_endpoint_url: str
    control_url: str
    tasks_table: str | None
    dlq_url: str | None
    parking_queue_url: str | None
    region: str
    stack_name: str
    websocket_url: str | None
    """The push WebSocket API (output WebSocketUrl), served on loopback."""
    run_dir: str
    log_dir: str
    outputs: dict[str, str]
    functions: dict[str, dict[str, Any]]
    resources: dict[str, dict[str, str]]
    tls_api_url: str = ""
    """The gateway over HTTPS; clients trust it with ``REQUESTS_CA_BUNDLE=<ca_bundle>``."""
    ca_bundle: str = ""

    def aws_client(self, service: str) -> Any:
        """A boto3 client of this stack's moto server (fake credentials, the stack's region)."""
        return AwsEndpoint(self.aws_endpoint_url, self.region).client(service)

    def signed_session(self, principal: LocalPrincipal = WORKER) -> requests.Session:
        """A requests session signing (SigV4) as `principal`, for the gateway's IAM routes."""
        # Imported here: function workers import this package and never have the client on path.
        from infra.local.apigateway.signing import local_signed_session

        return local_signed_session(self.region, principal)

    def to_json(self) -> dict[str, Any]:
        """The ready line: these fields, plus every resolved template output at the top level."""
        return {
            **self.outputs,
            "api_url": self.api_url,
            "tls_api_url": self.tls_api_url,
            "ca_bundle": self.ca_bundle,
            "aws_endpoint_url": self.aws_endpoint_url,
            "control_url": self.control_url,
            "tasks_table": self.tasks_table,
            "dlq_url": self.dlq_url,
            "parking_queue_url": self.parking_queue_url,
            "region": self.region,
            "stack_name": self.stack_name,
            "websocket_url": self.websocket_url,
            "run_dir": self.run_dir,
            "log_dir": self.log_dir,
            "outputs": self.outputs,
            "functions": self.functions,
            "resources": self.resources,
        }


def execute_api_url(api_id: str, region: str, stage: str) -> str:
    return f"https://{api_id}.execute-api.{region}.amazonaws.com/{stage}"


def localised(value: str, api_endpoints: list[str], api_url: str) -> str:
    """An output pointing at an HTTP API's execute-api URL points at the local gateway instead."""
    for api_endpoint in api_endpoints:
        value = value.replace(api_endpoint, api_url)
    return value
