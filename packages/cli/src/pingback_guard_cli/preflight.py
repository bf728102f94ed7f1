"""`preflight`: what a first `sam deploy` into this account and region would trip on, read before
anything is created, and exactly what to change.

- concurrency: AWS keeps 100 of the account's concurrency unreserved, so the deploy's reserved
  concurrency (the *ReservedConcurrency parameters) must leave that much (lambda
  GetAccountSettings);
- the Powertools layer's public SSM parameter exists in the target region;
- the provider API key's SSM SecureString exists;
- the alarm e-mail is not samconfig.toml's example.com placeholder.

Parameters: template.yaml's defaults, overridden by samconfig.toml's parameter_overrides of the
chosen config env, overridden by --parameter KEY=VALUE.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]
from botocore.exceptions import ClientError

from pingback_guard_cli.stack import Aws

# Lambda's rule: reservations must leave this much of the account's limit unreserved.
MINIMUM_UNRESERVED = 100
RESERVED_SUFFIX = "ReservedConcurrency"
LAYER_PARAMETER = "PowertoolsLayerArn"
API_KEY_PARAMETER = "ProviderApiKeyParameterName"
PLACEHOLDER_EMAIL = re.compile(r".*@example\.(com|org|net)")


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    found: str
    fix: str = ""
    """Exactly what to change; empty when nothing needs to."""


def deploy_parameters(
    template: Path, config_file: Path | None, config_env: str, overrides: Iterable[str]
) -> dict[str, str]:
    """The parameter values `sam deploy --config-env CONFIG_ENV` would pass."""
    values = template_defaults(template)
    if config_file is not None and config_file.exists():
        values.update(samconfig_overrides(config_file, config_env))
    values.update(_pairs(overrides))
    return values


def template_defaults(template: Path) -> dict[str, str]:
    document = yaml.load(template.read_text(encoding="utf-8"), Loader=_AnyTagLoader)  # noqa: S506
    parameters: Mapping[str, Any] = document.get("Parameters", {})
    return {name: str(body.get("Default", "")) for name, body in parameters.items()}


def samconfig_overrides(config_file: Path, config_env: str) -> dict[str, str]:
    config = tomllib.loads(config_file.read_text(encoding="utf-8"))
    deploy = config.get(config_env, {}).get("deploy", {}).get("parameters", {})
    overrides = deploy.get("parameter_overrides", [])
    if isinstance(overrides, str):
        overrides = shlex.split(overrides)
    return _pairs(overrides)


def _pairs(items: Iterable[str]) -> dict[str, str]:
    pairs = {}
    for item in items:
        name, separator, value = item.partition("=")
        if not separator:
            raise ValueError(f"not KEY=VALUE: {item!r}")
        pairs[name.strip()] = value.strip()
    return pairs


class _AnyTagLoader(yaml.SafeLoader):  # type: ignore[misc]
    """CloudFormation's short tags (!Ref, !Sub...) read as plain values: only defaults matter."""


def _any_tag(loader: yaml.SafeLoader, _suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_mapping(node)


_AnyTagLoader.add_multi_constructor("!", _any_tag)


def run_checks(aws: Aws, parameters: Mapping[str, str], region: str) -> list[Check]:
    return [
        concurrency_check(aws, parameters),
        layer_check(aws, parameters, region),
        api_key_check(aws, parameters, region),
        alarm_email_check(parameters),
    ]


def concurrency_check(aws: Aws, parameters: Mapping[str, str]) -> Check:
    limits = aws.client("lambda").get_account_settings()["AccountLimit"]
    limit = int(limits["ConcurrentExecutions"])
    unreserved = int(limits.get("UnreservedConcurrentExecutions", limit))
    reserved = {
        name: int(value)
        for name, value in parameters.items()
        if name.endswith(RESERVED_SUFFIX) and value.strip()
    }
    wanted = sum(reserved.values())
    room = max(0, unreserved - MINIMUM_UNRESERVED)
    found = f"account limit {limit}, {unreserved} unreserved now; this deploy reserves {wanted}" + (
        f" ({', '.join(f'{n}={v}' for n, v in sorted(reserved.items()))})" if reserved else ""
    )
    if wanted <= room:
        low = (
            f"; the account can reserve nothing (limit {limit}): ask for more before production"
            " traffic (Service Quotas, Lambda 'Concurrent executions')"
            if room == 0
            else ""
        )
        return Check("concurrency", True, found + low)
    allowed = "nothing" if room == 0 else f"at most {room} in total"
    return Check(
        "concurrency",
        False,
        found,
        f"AWS keeps {MINIMUM_UNRESERVED} unreserved, so this account can reserve {allowed}: set "
        + ", ".join(f"{name}=" for name in sorted(reserved))
        + (" (empty: unreserved)" if room == 0 else " to values summing to no more")
        + ", or raise the account's limit (Service Quotas, Lambda 'Concurrent executions')"
        f" to at least {wanted + MINIMUM_UNRESERVED + (limit - unreserved)}",
    )


def layer_check(aws: Aws, parameters: Mapping[str, str], region: str) -> Check:
    name = parameters.get(LAYER_PARAMETER, "")
    try:
        arn = aws.client("ssm").get_parameter(Name=name)["Parameter"]["Value"]
    except ClientError as error:
        if _code(error) != "ParameterNotFound":
            raise
        return Check(
            "powertools-layer",
            False,
            f"no SSM parameter {name} in {region}",
            f"deploy to a region that publishes it, or create an SSM String parameter holding the"
            f" layer's ARN in {region} and pass {LAYER_PARAMETER}=<its name>"
            " (docs/operations.md, 'Powertools layer')",
        )
    return Check("powertools-layer", True, f"{name} -> {arn}")


def api_key_check(aws: Aws, parameters: Mapping[str, str], region: str) -> Check:
    name = parameters.get(API_KEY_PARAMETER, "")
    create = (
        f"aws ssm put-parameter --region {region} --type SecureString --name {name}"
        ' --value "$CAPTCHAAI_API_KEY"'
    )
    try:
        kind = aws.client("ssm").get_parameter(Name=name)["Parameter"]["Type"]
    except ClientError as error:
        if _code(error) != "ParameterNotFound":
            raise
        return Check("provider-api-key", False, f"no SSM parameter {name} in {region}", create)
    if kind != "SecureString":
        return Check(
            "provider-api-key",
            False,
            f"{name} is a {kind}, not a SecureString",
            f"delete it and create it as a SecureString: {create}",
        )
    return Check("provider-api-key", True, f"{name} (SecureString; its value not read)")


def alarm_email_check(parameters: Mapping[str, str]) -> Check:
    address = parameters.get("AlarmEmail", "")
    if PLACEHOLDER_EMAIL.fullmatch(address):
        return Check(
            "alarm-email",
            False,
            f"AlarmEmail is the placeholder {address}",
            "set AlarmEmail to your on-call address (samconfig.toml parameter_overrides), then"
            " confirm the e-mail AWS sends",
        )
    return Check("alarm-email", True, address or "no subscription (AlarmEmail empty)")


def to_json(checks: list[Check]) -> dict[str, Any]:
    return {"ready": all(check.ok for check in checks), "checks": [asdict(c) for c in checks]}


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))
