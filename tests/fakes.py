"""Fakes of the three edges (task store, provider, dead-letter queue) for unit tests.

The fake store follows the same contract as DynamoDbTaskStore: one suite
(tests/integration/test_store_contract.py) runs against both, so a rule that holds here holds on
the real table.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from pingback_guard.data.connections import Connection, TooManyConnections
from pingback_guard.data.due_index import due_shard_of
from pingback_guard.data.key_threads import ThreadSlots
from pingback_guard.data.poller_state import PollerLeaseState
from pingback_guard.data.push_reads import ResultForPush, Subscription
from pingback_guard.data.request_budgets import minute_of, second_counter
from pingback_guard.domain.errors import (
    ConnectionGoneError,
    DeadLetterError,
    ForwardFailedError,
    ProviderBatchRefusedError,
    PushError,
    StoreUnavailableError,
)
from pingback_guard.domain.lease import HelperLoad, PollerLease
from pingback_guard.domain.request_budgets import BalanceReading, RequestLimits
from pingback_guard.domain.task import (
    CaptchaRequest,
    DueTask,
    IssuedPingbackUrl,
    NewTask,
    PingbackUrlClaim,
    RecordedSolution,
    RegistrationOutcome,
    ReportAttempt,
    ReportClaim,
    StoreOutcome,
    SubmissionOutcome,
    Task,
    TaskOrigin,
    TaskResult,
    TaskStatus,
    TokenLifetimes,
)
from pingback_guard.domain.worker_keys import (
    DEFAULT_THREADS,
    Dialect,
    WorkerKey,
    digest_of,
    new_key,
)
from pingback_guard.forward.addresses import IpAddress
from pingback_guard.kinds.registry import lifetime_seconds
from pingback_guard.logic.access import may_access
from pingback_guard.logic.poll_schedule import PollPolicy
from pingback_guard.provider.answers import ProviderAnswer, classify_part
from pingback_guard.queue.dead_letter import DeadLetter

# The template's defaults: reCAPTCHA, hCaptcha and GeeTest 120 s, Turnstile 300 s, a Cloudflare
# clearance 30 min.
TOKEN_LIFETIMES = TokenLifetimes(
    recaptcha=120.0, hcaptcha=120.0, turnstile=300.0, geetest=120.0, cloudflare_challenge=1800.0
)
# The template's ResultTtlDays default: how long an answer without a lifetime stays usable.
RESULT_TTL_SECONDS = 7 * 86400


class InMemoryTaskStore:
    def __init__(self, lifetimes: TokenLifetimes | None = None, due_shards: int = 8) -> None:
        self.tasks: dict[str, Task] = {}
        self.due_shards = due_shards
        self.helper_leases: dict[int, dict[str, object]] = {}
        self.fail_next: list[Exception] = []
        self.writes = 0
        self.lease: dict[str, object] = {}
        self.lifetimes = lifetimes or TOKEN_LIFETIMES
        self.token_lifetime_seconds: dict[str, float] = {}
        self.report_leases: dict[str, float] = {}
        self.rescheduled: list[str] = []
        # Per pingback URL nonce: "issued" (IssuedPingbackUrl), "registered_task",
        # "provisional_task".
        self.pingback_urls: dict[str, dict[str, object]] = {}
        self._lock = threading.Lock()

    def _maybe_fail(self) -> None:
        if self.fail_next:
            raise self.fail_next.pop(0)

    @contextmanager
    def _guarded(self) -> Iterator[None]:
        """Each write one at a time (the concurrent-writers race), failing when a test said so."""
        with self._lock:
            self._maybe_fail()
            yield

    def record_submission(self, task: NewTask) -> SubmissionOutcome:
        with self._guarded():
            self.writes += 1
            existing = self.tasks.get(task.task_id)
            if existing is not None and existing.submitted_at is not None:
                if existing.origin not in {TaskOrigin.REGISTER, TaskOrigin.SMOKE}:
                    return SubmissionOutcome.ALREADY_REGISTERED
                self._write_pending(task)
                return SubmissionOutcome.REGISTRATION_REPLACED
            return self._take_over(task, existing)

    def _take_over(self, task: NewTask, existing: Task | None) -> SubmissionOutcome:
        if existing is not None and task.nonce is not None and existing.nonce == task.nonce:
            self.tasks[task.task_id] = replace(
                existing,
                request=task.request,
                submitted_at=task.submitted_at,
                owner=task.owner,
                origin=task.origin,
                forward_url=task.forward_url,
                provider_account=task.provider_account,
            )
            return SubmissionOutcome.RESULT_ALREADY_STORED
        self._write_pending(task)
        if existing is not None:
            return SubmissionOutcome.PROVISIONAL_DISCARDED
        return SubmissionOutcome.CREATED

    def _write_pending(self, task: NewTask) -> None:
        lifetime = lifetime_seconds(self.lifetimes, task.request.method)
        self.token_lifetime_seconds[task.task_id] = (
            RESULT_TTL_SECONDS if lifetime is None else lifetime
        )
        self.tasks[task.task_id] = Task(
            task.task_id,
            TaskStatus.PENDING,
            task.request,
            task.submitted_at,
            None,
            None,
            None,
            None,
            0,
            task.first_poll_at,
            owner=task.owner,
            nonce=task.nonce,
            origin=task.origin,
            forward_url=task.forward_url,
            provider_account=task.provider_account,
        )

    def record_registration(self, task: NewTask) -> RegistrationOutcome:
        with self._guarded():
            self.writes += 1
            existing = self.tasks.get(task.task_id)
            if existing is None or existing.submitted_at is None:
                taken = self._take_over(task, existing)
                if taken is SubmissionOutcome.PROVISIONAL_DISCARDED:
                    return RegistrationOutcome.PROVISIONAL_DISCARDED
                return RegistrationOutcome.CREATED
            if existing.nonce == task.nonce or existing.rivals.get(str(task.nonce)) == task.owner:
                same = existing.request == task.request and task.owner in {
                    existing.owner,
                    existing.rivals.get(str(task.nonce)),
                }
                return (
                    RegistrationOutcome.SAME_AGAIN if same else RegistrationOutcome.DIFFERENT_DATA
                )
            contestable = existing.origin is TaskOrigin.REGISTER
            if not contestable or existing.status is not TaskStatus.PENDING:
                return RegistrationOutcome.HELD_ELSEWHERE
            if task.nonce is None or task.owner is None:
                return RegistrationOutcome.HELD_ELSEWHERE
            self.tasks[task.task_id] = replace(
                existing, rivals={**existing.rivals, task.nonce: task.owner}, due_at=None
            )
            return RegistrationOutcome.CONTESTED

    def record_smoke_task(self, task: NewTask) -> bool:
        with self._guarded():
            self.writes += 1
            if task.task_id in self.tasks:
                return False
            self._write_pending(task)
            self.tasks[task.task_id] = replace(self.tasks[task.task_id], due_at=None)
            return True

    def delete_smoke_task(self, task_id: str, owner: str) -> bool:
        with self._guarded():
            self.writes += 1
            task = self.tasks.get(task_id)
            if task is None or task.origin is not TaskOrigin.SMOKE or task.owner != owner:
                return False
            del self.tasks[task_id]
            return True

    def record_pingback_url(self, issued: IssuedPingbackUrl) -> None:
        with self._guarded():
            self.writes += 1
            self.pingback_urls[issued.nonce] = {"issued": issued}

    def claim_pingback_url(
        self, nonce: str, owner: str, task_id: str, now: float
    ) -> PingbackUrlClaim:
        with self._guarded():
            self.writes += 1
            record = self.pingback_urls.get(nonce, {})
            issued = record.get("issued")
            if not isinstance(issued, IssuedPingbackUrl):
                return PingbackUrlClaim.REFUSED
            if issued.owner != owner or issued.register_by < now:
                return PingbackUrlClaim.REFUSED
            if record.setdefault("registered_task", task_id) != task_id:
                return PingbackUrlClaim.REFUSED
            return PingbackUrlClaim.CLAIMED

    def record_result(self, result: TaskResult) -> StoreOutcome:
        with self._guarded():
            existing, refusal = self._result_write(result)
            if refusal is not None:
                return refusal
            if existing is not None and existing.solution is not None:
                same = existing.solution == result.code
                return StoreOutcome.DUPLICATE if same else StoreOutcome.CONFLICT
            lifetime = self.token_lifetime_seconds.get(result.task_id, self.lifetimes.shortest)
            finished = result.finished_at_earliest
            self.tasks[result.task_id] = replace(
                _finished(existing, result, TaskStatus.SOLVED, solution=result.code, error=None),
                finished_after=finished,
                usable_until=lifetime + finished,
                user_agent=result.user_agent,
            )
            return _stored(existing, result)

    def record_solution(self, result: TaskResult) -> RecordedSolution:
        """As the table's ALL_NEW: the task as written, when this write stored it."""
        outcome = self.record_result(result)
        written = outcome in {StoreOutcome.STORED, StoreOutcome.STORED_UNREGISTERED}
        return RecordedSolution(outcome, self.tasks[result.task_id] if written else None)

    def record_failure(self, result: TaskResult) -> StoreOutcome:
        with self._guarded():
            existing, refusal = self._result_write(result)
            if refusal is not None:
                return refusal
            open_states = {TaskStatus.PENDING, TaskStatus.EXPIRED}
            if existing is not None and (existing.solution or existing.status not in open_states):
                same = existing.status is TaskStatus.FAILED and existing.error == result.code
                return StoreOutcome.DUPLICATE if same else StoreOutcome.CONFLICT
            self.tasks[result.task_id] = _finished(
                existing, result, TaskStatus.FAILED, solution=None, error=result.code
            )
            return _stored(existing, result)

    def _result_write(self, result: TaskResult) -> tuple[Task | None, StoreOutcome | None]:
        """One conditional write: the item it finds, and REJECTED when the pingback's proof does
        not fit that item."""
        self.writes += 1
        existing = self.tasks.get(result.task_id)
        refusal = _proof_refusal(result, existing)
        if refusal is None and existing is None and result.needs_pingback_proof:
            record = self.pingback_urls.setdefault(str(result.nonce), {})
            registered = record.get("registered_task", result.task_id)
            if registered != result.task_id or (
                record.setdefault("provisional_task", result.task_id) != result.task_id
            ):
                refusal = StoreOutcome.REJECTED
        return existing, refusal

    def mark_expired(self, task_id: str, now: float) -> bool:
        with self._guarded():
            return self._replace_pending(
                task_id,
                status=TaskStatus.EXPIRED,
                error="EXPIRED_UNRECOVERED",
                due_at=None,
                received_at=now,
            )

    def reschedule_poll(
        self,
        task_id: str,
        due_at: float,
        poll_attempts: int,
        last_checked_at: float | None = None,
    ) -> bool:
        self.rescheduled.append(task_id)
        checked = {} if last_checked_at is None else {"last_checked_at": last_checked_at}
        with self._guarded():
            return self._replace_pending(
                task_id, due_at=due_at, poll_attempts=poll_attempts, **checked
            )

    def next_due_at(
        self, after: float, until: float, shards: Collection[int] | None = None
    ) -> float | None:
        self._maybe_fail()
        found = [
            t.due_at
            for t in self.tasks.values()
            if t.status is TaskStatus.PENDING
            and t.due_at is not None
            and after <= t.due_at <= until
            and self._in_shards(t.task_id, shards)
        ]
        return min(found, default=None)

    def due_shard_count(self) -> int:
        return self.due_shards

    def due_shard(self, task_id: str) -> int:
        return int(due_shard_of(task_id, self.due_shards))

    def _in_shards(self, task_id: str, shards: Collection[int] | None) -> bool:
        return shards is None or self.due_shard(task_id) in shards

    def acquire_helper_lease(self, group: int, holder: str, now: float, until: float) -> bool:
        with self._guarded():
            lease = self.helper_leases.get(group)
            if lease is not None and float(lease["until"]) > now:  # type: ignore[arg-type]
                return False
            self.helper_leases[group] = {"holder": holder, "until": until, "load": 0.0}
            return True

    def record_helper_load(self, group: int, holder: str, load_seconds: float) -> None:
        with self._guarded():
            lease = self.helper_leases.get(group)
            if lease is not None and lease["holder"] == holder:
                lease["load"] = load_seconds

    def release_helper_lease(self, group: int, holder: str, now: float) -> None:
        with self._guarded():
            lease = self.helper_leases.get(group)
            if lease is not None and lease["holder"] == holder:
                lease.update(until=now, load=0.0)

    def live_helpers(self, groups: int, now: float) -> dict[int, HelperLoad]:
        self._maybe_fail()
        return {
            group: HelperLoad(float(lease["until"]), float(lease["load"]))  # type: ignore[arg-type]
            for group, lease in self.helper_leases.items()
            if 1 <= group <= groups and float(lease["until"]) > now  # type: ignore[arg-type]
        }

    def acquire_poller_lease(self, holder: str, now: float, until: float) -> PollerLease:
        with self._guarded():
            held_until = float(self.lease.get("until", -1.0))  # type: ignore[arg-type]
            if held_until > now:
                return PollerLease(False, held_until)
            self.lease.update(holder=holder, until=until)
            self.lease.pop("successor", None)
            self.lease.pop("successor_until", None)
            samples = self.lease.get("samples", {})
            busy_at = self.lease.get("busy_at")
            return PollerLease(True, until, dict(samples), busy_at)  # type: ignore[call-overload,arg-type]

    def claim_poller_succession(self, holder: str, now: float, until: float) -> bool:
        with self._guarded():
            claimed_until = float(self.lease.get("successor_until", -1.0))  # type: ignore[arg-type]
            if claimed_until > now and self.lease.get("successor") != holder:
                return False
            self.lease.update(successor=holder, successor_until=until)
            return True

    def mark_poller_busy(self, holder: str, busy_at: float) -> None:
        with self._guarded():
            if self.lease.get("holder") == holder:
                self.lease["busy_at"] = busy_at

    def release_poller_lease(
        self,
        holder: str,
        now: float,
        solve_samples: dict[str, list[float]],
        busy_at: float | None = None,
    ) -> None:
        with self._guarded():
            if self.lease.get("holder") == holder:
                self.lease.update(until=now, samples=solve_samples)
                if busy_at is not None:
                    self.lease["busy_at"] = busy_at

    def claim_read_through(self, task_id: str, now: float, interval_seconds: float) -> bool:
        with self._guarded():
            task = self._pending(task_id)
            if task is None:
                return False
            last = task.read_through_at
            if last is not None and last > now - interval_seconds:
                return False
            self.tasks[task_id] = replace(task, read_through_at=now)
            return True

    def record_not_ready(self, task_id: str, checked_at: float) -> bool:
        with self._guarded():
            task = self._pending(task_id)
            if task is None:
                return False
            if task.last_checked_at is not None and task.last_checked_at >= checked_at:
                return False
            self.tasks[task_id] = replace(task, last_checked_at=checked_at)
            return True

    def _pending(self, task_id: str) -> Task | None:
        task = self.tasks.get(task_id)
        return task if task is not None and task.status is TaskStatus.PENDING else None

    def _replace_pending(self, task_id: str, **changes: Any) -> bool:
        """Change a PENDING task; False when it is unknown or no longer PENDING."""
        task = self._pending(task_id)
        if task is None:
            return False
        self.tasks[task_id] = replace(task, **changes)
        return True

    def claim_report(self, attempt: ReportAttempt) -> ReportClaim:
        with self._guarded():
            task_id, owner, now = attempt.task_id, attempt.owner, attempt.now
            task = self.tasks.get(task_id)
            if task is None or (owner is not None and not may_access(task, owner)):
                return ReportClaim.UNKNOWN_TASK
            if task.origin is TaskOrigin.SMOKE:
                return ReportClaim.UNKNOWN_TASK
            if task.solution is None:
                return ReportClaim.NOT_SOLVED
            lease = self.report_leases.get(task_id)
            if task.reported is not None and (lease is None or lease >= now):
                return ReportClaim.ALREADY_REPORTED
            earliest = task.finished_at_earliest
            if earliest is None or earliest < attempt.window_start:
                return ReportClaim.WINDOW_CLOSED
            self.tasks[task_id] = replace(task, reported=attempt.verdict, reported_at=now)
            self.report_leases[task_id] = attempt.lease_until
            return ReportClaim.CLAIMED

    def confirm_report(self, task_id: str, claimed_at: float) -> bool:
        with self._guarded():
            return self._end_report_lease(task_id, claimed_at)

    def release_report(self, task_id: str, claimed_at: float) -> bool:
        with self._guarded():
            if not self._end_report_lease(task_id, claimed_at):
                return False
            self.tasks[task_id] = replace(self.tasks[task_id], reported=None, reported_at=None)
            return True

    def _end_report_lease(self, task_id: str, claimed_at: float) -> bool:
        """Drop the report lease of the claim made at ``claimed_at``; False when that claim is
        not the one held."""
        task = self.tasks.get(task_id)
        held = task is not None and task.reported_at == claimed_at
        if not held or task_id not in self.report_leases:
            return False
        del self.report_leases[task_id]
        return True

    def get(self, task_id: str) -> Task | None:
        self._maybe_fail()
        return self.tasks.get(task_id)

    def provider_accounts_of(self, task_ids: Sequence[str]) -> dict[str, str | None]:
        self._maybe_fail()
        found = {task_id: self.tasks.get(task_id) for task_id in task_ids}
        return {task_id: task.provider_account if task else None for task_id, task in found.items()}

    def due_tasks(
        self, now: float, limit: int, shards: Collection[int] | None = None
    ) -> list[DueTask]:
        self._maybe_fail()
        due = sorted(
            (
                t
                for t in self.tasks.values()
                if t.status is TaskStatus.PENDING
                and t.due_at is not None
                and t.due_at <= now
                and self._in_shards(t.task_id, shards)
            ),
            key=lambda t: t.due_at or 0.0,
        )
        return [
            DueTask(
                t.task_id,
                t.due_at or 0.0,
                t.submitted_at or 0.0,
                t.poll_attempts,
                t.last_checked_at,
                t.request.method if t.request else None,
            )
            for t in due[:limit]
        ]


def nonce_for(task_id: str) -> str:
    """A stable, well-formed capability nonce per task id, for tests."""
    digest = hashlib.sha256(task_id.encode()).digest()[:16]
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _proof_refusal(result: TaskResult, existing: Task | None) -> StoreOutcome | None:
    """The DynamoDB store's pingback rule: a nonce decides only its own task (or a new id)."""
    if not result.needs_pingback_proof:
        return None
    if existing is None:
        return None if result.nonce is not None else StoreOutcome.REJECTED
    if result.nonce is not None:
        fits = existing.nonce == result.nonce or result.nonce in existing.rivals
    else:
        fits = existing.nonce is None and existing.submitted_at is not None
    return None if fits else StoreOutcome.REJECTED


def _stored(existing: Task | None, result: TaskResult) -> StoreOutcome:
    if existing is None and result.needs_pingback_proof:
        return StoreOutcome.STORED_UNREGISTERED
    return StoreOutcome.STORED


def _finished(
    existing: Task | None,
    result: TaskResult,
    status: TaskStatus,
    *,
    solution: str | None,
    error: str | None,
) -> Task:
    return Task(
        result.task_id,
        status,
        existing.request if existing else None,
        existing.submitted_at if existing else None,
        result.received_at,
        solution,
        result.delivered_via,
        error,
        existing.poll_attempts if existing else 0,
        None,
        owner=_decided_owner(existing, result),
        nonce=result.nonce if existing is None or result.nonce else existing.nonce,
        origin=existing.origin if existing else None,
        forward_url=existing.forward_url if existing else None,
        provider_account=existing.provider_account if existing else None,
    )


def _decided_owner(existing: Task | None, result: TaskResult) -> str | None:
    """A pingback with a rival claim's nonce gives the task to that claim's owner."""
    if existing is None:
        return None
    if result.needs_pingback_proof and result.nonce in existing.rivals:
        return existing.rivals[str(result.nonce)]
    return existing.owner


# Answers the provider really sends that look nothing like a token: an OCR phrase, another
# script, a grid, coordinates, GeeTest v3 JSON (its seccode holds '|') and 4 KB of UTF-8.
ODD_BUT_REAL_ANSWERS = (
    "two words",
    "привет",
    "a/b;c,d",
    "click:1/4/6",
    "coordinates:x=39,y=59;x=252,y=72",
    '{"challenge":"1a","validate":"2b","seccode":"2b|jordan"}',
    "ж" * 2048,
)


@dataclass
class FakeDeadLetterQueue:
    sent: list[tuple[DeadLetter, str]] = field(default_factory=list)
    available: bool = True

    def send(self, write: DeadLetter, reason: str) -> None:
        if not self.available:
            raise DeadLetterError("SQS SendMessage failed: EndpointConnectionError")
        self.sent.append((write, reason))


@dataclass
class FakeProvider:
    """Answers res.php from a dict of id -> answer text; records what was asked."""

    answers: dict[str, str] = field(default_factory=dict)
    next_task_id: int = 70000000001
    submitted: list[tuple[str, str]] = field(default_factory=list)
    submitted_requests: list[object] = field(default_factory=list)
    requests: list[list[str]] = field(default_factory=list)
    failure: Callable[[], Exception] | None = None
    refuse_batches: int = 0
    report_failure: Callable[[], Exception] | None = None
    reports: list[tuple[str, bool]] = field(default_factory=list)

    def submit(self, request: object, pingback_url: str) -> str:
        if self.failure:
            raise self.failure()
        task_id = str(self.next_task_id)
        self.next_task_id += 1
        self.submitted.append((task_id, pingback_url))
        self.submitted_requests.append(request)
        return task_id

    def get_results(self, task_ids: Sequence[str]) -> dict[str, ProviderAnswer]:
        self.requests.append(list(task_ids))
        if self.failure:
            raise self.failure()
        if len(task_ids) > 1 and self.refuse_batches:
            self.refuse_batches -= 1
            raise ProviderBatchRefusedError("res.php get ids: answer out of shape")
        return {tid: classify_part(self.answers.get(tid, "CAPCHA_NOT_READY")) for tid in task_ids}

    def report(self, task_id: str, *, good: bool) -> None:
        if self.report_failure:
            raise self.report_failure()
        self.reports.append((task_id, good))

    def balance(self) -> float:
        return 1.0


def unavailable() -> StoreUnavailableError:
    return StoreUnavailableError("DynamoDB UpdateItem: ProvisionedThroughputExceededException")


def token_request(
    method: str, sitekey: str, page_url: str, extras: dict[str, str] | None = None
) -> CaptchaRequest:
    """A reCAPTCHA / hCaptcha / Turnstile request as its in.php fields."""
    key_field = "googlekey" if method == "userrecaptcha" else "sitekey"
    return CaptchaRequest(method, {key_field: sitekey, "pageurl": page_url, **(extras or {})})


RECAPTCHA_REQUEST = token_request("userrecaptcha", "key", "https://example.test")
# A small poller for the unit suites: 5 requests a sweep, 3 ids a request, checks 30-300 s apart,
# one sweep per invocation.
UNIT_POLL_POLICY = PollPolicy(
    retention_seconds=600,
    backoff_base_seconds=30,
    backoff_max_seconds=300,
    max_requests_per_sweep=5,
    ids_per_request=3,
    deadline_margin_seconds=10,
    sweep_interval_seconds=5.0,
    run_seconds=0.0,
    batch_probe_seconds=300.0,
)


class InMemoryConnectionStore:
    """ConnectionStore in memory, with the DynamoDB store's per-owner limit."""

    def __init__(self) -> None:
        self.connections: dict[str, Connection] = {}
        self.reads = 0  # owner_of and of_owner: one table read each in the DynamoDB store

    def add(self, connection: Connection, max_per_owner: int) -> None:
        held = [c for c in self.connections.values() if c.owner == connection.owner]
        if len(held) >= max_per_owner:
            raise TooManyConnections(connection.owner)
        self.connections[connection.connection_id] = connection

    def owner_of(self, connection_id: str) -> str | None:
        self.reads += 1
        found = self.connections.get(connection_id)
        return found.owner if found else None

    def remove(self, connection_id: str) -> None:
        self.connections.pop(connection_id, None)

    def of_owner(self, owner: str, now: float) -> list[Connection]:
        self.reads += 1
        return [c for c in self.connections.values() if c.owner == owner and c.expires_at > now]

    def drop(self, connection: Connection) -> None:
        self.connections.pop(connection.connection_id, None)


@dataclass
class InMemoryPollerState:
    """PollerState of an InMemoryTaskStore's lease; ``reads`` counts the lease reads."""

    store: InMemoryTaskStore
    reads: int = 0

    def lease(self) -> PollerLeaseState:
        self.reads += 1
        until, busy_at = self.store.lease.get("until"), self.store.lease.get("busy_at")
        return PollerLeaseState(
            None if until is None else float(until),  # type: ignore[arg-type]
            None if busy_at is None else float(busy_at),  # type: ignore[arg-type]
        )


@dataclass
class FakePollerWaker:
    """PollerWaker that counts the poller invocations started; ``failure`` makes each fail."""

    woken: int = 0
    failure: Callable[[], Exception] | None = None
    helper_groups: list[int] = field(default_factory=list)
    """The helper groups started (HelperStarter), in order."""

    def wake(self) -> None:
        if self.failure:
            raise self.failure()
        self.woken += 1

    def start_helper(self, group: int) -> None:
        if self.failure:
            raise self.failure()
        self.helper_groups.append(group)


@dataclass
class InMemoryPushReads:
    """PushReads over the in-memory stores; ``reads`` counts the table requests it stands for
    (each call one, as the DynamoDB one's single BatchGetItem)."""

    tasks: InMemoryTaskStore
    connections: InMemoryConnectionStore
    reads: int = 0

    def result_for_push(self, task_id: str, owner: str, now: float) -> ResultForPush:
        self.reads += 1
        connections = [c for c in self.connections.connections.values() if c.owner == owner]
        found = [connection for connection in connections if connection.expires_at > now]
        return ResultForPush(self.tasks.get(task_id), found)

    def subscription(self, connection_id: str, task_ids: Sequence[str]) -> Subscription:
        self.reads += 1
        found = [self.tasks.get(task_id) for task_id in task_ids]
        held = self.connections.connections.get(connection_id)
        owner = held.owner if held else None
        return Subscription(owner, [task for task in found if task is not None])


@dataclass
class FakeSender:
    """ConnectionSender recording what each connection got; ``gone``/``failing`` ids refuse."""

    sent: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    gone: set[str] = field(default_factory=set)
    failing: set[str] = field(default_factory=set)

    def send(self, connection_id: str, message: bytes) -> None:
        if connection_id in self.gone:
            raise ConnectionGoneError(connection_id)
        if connection_id in self.failing:
            raise PushError("PostToConnection failed: InternalServerError")
        self.sent.append((connection_id, json.loads(message)))
        self.sizes.append(len(message))


class InMemoryWorkerKeys:
    """WorkerKeyStore over a dict; ``issue`` returns the key as the CLI would print it once."""

    def __init__(self) -> None:
        self.records: dict[str, WorkerKey] = {}
        self.available = True

    def issue(
        self,
        owner: str,
        key: str | None = None,
        *,
        dialect: Dialect = Dialect.CAPTCHAAI,
        threads: int = DEFAULT_THREADS,
    ) -> str:
        key = key or new_key()
        digest = digest_of(key)
        self.records[digest.key_id] = WorkerKey(
            digest.key_id, digest.digest, owner, 1.0, threads=threads, dialect=dialect
        )
        return key

    def revoke(self, key: str) -> None:
        key_id = digest_of(key).key_id
        self.records[key_id] = replace(self.records[key_id], revoked_at=2.0)

    def find(self, key_id: str) -> WorkerKey | None:
        if not self.available:
            raise StoreUnavailableError("DynamoDB GetItem (worker keys): EndpointConnectionError")
        return self.records.get(key_id)


class InMemoryKeyThreads:
    """KeyThreadStore over a dict of key id -> ThreadSlots."""

    def __init__(self) -> None:
        self.items: dict[str, ThreadSlots] = {}

    def read(self, key_id: str) -> ThreadSlots:
        return self.items.get(key_id, ThreadSlots({}))

    def take(self, key_id: str, slot: str, until: float, now: float, threads: int) -> bool:
        held = self.read(key_id)
        live = held.live(now)
        if len(live) >= threads:
            return False
        self.items[key_id] = replace(held, slots={**live, slot: until}, version=held.version + 1)
        return True

    def rename(self, key_id: str, old: str, new: str, until: float) -> None:
        held = self.read(key_id)
        slots = {name: value for name, value in held.slots.items() if name != old}
        self.items[key_id] = replace(held, slots={**slots, new: until})

    def release(self, key_id: str, slot: str) -> None:
        held = self.read(key_id)
        slots = {name: value for name, value in held.slots.items() if name != slot}
        self.items[key_id] = replace(held, slots=slots)

    def mark_busy(self, key_id: str, until: float) -> None:
        self.items[key_id] = replace(self.read(key_id), busy_until=until)


class FakeResolver:
    """AddressResolver over a dict of host -> addresses; a host it does not know stands for
    nothing (ForwardFailedError, as a name that does not resolve); ``asked`` keeps each host."""

    def __init__(self, addresses: dict[str, list[str]]) -> None:
        self._addresses = addresses
        self.asked: list[str] = []

    def addresses(self, host: str) -> list[IpAddress]:
        self.asked.append(host)
        if host not in self._addresses:
            raise ForwardFailedError("forward: no address (gaierror)")
        return [ipaddress.ip_address(address) for address in self._addresses[host]]


class InMemoryRequestBudgets:
    """RequestBudgetStore over dicts, with the DynamoDB store's windows: one count per key and
    minute, and one per second of that minute (tests/integration/test_request_budget_store.py
    holds both stores to one contract)."""

    def __init__(self) -> None:
        self.windows: dict[tuple[str, int], dict[str, int]] = {}
        self.reading: BalanceReading | None = None
        self.claimed_at: float | None = None
        self.available = True
        # Each call is one conditional write in DynamoDB: atomic.
        self._lock = threading.Lock()

    def spend(
        self,
        budget_key: str,
        now: float,
        limits: RequestLimits,
        units: int = 1,
        *,
        second: bool = True,
    ) -> bool:
        self._maybe_fail()
        with self._lock:
            window = self.windows.setdefault((budget_key, minute_of(now)), {})
            counter = second_counter(now)
            full = window.get("requests", 0) + units > limits.per_minute
            if full or (second and window.get(counter, 0) + units > limits.per_second):
                return False
            window["requests"] = window.get("requests", 0) + units
            if second:
                window[counter] = window.get(counter, 0) + units
            return True

    def balance(self) -> BalanceReading | None:
        self._maybe_fail()
        return self.reading

    def claim_balance_refresh(self, now: float, interval_seconds: float) -> bool:
        self._maybe_fail()
        with self._lock:
            if self.claimed_at is not None and self.claimed_at > now - interval_seconds:
                return False
            self.claimed_at = now
            return True

    def record_balance(self, reading: BalanceReading) -> None:
        self._maybe_fail()
        self.reading = reading

    def _maybe_fail(self) -> None:
        if not self.available:
            raise unavailable()
