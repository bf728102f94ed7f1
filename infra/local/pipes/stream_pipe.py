"""An EventBridge Pipe from a DynamoDB stream to an event bus, run against moto's stream.

Like Pipes: reads each shard in order (GetShardIterator, GetRecords pages of up to 1,000
records, the API's most) from the starting position, keeps the records its filters match, cuts
them into batches of BatchSize, renders the input template per record, and puts the events on
the bus. Reading pages of BatchSize raw records instead (most of which the filters drop) made the
local pipe fall minutes behind the table at the soak's 8 tasks a second, and every push late.
A batch that fails is retried whole (MaximumRetryAttempts, -1 = forever),
then its description goes to the dead-letter queue. Batch bisection is not emulated.
Each execution (a batch with records the filters kept) is reported to `on_execution`, for the
AWS/EventBridge/Pipes metrics. `set_running(False)` is StopPipe: the pipe reads nothing until
started again, from where it stopped (the state Pipes leaves a pipe in after persistent errors).
`duplicate_rate` re-puts a delivered batch as new events with that probability: at-least-once
made visible, as a retried PutEvents whose first answer was lost would.
`first_published()` says, per item, when the write behind its first published event happened
(the record's ApproximateCreationDateTime, to moto's microsecond; AWS rounds it down to the
second) and when that event was on the bus: the pipe's own delay, and the moment a consumer's
latency is counted from.
The pipe acts with its own role (RoleArn), as on AWS
(https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-permissions.html): with an
`authorizer`, its stream reads (dynamodb:DescribeStream, GetShardIterator, GetRecords), its
PutEvents to the target bus and its dead-letter SendMessage are authorized as that role. A read
refused is a stream the pipe cannot read (nothing published); a PutEvents refused fails the
execution, which is retried and then dead-lettered like any target failure ("Insufficient
permissions on the pipe to invoke the target" is a customer invocation error:
https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-error-troubleshooting.html).
"""

from __future__ import annotations

import base64
import datetime
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from infra.local.events.event_bus import BusEntry
from infra.local.events.event_patterns import matches
from infra.local.events.event_sources import PipeSpec
from infra.local.iam.authorizer import Authorizer
from infra.local.iam.calls import ApiCall
from infra.local.iam.service_roles import authorized_client
from infra.local.pipes.input_template import TemplateOutputError, render_detail
from infra.local.runtime.stats import SharedStats
from infra.local.runtime.threads import BackgroundThreads

logger = logging.getLogger(__name__)

PutEvents = Callable[[Sequence[BusEntry]], list[str]]
RUNNING = "RUNNING"
STOPPED = "STOPPED"
_POLL_SECONDS = 0.25
# https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_streams_GetRecords.html
_GET_RECORDS_LIMIT = 1000
_PUT_EVENTS_MAX_ENTRIES = 10
_MAX_BACKOFF_SECONDS = 5.0


class _ExecutionFailed(RuntimeError):
    pass


@dataclass
class PipeStats(SharedStats):
    records: int = 0
    matched: int = 0
    published: int = 0
    duplicates_injected: int = 0
    failed_executions: int = 0
    dead_lettered_batches: int = 0
    caught_up: bool = False
    state: str = RUNNING

    def mark_caught_up(self, caught_up: bool) -> None:
        with self._lock:
            self.caught_up = caught_up

    def mark_state(self, state: str) -> None:
        with self._lock:
            self.state = state


@dataclass(frozen=True)
class PublishedWrite:
    """An item's first published record: when it was written, when its event was on the bus."""

    written_at: float
    published_at: float


@dataclass(frozen=True)
class PipeExecution:
    """One execution of a pipe: the events it carried, whether it failed, how long it took."""

    events: int
    failed: bool
    duration_ms: float


def stream_record(raw: Mapping[str, Any], stream_arn: str) -> dict[str, Any]:
    """A GetRecords record as Pipes hands it on: JSON only, with the source ARN."""
    return {**_jsonable(dict(raw)), "eventSourceARN": stream_arn}


def item_key(record: Mapping[str, Any]) -> str:
    """The record's item key values, in key-attribute order of name, joined by '|'."""
    keys = record["dynamodb"]["Keys"]
    return "|".join(str(next(iter(keys[name].values()))) for name in sorted(keys))


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_jsonable(item) for item in value]
    if isinstance(value, datetime.datetime):
        return value.timestamp()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value


class StreamPipe:
    def __init__(
        self,
        spec: PipeSpec,
        *,
        new_client: Callable[[str], Any],
        put_events: PutEvents,
        duplicate_rate: float = 0.0,
        seed: int | None = None,
        on_execution: Callable[[PipeExecution], None] | None = None,
        authorizer: Authorizer | None = None,
    ) -> None:
        """`authorizer`: the pipe role's (None: its calls are not authorized)."""
        self.spec = spec
        self._authorizer = authorizer
        self._on_execution = on_execution
        self._running = threading.Event()
        self._running.set()
        self._new_client = new_client
        self._put_events = put_events
        self._duplicate_rate = duplicate_rate
        self._random = random.Random(seed)
        self._threads = BackgroundThreads()
        self.stats = PipeStats()
        self._first_published: dict[str, PublishedWrite] = {}
        self._first_published_lock = threading.Lock()

    def start(self) -> None:
        self._threads.start(self._run)

    def stop(self, timeout: float) -> None:
        self._threads.stop(timeout)

    def set_running(self, running: bool) -> None:
        """StartPipe / StopPipe: a stopped pipe keeps its place in the stream."""
        if running:
            self._running.set()
        else:
            self._running.clear()
        self.stats.mark_state(RUNNING if running else STOPPED)

    def first_published(self) -> dict[str, PublishedWrite]:
        with self._first_published_lock:
            return dict(self._first_published)

    def _run(self) -> None:
        streams = self._client("dynamodbstreams")
        iterators = self._shard_iterators(streams)
        while not self._threads.stopping.is_set():
            if not self._running.is_set():
                self.stats.mark_caught_up(False)
                self._threads.stopping.wait(_POLL_SECONDS)
                continue
            got_any = False
            for shard, iterator in list(iterators.items()):
                if not self._running.is_set():
                    break
                try:
                    page = streams.get_records(ShardIterator=iterator, Limit=_GET_RECORDS_LIMIT)
                except (BotoCoreError, ClientError) as failure:
                    logger.warning("%s: stream read failed: %s", self.spec.logical_id, failure)
                    continue
                iterators[shard] = page["NextShardIterator"]
                records = page.get("Records", [])
                if records:
                    got_any = True
                    self.stats.add(records=len(records))
                    for batch in self._batches(records):
                        self._execute_until_done(batch)
            self.stats.mark_caught_up(not got_any)
            if not got_any:
                self._threads.stopping.wait(_POLL_SECONDS)

    def _shard_iterators(self, streams: Any) -> dict[str, str]:
        while not self._threads.stopping.is_set():
            try:
                shards = streams.describe_stream(StreamArn=self.spec.stream_arn)[
                    "StreamDescription"
                ]["Shards"]
                return {
                    shard["ShardId"]: streams.get_shard_iterator(
                        StreamArn=self.spec.stream_arn,
                        ShardId=shard["ShardId"],
                        ShardIteratorType=self.spec.starting_position,
                    )["ShardIterator"]
                    for shard in shards
                }
            except (BotoCoreError, ClientError) as failure:
                logger.warning("%s: the stream is not readable: %s", self.spec.logical_id, failure)
                self._threads.stopping.wait(1.0)
        return {}

    def _batches(self, raw_records: Sequence[Mapping[str, Any]]) -> list[list[dict[str, Any]]]:
        """The records the filters keep, in stream order, BatchSize at a time."""
        records = (stream_record(raw, self.spec.stream_arn) for raw in raw_records)
        kept = [record for record in records if self._selected(record)]
        size = self.spec.batch_size
        return [kept[start : start + size] for start in range(0, len(kept), size)]

    def _execute_until_done(self, batch: list[dict[str, Any]]) -> None:
        attempt = 0
        while not self._threads.stopping.is_set():
            try:
                self._execute(batch)
                return
            except _ExecutionFailed as failure:
                self.stats.add(failed_executions=1)
                logger.warning("%s: execution failed: %s", self.spec.logical_id, failure)
            attempt += 1
            if 0 <= self.spec.maximum_retry_attempts < attempt:
                self._dead_letter(batch, attempt)
                return
            self._threads.stopping.wait(min(0.1 * 2**attempt, _MAX_BACKOFF_SECONDS))

    def _execute(self, selected: Sequence[Mapping[str, Any]]) -> None:
        started = time.monotonic()
        try:
            entries = [self._entry(record) for record in selected]
            self._refuse_unauthorized_put()
        except (TemplateOutputError, _ExecutionFailed) as failure:
            self._executed(len(selected), started, failed=True)
            raise _ExecutionFailed(str(failure)) from None
        self._put(entries)
        self._executed(len(selected), started, failed=False)
        self._note_published(selected)
        self.stats.add(matched=len(selected), published=len(entries))
        if self._duplicate_rate and self._random.random() < self._duplicate_rate:
            self._put(entries)
            self.stats.add(duplicates_injected=len(entries))

    def _note_published(self, records: Sequence[Mapping[str, Any]]) -> None:
        published_at = time.time()
        with self._first_published_lock:
            for record in records:
                written_at = record["dynamodb"].get("ApproximateCreationDateTime")
                if written_at is not None:
                    self._first_published.setdefault(
                        item_key(record), PublishedWrite(float(written_at), published_at)
                    )

    def _executed(self, events: int, started: float, failed: bool) -> None:
        if self._on_execution is not None:
            duration_ms = (time.monotonic() - started) * 1000
            self._on_execution(PipeExecution(events, failed, duration_ms))

    def _selected(self, record: Mapping[str, Any]) -> bool:
        return not self.spec.filters or any(matches(f, record) for f in self.spec.filters)

    def _entry(self, record: Mapping[str, Any]) -> BusEntry:
        spec = self.spec
        reserved = {
            "aws.pipes.pipe-arn": spec.arn,
            "aws.pipes.pipe-name": spec.name,
            "aws.pipes.source-arn": spec.stream_arn,
            "aws.pipes.target-arn": spec.target_arn,
            "aws.pipes.event.ingestion-time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "aws.pipes.event": dict(record),
            "aws.pipes.event.json": dict(record),
        }
        return BusEntry(
            bus_name=spec.bus_name,
            source=spec.source,
            detail_type=spec.detail_type,
            detail=render_detail(spec.input_template, record, reserved),
        )

    def _client(self, service: str) -> Any:
        client = self._new_client(service)
        if self._authorizer is None:
            return client
        return authorized_client(client, f"pipe {self.spec.name}", self._authorizer)

    def _refuse_unauthorized_put(self) -> None:
        if self._authorizer is None:
            return
        entries = [{"EventBusName": self.spec.target_arn}]
        refusal = self._authorizer.refusal(ApiCall("events", "PutEvents", {"Entries": entries}))
        if refusal is not None:
            raise _ExecutionFailed(f"AccessDeniedException: {refusal}")

    def _put(self, entries: Sequence[BusEntry]) -> None:
        for start in range(0, len(entries), _PUT_EVENTS_MAX_ENTRIES):
            self._put_events(entries[start : start + _PUT_EVENTS_MAX_ENTRIES])

    def _dead_letter(self, batch: Sequence[Mapping[str, Any]], attempts: int) -> None:
        """Like a stream source's failure destination: the batch's place, not its records."""
        self.stats.add(dead_lettered_batches=1)
        if self.spec.dead_letter_arn is None:
            logger.warning("%s: batch dropped after %d attempts", self.spec.logical_id, attempts)
            return
        sequence_numbers = [str(record["dynamodb"]["SequenceNumber"]) for record in batch]
        message = {
            "version": "1.0",
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "requestContext": {"pipeArn": self.spec.arn, "condition": "RetryAttemptsExhausted"},
            "DDBStreamBatchInfo": {
                "streamArn": self.spec.stream_arn,
                "startSequenceNumber": sequence_numbers[0],
                "endSequenceNumber": sequence_numbers[-1],
                "batchSize": len(batch),
                "approximateArrivalOfFirstRecord": batch[0]["dynamodb"].get(
                    "ApproximateCreationDateTime"
                ),
            },
        }
        # Pipes sends to the queue's ARN: the URL lookup is the twin's own, not the role's.
        queue_name = self.spec.dead_letter_arn.rsplit(":", 1)[-1]
        queue_url = self._new_client("sqs").get_queue_url(QueueName=queue_name)["QueueUrl"]
        try:
            self._client("sqs").send_message(QueueUrl=queue_url, MessageBody=json.dumps(message))
        except (BotoCoreError, ClientError) as failure:
            logger.warning("%s: batch not dead-lettered: %s", self.spec.logical_id, failure)
