"""samconfig.toml, env.json, the sample events and the runbook agree with template.yaml."""

from __future__ import annotations

import base64
import json
import re
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest

from infra.sam import make_events
from tests.template.conftest import FUNCTIONS, ROOT, of_type, sub_text


def samconfig() -> dict[str, Any]:
    return tomllib.loads((ROOT / "samconfig.toml").read_text(encoding="utf-8"))


def overrides(entries: list[str]) -> dict[str, str]:
    return dict(entry.split("=", 1) for entry in entries)


# ------------------------------------------------------------------ samconfig.toml


@pytest.mark.parametrize("environment", ["default", "prod"])
def test_samconfig_deploy_settings(template: dict[str, Any], environment: str) -> None:
    config = samconfig()
    assert config["version"] == 0.1
    section = config[environment]
    assert section["global"]["parameters"]["stack_name"].startswith("pingback-guard-")
    deploy = section["deploy"]["parameters"]
    assert deploy["capabilities"] == "CAPABILITY_IAM"
    assert deploy["resolve_s3"] is True
    assert deploy["confirm_changeset"] is (environment == "prod")
    values = overrides(deploy["parameter_overrides"])
    assert set(values) <= set(template["Parameters"])
    assert values["Stage"] == ("prod" if environment == "prod" else "dev")
    assert "AwsEndpointUrl" not in values, "the local endpoint must never reach a deployment"


def test_samconfig_stacks_differ() -> None:
    config = samconfig()
    names = {config[env]["global"]["parameters"]["stack_name"] for env in ("default", "prod")}
    assert len(names) == 2
    prod = overrides(config["prod"]["deploy"]["parameters"]["parameter_overrides"])
    dev = overrides(config["default"]["deploy"]["parameters"]["parameter_overrides"])
    assert prod["ProviderApiKeyParameterName"] != dev["ProviderApiKeyParameterName"]


def test_prod_names_an_alarm_address_and_the_template_refuses_the_placeholder(
    template: dict[str, Any],
) -> None:
    """samconfig's prod address is a placeholder until the operator sets theirs: the deploy
    stops at parameter validation, before anything is created (and `make preflight` says so)."""
    prod = overrides(samconfig()["prod"]["deploy"]["parameters"]["parameter_overrides"])
    pattern = template["Parameters"]["AlarmEmail"]["AllowedPattern"]
    assert prod["AlarmEmail"].endswith("@example.com")
    assert not re.fullmatch(pattern, prod["AlarmEmail"])
    assert re.fullmatch(pattern, "oncall@acme.test") and re.fullmatch(pattern, "")
    assert not re.fullmatch(pattern, "ops@example.org")


def test_samconfig_local_invoke_points_at_moto() -> None:
    local = samconfig()["default"]["local_invoke"]["parameters"]
    assert local["env_vars"] == "env.json"
    assert overrides(local["parameter_overrides"]) == {"AwsEndpointUrl": "http://127.0.0.1:5000"}


# ------------------------------------------------------------------ env.json


def declared_variables(template: dict[str, Any], function: str) -> set[str]:
    shared = template["Globals"]["Function"]["Environment"]["Variables"]
    own = template["Resources"][function]["Properties"].get("Environment", {})
    return set(shared) | set(own.get("Variables", {}))


def test_env_json_only_overrides_declared_variables(template: dict[str, Any]) -> None:
    """`sam local` silently ignores variables a function does not declare in the template."""
    env = json.loads((ROOT / "env.json").read_text(encoding="utf-8"))
    assert set(env) == set(FUNCTIONS) | {"Parameters"}
    for function in FUNCTIONS:
        declared = declared_variables(template, function)
        assert set(env[function]) <= declared, function
        assert all(isinstance(value, str) for value in env[function].values())
    shared = env["Parameters"]
    assert shared["AWS_ENDPOINT_URL"] == "http://127.0.0.1:5000"
    assert set(shared) <= set(template["Globals"]["Function"]["Environment"]["Variables"])


def test_env_json_gives_every_resource_reference_a_local_value(template: dict[str, Any]) -> None:
    """Refs to resources resolve to the bare logical id under `sam local`: override them all."""
    env = json.loads((ROOT / "env.json").read_text(encoding="utf-8"))
    resources = set(template["Resources"])
    shared_template = template["Globals"]["Function"]["Environment"]["Variables"]
    for function in FUNCTIONS:
        own = template["Resources"][function]["Properties"].get("Environment", {})
        variables = {**shared_template, **own.get("Variables", {})}
        given = {**env["Parameters"], **env[function]}
        for name, value in variables.items():
            if isinstance(value, dict) and value.get("Ref") in resources:
                assert name in given, f"{function}: {name} would be {value['Ref']!r}"
        for name, value in given.items():
            assert "amazonaws.com" not in value, f"{function}: {name} points at AWS"


# What a function that calls the provider needs to reach the local simulator, not the real one.
LOCAL_PROVIDER = {
    "PROVIDER_BASE_URL": "http://127.0.0.1:8800",
    "PROVIDER_API_KEY_PARAMETER": "/pingback-guard/local/provider-api-key",
}


def test_env_json_points_every_provider_call_at_the_local_simulator(
    template: dict[str, Any],
) -> None:
    """Otherwise the template's defaults apply: the real provider, and a key moto does not hold."""
    env = json.loads((ROOT / "env.json").read_text(encoding="utf-8"))
    for function in FUNCTIONS:
        if "PROVIDER_BASE_URL" in declared_variables(template, function):
            given = {**env["Parameters"], **env[function]}
            assert {name: given.get(name) for name in LOCAL_PROVIDER} == LOCAL_PROVIDER, function


# ------------------------------------------------------------------ events


RAW_EVENTS = ("http_api_proxy.json", "sqs_receive_message.json", "scheduled_event.json")


@pytest.mark.parametrize("name", RAW_EVENTS)
def test_raw_generated_events_are_present(name: str) -> None:
    event = json.loads((ROOT / "tests" / "events" / name).read_text(encoding="utf-8"))
    assert event


def test_derived_events_are_up_to_date() -> None:
    """Committed events equal what `python -m infra.sam.make_events` produces, or what
    `make sam-local-events` wrote for the tasks it recorded."""
    sample = make_events.sample_in(make_events.INVOKE_DIR)
    for path, event in make_events.build(sample).items():
        assert path.read_text(encoding="utf-8") == make_events.render(event), path


def load_event(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def test_2captcha_form_post_callback() -> None:
    event = load_event(ROOT / "tests" / "events" / "callback_post_form_2captcha.json")
    assert event["version"] == "2.0"
    assert event["routeKey"] == "POST /callback/{secret}"
    assert event["requestContext"]["http"]["method"] == "POST"
    assert event["headers"]["content-type"] == "application/x-www-form-urlencoded"
    assert event["isBase64Encoded"] is True
    assert event["pathParameters"] == {"secret": make_events.COMMITTED_SAMPLE.solved_capability}
    form = parse_qs(base64.b64decode(event["body"]).decode(), strict_parsing=True)
    assert set(form) == {"id", "code", "rate"}
    assert form["id"] == [make_events.SAMPLE_TASK_ID]
    assert 500 <= len(form["code"][0]) <= 4096
    assert "authorizer" not in event["requestContext"]


def test_captchaai_get_callback() -> None:
    event = load_event(ROOT / "tests" / "events" / "callback_get_captchaai.json")
    assert event["routeKey"] == "GET /callback/{secret}"
    assert event["requestContext"]["http"]["method"] == "GET"
    assert "body" not in event
    assert event["isBase64Encoded"] is False
    assert set(event["queryStringParameters"]) == {"id", "code"}
    assert parse_qs(event["rawQueryString"])["id"] == [make_events.SAMPLE_TASK_ID]


def test_the_capability_is_only_in_the_path_never_in_route_key() -> None:
    for path in (ROOT / "events").glob("callback_*.json"):
        event = load_event(path)
        capability = event["pathParameters"]["secret"]
        assert capability.startswith("v") and make_events.SAMPLE_CALLBACK_SECRET not in capability
        assert capability not in event["routeKey"] and event["rawPath"].endswith(capability)


def test_invoke_events_match_the_template_routes(resources: dict[str, Any]) -> None:
    routes: dict[str, str] = {}
    for name, body in of_type(resources, "AWS::Serverless::Function").items():
        for event in body["Properties"]["Events"].values():
            if event["Type"] == "HttpApi":
                key = f"{event['Properties']['Method']} {event['Properties']['Path']}"
                routes[key] = name
    iam_routes = {
        "POST /tasks",
        "GET /tasks/{task_id}",
        "POST /pingback-urls",
        "PUT /tasks/{task_id}",
        "POST /tasks/{task_id}/report",
        "POST /smoke-tasks",
        "DELETE /smoke-tasks/{task_id}",
    }
    seen = set()
    for path in sorted((ROOT / "events").glob("*.json")):
        event = load_event(path)
        if event.get("version") != "2.0":
            continue
        assert event["routeKey"] in routes, path.name
        seen.add(event["routeKey"])
        has_iam = "iam" in event["requestContext"].get("authorizer", {})
        assert has_iam is (event["routeKey"] in iam_routes), path.name
    assert seen == set(routes)


def test_replay_event_carries_dead_letter_messages() -> None:
    event = load_event(ROOT / "events" / "replay_dead_letters.json")
    for record in event["Records"]:
        assert record["eventSource"] == "aws:sqs"
        body = json.loads(record["body"])
        assert set(body) == {"task_id", "code", "received_at", "source", "nonce"}


def test_poller_event_is_the_schedule_input(template: dict[str, Any]) -> None:
    schedule = template["Resources"]["PollerFunction"]["Properties"]["Events"]["PollSchedule"]
    expected_keys = set(json.loads(schedule["Properties"]["Input"]))
    assert set(load_event(ROOT / "events" / "poller_schedule.json")) == expected_keys


# ------------------------------------------------------------------ runbook


def test_operations_doc_covers_every_parameter_and_alarm(template: dict[str, Any]) -> None:
    doc = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    for parameter in template["Parameters"]:
        assert f"`{parameter}`" in doc, f"parameter {parameter} undocumented"
    for name, alarm in of_type(template["Resources"], "AWS::CloudWatch::Alarm").items():
        suffix = sub_text(alarm["Properties"]["AlarmName"]).removeprefix("${AWS::StackName}-")
        assert f"`{name}`" in doc or f"`{suffix}`" in doc, f"alarm {name} undocumented"
    for command in ("sam build", "sam deploy --guided", "start-message-move-task", "SecureString"):
        assert command in doc
