"""The local CloudWatch: metrics from where the stack really produces them, alarms evaluated on
the local time scale, state changes published to the alarms' SNS actions in moto.

Metrics and their sources:
- the functions' EMF lines (Powertools Metrics) in run_dir/logs/<LogicalId>.log, with their own
  timestamps;
- AWS/Lambda Invocations, Errors, Throttles, Duration (dimension FunctionName) from every
  invocation the runtime makes;
- AWS/EventBridge/Pipes ExecutionFailed (0 or 1), EventCount, Duration (dimension PipeName) and
  Invocations (dimensions AwsAccountId, PipeName) from every execution of the runtime's pipes: a
  stopped pipe publishes nothing, as on AWS;
- AWS/ApiGateway Count, 4xx, 5xx (0 or 1 per request, dimensions ApiId / ApiId+Stage /
  ApiId+Stage+Route, as HTTP APIs publish them) from the local gateway, and the template's
  AWS::Logs::MetricFilter on the API access log group applied to the same requests;
- AWS/SQS ApproximateNumberOfMessagesVisible / NotVisible / Delayed sampled from moto on a thread
  of their own, several times a period (the alarms here read them with Maximum), and
  ApproximateAgeOfOldestMessage from the messages the runtime's SQS pollers received: the
  SentTimestamp of the oldest message not yet deleted and received fewer than 3 times (SQS leaves
  those out too). A queue nobody consumes gets no age datapoint: moto does not expose its
  messages without receiving them.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import re
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from infra.local.cloudformation.deploy import DeployedStack
from infra.local.cloudformation.intrinsics import UnresolvableError
from infra.local.cloudwatch.alarms import (
    AlarmBoard,
    AlarmDefinition,
    MetricKey,
    MetricStore,
    Transition,
    UnsupportedAlarm,
    actions_for,
    alarm_definition,
)
from infra.local.lambda_.pool import Invocation
from infra.local.pipes.stream_pipe import PipeExecution
from infra.local.runtime.aws import ACCOUNT_ID, AwsEndpoint
from infra.local.runtime.threads import BackgroundThreads

logger = logging.getLogger(__name__)

NOMINAL_MINUTE = 60.0
AGE_RECEIVES_LEFT_OUT = 3
_DEFAULT_STAGE = "$default"
_QUEUE_DEPTHS = {
    "ApproximateNumberOfMessages": "ApproximateNumberOfMessagesVisible",
    "ApproximateNumberOfMessagesNotVisible": "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed": "ApproximateNumberOfMessagesDelayed",
}


def emf_datapoints(line: str) -> list[tuple[MetricKey, float, float]]:
    """(metric, timestamp seconds, value) of one EMF log line; [] for any other line."""
    start = line.find('{"_aws"')
    if start < 0:
        return []
    try:
        document = json.loads(line[start:])
        metadata = document["_aws"]
        at = float(metadata["Timestamp"]) / 1000
        directives = metadata["CloudWatchMetrics"]
    except (ValueError, KeyError, TypeError):
        return []
    found: list[tuple[MetricKey, float, float]] = []
    for directive in directives:
        for dimension_names in directive.get("Dimensions", [[]]):
            dimensions = frozenset((name, str(document.get(name, ""))) for name in dimension_names)
            for metric in directive.get("Metrics", []):
                values = document.get(metric["Name"])
                for value in values if isinstance(values, list) else [values]:
                    if isinstance(value, int | float):
                        key = MetricKey(directive["Namespace"], metric["Name"], dimensions)
                        found.append((key, at, float(value)))
    return found


class EmfTail:
    """Reads what the function log files gained since the last call."""

    def __init__(self, log_dir: Path) -> None:
        self._log_dir = log_dir
        self._offsets: dict[Path, int] = {}
        self._partial: dict[Path, str] = {}

    def collect(self, store: MetricStore) -> None:
        for path in sorted(self._log_dir.glob("*.log")):
            for line in self._new_lines(path):
                for key, at, value in emf_datapoints(line):
                    store.put(key, at, value)

    def _new_lines(self, path: Path) -> list[str]:
        with path.open("rb") as log:
            log.seek(self._offsets.get(path, 0))
            data = log.read()
        self._offsets[path] = self._offsets.get(path, 0) + len(data)
        text = self._partial.pop(path, "") + data.decode("utf-8", errors="replace")
        lines = text.split("\n")
        if lines[-1]:
            self._partial[path] = lines[-1]
        return lines[:-1]


@dataclass(frozen=True)
class FilterTerm:
    field: str
    equal: bool
    value: str | float


_TERM = re.compile(r'^\$\.([A-Za-z0-9_.]+)\s*(=|!=)\s*(?:"([^"]*)"|(-?[0-9.]+))$')


def parse_json_filter(pattern: str) -> list[FilterTerm]:
    """`{ $.a = "x" && $.b != 429 }`: the CloudWatch Logs JSON filter subset the template uses."""
    text = pattern.strip()
    if not (text.startswith("{") and text.endswith("}")):
        raise UnsupportedAlarm(f"filter pattern {pattern!r}: only JSON patterns")
    terms: list[FilterTerm] = []
    for part in text[1:-1].split("&&"):
        match = _TERM.match(part.strip().strip("()").strip())
        if match is None:
            raise UnsupportedAlarm(f"filter pattern term {part.strip()!r}")
        field_name, operator, text_value, number = match.groups()
        value: str | float = text_value if text_value is not None else float(number)
        terms.append(FilterTerm(field_name, operator == "=", value))
    return terms


def filter_matches(terms: Sequence[FilterTerm], record: Mapping[str, Any]) -> bool:
    for term in terms:
        actual = record.get(term.field)
        if isinstance(term.value, float):
            try:
                same = float(actual) == term.value  # type: ignore[arg-type]
            except (TypeError, ValueError):
                same = False
        else:
            same = fnmatch.fnmatchcase(str(actual), term.value)
        if same != term.equal:
            return False
    return True


@dataclass(frozen=True)
class MetricFilter:
    terms: tuple[FilterTerm, ...]
    metric: MetricKey
    value: float
    default_value: float | None

    def apply(self, record: Mapping[str, Any], at: float, store: MetricStore) -> None:
        if filter_matches(self.terms, record):
            store.put(self.metric, at, self.value)
        elif self.default_value is not None:
            store.put(self.metric, at, self.default_value)


class SqsAges:
    """What the runtime's SQS pollers saw of each queue's messages, for the age of the oldest."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, dict[str, tuple[float, int]]] = {}

    def received(self, queue_url: str, messages: Iterable[Mapping[str, Any]]) -> None:
        with self._lock:
            seen = self._seen.setdefault(queue_url, {})
            for message in messages:
                attributes = message.get("Attributes", {})
                sent = float(attributes.get("SentTimestamp", time.time() * 1000)) / 1000
                receives = int(attributes.get("ApproximateReceiveCount", 1))
                seen[message["MessageId"]] = (sent, receives)

    def deleted(self, queue_url: str, message_ids: Iterable[str]) -> None:
        with self._lock:
            seen = self._seen.get(queue_url, {})
            for message_id in message_ids:
                seen.pop(message_id, None)

    def oldest_age(self, queue_url: str, now: float, queue_empty: bool) -> float | None:
        with self._lock:
            seen = self._seen.setdefault(queue_url, {})
            if queue_empty:
                seen.clear()
                return 0.0
            counted = [sent for sent, receives in seen.values() if receives < AGE_RECEIVES_LEFT_OUT]
            return max(0.0, now - min(counted)) if counted else None


@dataclass(frozen=True)
class WatchedQueue:
    url: str
    name: str


class LocalCloudWatch:
    """Collects the metrics, evaluates the stack's alarms, publishes and records state changes."""

    def __init__(
        self,
        stack: DeployedStack,
        endpoint: AwsEndpoint,
        log_dir: Path,
        time_scale: float,
        function_names: Mapping[str, str],
        store: MetricStore | None = None,
    ) -> None:
        # The account's metrics: stacks deployed in one account and region share one store, as
        # they share CloudWatch; each stack evaluates its own alarms on it.
        self.store = MetricStore() if store is None else store
        self.sqs_ages = SqsAges()
        self._endpoint = endpoint
        self._time_scale = time_scale
        self._function_names = dict(function_names)
        self._emf = EmfTail(log_dir)
        self._queues = _queues(stack)
        self._api_ids = [
            stack.resources.physical_id(logical_id)
            for logical_id, _ in stack.resources_of_type("AWS::ApiGatewayV2::Api")
        ]
        self._access_filters = _access_log_filters(stack)
        self._board = AlarmBoard(
            _definitions(stack),
            self.store,
            time_scale,
            origin=time.time(),
            lag_seconds=max(1.0, NOMINAL_MINUTE / time_scale / 2),
        )
        self._definitions = {definition.name: definition for definition in self._board.definitions}
        self._lock = threading.Lock()
        self._threads = BackgroundThreads()
        self._clients: tuple[Any, Any] | None = None

    @property
    def definitions(self) -> list[AlarmDefinition]:
        return list(self._board.definitions)

    def start(self) -> None:
        """Periods start now: the triggers have just started (a new alarm starts here too)."""
        with self._lock:
            self._board.origin = time.time()
        # Queue depths are sampled on their own, so that a slow evaluation leaves no period
        # without a sample (a missing datapoint reads as 0 through FILL).
        self._threads.start(self._run, name="local-cloudwatch")
        self._threads.start(self._sample, name="local-cloudwatch-sqs")

    def stop(self, timeout: float) -> None:
        self._threads.stop(timeout)

    def record_invocation(self, logical_id: str, invocation: Invocation) -> None:
        name = self._function_names.get(logical_id)
        if name is None:
            return
        now = time.time()
        for metric, value in (
            ("Invocations", 1.0),
            ("Errors", 0.0 if invocation.ok else 1.0),
            ("Throttles", 0.0),
            ("Duration", invocation.duration_ms),
        ):
            self.store.put(MetricKey.of("AWS/Lambda", metric, FunctionName=name), now, value)

    def record_pipe_execution(self, pipe_name: str, execution: PipeExecution) -> None:
        """Each metric under the dimensions AWS documents for it: Invocations under AwsAccountId
        and PipeName, the others under PipeName alone (a PipeName-only query of Invocations
        reads nothing). https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-monitoring.html
        """
        now = time.time()
        self.store.put(
            MetricKey.of(
                "AWS/EventBridge/Pipes", "Invocations", AwsAccountId=ACCOUNT_ID, PipeName=pipe_name
            ),
            now,
            1.0,
        )
        for metric, value in (
            ("ExecutionFailed", 1.0 if execution.failed else 0.0),
            ("EventCount", float(execution.events)),
            ("Duration", execution.duration_ms),
        ):
            key = MetricKey.of("AWS/EventBridge/Pipes", metric, PipeName=pipe_name)
            self.store.put(key, now, value)

    def record_request(self, route_key: str | None, status: int) -> None:
        """One answer of the local gateway (route_key None: no route matched)."""
        now = time.time()
        for api_id in self._api_ids:
            dimension_sets = [{"ApiId": api_id}, {"ApiId": api_id, "Stage": _DEFAULT_STAGE}]
            if route_key is not None:
                dimension_sets.append(
                    {"ApiId": api_id, "Stage": _DEFAULT_STAGE, "Route": route_key}
                )
            for dimensions in dimension_sets:
                for metric, value in (
                    ("Count", 1.0),
                    ("4xx", float(400 <= status < 500)),
                    ("5xx", float(status >= 500)),
                ):
                    self.store.put(MetricKey.of("AWS/ApiGateway", metric, **dimensions), now, value)
        record = {"routeKey": route_key or "-", "status": str(status)}
        for metric_filter in self._access_filters:
            metric_filter.apply(record, now, self.store)

    def states(self) -> dict[str, str]:
        with self._lock:
            return dict(self._board.states)

    def history(self) -> list[Transition]:
        with self._lock:
            return list(self._board.history)

    def report(self) -> dict[str, Any]:
        with self._lock:
            return {
                "time_scale": self._time_scale,
                "origin": self._board.origin,
                "states": dict(self._board.states),
                "history": [change.to_json() for change in self._board.history],
                "alarms": {
                    definition.name: {
                        "logical_id": definition.logical_id,
                        "period": definition.period,
                        "evaluation_periods": definition.evaluation_periods,
                    }
                    for definition in self._board.definitions
                },
            }

    def tick(self, now: float) -> list[Transition]:
        """Collect the new EMF lines, evaluate every alarm, publish the state changes."""
        self._emf.collect(self.store)
        with self._lock:
            changes = self._board.evaluate(now)
        for change in changes:
            self._publish(change)
        return changes

    def _run(self) -> None:
        while not self._threads.stopping.wait(self._interval):
            try:
                self.tick(time.time())
            except (BotoCoreError, ClientError, OSError) as failure:
                if not self._threads.stopping.is_set():
                    logger.warning("alarm evaluation failed: %s", failure)

    @property
    def _interval(self) -> float:
        return min(NOMINAL_MINUTE / self._time_scale / 4, 5.0)

    def _sample(self) -> None:
        sqs = self._endpoint.client("sqs")
        while not self._threads.stopping.wait(self._interval):
            for queue in self._queues:
                try:
                    self._sample_queue(sqs, queue)
                except (BotoCoreError, ClientError) as failure:
                    if not self._threads.stopping.is_set():
                        logger.warning("queue %s not sampled: %s", queue.name, failure)

    def _sample_queue(self, sqs: Any, queue: WatchedQueue) -> None:
        attributes = sqs.get_queue_attributes(
            QueueUrl=queue.url, AttributeNames=list(_QUEUE_DEPTHS)
        )["Attributes"]
        now = time.time()
        for attribute, metric in _QUEUE_DEPTHS.items():
            value = float(attributes.get(attribute, 0))
            self.store.put(MetricKey.of("AWS/SQS", metric, QueueName=queue.name), now, value)
        empty = not any(int(attributes.get(name, 0)) for name in _QUEUE_DEPTHS)
        age = self.sqs_ages.oldest_age(queue.url, now, empty)
        if age is not None:
            self.store.put(
                MetricKey.of("AWS/SQS", "ApproximateAgeOfOldestMessage", QueueName=queue.name),
                now,
                age * self._time_scale,
            )

    def _publish_clients(self) -> tuple[Any, Any]:
        """The CloudWatch and SNS clients of the evaluation thread, made on first use."""
        if self._clients is None:
            self._clients = (self._endpoint.client("cloudwatch"), self._endpoint.client("sns"))
        return self._clients

    def _publish(self, change: Transition) -> None:
        definition = self._definitions[change.alarm]
        logger.info("alarm %s: %s -> %s", change.alarm, change.old_state, change.new_state)
        cloudwatch, sns = self._publish_clients()
        try:
            cloudwatch.set_alarm_state(
                AlarmName=change.alarm, StateValue=change.new_state, StateReason=change.reason
            )
        except ClientError as failure:
            logger.warning("alarm %s: state not stored in moto: %s", change.alarm, failure)
        message = json.dumps(_notification(definition, change, self._endpoint.region))
        for topic_arn in actions_for(definition, change.new_state):
            try:
                sns.publish(
                    TopicArn=topic_arn,
                    Subject=f'{change.new_state}: "{change.alarm}"'[:100],
                    Message=message,
                )
            except ClientError as failure:
                logger.warning(
                    "alarm %s: not published to %s: %s", change.alarm, topic_arn, failure
                )


def _notification(definition: AlarmDefinition, change: Transition, region: str) -> dict[str, Any]:
    """The JSON CloudWatch sends to SNS for an alarm state change (the fields read by people)."""
    return {
        "AlarmName": change.alarm,
        "AlarmDescription": definition.description,
        "AWSAccountId": ACCOUNT_ID,
        "NewStateValue": change.new_state,
        "NewStateReason": change.reason,
        "StateChangeTime": time.strftime("%Y-%m-%dT%H:%M:%S.000+0000", time.gmtime(change.at)),
        "Region": region,
        "AlarmArn": f"arn:aws:cloudwatch:{region}:{ACCOUNT_ID}:alarm:{change.alarm}",
        "OldStateValue": change.old_state,
    }


def _definitions(stack: DeployedStack) -> list[AlarmDefinition]:
    found: list[AlarmDefinition] = []
    for logical_id, definition in stack.resources_of_type("AWS::CloudWatch::Alarm"):
        name = stack.resources.physical_id(logical_id)
        try:
            properties = stack.resolver.resolve(definition.get("Properties", {}))
            found.append(alarm_definition(name, logical_id, properties))
        except (UnsupportedAlarm, KeyError, ValueError) as unsupported:
            logger.warning("%s is not evaluated locally: %s", logical_id, unsupported)
    return found


def _queues(stack: DeployedStack) -> list[WatchedQueue]:
    return [
        WatchedQueue(url, url.rstrip("/").rsplit("/", 1)[-1])
        for url in (
            stack.resources.physical_id(logical_id)
            for logical_id, _ in stack.resources_of_type("AWS::SQS::Queue")
        )
    ]


def _access_log_filters(stack: DeployedStack) -> list[MetricFilter]:
    """The MetricFilters of a log group some HTTP API writes its access log to."""
    access_groups = set()
    for _, definition in stack.resources_of_type("AWS::ApiGatewayV2::Stage"):
        try:
            properties = stack.resolver.resolve(definition.get("Properties", {}))
        except UnresolvableError:
            continue
        settings = properties.get("AccessLogSettings", {})
        if "DestinationArn" in settings:
            arn = str(settings["DestinationArn"])
            access_groups.add(arn.rsplit(":log-group:", maxsplit=1)[-1].removesuffix(":*"))
    found: list[MetricFilter] = []
    for logical_id, definition in stack.resources_of_type("AWS::Logs::MetricFilter"):
        properties = stack.resolver.resolve(definition.get("Properties", {}))
        if str(properties["LogGroupName"]) not in access_groups:
            logger.warning("%s: only filters of an API access log are applied locally", logical_id)
            continue
        try:
            terms = tuple(parse_json_filter(str(properties["FilterPattern"])))
        except UnsupportedAlarm as unsupported:
            logger.warning("%s is not applied locally: %s", logical_id, unsupported)
            continue
        for transformation in properties["MetricTransformations"]:
            default = transformation.get("DefaultValue")
            found.append(
                MetricFilter(
                    terms,
                    MetricKey(
                        str(transformation["MetricNamespace"]),
                        str(transformation["MetricName"]),
                        frozenset(
                            (str(item["Key"]), str(item["Value"]))
                            for item in transformation.get("Dimensions", [])
                        ),
                    ),
                    float(transformation["MetricValue"]),
                    float(default) if default is not None else None,
                )
            )
    return found
