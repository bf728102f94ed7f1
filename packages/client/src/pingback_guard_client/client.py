"""The synchronous worker client."""

from __future__ import annotations

import logging
import random
import re
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

import botocore.session
from botocore.credentials import Credentials

from pingback_guard_client.errors import (
    ApiError,
    CredentialsError,
    PingbackGuardError,
    ServiceUnavailable,
    TaskNotFound,
)
from pingback_guard_client.kinds import KindCalls
from pingback_guard_client.models import PingbackUrl, Solution, TaskView
from pingback_guard_client.signing import NoCredentials, signed_session
from pingback_guard_client.transport import (
    HttpAnswer,
    RequestsTransport,
    Transport,
    TransportFailure,
)
from pingback_guard_client.waiting import Pacing, Waiting

if TYPE_CHECKING:
    from pingback_guard_client.push import PushChannel

logger = logging.getLogger(__name__)
_RETRIED_STATUSES = frozenset({429, 503})
_EXECUTE_API_HOST = re.compile(r"\.execute-api\.([a-z0-9-]+)\.amazonaws\.com")


@dataclass(frozen=True)
class RetryPolicy:
    """429 and 503 (and unanswered idempotent requests) are retried with capped jittered backoff."""

    attempts: int = 5
    base_seconds: float = 0.5
    max_seconds: float = 8.0

    def delay(self, retry: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(self.max_seconds, max(0.0, retry_after))
        ceiling = min(self.max_seconds, self.base_seconds * 2.0**retry)
        return ceiling / 2 + random.uniform(0, ceiling / 2)


class Client(KindCalls):
    """A worker's view of one pingback-guard stack.

    Client(api_url)  # SigV4 with the default AWS credential chain; region from the URL or config
    """

    def __init__(
        self,
        api_url: str,
        region: str | None = None,
        *,
        credentials: Credentials | None = None,
        transport: Transport | None = None,
        retry: RetryPolicy | None = None,
        poll_interval: float = 1.0,
        timeout: float = 30.0,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        push_url: str | None = None,
        pacing: Pacing | None = None,
    ) -> None:
        resolved_region = region or _region_of(api_url)
        self._transport = transport or RequestsTransport(
            api_url, signed_session(resolved_region, credentials), timeout
        )
        self._retry = retry or RetryPolicy()
        self.poll_interval = poll_interval
        self.pacing = pacing or Pacing(interval=poll_interval)
        self._clock = clock
        self._sleep = sleep
        self.push = open_push(push_url, resolved_region, credentials)

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        if self.push is not None:
            self.push.close()
        self._transport.close()

    # `self` is positional-only where **extras takes any name, so AsyncClient can delegate (aio).
    def submit(self, /, method: str, sitekey: str, page_url: str, **extras: Any) -> str:
        """Submit a CAPTCHA through the stack (in.php with a per-task pingback); its task id."""
        return self.submit_paced(method, sitekey, page_url, **extras)[0]

    def submit_paced(
        self, /, method: str, sitekey: str, page_url: str, **extras: Any
    ) -> tuple[str, float | None]:
        """submit(), and the seconds until a first look is worthwhile (None: not said): pass
        them to wait() as ``first_look_after``."""
        return self.submit_document(task_document(method, sitekey, page_url, extras))

    def submit_document(self, document: Mapping[str, Any]) -> tuple[str, float | None]:
        """submit_paced() of a whole request document (in.php fields, or the SDK's names for
        them), as the per-kind calls (normal, geetest, ...) build it."""
        answer = self._call("POST", "/tasks", document, resend_unanswered=False)
        if answer.status == 503 and _field(answer, "task_id"):
            # The provider took the task but the stack could not record it: never submit twice.
            raise ServiceUnavailable(
                "accepted by the provider but not recorded", task_id=_field(answer, "task_id")
            )
        accepted = self._expect(answer, 202, 200)
        task_id, retry_after = str(accepted["task_id"]), accepted.get("retry_after")
        if self.push is not None:
            self.push.submitted(task_id)
        return task_id, None if retry_after is None else float(retry_after)

    def task(self, task_id: str) -> TaskView:
        """The task as the stack sees it now (for an overdue task the stack asks res.php first)."""
        answer = self._call("GET", f"/tasks/{_quoted(task_id)}", None)
        return TaskView.from_json(self._expect(answer, 200))

    def wait(
        self, task_id: str, timeout: float = 120.0, first_look_after: float | None = None
    ) -> Solution:
        """The task's solution once it is final, or WaitTimeout after ``timeout`` seconds.

        With push (``push_url``) the result usually arrives pushed; otherwise, and while push is
        down, GET /tasks/{id} when the stack says a look is worthwhile (``pacing``). An outage
        of the stack is waited out until the deadline (then ServiceUnavailable).
        """
        waiting = Waiting(
            task_id,
            timeout,
            self.pacing,
            self._clock,
            now=self._clock,
            first_look_after=first_look_after,
        )
        if self.push is None:
            while True:
                if (pause := waiting.pause()) > 0:
                    self._sleep(pause)
                if (solution := waiting.look(self.task)) is not None:
                    return solution
        return self._wait_pushed(waiting, self.push, task_id)

    def _wait_pushed(self, waiting: Waiting, push: PushChannel, task_id: str) -> Solution:
        push.start()
        push.watch(task_id)
        try:
            while True:
                pause = waiting.pause(push.connected)
                pushed = push.wait(task_id, pause) if pause > 0 else None
                if pushed is not None:
                    if (solution := waiting.accept(pushed)) is not None:
                        return solution
                elif waiting.pause(push.connected) > 0:
                    continue  # the connection came or went: pace again
                if (solution := waiting.look(self.task)) is not None:
                    return solution
        finally:
            push.unwatch(task_id)

    def solve(
        self, method: str, sitekey: str, page_url: str, timeout: float = 180.0, **extras: Any
    ) -> Solution:
        """submit() then wait(): the token with its age and usable_until."""
        return self.solve_document(task_document(method, sitekey, page_url, extras), timeout)

    def solve_document(self, document: Mapping[str, Any], timeout: float = 180.0) -> Solution:
        """submit_document() then wait(), first looking when the submit says it is worthwhile."""
        task_id, first_look_after = self.submit_document(document)
        return self.wait(task_id, timeout, first_look_after)

    def report(self, task_id: str, correct: bool) -> str:
        """Tell the provider (through the stack) whether the token worked: "good" or "bad"."""
        answer = self._call("POST", f"/tasks/{_quoted(task_id)}/report", {"correct": correct})
        return str(self._expect(answer, 200)["reported"])

    def pingback_url(self) -> PingbackUrl:
        """A fresh per-task pingback URL, for a task the worker submits to the provider itself."""
        document = self._expect(self._call("POST", "/pingback-urls", {}), 201, 200)
        expires_at = document.get("expires_at")
        return PingbackUrl(
            str(document["pingback_url"]), None if expires_at is None else float(expires_at)
        )

    def register(
        self,
        /,
        task_id: str,
        pingback_url: str | PingbackUrl,
        method: str,
        sitekey: str,
        page_url: str,
        **extras: Any,
    ) -> str:
        """Put a task submitted elsewhere (with `pingback_url`) under the stack's protection."""
        url = pingback_url.url if isinstance(pingback_url, PingbackUrl) else pingback_url
        body = {
            "pingback_url": url,
            "method": method,
            "sitekey": sitekey,
            "page_url": page_url,
            "extras": extras,
        }
        answer = self._call("PUT", f"/tasks/{_quoted(task_id)}", body)
        return str(self._expect(answer, 201, 200)["task_id"])

    def _call(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None,
        resend_unanswered: bool = True,
    ) -> HttpAnswer:
        for retry in range(self._retry.attempts):
            last = retry == self._retry.attempts - 1
            try:
                answer = self._transport.request(method, path, body)
            except TransportFailure as failure:
                if last or (failure.sent and not resend_unanswered):
                    raise ServiceUnavailable(f"{method} {path}: no answer ({failure})") from None
                self._sleep(self._retry.delay(retry, None))
                continue
            except NoCredentials as error:
                raise CredentialsError(str(error)) from None
            if answer.status not in _RETRIED_STATUSES or last or _field(answer, "task_id"):
                return answer
            self._sleep(self._retry.delay(retry, answer.retry_after))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _expect(self, answer: HttpAnswer, *ok: int) -> dict[str, Any]:
        if answer.status in ok and isinstance(answer.body, dict):
            return answer.body
        raise _error_of(answer)


def task_document(
    method: str, sitekey: str, page_url: str, extras: Mapping[str, Any]
) -> dict[str, Any]:
    """The POST /tasks document of submit() and solve()."""
    return {"method": method, "sitekey": sitekey, "page_url": page_url, "extras": dict(extras)}


def _error_of(answer: HttpAnswer) -> PingbackGuardError:
    body = answer.body if isinstance(answer.body, dict) else {}
    code = str(body.get("error") or body.get("message") or f"http_{answer.status}")
    reason = body.get("reason")
    if answer.status in _RETRIED_STATUSES or answer.status >= 500:
        return ServiceUnavailable(f"HTTP {answer.status} {code}")
    if answer.status == 403:
        return CredentialsError(f"HTTP 403: {code}")
    if answer.status == 404:
        return TaskNotFound(404, code, reason if isinstance(reason, str) else None)
    return ApiError(answer.status, code, reason if isinstance(reason, str) else None)


def _field(answer: HttpAnswer, name: str) -> Any:
    return answer.body.get(name) if isinstance(answer.body, dict) else None


def _quoted(task_id: str) -> str:
    return urllib.parse.quote(task_id, safe="")


def open_push(
    push_url: str | None, region: str, credentials: Credentials | None
) -> PushChannel | None:
    """The push channel (not connected yet), or None without a URL or without `websockets`."""
    if not push_url:
        return None
    try:
        from pingback_guard_client.push import PushChannel
    except ImportError:
        logger.warning("push_url given but `websockets` is not installed: waiting by GET only")
        return None
    return PushChannel(push_url, region, credentials)


def _region_of(api_url: str) -> str:
    found = _EXECUTE_API_HOST.search(api_url)
    if found:
        return found.group(1)
    region = botocore.session.Session().get_config_variable("region")
    if not region:
        raise CredentialsError("no AWS region: pass region= or set AWS_REGION")
    return str(region)
