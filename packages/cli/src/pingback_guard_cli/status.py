"""`status`: is anything wrong? Queues, alarms, the result events pipe's state, the due index and
the last hour's metrics."""

from __future__ import annotations

import datetime
import time
from dataclasses import asdict, dataclass
from typing import Any

from pingback_guard_cli.stack import DUE_INDEX, METRICS_SERVICE, Aws, Stack, metrics_namespace

# Metric names of docs/architecture.md, grouped as the operator reads them.
HOURLY_METRICS = {
    "recovered": ("PollRecovered",),
    "expired": ("TaskExpired",),
    "conflict": ("CallbackConflict", "ReplayConflict", "PollConflict"),
    "503": ("CallbackUnavailable", "SubmitNotRecorded"),
}
_QUEUE_OUTPUTS = {"dead-letter": "DeadLetterQueueUrl", "parking": "ParkingQueueUrl"}
# Pipes turns a pipe off after persistent errors; its metrics then go silent, so its state is read.
_PIPE_DOWN_STATES = frozenset({"STOPPED", "STOPPING"})


NO_QUEUE_METRICS = (
    "oldest message: no CloudWatch datapoint in the last 10 min (a local endpoint such as moto"
    " keeps no AWS/SQS metrics)"
)
NO_CUSTOM_METRICS = (
    "last hour: CloudWatch has no metric in the stack's namespace at all (a local endpoint such as"
    " moto keeps none, or nothing was counted in the last two weeks), so no figure"
)
NO_PIPE_STATE = (
    "result events pipe: the endpoint lists no pipe from the tasks table to the result bus (a"
    " local endpoint such as moto runs none: the local stack publishes results itself), so no state"
)


@dataclass(frozen=True)
class QueueState:
    name: str
    visible: int
    in_flight: int
    oldest_age_seconds: float | None
    """From CloudWatch (AWS/SQS ApproximateAgeOfOldestMessage); None where there is no datapoint."""


@dataclass(frozen=True)
class Status:
    stack: str
    queues: list[QueueState]
    alarms_in_alarm: list[str]
    pipe_state: str | None
    """The result events pipe's CurrentState (RUNNING...); None where the endpoint has no pipe."""
    pending: int
    due: int
    last_hour: dict[str, float | None]
    """None: the endpoint has no such metric at all (see notes)."""

    @property
    def attention(self) -> list[str]:
        """Why the stack needs its operator; empty when healthy."""
        reasons = [f"alarm {name} is in ALARM" for name in self.alarms_in_alarm]
        reasons += [
            f"{queue.visible} message(s) waiting in the {queue.name} queue"
            for queue in self.queues
            if queue.visible
        ]
        if self.pipe_state in _PIPE_DOWN_STATES or (self.pipe_state or "").endswith("_FAILED"):
            reasons.append(
                f"the result events pipe is {self.pipe_state}: results are stored, not published"
            )
        return reasons

    @property
    def healthy(self) -> bool:
        return not self.attention

    @property
    def notes(self) -> list[str]:
        """Figures the endpoint could not give, and why."""
        notes = []
        if any(q.visible and q.oldest_age_seconds is None for q in self.queues):
            notes.append(NO_QUEUE_METRICS)
        if any(value is None for value in self.last_hour.values()):
            notes.append(NO_CUSTOM_METRICS)
        if self.pipe_state is None:
            notes.append(NO_PIPE_STATE)
        return notes

    def to_json(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "healthy": self.healthy,
            "attention": self.attention,
            "notes": self.notes,
        }


def read_status(aws: Aws, stack: Stack, now: float | None = None) -> Status:
    now = time.time() if now is None else now
    pending, due = due_counts(aws, stack, now)
    return Status(
        stack=stack.name,
        queues=[
            queue_state(aws, name, stack.output(key), now) for name, key in _QUEUE_OUTPUTS.items()
        ],
        alarms_in_alarm=alarms_in_alarm(aws, stack.name),
        pipe_state=pipe_state(aws, stack),
        pending=pending,
        due=due,
        last_hour=hourly_counts(aws, metrics_namespace(stack.name), now),
    )


def queue_state(aws: Aws, name: str, queue_url: str, now: float) -> QueueState:
    attributes = aws.client("sqs").get_queue_attributes(
        QueueUrl=queue_url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return QueueState(
        name=name,
        visible=int(attributes.get("ApproximateNumberOfMessages", 0)),
        in_flight=int(attributes.get("ApproximateNumberOfMessagesNotVisible", 0)),
        oldest_age_seconds=_oldest_age(aws, queue_url.rsplit("/", 1)[-1], now),
    )


def _oldest_age(aws: Aws, queue_name: str, now: float) -> float | None:
    answer = aws.client("cloudwatch").get_metric_statistics(
        Namespace="AWS/SQS",
        MetricName="ApproximateAgeOfOldestMessage",
        Dimensions=[{"Name": "QueueName", "Value": queue_name}],
        StartTime=_utc(now - 600),
        EndTime=_utc(now),
        Period=60,
        Statistics=["Maximum"],
    )
    points = sorted(answer.get("Datapoints", []), key=lambda point: point["Timestamp"])
    return float(points[-1]["Maximum"]) if points else None


def alarms_in_alarm(aws: Aws, stack_name: str) -> list[str]:
    return [name for name, state in alarm_states(aws, stack_name, "ALARM")]


def alarm_states(aws: Aws, stack_name: str, only: str | None = None) -> list[tuple[str, str]]:
    """(name, state) of the stack's alarms (named `<stack>-...`), by name; ``only`` one state."""
    paginator = aws.client("cloudwatch").get_paginator("describe_alarms")
    found: list[tuple[str, str]] = []
    selected = {"StateValue": only} if only else {}
    for page in paginator.paginate(AlarmNamePrefix=f"{stack_name}-", **selected):
        alarms = [*page.get("MetricAlarms", []), *page.get("CompositeAlarms", [])]
        # Checked again here: some endpoints (moto) ignore StateValue next to a name prefix.
        found.extend(
            (alarm["AlarmName"], alarm["StateValue"])
            for alarm in alarms
            if only is None or alarm["StateValue"] == only
        )
    return sorted(found)


def pipe_state(aws: Aws, stack: Stack) -> str | None:
    """The result events pipe's CurrentState: the pipe from the tasks table's stream to the result
    bus (ListPipes; its name is generated). None where the endpoint has no such pipe."""
    stream_of = f":table/{stack.output('TasksTableName')}/stream/"
    bus = f":event-bus/{stack.output('EventBusName')}"
    for page in aws.client("pipes").get_paginator("list_pipes").paginate():
        for pipe in page.get("Pipes", []):
            if stream_of in pipe.get("Source", "") and pipe.get("Target", "").endswith(bus):
                return str(pipe.get("CurrentState", "UNKNOWN"))
    return None


def due_counts(aws: Aws, stack: Stack, now: float) -> tuple[int, int]:
    """PENDING and due-now tasks: a COUNT Query per shard of the sparse due index, never a Scan."""
    client = aws.client("dynamodb")
    table = stack.output("TasksTableName")
    pending = due = 0
    for shard in range(stack.due_shards):
        pending += _count(client, table, "due_shard = :shard", {":shard": {"S": str(shard)}})
        due += _count(
            client,
            table,
            "due_shard = :shard AND due_at <= :now",
            {":shard": {"S": str(shard)}, ":now": {"N": repr(now)}},
        )
    return pending, due


def _count(client: Any, table: str, condition: str, values: dict[str, Any]) -> int:
    request: dict[str, Any] = {
        "TableName": table,
        "IndexName": DUE_INDEX,
        "Select": "COUNT",
        "KeyConditionExpression": condition,
        "ExpressionAttributeValues": values,
    }
    total = 0
    while True:
        page = client.query(**request)
        total += int(page.get("Count", 0))
        if "LastEvaluatedKey" not in page:
            return total
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def hourly_counts(aws: Aws, namespace: str, now: float) -> dict[str, float | None]:
    """Each label's sum over the last hour; None for all when the namespace has no metric."""
    cloudwatch = aws.client("cloudwatch")
    if not cloudwatch.list_metrics(Namespace=namespace).get("Metrics"):
        return dict.fromkeys(HOURLY_METRICS)
    queries = [
        {
            "Id": f"m{index}",
            "MetricStat": {
                "Metric": {
                    "Namespace": namespace,
                    "MetricName": metric,
                    "Dimensions": [{"Name": "service", "Value": METRICS_SERVICE}],
                },
                "Period": 3600,
                "Stat": "Sum",
            },
            "ReturnData": True,
        }
        for index, metric in enumerate(_all_metrics())
    ]
    answer = cloudwatch.get_metric_data(
        MetricDataQueries=queries, StartTime=_utc(now - 3600), EndTime=_utc(now)
    )
    metric_of = {query["Id"]: metric for query, metric in zip(queries, _all_metrics(), strict=True)}
    by_metric = dict.fromkeys(_all_metrics(), 0.0)
    for result in answer["MetricDataResults"]:
        by_metric[metric_of[result["Id"]]] += sum(result.get("Values", []))
    return {
        label: float(sum(by_metric[metric] for metric in metrics))
        for label, metrics in HOURLY_METRICS.items()
    }


def _all_metrics() -> list[str]:
    return [metric for metrics in HOURLY_METRICS.values() for metric in metrics]


def _utc(epoch: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(epoch, tz=datetime.UTC)
