"""`preflight`: what a first `sam deploy` into this account and region would trip on, read before
anything is created, and exactly what to change.

- concurrency: AWS keeps 100 of the account's concurrency unreserved, so the deploy's reserved
  concurrency (the *ReservedConcurrency parameters) must leave that much (lambda
  GetAccountSettings; https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html);
- the Powertools layer's public SSM parameter exists in the target region;
- the provider API key's SSM SecureString exists;
- the alarm e-mail is not samconfig.toml's example.com placeholder;
- a WebSocket stage that logs needs the account's API Gateway CloudWatch role in the region
  (apigateway GetAccount's cloudwatchRoleArn), or the deploy fails ("CloudWatch Logs role ARN
  must be set in account settings to enable logging"): only when PushApiAccessLogs is "true"
  (its default, "false", keeps the push stage from logging). HTTP API stages never need it. https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-logging.html;
- the leftovers of a failed first deploy: a stack in ROLLBACK_COMPLETE (it must be deleted before
  a new deploy) and, with no stack, a retained tasks table of the stack's name (CloudFormation
  names it <stack>-TasksTable-<suffix>; TasksTable has no TableName);
- AdminPrincipalArn, when a smoke check is planned: set, an IAM user or role ARN, and existing;
- each --worker-principal's execute-api:Invoke on the push API's $connect, by
  iam:SimulatePrincipalPolicy (https://docs.aws.amazon.com/IAM/latest/APIReference/API_SimulatePrincipalPolicy.html)
  on arn:aws:execute-api:REGION:ACCOUNT:API/STAGE/$connect (https://docs.aws.amazon.com/apigateway/latest/developerguide/apigateway-websocket-control-access-iam.html).

A check the caller may not make (AccessDenied) is reported as not checked: it does not fail.

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
PUSH_ACCESS_LOGS_PARAMETER = "PushApiAccessLogs"
ADMIN_PARAMETER = "AdminPrincipalArn"
# TasksTable has no TableName: CloudFormation names it <stack>-<logical id>-<suffix>.
TASKS_TABLE_LOGICAL_ID = "TasksTable"
PUSH_API_LOGICAL_ID = "PushApi"
PUSH_API_STAGE = "v1"
# https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html#identifiers-arns;
# a session of a role counts as the role, as the stack compares it (domain/principals.py).
IAM_PRINCIPAL_ARN = re.compile(
    r"arn:aws[a-z-]*:(?:iam::\d{12}:(?P<kind>user|role)/(?:[\w+=,.@-]+/)*(?P<name>[\w+=,.@-]+)"
    r"|sts::\d{12}:assumed-role/(?P<role>[\w+=,.@-]+)/[\w+=,.@-]+)"
)
_DENIED = frozenset({"AccessDenied", "AccessDeniedException", "UnauthorizedOperation"})
_NOT_A_PRINCIPAL = frozenset({"NoSuchEntity", "InvalidInput"})


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    found: str
    fix: str = ""
    """Exactly what to change; empty when nothing needs to."""
    checked: bool = True
    """False: the caller may not read what the check needs (it does not fail then)."""


def _not_checked(name: str, permission: str) -> Check:
    return Check(name, True, f"could not check: {permission} denied to this caller", "", False)


@dataclass(frozen=True)
class Plan:
    """What the deploy is about: the stack, and what follows it."""

    stack_name: str
    smoke: bool = True
    worker_principals: tuple[str, ...] = ()


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


def samconfig_stack_name(config_file: Path | None, config_env: str) -> str | None:
    """The stack name `sam deploy --config-env CONFIG_ENV` would use, if samconfig.toml names it."""
    if config_file is None or not config_file.exists():
        return None
    config = tomllib.loads(config_file.read_text(encoding="utf-8")).get(config_env, {})
    for command in ("deploy", "global"):
        name = config.get(command, {}).get("parameters", {}).get("stack_name")
        if name:
            return str(name)
    return None


def run_checks(
    aws: Aws, parameters: Mapping[str, str], region: str, plan: Plan | None = None
) -> list[Check]:
    checks = [
        concurrency_check(aws, parameters),
        layer_check(aws, parameters, region),
        api_key_check(aws, parameters, region),
        alarm_email_check(parameters),
        logging_role_check(aws, parameters, region),
    ]
    if plan is not None:
        checks += [
            leftovers_check(aws, plan.stack_name, region),
            admin_principal_check(aws, parameters, plan.smoke),
            connect_grant_check(aws, plan, region),
        ]
    return checks


def concurrency_check(aws: Aws, parameters: Mapping[str, str]) -> Check:
    try:
        limits = aws.client("lambda").get_account_settings()["AccountLimit"]
    except ClientError as error:
        if _code(error) not in _DENIED:
            raise
        return _not_checked("concurrency", "lambda:GetAccountSettings")
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
        if _code(error) in _DENIED:
            return _not_checked("powertools-layer", "ssm:GetParameter")
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
        if _code(error) in _DENIED:
            return _not_checked("provider-api-key", "ssm:GetParameter")
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


def logging_role_check(aws: Aws, parameters: Mapping[str, str], region: str) -> Check:
    name = "apigateway-logging-role"
    logs = parameters.get(PUSH_ACCESS_LOGS_PARAMETER)
    if logs != "true":
        return Check(
            name,
            True,
            f"{PUSH_ACCESS_LOGS_PARAMETER}={logs}: no stage needs the role (HTTP API stages never"
            " do)",
        )
    try:
        role = aws.client("apigateway").get_account().get("cloudwatchRoleArn")
    except ClientError as error:
        if _code(error) not in _DENIED:
            raise
        return _not_checked(name, "apigateway:GET on /account")
    why = f"{PUSH_ACCESS_LOGS_PARAMETER}=true"
    if role:
        return Check(
            name, True, f"{why}; the account's API Gateway CloudWatch role in {region}: {role}"
        )
    return Check(
        name,
        False,
        f"{why}, and no API Gateway CloudWatch role is set in {region}: the deploy would fail"
        ' ("CloudWatch Logs role ARN must be set in account settings to enable logging")',
        "create a role API Gateway may assume with the managed policy"
        " AmazonAPIGatewayPushToCloudWatchLogs, then `aws apigateway update-account --region"
        f" {region} --patch-operations op=replace,path=/cloudwatchRoleArn,value=<its ARN>`; or"
        f" deploy with {PUSH_ACCESS_LOGS_PARAMETER}=false (docs/operations.md)",
    )


def leftovers_check(aws: Aws, stack_name: str, region: str) -> Check:
    name = "failed-first-deploy"
    try:
        stacks = aws.client("cloudformation").describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as error:
        if _code(error) in _DENIED:
            return _not_checked(name, "cloudformation:DescribeStacks")
        if "does not exist" not in str(error.response.get("Error", {}).get("Message", "")):
            raise
        stacks = []
    if stacks and stacks[0].get("StackStatus") == "ROLLBACK_COMPLETE":
        return Check(
            name,
            False,
            f"stack {stack_name} is in ROLLBACK_COMPLETE (its first deploy failed): it cannot be"
            " updated",
            f"aws cloudformation delete-stack --region {region} --stack-name {stack_name}; then run"
            " preflight again (a retained tasks table may be left: it says which)",
        )
    if stacks:
        return Check(name, True, f"stack {stack_name} exists ({stacks[0].get('StackStatus')})")
    return _retained_tables_check(aws, stack_name, region)


def _retained_tables_check(aws: Aws, stack_name: str, region: str) -> Check:
    name = "failed-first-deploy"
    prefix = f"{stack_name}-{TASKS_TABLE_LOGICAL_ID}-"
    try:
        pages = aws.client("dynamodb").get_paginator("list_tables").paginate()
        tables = [table for page in pages for table in page.get("TableNames", [])]
    except ClientError as error:
        if _code(error) not in _DENIED:
            raise
        return _not_checked(name, "dynamodb:ListTables")
    left = sorted(table for table in tables if table.startswith(prefix))
    if not left:
        return Check(name, True, f"no stack {stack_name} and no table {prefix}* left over")
    return Check(
        name,
        False,
        f"no stack {stack_name}, but {', '.join(left)} is left from an earlier deploy (TasksTable"
        " is retained): a new deploy makes another table beside it",
        "if its tasks are not wanted: "
        + "; ".join(f"aws dynamodb delete-table --region {region} --table-name {t}" for t in left)
        + " (docs/operations.md)",
    )


def admin_principal_check(aws: Aws, parameters: Mapping[str, str], smoke: bool) -> Check:
    name = "admin-principal"
    arn = parameters.get(ADMIN_PARAMETER, "")
    if not smoke:
        return Check(name, True, "no smoke check planned (--no-smoke)")
    if not arn:
        return Check(
            name,
            False,
            f"{ADMIN_PARAMETER} is empty: `pingback-guard smoke` would be refused (403)",
            f"set {ADMIN_PARAMETER} to the IAM user or role that runs the smoke check"
            " (samconfig.toml parameter_overrides), or pass --no-smoke",
        )
    found = IAM_PRINCIPAL_ARN.fullmatch(arn)
    if found is None:
        return Check(
            name,
            False,
            f"{ADMIN_PARAMETER} {arn} is not an IAM user or role ARN",
            f"set {ADMIN_PARAMETER} to arn:aws:iam::<account>:user/<name> or"
            " arn:aws:iam::<account>:role/<name>",
        )
    iam = aws.client("iam")
    kind = found["kind"] or "role"
    try:
        if kind == "role":
            iam.get_role(RoleName=found["name"] or found["role"])
        else:
            iam.get_user(UserName=found["name"])
    except ClientError as error:
        if _code(error) in _DENIED:
            return _not_checked(name, f"iam:Get{kind.capitalize()}")
        if _code(error) != "NoSuchEntity":
            raise
        return Check(
            name,
            False,
            f"{ADMIN_PARAMETER} {arn}: no such {kind} in this account",
            f"create it, or set {ADMIN_PARAMETER} to an existing user or role",
        )
    return Check(name, True, f"{ADMIN_PARAMETER} {arn} exists")


def connect_grant_check(aws: Aws, plan: Plan, region: str) -> Check:
    name = "worker-connect-grant"
    if not plan.worker_principals:
        return Check(
            name,
            True,
            "could not check: no worker principal named (--worker-principal ARN)",
            "",
            False,
        )
    try:
        api_id = aws.client("cloudformation").describe_stack_resource(
            StackName=plan.stack_name, LogicalResourceId=PUSH_API_LOGICAL_ID
        )["StackResourceDetail"]["PhysicalResourceId"]
        account = aws.client("sts").get_caller_identity()["Account"]
    except ClientError as error:
        if _code(error) in _DENIED:
            return _not_checked(name, "cloudformation:DescribeStackResource")
        return Check(
            name,
            True,
            f"could not check: no {PUSH_API_LOGICAL_ID} in stack {plan.stack_name} yet (run"
            " preflight again after the first deploy)",
            "",
            False,
        )
    resource = f"arn:aws:execute-api:{region}:{account}:{api_id}/{PUSH_API_STAGE}/$connect"
    refused = []
    iam = aws.client("iam")
    for principal in plan.worker_principals:
        try:
            results = iam.simulate_principal_policy(
                PolicySourceArn=principal,
                ActionNames=["execute-api:Invoke"],
                ResourceArns=[resource],
            )["EvaluationResults"]
        except ClientError as error:
            if _code(error) in _NOT_A_PRINCIPAL:
                # Only a user, group or role can be simulated, and it must exist.
                refused.append(f"{principal} ({_code(error)}: not an existing IAM user or role)")
                continue
            if _code(error) not in _DENIED:
                raise
            return _not_checked(name, "iam:SimulatePrincipalPolicy")
        if any(result["EvalDecision"] != "allowed" for result in results):
            refused.append(principal)
    if not refused:
        return Check(name, True, f"execute-api:Invoke on {resource}: allowed to every worker")
    return Check(
        name,
        False,
        f"execute-api:Invoke on {resource} is not allowed to {', '.join(refused)}: API Gateway"
        " answers their $connect 403 and they fall back to paced GETs",
        'grant each: {"Effect": "Allow", "Action": "execute-api:Invoke", "Resource":'
        f' "{resource}"}} (docs/operations.md, IAM for workers)',
    )


def to_json(checks: list[Check]) -> dict[str, Any]:
    return {"ready": all(check.ok for check in checks), "checks": [asdict(c) for c in checks]}


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))
