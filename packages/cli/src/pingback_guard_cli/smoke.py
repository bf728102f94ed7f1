"""`smoke`: a deployed stack proves itself end to end, without spending provider credit.

The stack makes a synthetic task (POST /smoke-tasks: AdminPrincipalArn only, an id the provider
never handed out, never sent to it) and hands back its pingback URL. The check then sends a
forged pingback (refused, 403) and the real one (stored, 200), reads the result back with GET
/tasks/{id}, sees its result event arrive on the result bus through a temporary rule and queue,
and lists the stack's alarms. Whatever it created (the task, the rule, the queue) it deletes,
also when a step failed. Tokens and pingback URLs are never printed.
"""

from __future__ import annotations

import json
import secrets
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import requests
from botocore.exceptions import BotoCoreError, ClientError

from pingback_guard_cli.errors import CliFailure, ExitCode, failure_of
from pingback_guard_cli.stack import Aws, Stack
from pingback_guard_cli.status import alarm_states
from pingback_guard_client.signing import signed_session

RESULT_SOURCE = "pingback-guard"
RESULT_DETAIL_TYPE = "Task Result"
SMOKE_ORIGIN = "smoke"
TARGET_ID = "smoke"
HTTP_TIMEOUT_SECONDS = 15
# SQS long polls at most 20 s; shorter keeps a timeout close to what was asked.
_RECEIVE_WAIT_SECONDS = 5


class StepFailed(Exception):
    """A step's check did not hold; the message says what was found (never a token or URL)."""


@dataclass(frozen=True)
class Step:
    name: str
    ok: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"step": self.name, "ok": self.ok, "detail": self.detail}


@dataclass
class Report:
    steps: list[Step] = field(default_factory=list)
    alarms: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(step.ok for step in self.steps)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "steps": [step.to_json() for step in self.steps],
            "alarms": [{"name": name, "state": state} for name, state in self.alarms],
        }

    @contextmanager
    def step(self, name: str, done: str = "ok") -> Iterator[list[str]]:
        """Run a step; its body may append a detail. A failure is recorded, then re-raised."""
        details: list[str] = []
        try:
            yield details
        except StepFailed as failed:
            self.steps.append(Step(name, False, str(failed)))
            raise
        except (ClientError, BotoCoreError, CliFailure) as error:
            self.steps.append(Step(name, False, str(failure_of(error))))
            raise StepFailed(name) from None
        except (requests.RequestException, ValueError) as error:
            # Named by type only: a request error's text may hold a pingback URL.
            self.steps.append(Step(name, False, f"HTTP request failed: {type(error).__name__}"))
            raise StepFailed(name) from None
        self.steps.append(Step(name, True, "; ".join(details) or done))


@dataclass(frozen=True)
class SmokeOptions:
    api_url: str
    event_timeout_seconds: float = 60.0
    # EventBridge: "incoming events might not immediately start matching to new or updated
    # rules. Allow a short period of time for changes to take effect." (PutRule)
    rule_settle_seconds: float = 10.0


@dataclass
class _Created:
    """What the run made, so that cleanup deletes exactly that."""

    bus: str = ""
    queue_url: str | None = None
    rule_name: str | None = None
    has_target: bool = False
    task_id: str | None = None


def run_smoke(
    aws: Aws,
    stack: Stack,
    options: SmokeOptions,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Report:
    report = Report()
    created = _Created()
    api = _Api(aws, options.api_url)
    # A failed step is in the report already: the next part runs, and cleanup always does.
    try:
        with suppress(StepFailed):
            _prove(report, created, aws, stack, api, options, sleep, clock)
        with suppress(StepFailed):
            _list_alarms(report, aws, stack)
    finally:
        _clean_up(report, created, aws, api)
    return report


def _prove(
    report: Report,
    created: _Created,
    aws: Aws,
    stack: Stack,
    api: _Api,
    options: SmokeOptions,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> None:
    with report.step("admin principal") as found:
        admin = stack.parameters.get("AdminPrincipalArn", "")
        if not admin:
            raise StepFailed(
                "the stack has no AdminPrincipalArn: smoke tasks are for that principal only;"
                " deploy with AdminPrincipalArn=<your user or role ARN>"
                " (aws sts get-caller-identity shows it)"
            )
        found.append(f"smoke tasks are for {admin}")
    with report.step("result bus rule") as found:
        created.bus = stack.output("EventBusName")
        _listen(aws, created, stack.name)
        found.append(f"rule and queue {created.rule_name} on {created.bus}")
        sleep(options.rule_settle_seconds)
    with report.step("synthetic task") as found:
        task_id, pingback_url = api.create_smoke_task()
        created.task_id = task_id
        found.append(f"task {task_id} with its own pingback URL")
    token = "smoke-" + secrets.token_urlsafe(32)
    with report.step("forged pingback refused") as found:
        status = _pingback(_forged(pingback_url), task_id, token)
        if status != 403:
            raise StepFailed(f"a pingback with a forged capability got {status}, not 403")
        found.append("403")
    with report.step("pingback stored") as found:
        status = _pingback(pingback_url, task_id, token)
        if status != 200:
            raise StepFailed(f"the task's own pingback got {status}, not 200")
        found.append("200")
    with report.step("result read back") as found:
        view = api.get_task(task_id)
        _check_view(view, token)
        found.append(f"GET /tasks/{task_id}: SOLVED by callback, the token sent")
    with report.step("result event on the bus") as found:
        queue_url = created.queue_url or ""
        detail = _await_event(aws, queue_url, task_id, options.event_timeout_seconds, clock)
        found.append(f"status {detail.get('status')}, origin {detail.get('origin')}")


def _list_alarms(report: Report, aws: Aws, stack: Stack) -> None:
    """Listed whatever the other steps found: they tell the operator what else is wrong."""
    with report.step("alarms listed") as found:
        report.alarms = alarm_states(aws, stack.name)
        if not report.alarms:
            raise StepFailed(f"no alarm named {stack.name}-*: is this the stack's account?")
        in_alarm = [name for name, state in report.alarms if state == "ALARM"]
        found.append(f"{len(report.alarms)} alarms, {len(in_alarm)} in ALARM")


class _Api:
    """The stack's HTTP API: SigV4-signed task routes with the CLI's own credentials."""

    def __init__(self, aws: Aws, api_url: str) -> None:
        self._aws = aws
        self._base = api_url.rstrip("/")
        self._session: requests.Session | None = None

    def _signed(self) -> requests.Session:
        if self._session is None:
            region = self._aws.session.region_name or ""
            credentials = self._aws.session.get_credentials()
            if credentials is None:
                raise CliFailure(ExitCode.NO_CREDENTIALS, "no AWS credentials to sign with")
            self._session = signed_session(region, credentials)
        return self._session

    def create_smoke_task(self) -> tuple[str, str]:
        answer = self._signed().post(
            f"{self._base}/smoke-tasks", json={}, timeout=HTTP_TIMEOUT_SECONDS
        )
        if answer.status_code == 403:
            raise StepFailed(
                "POST /smoke-tasks got 403: sign as the stack's AdminPrincipalArn"
                " (and allow execute-api:Invoke on POST/smoke-tasks and DELETE/smoke-tasks/*)"
            )
        if answer.status_code != 201:
            raise StepFailed(f"POST /smoke-tasks got {answer.status_code}: {_error_of(answer)}")
        body = answer.json()
        if not isinstance(body, dict) or not {"task_id", "pingback_url"} <= body.keys():
            raise StepFailed("POST /smoke-tasks answered 201 without task_id and pingback_url")
        return str(body["task_id"]), str(body["pingback_url"])

    def get_task(self, task_id: str) -> dict[str, Any]:
        answer = self._signed().get(f"{self._base}/tasks/{task_id}", timeout=HTTP_TIMEOUT_SECONDS)
        if answer.status_code != 200:
            raise StepFailed(f"GET /tasks/{task_id} got {answer.status_code}: {_error_of(answer)}")
        view: dict[str, Any] = answer.json()
        return view

    def delete_smoke_task(self, task_id: str) -> None:
        answer = self._signed().delete(
            f"{self._base}/smoke-tasks/{task_id}", timeout=HTTP_TIMEOUT_SECONDS
        )
        if answer.status_code != 200:
            raise StepFailed(
                f"DELETE /smoke-tasks/{task_id} got {answer.status_code}: {_error_of(answer)}"
            )


def _error_of(answer: requests.Response) -> str:
    """The API's error code and reason (they never echo a secret), else the status line."""
    try:
        body = answer.json()
    except ValueError:
        return answer.reason or "no JSON body"
    if isinstance(body, dict):
        return str(body.get("error") or body.get("message") or "no error code")
    return "unexpected body"


def _pingback(url: str, task_id: str, token: str) -> int:
    """A CaptchaAI-style pingback (GET ?id&code): unsigned, as the provider sends it."""
    answer = requests.get(url, params={"id": task_id, "code": token}, timeout=HTTP_TIMEOUT_SECONDS)
    return answer.status_code


def _forged(pingback_url: str) -> str:
    """The same URL with one character of its MAC changed: well formed, not the stack's."""
    prefix, _, capability = pingback_url.rpartition("/")
    head, _, mac = capability.rpartition(".")
    changed = ("B" if mac[0] == "A" else "A") + mac[1:]
    return f"{prefix}/{head}.{changed}"


def _check_view(view: dict[str, Any], token: str) -> None:
    found = (view.get("status"), view.get("delivered_via"))
    if found != ("SOLVED", "callback"):
        raise StepFailed(f"the task reads {found[0]} (via {found[1]}), not SOLVED by callback")
    if view.get("solution") != token:
        raise StepFailed("the task's solution is not the token the pingback carried")


def _listen(aws: Aws, created: _Created, stack_name: str) -> None:
    """A queue and a rule on the result bus for smoke results; each recorded as it is made."""
    name = f"{stack_name}-smoke-{uuid.uuid4().hex[:8]}"[-64:]
    sqs = aws.client("sqs")
    created.queue_url = sqs.create_queue(
        QueueName=name,
        Attributes={"MessageRetentionPeriod": "600", "SqsManagedSseEnabled": "true"},
    )["QueueUrl"]
    attributes = sqs.get_queue_attributes(QueueUrl=created.queue_url, AttributeNames=["QueueArn"])
    queue_arn = attributes["Attributes"]["QueueArn"]
    events = aws.client("events")
    pattern = {
        "source": [RESULT_SOURCE],
        "detail-type": [RESULT_DETAIL_TYPE],
        "detail": {"origin": [SMOKE_ORIGIN]},
    }
    rule_arn = events.put_rule(
        Name=name,
        EventBusName=created.bus,
        EventPattern=json.dumps(pattern),
        State="ENABLED",
        Description="pingback-guard smoke: deleted when the check ends",
    )["RuleArn"]
    created.rule_name = name
    policy = json.dumps(_queue_policy(queue_arn, rule_arn))
    sqs.set_queue_attributes(QueueUrl=created.queue_url, Attributes={"Policy": policy})
    events.put_targets(
        Rule=name, EventBusName=created.bus, Targets=[{"Id": TARGET_ID, "Arn": queue_arn}]
    )
    created.has_target = True


def _queue_policy(queue_arn: str, rule_arn: str) -> dict[str, Any]:
    """EventBridge may send to the queue for this one rule only."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "ThisSmokeRuleOnly",
                "Effect": "Allow",
                "Principal": {"Service": "events.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
                "Condition": {"ArnEquals": {"aws:SourceArn": rule_arn}},
            }
        ],
    }


def _await_event(
    aws: Aws, queue_url: str, task_id: str, timeout: float, clock: Callable[[], float]
) -> dict[str, Any]:
    sqs = aws.client("sqs")
    deadline = clock() + timeout
    while clock() < deadline:
        wait = max(1, min(_RECEIVE_WAIT_SECONDS, int(deadline - clock())))
        answer = sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=wait
        )
        for message in answer.get("Messages", []):
            detail = json.loads(message["Body"]).get("detail", {})
            if detail.get("task_id") == task_id and detail.get("status") == "SOLVED":
                if detail.get("origin") != SMOKE_ORIGIN:
                    raise StepFailed(f"the event's detail.origin is {detail.get('origin')!r}")
                return dict(detail)
    raise StepFailed(
        f"no result event for task {task_id} within {timeout:.0f} s (a new rule can take a"
        " moment on AWS: raise --rule-settle-seconds; check the pipe's state)"
    )


def _clean_up(report: Report, created: _Created, aws: Aws, api: _Api) -> None:
    """Delete what the run made, each on its own: one failing does not keep the others."""
    task_id, queue_url = created.task_id, created.queue_url
    if task_id is not None:
        with suppress(StepFailed):
            _deleted(report, "clean up: synthetic task", api.delete_smoke_task, task_id)
    if created.rule_name is not None:
        with suppress(StepFailed):
            _deleted(report, "clean up: result bus rule", _delete_rule, aws, created)
    if queue_url is not None:
        with suppress(StepFailed):
            _deleted(report, "clean up: queue", _delete_queue, aws, queue_url)


def _deleted(report: Report, name: str, delete: Callable[..., object], *args: Any) -> None:
    with report.step(name, done="deleted"):
        delete(*args)


def _delete_rule(aws: Aws, created: _Created) -> None:
    events = aws.client("events")
    if created.has_target:
        events.remove_targets(Rule=created.rule_name, EventBusName=created.bus, Ids=[TARGET_ID])
    events.delete_rule(Name=created.rule_name, EventBusName=created.bus)


def _delete_queue(aws: Aws, queue_url: str) -> None:
    aws.client("sqs").delete_queue(QueueUrl=queue_url)
