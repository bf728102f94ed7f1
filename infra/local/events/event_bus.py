"""The stack's EventBridge buses, locally: PutEvents, rule matching, and delivery to the rules'
function targets, invoked asynchronously like Lambda does for EventBridge, and to the SQS queue
targets of rules made on a bus at run time (RunTimeRules: an operator's PutRule/PutTargets
against moto, as `pingback-guard smoke` does). One matcher serves both.

Each target has a delivery lane of its own, as on AWS where one target's slowness never holds
another's events back: a function target gets as many deliveries at once as it has workers, and the
queue targets of run-time rules share one lane. With one lane for every target, the soak's push
function got its events minutes late behind the result consumer's.

The stack's invoker hands a function target's event to the function's asynchronous queue
(infra/local/lambda_/async_invocations.py: Lambda's own retries and on-failure destination), so
a delivery ends once Lambda accepted it. A delivery that failed is retried LAMBDA_ASYNC_RETRIES
times, 1 and 2 minutes later, NOT divided by the time scale; then the event is dropped and
counted.
A function target is invoked as events.amazonaws.com, which the function's resource policy
(AWS::Lambda::Permission) must allow for the rule (its aws:SourceArn), as on AWS
(https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-use-resource-based.html#eb-lambda-permissions).
A delivery it refuses is dropped at once, never retried: "for errors that result from missing
permissions to a target ... EventBridge sends these events directly to the DLQ, if you have
one" (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-dlq.html; rule DLQs are
not emulated).
Events put locally stay in this process (moto's bus is not involved): `published()` is the log
of the last PUBLISHED_LOG_LIMIT events. An entry larger than PUT_EVENTS_ENTRY_BYTES is refused
(no event id, never delivered, logged), as PutEvents refuses it.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import queue
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from infra.local.apigateway.gateway import Invoker
from infra.local.events.event_patterns import matches, parse_pattern
from infra.local.events.event_sources import LAMBDA_ASYNC_RETRIES, RuleSpec
from infra.local.lambda_.pool import PoolClosed
from infra.local.runtime.aws import ACCOUNT_ID
from infra.local.runtime.stats import SharedStats
from infra.local.runtime.threads import BackgroundThreads

logger = logging.getLogger(__name__)

LAMBDA_ASYNC_RETRY_DELAYS_SECONDS = (60.0, 120.0)
_WAIT_SECONDS = 0.2
PUBLISHED_LOG_LIMIT = 100_000
_REFUSED_BY_POLICY = "AccessDenied (queue policy)"
QUEUE_TARGETS_LANE = "sqs"
QUEUE_TARGETS_WORKERS = 2
# 1 MB since 2026-01-29 (256 KB before):
# https://aws.amazon.com/blogs/compute/more-room-to-build-serverless-services-now-support-payloads-up-to-1-mb
# measured as https://docs.aws.amazon.com/eventbridge/latest/userguide/calculate-putevents-entry-size.html
PUT_EVENTS_ENTRY_BYTES = 1024 * 1024
RUN_TIME_RULES_REFRESH_SECONDS = 1.0


@dataclass(frozen=True)
class BusEntry:
    """One PutEvents entry."""

    bus_name: str
    source: str
    detail_type: str
    detail: dict[str, Any]
    resources: tuple[str, ...] = ()

    @property
    def size(self) -> int:
        """EventBridge's measure: Source, DetailType, Detail and each resource in UTF-8 (no Time
        is sent here)."""
        parts = (self.source, self.detail_type, json.dumps(self.detail), *self.resources)
        return sum(len(part.encode()) for part in parts)


@dataclass(frozen=True)
class _Delivery:
    rule: RuleSpec
    target: str
    """A local function's logical id, or an SQS queue's ARN (one of ``rule.queues``)."""
    event: dict[str, Any]
    attempt: int = 0


class RunTimeRules:
    """Rules on a bus that the template does not declare, with their SQS queue targets, read from
    moto at most once per `refresh_seconds` per bus: as on AWS, a new or changed rule matches a
    short while after PutRule ("Allow a short period of time for changes to take effect":
    https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutRule.html). Reading them
    at every PutEvents cost the pipe a moto round trip per batch of 10 results, and the soak's
    results reached the bus seconds after their write. EventBridge sends a queue the event as
    JSON, and only when the queue's policy lets events.amazonaws.com send for that rule: a queue
    without such a policy never gets the event (counted as dropped), as on AWS."""

    def __init__(
        self,
        new_client: Callable[[str], Any],
        template_rules: Iterable[str],
        refresh_seconds: float = RUN_TIME_RULES_REFRESH_SECONDS,
    ) -> None:
        self._events = new_client("events")
        self._sqs = new_client("sqs")
        self._template_rules = frozenset(template_rules)
        self._refresh_seconds = refresh_seconds
        self._read: dict[str, tuple[float, list[RuleSpec]]] = {}
        self._lock = threading.Lock()

    def on_bus(self, bus_name: str) -> list[RuleSpec]:
        with self._lock:
            read_at, rules = self._read.get(bus_name, (float("-inf"), []))
            if time.monotonic() - read_at < self._refresh_seconds:
                return rules
            rules = self._read_rules(bus_name)
            self._read[bus_name] = (time.monotonic(), rules)
            return rules

    def _read_rules(self, bus_name: str) -> list[RuleSpec]:
        found: list[RuleSpec] = []
        for rule in self._events.list_rules(EventBusName=bus_name).get("Rules", []):
            name = rule["Name"]
            enabled = rule.get("State", "ENABLED") == "ENABLED" and "EventPattern" in rule
            if name in self._template_rules or not enabled:
                continue
            targets = self._events.list_targets_by_rule(Rule=name, EventBusName=bus_name)
            queues = tuple(
                target["Arn"] for target in targets.get("Targets", []) if _is_plain_queue(target)
            )
            pattern = parse_pattern(rule["EventPattern"])
            found.append(RuleSpec(name, name, rule["Arn"], bus_name, pattern, (), queues))
        return found

    def send(self, rule_arn: str, queue_arn: str, event: dict[str, Any]) -> bool:
        """False when the queue's policy does not let EventBridge send for this rule."""
        *_, account, name = queue_arn.split(":")
        url = self._sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)["QueueUrl"]
        attributes = self._sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Policy"])
        policy = attributes.get("Attributes", {}).get("Policy")
        if not lets_eventbridge_send(policy, queue_arn, rule_arn):
            return False
        self._sqs.send_message(QueueUrl=url, MessageBody=json.dumps(event))
        return True


def _is_plain_queue(target: Mapping[str, Any]) -> bool:
    if not str(target.get("Arn", "")).startswith("arn:aws:sqs:"):
        logger.warning("rule target %s is not an SQS queue: not delivered", target.get("Id"))
        return False
    if any(key in target for key in ("Input", "InputPath", "InputTransformer")):
        logger.warning("rule target %s: input transformation is not emulated", target.get("Id"))
        return False
    return True


def lets_eventbridge_send(policy: str | None, queue_arn: str, rule_arn: str) -> bool:
    """A statement allows events.amazonaws.com sqs:SendMessage on the queue, for this rule (its
    aws:SourceArn condition, when it has one, names the rule)."""
    statements = json.loads(policy).get("Statement", []) if policy else []
    return any(
        _allows(statement, queue_arn, rule_arn)
        for statement in (statements if isinstance(statements, list) else [statements])
    )


def _allows(statement: Mapping[str, Any], queue_arn: str, rule_arn: str) -> bool:
    principal = statement.get("Principal", {})
    services = principal.get("Service", []) if isinstance(principal, Mapping) else []
    actions = statement.get("Action", [])
    resources = statement.get("Resource", [])
    conditions = statement.get("Condition", {})
    source_arns = [
        arn
        for operator in ("ArnEquals", "ArnLike")
        for arn in _listed(conditions.get(operator, {}).get("aws:SourceArn"))
    ]
    return (
        statement.get("Effect") == "Allow"
        and "events.amazonaws.com" in _listed(services)
        and bool({"sqs:SendMessage", "sqs:*", "*"} & set(_listed(actions)))
        and any(fnmatch.fnmatchcase(queue_arn, resource) for resource in _listed(resources))
        and (not source_arns or any(fnmatch.fnmatchcase(rule_arn, arn) for arn in source_arns))
    )


def _listed(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [str(item) for item in value] if isinstance(value, list) else []


@dataclass
class BusStats(SharedStats):
    put: int = 0
    deliveries: int = 0
    invocations: int = 0
    sent_to_queues: int = 0
    retried: int = 0
    dropped: int = 0
    refused: int = 0
    """Deliveries the target's resource policy refused (dropped too)."""


class LocalEventBus:
    def __init__(
        self,
        rules: Sequence[RuleSpec],
        invoke: Invoker,
        *,
        region: str,
        retry_delays: Sequence[float] = LAMBDA_ASYNC_RETRY_DELAYS_SECONDS,
        workers_of: Callable[[str], int] = lambda function: 2,
        run_time_rules: RunTimeRules | None = None,
        refusal: Callable[[RuleSpec, str], str | None] | None = None,
    ) -> None:
        """`refusal(rule, function)`: why AWS would not let the rule invoke that function target
        (None: it may)."""
        if len(retry_delays) < LAMBDA_ASYNC_RETRIES:
            raise ValueError(f"one retry delay per retry ({LAMBDA_ASYNC_RETRIES})")
        self._rules = list(rules)
        self._run_time_rules = run_time_rules
        self._invoke = invoke
        self._refusal = refusal
        self._region = region
        self._retry_delays = tuple(retry_delays)
        self._lane_workers = {
            **{function: workers_of(function) for rule in rules for function in rule.functions},
            QUEUE_TARGETS_LANE: QUEUE_TARGETS_WORKERS,
        }
        self._lanes: dict[str, queue.Queue[_Delivery]] = {
            lane: queue.Queue() for lane in self._lane_workers
        }
        self._published: deque[dict[str, Any]] = deque(maxlen=PUBLISHED_LOG_LIMIT)
        self._unfinished = 0
        self._finished_count = 0
        self._lock = threading.Lock()
        self._threads = BackgroundThreads()
        self._timers: set[threading.Timer] = set()
        self.stats = BusStats()

    def start(self) -> None:
        for lane, workers in self._lane_workers.items():
            for _ in range(workers):
                self._threads.start(self._deliver_forever, self._lanes[lane])

    def stop(self, timeout: float) -> None:
        with self._lock:
            for timer in self._timers:
                timer.cancel()
        self._threads.stop(timeout)

    def put_events(self, entries: Sequence[BusEntry]) -> list[str]:
        """Accept the entries (event ids returned, none for a refused one) and queue a delivery per
        matching target."""
        ids: list[str] = []
        rules_on: dict[str, list[RuleSpec]] = {}
        for entry in entries:
            if entry.size > PUT_EVENTS_ENTRY_BYTES:
                logger.warning(
                    "a %d-byte entry on %s refused: over 1 MB", entry.size, entry.bus_name
                )
                continue
            event = self._event(entry)
            ids.append(event["id"])
            if entry.bus_name not in rules_on:
                rules_on[entry.bus_name] = self._rules_on(entry.bus_name)
            targets = [
                (rule, target)
                for rule in rules_on[entry.bus_name]
                if matches(rule.pattern, event)
                for target in (*rule.functions, *rule.queues)
            ]
            with self._lock:
                self._published.append(event)
                self._unfinished += len(targets)
            self.stats.add(put=1, deliveries=len(targets))
            for rule, target in targets:
                self._enqueue(_Delivery(rule, target, event))
        return ids

    def _rules_on(self, bus_name: str) -> list[RuleSpec]:
        declared = [rule for rule in self._rules if rule.bus_name == bus_name]
        if self._run_time_rules is None:
            return declared
        try:
            return declared + self._run_time_rules.on_bus(bus_name)
        except (ClientError, BotoCoreError) as error:
            # A bus moto does not know has no rules of its own; the put itself still succeeds.
            logger.warning("rules on %s not read: %s", bus_name, type(error).__name__)
            return declared

    def published(self) -> list[dict[str, Any]]:
        """The events put so far (the last PUBLISHED_LOG_LIMIT), in order; they may carry
        tokens: never log them."""
        with self._lock:
            return list(self._published)

    def backlog(self) -> int:
        """Deliveries queued, running or waiting for a retry."""
        with self._lock:
            return self._unfinished

    def finished(self) -> int:
        """Deliveries ended so far (delivered, sent to a queue or dropped): only ever grows."""
        with self._lock:
            return self._finished_count

    def _event(self, entry: BusEntry) -> dict[str, Any]:
        return {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": entry.detail_type,
            "source": entry.source,
            "account": ACCOUNT_ID,
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "region": self._region,
            "resources": list(entry.resources),
            "detail": entry.detail,
        }

    def _enqueue(self, delivery: _Delivery) -> None:
        queued = delivery.target in delivery.rule.queues
        self._lanes[QUEUE_TARGETS_LANE if queued else delivery.target].put(delivery)

    def _deliver_forever(self, lane: queue.Queue[_Delivery]) -> None:
        while not self._threads.stopping.is_set():
            try:
                delivery = lane.get(timeout=_WAIT_SECONDS)
            except queue.Empty:
                continue
            try:
                self._deliver(delivery)
            except PoolClosed:
                return

    def _deliver(self, delivery: _Delivery) -> None:
        if delivery.target in delivery.rule.queues:
            error = self._send_to_queue(delivery)
        elif self._refused(delivery):
            self._finished()
            return
        else:
            invocation = self._invoke(delivery.target, delivery.event)
            self.stats.add(invocations=1)
            error = None if invocation.ok else str((invocation.error or {}).get("errorType"))
        if error is None or error == _REFUSED_BY_POLICY:
            self._finished()
            return
        if delivery.attempt >= LAMBDA_ASYNC_RETRIES:
            logger.warning(
                "%s -> %s: event %s dropped after %d attempts: %s",
                delivery.rule.logical_id,
                delivery.target,
                delivery.event["id"],
                delivery.attempt + 1,
                error,
            )
            self.stats.add(dropped=1)
            self._finished()
            return
        self.stats.add(retried=1)
        delay = self._retry_delays[delivery.attempt]
        self._retry_later(replace(delivery, attempt=delivery.attempt + 1), delay)

    def _refused(self, delivery: _Delivery) -> bool:
        refusal = None if self._refusal is None else self._refusal(delivery.rule, delivery.target)
        if refusal is not None:
            logger.warning(
                "%s: event %s dropped: %s", delivery.rule.logical_id, delivery.event["id"], refusal
            )
            self.stats.add(refused=1, dropped=1)
        return refusal is not None

    def _send_to_queue(self, delivery: _Delivery) -> str | None:
        """None when sent, else the error; a queue whose policy refuses is not tried again."""
        assert self._run_time_rules is not None  # queue targets come from it only
        try:
            sent = self._run_time_rules.send(delivery.rule.arn, delivery.target, delivery.event)
        except (ClientError, BotoCoreError) as error:
            return type(error).__name__
        if sent:
            self.stats.add(sent_to_queues=1)
            return None
        logger.warning(
            "%s -> %s: the queue's policy does not let EventBridge send for this rule: dropped",
            delivery.rule.name,
            delivery.target,
        )
        self.stats.add(dropped=1)
        return _REFUSED_BY_POLICY

    def _retry_later(self, delivery: _Delivery, delay: float) -> None:
        def enqueue() -> None:
            with self._lock:
                self._timers.discard(timer)
            self._enqueue(delivery)

        timer = threading.Timer(delay, enqueue)
        timer.daemon = True
        with self._lock:
            self._timers.add(timer)
        timer.start()

    def _finished(self) -> None:
        with self._lock:
            self._unfinished -= 1
            self._finished_count += 1
