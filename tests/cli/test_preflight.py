"""`pingback-guard preflight` on stubbed AWS answers: what a first deploy would trip on, and the
exact change it asks for."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from pingback_guard_cli import preflight
from pingback_guard_cli.errors import ExitCode
from pingback_guard_cli.main import run
from pingback_guard_cli.stack import Aws

ROOT = Path(__file__).resolve().parents[2]
REGION = "eu-west-1"
LAYER = "/aws/service/powertools/python/arm64/python3.12/3.37.0"
LAYER_ARN = (
    "arn:aws:lambda:eu-west-1:017000801446:layer:AWSLambdaPowertoolsPythonV3-python312-arm64:19"
)
API_KEY = "/pingback-guard/provider-api-key"
ACCOUNT = "123456789012"
LOGGING_ROLE = f"arn:aws:iam::{ACCOUNT}:role/apigateway-cloudwatch"
STACK = "pingback-guard-dev"
ADMIN = f"arn:aws:iam::{ACCOUNT}:role/pingback-guard-admin"
WORKER = f"arn:aws:iam::{ACCOUNT}:role/captcha-worker"
PUSH_API = "a1b2c3d4e5"
CONNECT = f"arn:aws:execute-api:{REGION}:{ACCOUNT}:{PUSH_API}/v1/$connect"
SERVICES = ("lambda", "ssm", "apigateway", "cloudformation", "dynamodb", "iam", "sts")
NOW = datetime(2026, 12, 3, tzinfo=UTC)


class StubbedAws(Aws):
    """Clients made once per service, each with a Stubber the test fills."""

    def client(self, service: str) -> Any:
        return CLIENTS[service]


CLIENTS: dict[str, Any] = {}
STUBS: dict[str, Stubber] = {}


@pytest.fixture
def aws() -> Iterator[StubbedAws]:
    session = boto3.Session(aws_access_key_id="a", aws_secret_access_key="b", region_name=REGION)
    for service in SERVICES:
        CLIENTS[service] = session.client(service)  # type: ignore[call-overload]
        STUBS[service] = Stubber(CLIENTS[service])
        STUBS[service].activate()
    yield StubbedAws(session)
    for stub in STUBS.values():
        stub.assert_no_pending_responses()
        stub.deactivate()


def account(aws: StubbedAws, limit: int, unreserved: int | None = None) -> None:
    STUBS["lambda"].add_response(
        "get_account_settings",
        {
            "AccountLimit": {
                "ConcurrentExecutions": limit,
                "UnreservedConcurrentExecutions": limit if unreserved is None else unreserved,
            }
        },
    )


def layer(aws: StubbedAws, exists: bool = True) -> None:
    ssm = STUBS["ssm"]
    if exists:
        parameter = {"Name": LAYER, "Type": "String", "Value": LAYER_ARN}
        ssm.add_response("get_parameter", {"Parameter": parameter}, {"Name": LAYER})
    else:
        ssm.add_client_error("get_parameter", "ParameterNotFound", expected_params={"Name": LAYER})


def api_key(aws: StubbedAws, kind: str | None = "SecureString") -> None:
    ssm = STUBS["ssm"]
    if kind is None:
        ssm.add_client_error(
            "get_parameter", "ParameterNotFound", expected_params={"Name": API_KEY}
        )
    else:
        parameter = {"Name": API_KEY, "Type": kind, "Value": "encrypted"}
        ssm.add_response("get_parameter", {"Parameter": parameter}, {"Name": API_KEY})


def denied(service: str, operation: str) -> None:
    STUBS[service].add_client_error(operation, "AccessDenied", "not authorized", 403)


def checks(
    aws: StubbedAws, *overrides: str, plan: preflight.Plan | None = None
) -> dict[str, preflight.Check]:
    """The checks with these overrides; the push stage's logging is off unless they say."""
    quiet = (f"{preflight.PUSH_ACCESS_LOGS_PARAMETER}=false", *overrides)
    values = preflight.deploy_parameters(ROOT / "template.yaml", None, "default", quiet)
    return {check.name: check for check in preflight.run_checks(aws, values, REGION, plan)}


def test_a_ready_account_passes_every_check(aws: StubbedAws) -> None:
    account(aws, 1000)
    layer(aws)
    api_key(aws)
    found = checks(aws)
    assert all(check.ok for check in found.values()), found
    assert LAYER_ARN in found["powertools-layer"].found


def test_a_10_concurrency_account_deploys_the_defaults_and_is_told_it_can_reserve_nothing(
    aws: StubbedAws,
) -> None:
    account(aws, 10)
    layer(aws)
    api_key(aws)
    concurrency = checks(aws)["concurrency"]
    assert concurrency.ok
    assert "account limit 10" in concurrency.found and "reserves 0" in concurrency.found
    assert "can reserve nothing" in concurrency.found


def test_a_10_concurrency_account_refuses_a_reservation_and_says_what_to_change(
    aws: StubbedAws,
) -> None:
    account(aws, 10)
    layer(aws)
    api_key(aws)
    concurrency = checks(aws, "CallbackReservedConcurrency=20", "ReplayReservedConcurrency=5")[
        "concurrency"
    ]
    assert not concurrency.ok
    assert "reserves 25" in concurrency.found
    assert "CallbackReservedConcurrency=, ReplayReservedConcurrency=" in concurrency.fix
    assert "can reserve nothing" in concurrency.fix and "at least 125" in concurrency.fix


def test_a_reservation_the_account_allows_passes(aws: StubbedAws) -> None:
    account(aws, 1000, unreserved=900)
    layer(aws)
    api_key(aws)
    assert checks(aws, "CallbackReservedConcurrency=20")["concurrency"].ok


def test_a_region_without_the_layer_parameter_is_told_how_to_pin_the_layer(
    aws: StubbedAws,
) -> None:
    account(aws, 1000)
    layer(aws, exists=False)
    api_key(aws)
    found = checks(aws)["powertools-layer"]
    assert not found.ok and f"no SSM parameter {LAYER} in {REGION}" == found.found
    assert "PowertoolsLayerArn=" in found.fix and "docs/operations.md" in found.fix


def test_a_missing_provider_api_key_is_told_the_command_that_creates_it(aws: StubbedAws) -> None:
    account(aws, 1000)
    layer(aws)
    api_key(aws, kind=None)
    found = checks(aws)["provider-api-key"]
    assert not found.ok
    assert found.fix == (
        f"aws ssm put-parameter --region {REGION} --type SecureString --name {API_KEY}"
        ' --value "$CAPTCHAAI_API_KEY"'
    )


def test_an_api_key_stored_in_clear_is_refused(aws: StubbedAws) -> None:
    account(aws, 1000)
    layer(aws)
    api_key(aws, kind="String")
    found = checks(aws)["provider-api-key"]
    assert not found.ok and "not a SecureString" in found.found


def test_samconfig_prod_is_read_and_its_placeholder_address_must_change() -> None:
    values = preflight.deploy_parameters(
        ROOT / "template.yaml", ROOT / "samconfig.toml", "prod", ()
    )
    assert values["Stage"] == "prod"
    assert values[preflight.API_KEY_PARAMETER] == "/pingback-guard/prod/provider-api-key"
    email = preflight.alarm_email_check(values)
    assert not email.ok and "AlarmEmail" in email.fix
    overridden = preflight.deploy_parameters(
        ROOT / "template.yaml", ROOT / "samconfig.toml", "prod", ["AlarmEmail=oncall@acme.test"]
    )
    assert preflight.alarm_email_check(overridden).ok


def test_the_command_exits_8_with_json_when_something_must_change(
    aws: StubbedAws, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    account(aws, 10)
    layer(aws, exists=False)
    api_key(aws, kind=None)
    no_stack(aws)
    tables(aws)
    monkeypatch.setattr("pingback_guard_cli.main.Aws", lambda session, endpoint: aws)
    code = run(
        ["preflight", "--template", str(ROOT / "template.yaml"), "--config-file", "none", "--json"],
        session=aws.session,
    )
    report = json.loads(capsys.readouterr().out)
    assert code == ExitCode.NEEDS_ATTENTION and report["ready"] is False
    assert (report["region"], report["stack"]) == (REGION, STACK)
    assert {c["name"]: (c["ok"], c["checked"]) for c in report["checks"]} == {
        "concurrency": (True, True),
        "powertools-layer": (False, True),
        "provider-api-key": (False, True),
        "alarm-email": (True, True),
        "apigateway-logging-role": (True, True),
        "failed-first-deploy": (True, True),
        "admin-principal": (False, True),
        "worker-connect-grant": (True, False),
    }


def test_preflight_deploys_the_stack_samconfig_names_unless_told_another() -> None:
    assert preflight.samconfig_stack_name(ROOT / "samconfig.toml", "prod") == "pingback-guard-prod"
    assert preflight.samconfig_stack_name(ROOT / "samconfig.toml", "nowhere") is None


# ------------------------------------------------------------ what the account must already have


def logging_role(aws: StubbedAws, role: str | None) -> None:
    STUBS["apigateway"].add_response("get_account", {"cloudwatchRoleArn": role} if role else {})


def no_stack(aws: StubbedAws, name: str = STACK) -> None:
    STUBS["cloudformation"].add_client_error(
        "describe_stacks", "ValidationError", f"Stack with id {name} does not exist", 400
    )


def stack(aws: StubbedAws, status: str) -> None:
    found = {"StackName": STACK, "CreationTime": NOW, "StackStatus": status}
    STUBS["cloudformation"].add_response("describe_stacks", {"Stacks": [found]})


def tables(aws: StubbedAws, *names: str) -> None:
    STUBS["dynamodb"].add_response("list_tables", {"TableNames": list(names)})


def test_a_logging_push_stage_passes_when_the_account_has_the_cloudwatch_role(
    aws: StubbedAws,
) -> None:
    logging_role(aws, LOGGING_ROLE)
    found = preflight.logging_role_check(aws, {"PushApiAccessLogs": "true"}, REGION)
    assert found.ok and found.checked and LOGGING_ROLE in found.found


def test_a_logging_push_stage_without_the_role_is_told_how_to_set_it(aws: StubbedAws) -> None:
    logging_role(aws, None)
    found = preflight.logging_role_check(aws, {"PushApiAccessLogs": "true"}, REGION)
    assert not found.ok
    assert "CloudWatch Logs role ARN must be set in account settings" in found.found
    assert "AmazonAPIGatewayPushToCloudWatchLogs" in found.fix
    assert f"update-account --region {REGION}" in found.fix
    assert "PushApiAccessLogs=false" in found.fix


def test_the_templates_defaults_need_no_role_and_ask_nothing(aws: StubbedAws) -> None:
    values = preflight.deploy_parameters(
        ROOT / "template.yaml", ROOT / "samconfig.toml", "default", ()
    )
    found = preflight.logging_role_check(aws, values, REGION)
    assert found.ok and found.checked and "PushApiAccessLogs=false" in found.found


def test_a_quiet_push_stage_needs_no_role_and_asks_nothing(aws: StubbedAws) -> None:
    found = preflight.logging_role_check(aws, {"PushApiAccessLogs": "false"}, REGION)
    assert found.ok and found.checked and "HTTP API stages never" in found.found


def test_a_caller_that_may_not_read_the_account_settings_is_told_it_was_not_checked(
    aws: StubbedAws,
) -> None:
    denied("apigateway", "get_account")
    found = preflight.logging_role_check(aws, {"PushApiAccessLogs": "true"}, REGION)
    assert found.ok and not found.checked and "could not check" in found.found


def test_no_stack_and_no_table_left_is_a_clean_account(aws: StubbedAws) -> None:
    no_stack(aws)
    tables(aws, "someone-elses-table", "pingback-guard-prod-TasksTable-1A2B3C")
    found = preflight.leftovers_check(aws, STACK, REGION)
    assert found.ok and found.checked


def test_a_table_retained_by_a_failed_first_deploy_is_found_and_named(aws: StubbedAws) -> None:
    no_stack(aws)
    tables(aws, f"{STACK}-TasksTable-9XKQ2JH1ZT0", f"{STACK}-WorkerKeysTable-1")
    found = preflight.leftovers_check(aws, STACK, REGION)
    assert not found.ok and f"{STACK}-TasksTable-9XKQ2JH1ZT0" in found.found
    assert found.fix.startswith(
        f"if its tasks are not wanted: aws dynamodb delete-table --region {REGION}"
        f" --table-name {STACK}-TasksTable-9XKQ2JH1ZT0"
    )


def test_a_stack_left_in_rollback_complete_must_be_deleted_first(aws: StubbedAws) -> None:
    stack(aws, "ROLLBACK_COMPLETE")
    found = preflight.leftovers_check(aws, STACK, REGION)
    assert not found.ok and "ROLLBACK_COMPLETE" in found.found
    assert f"delete-stack --region {REGION} --stack-name {STACK}" in found.fix


def test_a_deployed_stack_has_no_leftovers_to_look_for(aws: StubbedAws) -> None:
    stack(aws, "UPDATE_COMPLETE")
    assert preflight.leftovers_check(aws, STACK, REGION).ok


def test_a_caller_that_may_not_list_stacks_is_told_leftovers_were_not_checked(
    aws: StubbedAws,
) -> None:
    denied("cloudformation", "describe_stacks")
    found = preflight.leftovers_check(aws, STACK, REGION)
    assert found.ok and not found.checked


@pytest.mark.parametrize(
    "arn", [ADMIN, f"arn:aws:sts::{ACCOUNT}:assumed-role/pingback-guard-admin/me"]
)
def test_an_existing_admin_role_passes(aws: StubbedAws, arn: str) -> None:
    role = {
        "Path": "/",
        "RoleName": "pingback-guard-admin",
        "RoleId": "AROAEXAMPLEEXAMPLE1",
        "Arn": ADMIN,
        "CreateDate": NOW,
    }
    STUBS["iam"].add_response("get_role", {"Role": role}, {"RoleName": "pingback-guard-admin"})
    found = preflight.admin_principal_check(aws, {"AdminPrincipalArn": arn}, smoke=True)
    assert found.ok and found.checked


@pytest.mark.parametrize(
    ("arn", "says"),
    [
        ("", "is empty"),
        (f"arn:aws:iam::{ACCOUNT}:group/admins", "not an IAM user or role"),
    ],
)
def test_a_smoke_check_needs_an_admin_principal_arn(aws: StubbedAws, arn: str, says: str) -> None:
    found = preflight.admin_principal_check(aws, {"AdminPrincipalArn": arn}, smoke=True)
    assert not found.ok and says in found.found and "AdminPrincipalArn" in found.fix


def test_an_admin_user_that_does_not_exist_fails(aws: StubbedAws) -> None:
    STUBS["iam"].add_client_error("get_user", "NoSuchEntity", "no such user", 404)
    arn = f"arn:aws:iam::{ACCOUNT}:user/ops/alice"
    found = preflight.admin_principal_check(aws, {"AdminPrincipalArn": arn}, smoke=True)
    assert not found.ok and "no such user" in found.found


def test_a_caller_that_may_not_read_iam_is_told_the_admin_was_not_checked(
    aws: StubbedAws,
) -> None:
    denied("iam", "get_role")
    found = preflight.admin_principal_check(aws, {"AdminPrincipalArn": ADMIN}, smoke=True)
    assert found.ok and not found.checked and "iam:GetRole" in found.found


def test_without_a_smoke_check_no_admin_is_needed(aws: StubbedAws) -> None:
    assert preflight.admin_principal_check(aws, {"AdminPrincipalArn": ""}, smoke=False).ok


def push_api(aws: StubbedAws) -> None:
    detail = {
        "LogicalResourceId": "PushApi",
        "PhysicalResourceId": PUSH_API,
        "ResourceType": "AWS::ApiGatewayV2::Api",
        "LastUpdatedTimestamp": NOW,
        "ResourceStatus": "CREATE_COMPLETE",
    }
    STUBS["cloudformation"].add_response(
        "describe_stack_resource",
        {"StackResourceDetail": detail},
        {"StackName": STACK, "LogicalResourceId": "PushApi"},
    )
    identity = {"Account": ACCOUNT, "Arn": f"arn:aws:iam::{ACCOUNT}:user/ops", "UserId": "AIDA1"}
    STUBS["sts"].add_response("get_caller_identity", identity)


def simulated(aws: StubbedAws, decision: str) -> None:
    result = {"EvalActionName": "execute-api:Invoke", "EvalResourceName": CONNECT}
    STUBS["iam"].add_response(
        "simulate_principal_policy",
        {"EvaluationResults": [{**result, "EvalDecision": decision}]},
        {
            "PolicySourceArn": WORKER,
            "ActionNames": ["execute-api:Invoke"],
            "ResourceArns": [CONNECT],
        },
    )


def connect_check(aws: StubbedAws) -> preflight.Check:
    return preflight.connect_grant_check(aws, preflight.Plan(STACK, True, (WORKER,)), REGION)


def test_a_worker_granted_the_connect_route_passes(aws: StubbedAws) -> None:
    push_api(aws)
    simulated(aws, "allowed")
    found = connect_check(aws)
    assert found.ok and found.checked and CONNECT in found.found


def test_a_worker_without_the_connect_grant_is_told_the_statement_to_add(aws: StubbedAws) -> None:
    push_api(aws)
    simulated(aws, "implicitDeny")
    found = connect_check(aws)
    assert not found.ok and WORKER in found.found and "fall back to paced GETs" in found.found
    assert f'"Action": "execute-api:Invoke", "Resource": "{CONNECT}"' in found.fix


def test_a_worker_principal_that_is_not_a_user_or_role_fails_by_name(aws: StubbedAws) -> None:
    push_api(aws)
    STUBS["iam"].add_client_error("simulate_principal_policy", "NoSuchEntity", "no such role", 404)
    found = connect_check(aws)
    assert not found.ok and f"{WORKER} (NoSuchEntity" in found.found


def test_a_caller_that_may_not_simulate_is_told_the_grant_was_not_checked(
    aws: StubbedAws,
) -> None:
    push_api(aws)
    denied("iam", "simulate_principal_policy")
    found = connect_check(aws)
    assert found.ok and not found.checked and "iam:SimulatePrincipalPolicy" in found.found


def test_before_the_first_deploy_the_connect_grant_waits_for_the_push_api(aws: StubbedAws) -> None:
    STUBS["cloudformation"].add_client_error(
        "describe_stack_resource", "ValidationError", f"Stack '{STACK}' does not exist", 400
    )
    found = connect_check(aws)
    assert found.ok and not found.checked and "after the first deploy" in found.found


def test_a_caller_that_may_not_read_lambda_settings_is_told_concurrency_was_not_checked(
    aws: StubbedAws,
) -> None:
    denied("lambda", "get_account_settings")
    found = preflight.concurrency_check(aws, {"CallbackReservedConcurrency": "20"})
    assert found.ok and not found.checked and "lambda:GetAccountSettings" in found.found
