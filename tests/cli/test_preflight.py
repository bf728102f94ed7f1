"""`pingback-guard preflight` on stubbed AWS answers: what a first deploy would trip on, and the
exact change it asks for."""

from __future__ import annotations

import json
from collections.abc import Iterator
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


class StubbedAws(Aws):
    """Clients made once per service, each with a Stubber the test fills."""

    def client(self, service: str) -> Any:
        return CLIENTS[service]


CLIENTS: dict[str, Any] = {}
STUBS: dict[str, Stubber] = {}


@pytest.fixture
def aws() -> Iterator[StubbedAws]:
    session = boto3.Session(aws_access_key_id="a", aws_secret_access_key="b", region_name=REGION)
    for service in ("lambda", "ssm"):
        CLIENTS[service] = session.client(service)
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


def checks(aws: StubbedAws, *overrides: str) -> dict[str, preflight.Check]:
    values = preflight.deploy_parameters(ROOT / "template.yaml", None, "default", overrides)
    return {check.name: check for check in preflight.run_checks(aws, values, REGION)}


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
    monkeypatch.setattr("pingback_guard_cli.main.Aws", lambda session, endpoint: aws)
    code = run(
        ["preflight", "--template", str(ROOT / "template.yaml"), "--config-file", "none", "--json"],
        session=aws.session,
    )
    report = json.loads(capsys.readouterr().out)
    assert code == ExitCode.NEEDS_ATTENTION and report["ready"] is False
    assert report["region"] == REGION
    assert {c["name"]: c["ok"] for c in report["checks"]} == {
        "concurrency": True,
        "powertools-layer": False,
        "provider-api-key": False,
        "alarm-email": True,
    }
