"""The result-events pieces of the local runtime, without a stack: the template's own pipe
filters and input templates on stream records, event patterns, templates, the bus, the pipe."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest

from infra.local.cloudformation.intrinsics import NoResources, Resolver
from infra.local.cloudformation.local_resources import EventBus, EventRule, LocalResourceContext
from infra.local.events.event_bus import (
    BusEntry,
    LocalEventBus,
    RunTimeRules,
    lets_eventbridge_send,
)
from infra.local.events.event_patterns import PatternError, matches, parse_pattern
from infra.local.events.event_sources import PipeSpec, RuleSpec
from infra.local.lambda_.pool import Invocation
from infra.local.pipes.input_template import TemplateOutputError, render, render_detail
from infra.local.pipes.stream_pipe import StreamPipe
from infra.local.runtime.aws import AwsEndpoint
from infra.local.runtime.moto_process import MotoServer
from tests.result_events import OWNER, rendered_detail
from tests.support import template
from tests.waiting import wait_until

TOKEN = "03AFcWeA-token_" + "x" * 40
WORKER_PINGBACK_URL = "https://worker.example/captcha-done?secret=s3cr3t"


def pipe_properties() -> dict[str, Any]:
    properties: dict[str, Any] = template()["Resources"]["ResultEventsPipe"]["Properties"]
    return properties


def template_filters() -> list[dict[str, Any]]:
    filters = pipe_properties()["SourceParameters"]["FilterCriteria"]["Filters"]
    return [parse_pattern(entry["Pattern"]) for entry in filters]


def input_template(with_tokens: bool) -> str:
    condition, with_token, without_token = pipe_properties()["TargetParameters"]["InputTemplate"][
        "Fn::If"
    ]
    assert condition == "EventsCarryTokens"
    return str(with_token if with_tokens else without_token)


def image(**attributes: str | float) -> dict[str, Any]:
    return {
        name: {"N": str(value)} if isinstance(value, float) else {"S": value}
        for name, value in attributes.items()
    }


def record(
    event_name: str, new: dict[str, Any] | None, old: dict[str, Any] | None = None
) -> dict[str, Any]:
    dynamodb: dict[str, Any] = {"Keys": {"task_id": {"S": "4242"}}, "SequenceNumber": "100"}
    if new is not None:
        dynamodb["NewImage"] = new
    if old is not None:
        dynamodb["OldImage"] = old
    return {
        "eventID": "e1",
        "eventName": event_name,
        "eventSource": "aws:dynamodb",
        "dynamodb": dynamodb,
    }


SUBMITTED_AT = 1764532790.5
PENDING = image(
    task_id="4242", status="PENDING", owner=OWNER, nonce="bm9uY2U", submitted_at=SUBMITTED_AT
)
SOLVED = image(
    task_id="4242",
    status="SOLVED",
    submitted_at=SUBMITTED_AT,
    solution=TOKEN,
    delivered_via="read_through",
    finished_after=1764532800.25,
    received_at=1764532805.5,
    usable_until=1764532920.25,
    owner=OWNER,
    nonce="bm9uY2U",
    origin="submit",
    pingback_forward="yes",
)
EXPIRED = image(
    task_id="4242",
    status="EXPIRED",
    error="EXPIRED_UNRECOVERED",
    received_at=900.0,
    submitted_at=SUBMITTED_AT,
)
FAILED = image(
    task_id="4242",
    status="FAILED",
    error="ERROR_CAPTCHA_UNSOLVABLE",
    delivered_via="poll",
    submitted_at=SUBMITTED_AT,
)
UNREGISTERED = {name: value for name, value in SOLVED.items() if name != "submitted_at"}
UNREGISTERED_FAILED = image(task_id="4242", status="FAILED", error="ERROR_WRONG_CAPTCHA_ID")


@pytest.mark.parametrize(
    ("name", "stream_record", "published"),
    [
        ("first write is a registered result", record("INSERT", SOLVED), True),
        ("result kept for an unregistered id", record("INSERT", UNREGISTERED), False),
        ("error kept for an unregistered id", record("INSERT", UNREGISTERED_FAILED), False),
        (
            "its own pingback came first, then registered",
            record("MODIFY", SOLVED, UNREGISTERED),
            True,
        ),
        (
            "a forged result discarded at registration",
            record("MODIFY", PENDING, UNREGISTERED),
            False,
        ),
        (
            "callback before PENDING, key-only insert",
            record("INSERT", image(task_id="4242")),
            False,
        ),
        ("PENDING registered", record("INSERT", PENDING), False),
        ("PENDING -> SOLVED", record("MODIFY", SOLVED, PENDING), True),
        ("PENDING -> FAILED", record("MODIFY", FAILED, PENDING), True),
        ("PENDING -> EXPIRED", record("MODIFY", EXPIRED, PENDING), True),
        ("EXPIRED -> SOLVED, a late pingback", record("MODIFY", SOLVED, EXPIRED), True),
        ("FAILED -> SOLVED", record("MODIFY", SOLVED, FAILED), True),
        ("SOLVED rewritten (report, duplicate)", record("MODIFY", SOLVED, SOLVED), False),
        ("poll rescheduled", record("MODIFY", PENDING, PENDING), False),
        ("old item had no status yet", record("MODIFY", SOLVED, image(task_id="4242")), True),
        (
            "unregistered, old item had no status yet",
            record("MODIFY", UNREGISTERED, image(task_id="4242")),
            False,
        ),
        ("TTL deletion", record("REMOVE", None, SOLVED), False),
    ],
)
def test_the_template_filters_publish_status_transitions_into_a_final_status(
    name: str, stream_record: dict[str, Any], published: bool
) -> None:
    selected = any(matches(pattern, stream_record) for pattern in template_filters())
    assert selected is published, name


def test_the_input_template_maps_the_contract_attributes() -> None:
    detail = render_detail(input_template(True), record("MODIFY", SOLVED, PENDING), {})

    assert detail == rendered_detail("4242", "SOLVED", TOKEN)


def test_without_tokens_the_detail_has_no_solution_and_nothing_else_changes() -> None:
    stream_record = record("MODIFY", SOLVED, PENDING)
    with_tokens = render_detail(input_template(True), stream_record, {})
    without = render_detail(input_template(False), stream_record, {})

    assert "solution" not in without
    assert TOKEN not in json.dumps(without)
    assert without == {key: value for key, value in with_tokens.items() if key != "solution"}


def test_missing_attributes_render_as_empty_strings_and_the_detail_stays_json() -> None:
    detail = render_detail(input_template(True), record("INSERT", EXPIRED), {})

    assert detail["status"] == "EXPIRED"
    assert detail["previous_status"] == detail["delivered_via"] == detail["solution"] == ""
    assert detail["finished_at_earliest"] == detail["usable_until"] == ""
    assert detail["finished_at_latest"] == "900.0"


@pytest.mark.parametrize(
    ("pingback_forward", "forwarded"),
    [
        ("yes", True),  # the worker gave in.php a pingback= URL
        ("no", False),  # it did not: the forwarder is not even invoked
        (None, True),  # a task written before the stack said: offered, the forwarder decides
    ],
)
def test_only_results_that_may_have_a_pingback_url_reach_the_forwarder(
    pingback_forward: str | None, forwarded: bool
) -> None:
    solved = {name: value for name, value in SOLVED.items() if name != "pingback_forward"}
    solved["forward_url"] = {"S": WORKER_PINGBACK_URL}
    if pingback_forward is not None:
        solved["pingback_forward"] = {"S": pingback_forward}
    detail = render_detail(input_template(False), record("MODIFY", solved, PENDING), {})
    event = {"source": "pingback-guard", "detail-type": "Task Result", "detail": detail}
    rules = template()["Resources"]["PingbackForwardFunction"]["Properties"]["Events"]
    forward_rule = parse_pattern(rules["FinalResults"]["Properties"]["Pattern"])
    assert matches(forward_rule, event) is forwarded
    # The URL itself is never in the event.
    assert WORKER_PINGBACK_URL not in json.dumps(event)


def test_the_nonce_is_never_published() -> None:
    for variant in (True, False):
        assert "nonce" not in input_template(variant)


# ---------------------------------------------------------------- patterns and templates


@pytest.mark.parametrize(
    ("pattern", "event", "expected"),
    [
        ({"a": ["x"]}, {"a": "x"}, True),
        ({"a": ["x"]}, {"a": ["y", "x"]}, True),
        ({"a": [5]}, {"a": 5.0}, True),
        ({"a": ["5"]}, {"a": 5}, False),
        ({"a": [{"prefix": "ab"}]}, {"a": "abc"}, True),
        ({"a": [{"suffix": "bc"}]}, {"a": "abc"}, True),
        ({"a": [{"equals-ignore-case": "ABC"}]}, {"a": "abc"}, True),
        ({"a": [{"wildcard": "a*c"}]}, {"a": "abbbc"}, True),
        ({"a": [{"anything-but": ["x", "y"]}]}, {"a": "z"}, True),
        ({"a": [{"anything-but": "x"}]}, {"a": "x"}, False),
        ({"a": [{"anything-but": "x"}]}, {}, False),
        ({"a": [{"anything-but": {"prefix": "ab"}}]}, {"a": "abc"}, False),
        ({"a": [{"exists": True}]}, {"a": None}, True),
        ({"a": [{"exists": False}]}, {}, True),
        ({"a": {"b": [{"exists": False}]}}, {}, True),
        ({"a": {"b": ["x"]}}, {"a": "not an object"}, False),
        ({"a": [{"numeric": [">", 1, "<=", 3]}]}, {"a": 3}, True),
        ({"a": [{"numeric": [">", 1]}]}, {"a": "2"}, False),
        ({"$or": [{"a": ["x"]}, {"b": ["y"]}]}, {"b": "y"}, True),
        ({"$or": [{"a": ["x"]}, {"b": ["y"]}]}, {"c": "y"}, False),
    ],
)
def test_event_patterns(pattern: dict[str, Any], event: dict[str, Any], expected: bool) -> None:
    assert matches(parse_pattern(pattern), event) is expected


@pytest.mark.parametrize(
    "pattern",
    [
        '{"a": [{"cidr": "10.0.0.0/8"}]}',
        '{"a": "x"}',
        '{"a": [{"prefix": "x", "suffix": "y"}]}',
        '{"a": [{"numeric": [">"]}]}',
        '{"$or": []}',
        "[1]",
    ],
)
def test_patterns_the_runtime_cannot_honour_fail_loudly(pattern: str) -> None:
    with pytest.raises(PatternError):
        parse_pattern(pattern)


def test_templates_write_strings_raw_and_json_values_as_json() -> None:
    event = {"s": "text", "o": {"k": [1, True, None]}, "n": 2.5, "list": ["a", "b"]}
    text = render(
        '{"s": "<$.s>", "o": <$.o>, "n": <$.n>, "second": "<$.list[1]>", "m": "<$.nope.x>",'
        ' "pipe": "<aws.pipes.pipe-name>"}',
        event,
        {"aws.pipes.pipe-name": "p1"},
    )
    assert json.loads(text) == {
        "s": "text",
        "o": {"k": [1, True, None]},
        "n": 2.5,
        "second": "b",
        "m": "",
        "pipe": "p1",
    }


def test_a_template_that_does_not_render_a_json_object_is_an_error() -> None:
    with pytest.raises(TemplateOutputError):
        render_detail('{"a": <$.missing>}', {}, {})
    with pytest.raises(TemplateOutputError):
        render_detail('"<$.s>"', {"s": "x"}, {})


# ---------------------------------------------------------------- bus


class FlakyTarget:
    """An invoker whose invocations fail `failures` times, then succeed."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.events: list[dict[str, Any]] = []

    def __call__(self, function: str, event: Any) -> Invocation:
        self.events.append(event)
        if len(self.events) <= self.failures:
            return Invocation("r", error={"errorType": "Boom", "errorMessage": "no"})
        return Invocation("r", result={"ok": True})


def rule(bus: str = "results") -> RuleSpec:
    return RuleSpec(
        logical_id="ConsumerRule",
        name="consumer-rule",
        arn="arn:aws:events:us-east-1:123456789012:rule/results/consumer-rule",
        bus_name=bus,
        pattern=parse_pattern({"source": ["pingback-guard"], "detail": {"status": ["SOLVED"]}}),
        functions=("ResultConsumerFunction",),
    )


@pytest.fixture
def bus_with(request: pytest.FixtureRequest) -> Iterator[Any]:
    buses: list[LocalEventBus] = []

    def start(target: FlakyTarget, rules: list[RuleSpec]) -> LocalEventBus:
        bus = LocalEventBus(rules, target, region="us-east-1", retry_delays=(0.05, 0.1))
        bus.start()
        buses.append(bus)
        return bus

    yield start
    for bus in buses:
        bus.stop(2.0)


def entry(status: str, source: str = "pingback-guard", bus: str = "results") -> BusEntry:
    return BusEntry(bus, source, "Task Result", {"task_id": "1", "status": status})


def test_the_bus_delivers_matching_events_and_retries_failed_invocations(bus_with: Any) -> None:
    target = FlakyTarget(failures=2)
    bus = bus_with(target, [rule()])

    ids = bus.put_events([entry("SOLVED"), entry("FAILED"), entry("SOLVED", source="other")])
    bus.put_events([entry("SOLVED", bus="another-bus")])

    wait_until(lambda: bus.backlog() == 0, timeout=10)
    assert len(ids) == 3
    assert [event["id"] for event in target.events] == [ids[0]] * 3
    assert target.events[0]["detail-type"] == "Task Result"
    assert bus.stats.to_json() == {
        "put": 4,
        "deliveries": 1,
        "invocations": 3,
        "sent_to_queues": 0,
        "retried": 2,
        "dropped": 0,
        "refused": 0,
    }
    assert len(bus.published()) == 4


def test_a_target_its_policy_refuses_gets_nothing_and_is_never_retried() -> None:
    """EventBridge invokes a Lambda target as events.amazonaws.com; a refusal is final."""
    target = FlakyTarget(failures=0)
    asked: list[tuple[str, str]] = []

    def refusal(rule: RuleSpec, function: str) -> str:
        asked.append((rule.arn, function))
        return "events.amazonaws.com may not lambda:InvokeFunction"

    bus = LocalEventBus([rule()], target, region="us-east-1", refusal=refusal)
    bus.start()
    try:
        bus.put_events([entry("SOLVED")])
        wait_until(lambda: bus.backlog() == 0, timeout=10)
    finally:
        bus.stop(2.0)
    assert target.events == []
    assert asked == [(rule().arn, "ResultConsumerFunction")]
    stats = bus.stats.to_json()
    assert (stats["refused"], stats["dropped"], stats["retried"], stats["invocations"]) == (
        1,
        1,
        0,
        0,
    )


def test_the_bus_drops_an_event_after_lambdas_async_retries(bus_with: Any) -> None:
    target = FlakyTarget(failures=10)
    bus = bus_with(target, [rule()])

    bus.put_events([entry("SOLVED")])

    wait_until(lambda: bus.backlog() == 0, timeout=10)
    assert len(target.events) == 3
    assert bus.stats.to_json()["dropped"] == 1


class StuckTarget:
    """An invoker whose invocations of `stuck` block until released; others return at once."""

    def __init__(self, stuck: str) -> None:
        self.stuck = stuck
        self.released = threading.Event()
        self.invoked: list[str] = []

    def __call__(self, function: str, event: Any) -> Invocation:
        self.invoked.append(function)
        if function == self.stuck:
            self.released.wait(30)
        return Invocation("r", result={"ok": True})


def test_a_target_whose_invocations_hang_holds_back_no_other_targets_events() -> None:
    # Given two rules on the bus, the consumer's invocations hanging
    push_rule = replace(rule(), logical_id="PushRule", name="push-rule", functions=("PushFn",))
    target = StuckTarget(stuck="ResultConsumerFunction")
    bus = LocalEventBus(
        [rule(), push_rule], target, region="us-east-1", workers_of=lambda function: 2
    )
    bus.start()
    try:
        # When more events arrive than the consumer has workers
        bus.put_events([entry("SOLVED") for _ in range(5)])

        # Then every one of them still reaches the other target
        wait_until(lambda: target.invoked.count("PushFn") == 5, timeout=10)
        assert target.invoked.count("ResultConsumerFunction") == 2
    finally:
        target.released.set()
        bus.stop(5)


QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:smoke-queue"
RULE_ARN = "arn:aws:events:us-east-1:123456789012:rule/results/smoke-rule"


def queue_policy(
    principal: object = None, source_arn: str | None = RULE_ARN, action: str = "sqs:SendMessage"
) -> str:
    statement: dict[str, Any] = {
        "Effect": "Allow",
        "Principal": principal or {"Service": "events.amazonaws.com"},
        "Action": action,
        "Resource": QUEUE_ARN,
    }
    if source_arn is not None:
        statement["Condition"] = {"ArnEquals": {"aws:SourceArn": source_arn}}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


@pytest.mark.parametrize(
    ("policy", "allowed"),
    [
        (queue_policy(), True),
        (queue_policy(source_arn=None), True),
        (queue_policy(action="sqs:*"), True),
        (None, False),
        (queue_policy(source_arn=RULE_ARN.replace("smoke-rule", "other-rule")), False),
        (queue_policy(principal={"Service": "sns.amazonaws.com"}), False),
        (queue_policy(principal={"AWS": "*"}), False),
        (queue_policy(action="sqs:ReceiveMessage"), False),
    ],
)
def test_a_queue_gets_events_only_when_its_policy_lets_eventbridge_send_for_the_rule(
    policy: str | None, allowed: bool
) -> None:
    assert lets_eventbridge_send(policy, QUEUE_ARN, RULE_ARN) is allowed


def rule_with_queue(endpoint: AwsEndpoint, bus_name: str, name: str, allowed: bool) -> str:
    """A rule made at run time on the bus, matching pingback-guard's events, with a queue as its
    target (whose policy lets EventBridge send for the rule when `allowed`): the queue's URL."""
    events, sqs = endpoint.client("events"), endpoint.client("sqs")
    url = sqs.create_queue(QueueName=f"{bus_name}-{name}")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    rule_arn = events.put_rule(
        Name=f"{bus_name}-{name}",
        EventBusName=bus_name,
        EventPattern=json.dumps({"source": ["pingback-guard"]}),
    )["RuleArn"]
    events.put_targets(
        Rule=f"{bus_name}-{name}", EventBusName=bus_name, Targets=[{"Id": "q", "Arn": arn}]
    )
    if allowed:
        policy = json.loads(queue_policy(source_arn=rule_arn))
        policy["Statement"][0]["Resource"] = arn
        sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps(policy)})
    return url


def test_a_rule_made_at_run_time_delivers_to_its_queue_when_the_policy_allows(
    moto_endpoint: AwsEndpoint, bus_with: Any
) -> None:
    """Given two rules made after the start on moto, each with a queue, one queue letting
    EventBridge send for its rule and one without a policy, and a template rule; when a matching
    event is put: the template's function target and the allowed queue get it, the other is
    dropped, and an event on another bus reaches neither queue."""
    events, sqs = moto_endpoint.client("events"), moto_endpoint.client("sqs")
    bus_name = f"results-{uuid.uuid4().hex[:6]}"
    events.create_event_bus(Name=bus_name)
    queues = {
        name: rule_with_queue(moto_endpoint, bus_name, name, allowed=name == "allowed")
        for name in ("allowed", "no-policy")
    }
    target = FlakyTarget(failures=0)
    bus = LocalEventBus(
        [rule(bus_name)],
        target,
        region="us-east-1",
        retry_delays=(0.05, 0.1),
        run_time_rules=RunTimeRules(moto_endpoint.client, ["consumer-rule"]),
    )
    bus.start()
    try:
        (event_id,) = bus.put_events([entry("SOLVED", bus=bus_name)])
        bus.put_events([entry("SOLVED", bus="another-bus")])
        wait_until(lambda: bus.backlog() == 0, timeout=10)
    finally:
        bus.stop(2.0)

    received = sqs.receive_message(QueueUrl=queues["allowed"], MaxNumberOfMessages=10)
    assert [json.loads(m["Body"])["id"] for m in received["Messages"]] == [event_id]
    assert [event["id"] for event in target.events] == [event_id]
    stats = bus.stats.to_json()
    assert (stats["sent_to_queues"], stats["dropped"], stats["deliveries"]) == (1, 1, 3)
    assert "Messages" not in sqs.receive_message(QueueUrl=queues["no-policy"])


# Making a rule and its queue took over a second on a loaded CI machine: a 1 s refresh had
# already passed when the event "put at once" came.
RULES_REFRESH = 3.0


def test_a_rule_made_at_run_time_matches_once_the_bus_reads_its_rules_again(
    moto_endpoint: AwsEndpoint,
) -> None:
    """Given a bus that read its run-time rules (none yet) less than their refresh ago, when a
    rule with a queue is made: an event put at once does not reach the queue (EventBridge: a
    new rule matches a short while after PutRule), one put after the refresh does."""
    sqs = moto_endpoint.client("sqs")
    bus_name = f"results-{uuid.uuid4().hex[:6]}"
    moto_endpoint.client("events").create_event_bus(Name=bus_name)
    bus = LocalEventBus(
        [],
        FlakyTarget(failures=0),
        region="us-east-1",
        run_time_rules=RunTimeRules(moto_endpoint.client, [], refresh_seconds=RULES_REFRESH),
    )
    bus.start()
    try:
        bus.put_events([entry("SOLVED", bus=bus_name)])
        url = rule_with_queue(moto_endpoint, bus_name, "late", allowed=True)
        bus.put_events([entry("SOLVED", bus=bus_name)])
        time.sleep(RULES_REFRESH + 0.1)
        (matched_id,) = bus.put_events([entry("SOLVED", bus=bus_name)])
        wait_until(lambda: bus.backlog() == 0, timeout=10)
    finally:
        bus.stop(2.0)

    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
    assert [json.loads(m["Body"])["id"] for m in received["Messages"]] == [matched_id]


# ---------------------------------------------------------------- pipe on a moto stream


@pytest.fixture(scope="module")
def moto_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AwsEndpoint]:
    """moto's server, as the runtime runs it (its in-process mock does not route DynamoDB
    Streams requests of this botocore)."""
    server = MotoServer(0, tmp_path_factory.mktemp("moto") / "moto.log")
    try:
        yield AwsEndpoint(server.start().url, "us-east-1")
    finally:
        server.stop()


@pytest.fixture
def stream(moto_endpoint: AwsEndpoint) -> Iterator[tuple[Any, str]]:
    client = moto_endpoint.client("dynamodb")
    name = f"tasks-{uuid.uuid4().hex[:8]}"
    table = client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "task_id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "task_id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    yield Table(client, name), table["TableDescription"]["LatestStreamArn"]
    client.delete_table(TableName=name)


@dataclass(frozen=True)
class Table:
    client: Any
    name: str


def pipe_spec(stream_arn: str, input_template_text: str, retries: int = 2) -> PipeSpec:
    return PipeSpec(
        logical_id="ResultEventsPipe",
        name="results-pipe",
        arn="arn:aws:pipes:us-east-1:123456789012:pipe/results-pipe",
        stream_arn=stream_arn,
        starting_position="TRIM_HORIZON",
        batch_size=10,
        maximum_retry_attempts=retries,
        dead_letter_arn="arn:aws:sqs:us-east-1:123456789012:pipe-dlq",
        filters=tuple(template_filters()),
        input_template=input_template_text,
        target_arn="arn:aws:events:us-east-1:123456789012:event-bus/results",
        bus_name="results",
        source="pingback-guard",
        detail_type="Task Result",
    )


def write(table: Table, task_id: str, **attributes: str | float) -> None:
    names = {f"#{name}": name for name in attributes}
    table.client.update_item(
        TableName=table.name,
        Key={"task_id": {"S": task_id}},
        UpdateExpression="SET " + ", ".join(f"#{name} = :{name}" for name in attributes),
        ExpressionAttributeNames=names,
        ExpressionAttributeValues={
            f":{name}": value for name, value in image(**attributes).items()
        },
    )


def run_pipe(
    endpoint: AwsEndpoint, spec: PipeSpec, duplicate_rate: float = 0.0
) -> tuple[StreamPipe, list[BusEntry]]:
    put: list[BusEntry] = []

    def put_events(entries: Any) -> list[str]:
        put.extend(entries)
        return [str(index) for index, _ in enumerate(entries)]

    pipe = StreamPipe(
        spec,
        new_client=endpoint.client,
        put_events=put_events,
        duplicate_rate=duplicate_rate,
        seed=1,
    )
    pipe.start()
    return pipe, put


def test_the_pipe_reads_moto_s_stream_and_publishes_each_final_transition_once(
    moto_endpoint: AwsEndpoint, stream: tuple[Table, str]
) -> None:
    table, stream_arn = stream
    write(table, "7", status="PENDING", submitted_at=SUBMITTED_AT)
    before_the_result = time.time()
    write(table, "7", status="SOLVED", solution=TOKEN, delivered_via="callback")
    write(table, "7", reported="good")  # same status again: nothing new
    write(table, "8", status="FAILED", error="ERROR_CAPTCHA_UNSOLVABLE", submitted_at=SUBMITTED_AT)
    write(
        table, "11", status="SOLVED", solution=TOKEN
    )  # kept for an unregistered id: not published
    pipe, put = run_pipe(moto_endpoint, pipe_spec(stream_arn, input_template(True)))
    try:
        # Caught up: a read found no new record after every earlier one was published.
        wait_until(lambda: pipe.stats.to_json()["caught_up"] and len(put) >= 2, timeout=10)
    finally:
        pipe.stop(2.0)

    assert [(e.detail["task_id"], e.detail["status"]) for e in put] == [
        ("7", "SOLVED"),
        ("8", "FAILED"),
    ]
    assert {(e.bus_name, e.source, e.detail_type) for e in put} == {
        ("results", "pingback-guard", "Task Result")
    }
    assert pipe.stats.to_json()["published"] == 2
    # when each published result was written (its record), and when its event was on the bus
    first = pipe.first_published()
    assert sorted(first) == ["7", "8"]
    assert before_the_result - 0.01 <= first["7"].written_at <= first["7"].published_at
    assert first["7"].published_at <= time.time()


def test_injected_duplicates_put_the_same_results_again(
    moto_endpoint: AwsEndpoint, stream: tuple[Table, str]
) -> None:
    table, stream_arn = stream
    write(table, "9", status="EXPIRED", error="EXPIRED_UNRECOVERED", submitted_at=SUBMITTED_AT)
    pipe, put = run_pipe(
        moto_endpoint, pipe_spec(stream_arn, input_template(False)), duplicate_rate=1.0
    )
    try:
        wait_until(lambda: len(put) >= 2, timeout=10)
    finally:
        pipe.stop(2.0)

    first, second = (e.detail for e in put[:2])
    assert first == second
    assert pipe.stats.to_json()["duplicates_injected"] == 1


def test_a_batch_that_keeps_failing_goes_to_the_dead_letter_queue(
    moto_endpoint: AwsEndpoint, stream: tuple[Table, str]
) -> None:
    table, stream_arn = stream
    sqs = moto_endpoint.client("sqs")
    queue_url = sqs.create_queue(QueueName="pipe-dlq")["QueueUrl"]
    write(table, "10", status="SOLVED", solution=TOKEN, submitted_at=SUBMITTED_AT)
    pipe, put = run_pipe(moto_endpoint, pipe_spec(stream_arn, '{"broken": <$.nope>}', retries=2))
    try:
        wait_until(lambda: pipe.stats.to_json()["dead_lettered_batches"] == 1, timeout=10)
    finally:
        pipe.stop(2.0)

    assert put == []
    assert pipe.stats.to_json()["failed_executions"] == 3
    (message,) = sqs.receive_message(QueueUrl=queue_url)["Messages"]
    info = json.loads(message["Body"])["DDBStreamBatchInfo"]
    assert info["streamArn"] == stream_arn and info["batchSize"] == 1
    assert TOKEN not in message["Body"]


# ---------------------------------------------------------------- resources made locally


def local_context(endpoint: AwsEndpoint) -> LocalResourceContext:
    resolver = Resolver({"AWS::StackName": "units"}, NoResources(), {}, {})
    return LocalResourceContext(endpoint, "units", resolver)


def test_a_bus_and_its_rules_exist_in_moto_and_moto_holds_no_target(
    moto_endpoint: AwsEndpoint,
) -> None:
    context = local_context(moto_endpoint)
    bus = EventBus().identify(context, "ResultEventBus", {"Name": "units-results"})
    rule_kind = EventRule()
    pattern_rule = rule_kind.identify(context, "ConsumerRule", {"EventBusName": "units-results"})
    rule_kind.create(
        context,
        pattern_rule,
        {
            "EventBusName": "units-results",
            "EventPattern": {"source": ["pingback-guard"]},
            "Targets": [{"Id": "f", "Arn": "arn:aws:lambda:us-east-1:123456789012:function:f"}],
        },
    )
    schedule_rule = rule_kind.identify(context, "Sweep", {})
    rule_kind.create(context, schedule_rule, {"ScheduleExpression": "rate(1 minute)"})

    events = moto_endpoint.client("events")
    assert bus.attributes["Arn"].endswith(":event-bus/units-results")
    described = events.describe_rule(Name=pattern_rule.physical_id, EventBusName="units-results")
    assert json.loads(described["EventPattern"]) == {"source": ["pingback-guard"]}
    assert pattern_rule.attributes["Arn"].endswith(f"rule/units-results/{pattern_rule.physical_id}")
    targets = events.list_targets_by_rule(
        Rule=pattern_rule.physical_id, EventBusName="units-results"
    )
    assert targets["Targets"] == []
    scheduled = events.describe_rule(Name=schedule_rule.physical_id)
    assert scheduled["ScheduleExpression"] == "rate(1 minute)"
    assert schedule_rule.attributes["Arn"].endswith(f":rule/{schedule_rule.physical_id}")


@pytest.mark.parametrize(
    "answer",
    ['{"challenge":"1a","validate":"2b","seccode":"2b|jordan"}', 'back\\slash "quoted"', "привет"],
)
def test_an_answer_with_quotes_or_backslashes_stays_one_json_string(answer: str) -> None:
    """Pipes escapes a string placeholder ("to ensure valid JSON output"): a GeeTest answer is
    published whole, never an invalid event."""
    solved = {**SOLVED, "solution": {"S": answer}}
    detail = render_detail(input_template(True), record("MODIFY", solved, PENDING), {})
    assert detail["solution"] == answer
