"""`keys issue`: the owner stored as the stack counts principals, never the admin, and the server
a 2captcha client must be given (on the local stack, the HTTPS listener's host)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from click.testing import CliRunner

from pingback_guard.domain.principals import owner_of as functions_owner_of
from pingback_guard_cli import keys
from pingback_guard_cli.context import Context
from pingback_guard_cli.errors import CliFailure, ExitCode
from pingback_guard_cli.stack import Aws, Stack

TABLE = "stack-WorkerKeysTable-1ABC"
ROLE = "arn:aws:iam::123456789012:role/captcha-workers"
API_URL = "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com"
LOCAL_TLS_URL = "https://127.0.0.1:48443"
PRINCIPALS = [
    "arn:aws:sts::123456789012:assumed-role/captcha-workers/fleet-a-7",
    "arn:aws:iam::123456789012:role/fleets/eu/captcha-workers",
    "arn:aws-cn:sts::123456789012:assumed-role/captcha-workers/s",
    ROLE,
    "arn:aws:iam::123456789012:user/worker-1",
    "arn:aws:iam::123456789012:user/teams/worker-2",
    "arn:aws:sts::123456789012:federated-user/alice",
]


class StubbedAws(Aws):
    def __init__(self, client: Any) -> None:
        super().__init__(boto3.Session(region_name="eu-west-1"))
        object.__setattr__(self, "_dynamodb", client)

    def client(self, service: str) -> Any:
        assert service == "dynamodb"
        return self._dynamodb  # type: ignore[attr-defined]


def stack(admin: str = "") -> Stack:
    return Stack(
        "stack",
        {"ApiUrl": API_URL, "WorkerKeysTableName": TABLE},
        {"AdminPrincipalArn": admin},
    )


def dynamodb_expecting(
    owner: str | None, threads: str = "10", dialect: str = "captchaai"
) -> tuple[Any, Stubber]:
    client = boto3.Session(
        aws_access_key_id="a", aws_secret_access_key="b", region_name="eu-west-1"
    ).client("dynamodb")
    stubber = Stubber(client)
    if owner is not None:
        item = {
            "key_id": ANY,
            "digest": ANY,
            "owner": {"S": owner},
            "label": ANY,
            "threads": {"N": threads},
            "dialect": {"S": dialect},
        }
        stubber.add_response(
            "put_item",
            {},
            {
                "TableName": TABLE,
                "Item": {**item, "created_at": ANY},
                "ConditionExpression": "attribute_not_exists(key_id)",
            },
        )
    stubber.activate()
    return client, stubber


@pytest.mark.parametrize("principal", PRINCIPALS)
def test_the_cli_counts_a_principal_as_the_functions_do(principal: str) -> None:
    assert keys.owner_of(principal) == functions_owner_of(principal)


@pytest.mark.parametrize("given", PRINCIPALS[:2])
def test_a_key_is_stored_for_the_role_of_a_session_or_of_a_role_with_a_path(given: str) -> None:
    client, stubber = dynamodb_expecting(ROLE)
    issued = keys.issue(StubbedAws(client), stack(), given, "fleet a")
    stubber.assert_no_pending_responses()
    assert issued.record.owner == ROLE


@pytest.mark.parametrize(
    ("admin", "given"),
    [
        (
            "arn:aws:iam::123456789012:role/ops/pingback-admin",
            "arn:aws:iam::123456789012:role/pingback-admin",
        ),
        (
            "arn:aws:iam::123456789012:role/pingback-admin",
            "arn:aws:sts::123456789012:assumed-role/pingback-admin/alice",
        ),
        ("arn:aws:iam::123456789012:user/operator", "arn:aws:iam::123456789012:user/operator"),
    ],
)
def test_no_key_is_issued_for_the_admin_principal(admin: str, given: str) -> None:
    client, stubber = dynamodb_expecting(None)  # nothing is written
    with pytest.raises(CliFailure) as refused:
        keys.issue(StubbedAws(client), stack(admin), given, "")
    assert refused.value.code is ExitCode.USAGE
    assert "AdminPrincipalArn" in str(refused.value)
    stubber.assert_no_pending_responses()


def test_keys_issue_prints_the_server_of_the_api_url_it_is_given() -> None:
    # On the local stack, ApiUrl names an API Gateway host that does not exist on this machine;
    # `make up` exports the HTTPS listener's URL.
    client, _ = dynamodb_expecting(ROLE)
    context = Context(StubbedAws(client), "stack", stack())
    printed = CliRunner().invoke(
        keys.keys_group,
        ["issue", "--owner", ROLE],
        obj=context,
        env={"PINGBACK_GUARD_API_URL": LOCAL_TLS_URL},
    )
    assert printed.exit_code == 0, printed.output
    assert "server: 127.0.0.1:48443 " in printed.output


def test_keys_issue_stores_the_key_s_threads_and_dialect() -> None:
    client, stubber = dynamodb_expecting(ROLE, threads="25", dialect="2captcha")
    context = Context(StubbedAws(client), "stack", stack())
    printed = CliRunner().invoke(
        keys.keys_group,
        ["issue", "--owner", ROLE, "--threads", "25", "--dialect", "2captcha"],
        obj=context,
    )
    assert printed.exit_code == 0, printed.output
    assert "threads: 25   dialect: 2captcha" in printed.output
    stubber.assert_no_pending_responses()


@pytest.mark.parametrize("threads", ["0", "1001"])
def test_keys_issue_refuses_a_capacity_out_of_bounds(threads: str) -> None:
    client, _ = dynamodb_expecting(None)
    context = Context(StubbedAws(client), "stack", stack())
    printed = CliRunner().invoke(
        keys.keys_group, ["issue", "--owner", ROLE, "--threads", threads], obj=context
    )
    assert printed.exit_code != 0 and "--threads" in str(printed.exception)
