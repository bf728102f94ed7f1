"""The local runtime's pure parts: intrinsics, routes and events, SQS batch results, faults."""

import base64
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from infra.local.apigateway.http_api import (
    ApiContext,
    HttpRequest,
    RouteTable,
    build_event,
    map_result,
)
from infra.local.cloudformation.intrinsics import NoResources, Resolver, UnresolvableError
from infra.local.cloudformation.template import SamTemplate, TemplateError
from infra.local.lambda_.pool import Invocation
from infra.local.lambda_.protocol import Channel, ChannelClosed
from infra.local.lambda_.triggers import HttpRoute, QueueSource, rate_seconds
from infra.local.runtime.calls import AwsCall, CallLog
from infra.local.runtime.faults import FaultRule, InvalidFaultRule
from infra.local.sqs.queue_poller import handled_message_ids, refuse_visibility_below_timeout
from tests.local.support import FIXTURE_TEMPLATE


class _Resources:
    def __init__(self) -> None:
        self.ids = {"Queue": "https://sqs/q-1", "Table": "table-1"}

    def __contains__(self, logical_id: object) -> bool:
        return logical_id in self.ids

    def physical_id(self, logical_id: str) -> str:
        return self.ids[logical_id]

    def attribute(self, logical_id: str, attribute: str) -> Any:
        if (logical_id, attribute) == ("Queue", "Arn"):
            return "arn:aws:sqs:us-east-1:1:q-1"
        raise UnresolvableError(attribute)


def _resolver() -> Resolver:
    return Resolver(
        {"AWS::Region": "eu-west-1", "Stage": "prod", "Names": ["a", "b"]},
        _Resources(),
        conditions={"IsProd": {"Fn::Equals": [{"Ref": "Stage"}, "prod"]}, "IsDev": False},
        mappings={"Sizes": {"prod": {"memory": 512}}},
    )


def test_resolver_evaluates_refs_subs_and_conditions() -> None:
    resolver = _resolver()
    assert resolver.resolve({"Ref": "Table"}) == "table-1"
    assert resolver.resolve({"Fn::GetAtt": ["Queue", "Arn"]}).endswith(":q-1")
    sub = {"Fn::Sub": "${AWS::Region}/${Table}/${Queue.Arn}/${!Literal}/${X}"}
    assert resolver.resolve({**sub, "Fn::Sub": [sub["Fn::Sub"], {"X": "x"}]}) == (
        "eu-west-1/table-1/arn:aws:sqs:us-east-1:1:q-1/${Literal}/x"
    )
    assert resolver.resolve({"Fn::If": ["IsProd", "yes", "no"]}) == "yes"
    assert resolver.resolve({"Fn::Join": ["-", {"Ref": "Names"}]}) == "a-b"
    assert resolver.resolve({"Fn::Select": [1, {"Fn::Split": [",", "x,y"]}]}) == "y"
    assert resolver.resolve({"Fn::FindInMap": ["Sizes", "prod", "memory"]}) == 512
    kept = {"A": {"Fn::If": ["IsDev", "x", {"Ref": "AWS::NoValue"}]}, "B": "b"}
    assert resolver.resolve(kept) == {"B": "b"}
    assert resolver.condition("IsProd") is True


def test_resolver_names_what_it_cannot_resolve() -> None:
    with pytest.raises(UnresolvableError, match="Missing"):
        _resolver().resolve({"Ref": "Missing"})
    with pytest.raises(UnresolvableError, match="no such resource"):
        Resolver({}, NoResources()).resolve({"Fn::GetAtt": ["Table", "Arn"]})


def test_template_parameters_apply_overrides_and_reject_unknown_ones() -> None:
    template = SamTemplate.load(FIXTURE_TEMPLATE)
    values = template.parameter_values({"Flavour": "mint"})
    assert values["Flavour"] == "mint"
    assert values["MaxReceiveCount"] == "2"
    with pytest.raises(TemplateError, match="Nope"):
        template.parameter_values({"Nope": "1"})
    code_dirs = template.function_code_dirs()
    assert code_dirs["EchoFunction"] == (FIXTURE_TEMPLATE.parent / "handlers").resolve()


def _route(method: str, path: str) -> HttpRoute:
    return HttpRoute(api_id="api", method=method, path=path, function=path, iam_auth=False)


def test_routes_prefer_literal_segments_then_parameters_then_greedy() -> None:
    table = RouteTable(
        [
            _route("ANY", "/{proxy+}"),
            _route("GET", "/tasks/{task_id}"),
            _route("GET", "/tasks/latest"),
            _route("ANY", "/tasks/{task_id}"),
        ]
    )
    latest = table.match("GET", "/tasks/latest")
    assert latest is not None
    assert latest.route.path == "/tasks/latest"
    by_id = table.match("GET", "/tasks/a%2Fb")
    assert by_id is not None
    assert (by_id.route.method, by_id.path_parameters) == ("GET", {"task_id": "a/b"})
    deleted = table.match("DELETE", "/tasks/1")
    assert deleted is not None
    assert deleted.route.method == "ANY"
    other = table.match("POST", "/x/y")
    assert other is not None
    assert other.path_parameters == {"proxy": "x/y"}
    assert RouteTable([_route("GET", "/tasks/{task_id}")]).match("GET", "/tasks/") is None


def _event(body: bytes, content_type: str) -> dict[str, Any]:
    request = HttpRequest(
        method="POST",
        raw_path="/callback/s",
        raw_query="",
        headers=[("Content-Type", content_type), ("X-A", "1"), ("x-a", "2")],
        body=body,
        source_ip="127.0.0.1",
        domain_name="127.0.0.1:9",
    )
    matched = RouteTable([_route("POST", "/callback/{secret}")]).match("POST", "/callback/s")
    assert matched is not None
    return build_event(request, matched, ApiContext(account_id="1"))


def test_events_encode_bodies_like_api_gateway() -> None:
    json_event = _event(b'{"id": 1}', "application/json; charset=utf-8")
    assert (json_event["body"], json_event["isBase64Encoded"]) == ('{"id": 1}', False)
    assert json_event["headers"]["x-a"] == "1,2"
    form_event = _event(b"id=1&code=x", "application/x-www-form-urlencoded")
    assert form_event["isBase64Encoded"] is True
    assert base64.b64decode(form_event["body"]) == b"id=1&code=x"
    assert _event(b"\xff\x00", "application/octet-stream")["isBase64Encoded"] is True


def test_results_map_to_responses_like_api_gateway() -> None:
    shaped = map_result({"statusCode": 201, "headers": {"X-Y": "z"}, "body": "ok"})
    assert (shaped.status, shaped.headers, shaped.body) == (201, {"x-y": "z"}, b"ok")
    binary = map_result({"statusCode": 200, "body": "AAE=", "isBase64Encoded": True})
    assert binary.body == b"\x00\x01"
    inferred = map_result({"task": "1"})
    assert (inferred.status, inferred.body) == (200, b'{"task": "1"}')
    assert map_result("hello").body == b'"hello"'
    assert map_result({"statusCode": 200, "body": {"not": "a string"}}).status == 500


def _invocation(result: Any = None, error: dict[str, Any] | None = None) -> Invocation:
    return Invocation(request_id="r", result=result, error=error)


def test_sqs_batches_delete_only_what_the_function_handled() -> None:
    ids = ["m1", "m2", "m3"]
    failed = {"batchItemFailures": [{"itemIdentifier": "m2"}]}
    assert handled_message_ids(ids, _invocation(failed), True) == ["m1", "m3"]
    assert handled_message_ids(ids, _invocation(failed), False) == ids
    assert handled_message_ids(ids, _invocation(None), True) == ids
    assert handled_message_ids(ids, _invocation({"batchItemFailures": []}), True) == ids
    assert handled_message_ids(ids, _invocation(error={"errorType": "X"}), True) == []
    unknown = {"batchItemFailures": [{"itemIdentifier": "other"}]}
    assert handled_message_ids(ids, _invocation(unknown), True) == []
    assert handled_message_ids(ids, _invocation({"batchItemFailures": [{}]}), True) == []


def test_a_mapping_is_refused_when_the_queue_hides_a_message_for_less_than_the_function_runs() -> (
    None
):
    source = QueueSource(
        "WorkerQueueEvent", "Worker", "arn:aws:sqs:us-east-1:1:q", "url", 10, True, None
    )
    refuse_visibility_below_timeout(source, 30, 30.0)
    with pytest.raises(TemplateError) as refused:
        refuse_visibility_below_timeout(source, 36, 450.0)
    assert str(refused.value) == (
        'WorkerQueueEvent: Resource handler returned message: "Invalid request provided: Queue'
        " visibility timeout: 36 seconds is less than Function timeout: 450 seconds (Service:"
        ' Lambda, Status Code: 400)"'
    )


def test_fault_rules_validate_match_and_expire() -> None:
    rule = FaultRule.from_json(
        {"mode": "throttle", "service": "dynamodb", "until": time.time() + 60}
    )
    assert rule.fires_for("CallbackFunction", "dynamodb", "UpdateItem")
    assert not rule.fires_for("CallbackFunction", "sqs", "SendMessage")
    assert not FaultRule(mode="crash", until=time.time() - 1).fires_for("F", "sqs", "X")
    assert not FaultRule(mode="crash", probability=0.0).fires_for("F", "sqs", "X")
    with pytest.raises(InvalidFaultRule):
        FaultRule.from_json({"mode": "explode"})
    with pytest.raises(InvalidFaultRule):
        FaultRule.from_json({"mode": "crash", "probability": 2})
    with pytest.raises(InvalidFaultRule):
        FaultRule.from_json({"mode": "crash", "table": "x"})


def test_rate_expressions() -> None:
    assert rate_seconds("rate(1 minute)") == 60
    assert rate_seconds("rate(5 minutes)") == 300
    assert rate_seconds("rate(2 hours)") == 7200
    assert rate_seconds("cron(0 12 * * ? *)") is None


def test_call_log_counts_and_numbers_calls() -> None:
    log = CallLog()
    call = AwsCall("F", "dynamodb", "UpdateItem", "ok", time=0.0, duration_ms=1.0, task_ids=("t",))
    log.record(call)
    log.record(call)
    report = log.report(since=1)
    assert [record["sequence"] for record in report["calls"]] == [2]
    assert report["counts"][0]["count"] == 2
    assert AwsCall.from_json(report["calls"][0]) == call


def test_channel_frames_messages_and_reports_closing() -> None:
    left, right = socket.socketpair()
    sender, receiver = Channel(left), Channel(right)
    payload = "é" * 300_000  # larger than one read and than the socket buffer
    writer = threading.Thread(target=sender.send, args=({"type": "x", "payload": payload},))
    writer.start()
    assert receiver.receive(timeout=5)["payload"] == payload
    writer.join()
    with pytest.raises(TimeoutError):
        receiver.receive(timeout=0.05)
    sender.close()
    with pytest.raises(ChannelClosed):
        receiver.receive(timeout=5)
    receiver.close()


def test_code_uri_must_be_a_local_folder(tmp_path: Path) -> None:
    template = tmp_path / "template.yaml"
    template.write_text(
        "Transform: AWS::Serverless-2016-10-31\n"
        "Resources:\n"
        "  F:\n"
        "    Type: AWS::Serverless::Function\n"
        "    Properties: {CodeUri: s3://bucket/key.zip, Handler: a.b, Runtime: python3.12}\n"
    )
    with pytest.raises(TemplateError, match="CodeUri"):
        SamTemplate.load(template).function_code_dirs()


def test_template_parameters_are_checked_as_cloudformation_does(tmp_path: Path) -> None:
    template = tmp_path / "template.yaml"
    template.write_text(
        "Parameters:\n"
        "  Rate: {Type: Number, Default: 5, MinValue: 1, MaxValue: 60}\n"
        "  Url: {Type: String, Default: 'https://x', AllowedPattern: '^https://.*$'}\n"
        "Resources: {}\n"
    )
    loaded = SamTemplate.load(template)
    assert loaded.parameter_values({"Rate": "60"}) == {"Rate": "60", "Url": "https://x"}
    with pytest.raises(TemplateError, match="Rate"):
        loaded.parameter_values({"Rate": "61"})
    with pytest.raises(TemplateError, match="Url"):
        loaded.parameter_values({"Url": "http://x"})


def test_delay_fault_rules_need_a_bounded_delay_and_only_delay_rules_carry_one() -> None:
    from infra.local.runtime.faults import FaultRule, InvalidFaultRule

    rule = FaultRule.from_json({"mode": "delay", "delay_seconds": 1.5, "service": "dynamodb"})
    assert FaultRule.from_json(rule.to_json()) == rule
    for bad in (
        {"mode": "delay"},
        {"mode": "delay", "delay_seconds": 61},
        {"mode": "crash", "delay_seconds": 1},
    ):
        with pytest.raises(InvalidFaultRule, match="delay_seconds"):
            FaultRule.from_json(bad)
