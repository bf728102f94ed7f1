"""The only code that speaks in.php / res.php (CaptchaAI, 2captcha and compatibles).

Every call has one overall deadline (a slow-dripping server cannot stretch it read by read), a cap
on the answer's bytes, and never follows a redirect (it would re-send the key elsewhere). Only
requests that cannot create a second task are retried: in.php when the connection was never made
or the provider said it had no free slot, balance reads. A res.php ``get`` is exactly one HTTP
request and never retried here: the poller budgets every request it makes, and its next sweep is
the retry. A report is one HTTP request, never retried: it is the task's one report. The API key
goes in form bodies and query strings only, never in a message: errors from requests carry the
URL (and so the key), so they are replaced, not chained.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import requests
import urllib3

from pingback_guard.domain.errors import (
    ProviderAccountError,
    ProviderBatchRefusedError,
    ProviderRejectedError,
    ProviderRetryableError,
)
from pingback_guard.domain.task import CaptchaRequest, normalise_task_id
from pingback_guard.kinds.fields import decode_image
from pingback_guard.provider.answers import (
    CAPTCHAAI,
    AnswerKind,
    ProviderAnswer,
    ProviderCodes,
    classify,
    classify_part,
    ready,
)
from pingback_guard.provider.client import ThreadUsage

PLAIN_CODE = re.compile(r"[A-Z0-9_: ]{1,64}")

USER_AGENT = "pingback-guard/0.1"
# 100 ids of tokens up to 8 KB each, with separators: the largest honest ids= answer.
MAX_ANSWER_BYTES = 1024 * 1024
READ_CHUNK_BYTES = 16 * 1024
# method=post uploads the image as a multipart file; the request holds it base64 in "file".
UPLOADED_FIELD = "file"


class Reply(NamedTuple):
    """One in.php / res.php answer: ``status`` 1 or 0, the answer (or code), and the solver's
    user agent when the provider sent one beside the answer."""

    status: int
    answer: Any
    user_agent: str | None = None


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 3
    backoff_seconds: float = 0.5
    max_backoff_seconds: float = 4.0

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Full jitter: a random wait up to the exponential bound."""
        bound = min(self.max_backoff_seconds, self.backoff_seconds * 2**attempt)
        return rng.uniform(0, bound)


class CaptchaAiClient:
    def __init__(
        self,
        base_url: str,
        api_key_source: Callable[[], str],
        *,
        connect_timeout_seconds: float = 3.05,
        call_deadline_seconds: float = 10.0,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
        retry: RetryPolicy | None = None,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        codes: ProviderCodes = CAPTCHAAI,
    ) -> None:
        self._base_url = base_url.rstrip("/")
        self._api_key = api_key_source
        self._connect_timeout = min(connect_timeout_seconds, call_deadline_seconds)
        self._call_deadline = call_deadline_seconds
        self._max_answer_bytes = max_answer_bytes
        self._retry = retry or RetryPolicy()
        self._session = session or requests.Session()
        self._session.headers["User-Agent"] = USER_AGENT
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._codes = codes

    def submit(self, request: CaptchaRequest, pingback_url: str) -> str:
        form = {
            **request.fields,
            "key": self._api_key(),
            "method": request.method,
            "pingback": pingback_url,
            "json": "1",
        }
        upload = form.pop(UPLOADED_FIELD, None) if request.method == "post" else None
        files = {"file": ("captcha", decode_image(upload))} if upload is not None else None
        free_threads_seen = False
        for attempt in range(self._retry.attempts):
            try:
                status, answer, _ = self._exchange("POST", "in.php", form, files)
            except ProviderRetryableError as error:
                if not error.resend_is_safe or attempt + 1 >= self._retry.attempts:
                    raise
                self._sleep(self._retry.delay(attempt, self._rng))
                continue
            if status == 1:
                return self._task_id_from(answer)
            last = attempt + 1 >= self._retry.attempts
            verdict, threads_free = self._submit_verdict(
                str(answer), confirmed=free_threads_seen or last
            )
            free_threads_seen = free_threads_seen or threads_free
            if verdict.kind is AnswerKind.RETRYABLE and attempt + 1 < self._retry.attempts:
                self._sleep(self._retry.delay(attempt, self._rng))
                continue
            _raise_for(verdict, "in.php")
        raise ProviderRetryableError("in.php: no attempt left")  # pragma: no cover

    def _submit_verdict(self, code: str, *, confirmed: bool) -> tuple[ProviderAnswer, bool]:
        """A refused submit's meaning; a code that may mean "plan busy" is decided as the
        provider's own client decides it, by asking threadsinfo. Free threads make it the
        account's error once ``confirmed`` (a second refusal with free threads, or no attempt
        left): a thread that frees between the refusal and threadsinfo (every few hundred ms on
        a busy plan) would otherwise read a busy plan as an account without funds. With the
        verdict: whether threadsinfo showed a free thread."""
        verdict = classify(code, self._codes)
        if verdict.value not in self._codes.submit_busy_if_threads_full:
            return verdict, False
        if self.threads_info().is_full:
            return ProviderAnswer(AnswerKind.RETRYABLE, verdict.value), False
        kind = AnswerKind.ACCOUNT if confirmed else AnswerKind.RETRYABLE
        return ProviderAnswer(kind, verdict.value), True

    def threads_info(self) -> ThreadUsage:
        """res.php ``threadsinfo`` (POST, as CaptchaAI's SDK asks it): the plan's thread cap and
        the threads in use; a provider that does not answer it reads as a full plan."""
        status, answer, _ = self._exchange(
            "POST",
            "res.php",
            {"key": self._api_key(), "action": "threadsinfo", "json": "1"},
            counts=True,
        )
        counts = answer if isinstance(answer, dict) else {}
        try:
            return ThreadUsage(int(counts["threads"]), int(counts["working_threads"]))
        except (KeyError, TypeError, ValueError):
            if status == 0:
                _raise_for(classify(str(answer), self._codes), "res.php threadsinfo")
            raise ProviderRetryableError("res.php threadsinfo: no thread counts") from None

    def get_results(self, task_ids: Sequence[str]) -> dict[str, ProviderAnswer]:
        """One HTTP request: ``ids=`` for several ids, ``id=`` for one; never retried here."""
        if len(task_ids) == 1:
            return {task_ids[0]: self._get_one(task_ids[0])}
        return self._get_batch(task_ids)

    def report(self, task_id: str, *, good: bool) -> None:
        """One request: an error's ``resend_is_safe`` is True only when it surely never reached
        the provider (no connection made), and a provider answer other than OK carries its code."""
        action = "reportgood" if good else "reportbad"
        query = {"key": self._api_key(), "json": "1", "action": action, "id": task_id}
        status, answer, _ = self._exchange("GET", "res.php", query, at_most_once=True)
        if status != 1:
            _raise_for(classify(str(answer), self._codes), f"res.php {action}")

    def balance(self) -> float:
        status, answer, _ = self._read({"action": "getbalance"})
        if status != 1:
            _raise_for(classify(str(answer), self._codes), "res.php getbalance")
        try:
            return float(answer)
        except (TypeError, ValueError):
            raise ProviderRetryableError("res.php getbalance: malformed balance") from None

    def _get_one(self, task_id: str) -> ProviderAnswer:
        status, answer, user_agent = self._get({"action": "get", "id": task_id})
        if status == 1:
            return ready(str(answer), user_agent)
        verdict = classify(str(answer), self._codes)
        if verdict.kind is AnswerKind.ACCOUNT:
            _raise_for(verdict, "res.php get")
        return verdict

    def _get_batch(self, task_ids: Sequence[str]) -> dict[str, ProviderAnswer]:
        """Only kinds whose answers never hold '|' are batched (kinds.registry.polled_alone);
        a batch whose parts do not match its ids is refused whole, never split by guesswork."""
        status, answer, _ = self._get({"action": "get", "ids": ",".join(task_ids)})
        parts = str(answer).split("|")
        if status == 1 and len(parts) == len(task_ids):
            return {
                task_id: classify_part(part) for task_id, part in zip(task_ids, parts, strict=True)
            }
        if status == 0:
            verdict = classify(str(answer), self._codes)
            if verdict.kind is AnswerKind.ACCOUNT:
                _raise_for(verdict, "res.php get ids")
            if verdict.kind is AnswerKind.NOT_READY:
                return dict.fromkeys(task_ids, verdict)
            if verdict.kind is AnswerKind.RETRYABLE:
                raise ProviderRetryableError(f"res.php get ids: {verdict.value}")
        # ids= refused (CaptchaAI does not document it) or answered out of shape.
        raise ProviderBatchRefusedError("res.php get ids: answer out of shape")

    def _get(self, params: dict[str, str]) -> Reply:
        return self._exchange("GET", "res.php", {"key": self._api_key(), "json": "1", **params})

    def _read(self, params: dict[str, str]) -> Reply:
        query = {"key": self._api_key(), "json": "1", **params}
        for attempt in range(self._retry.attempts):
            try:
                return self._exchange("GET", "res.php", query)
            except ProviderRetryableError:
                if attempt + 1 >= self._retry.attempts:
                    raise
                self._sleep(self._retry.delay(attempt, self._rng))
        raise ProviderRetryableError("res.php: no attempt left")  # pragma: no cover

    def _exchange(
        self,
        method: str,
        endpoint: str,
        fields: dict[str, str],
        files: dict[str, tuple[str, bytes]] | None = None,
        *,
        counts: bool = False,
        at_most_once: bool = False,
    ) -> Reply:
        """One HTTP request; the provider's answer (``counts``: threadsinfo's JSON object).

        A GET is safe to resend; a POST, or a request ``at_most_once`` (a report), only when it
        surely never reached the provider (for the latter, an HTTP error answer reached it too).
        """
        idempotent = method == "GET" and not at_most_once
        url = f"{self._base_url}/{endpoint}"
        body, query = (fields, None) if method == "POST" else (None, fields)
        deadline = time.monotonic() + self._call_deadline
        try:
            response = self._session.request(
                method,
                url,
                data=body,
                files=files,
                params=query,
                timeout=(self._connect_timeout, self._call_deadline),
                allow_redirects=False,
                stream=True,
            )
        except requests.ConnectTimeout:
            raise ProviderRetryableError(f"{endpoint}: connect timeout") from None
        except requests.ConnectionError as error:
            raise ProviderRetryableError(
                f"{endpoint}: connection failed",
                resend_is_safe=idempotent or _never_connected(error),
            ) from None
        except requests.RequestException as error:
            raise ProviderRetryableError(
                f"{endpoint}: {type(error).__name__}", resend_is_safe=idempotent
            ) from None
        try:
            if response.status_code >= 500 or response.status_code == 429:
                raise ProviderRetryableError(
                    f"{endpoint}: HTTP {response.status_code}", resend_is_safe=not at_most_once
                )
            if 300 <= response.status_code < 400:
                # A redirect would re-send the key and the pingback URL to another host.
                status = response.status_code
                raise ProviderRetryableError(f"{endpoint}: HTTP {status} not followed")
            content = _read_capped(endpoint, response, deadline, self._max_answer_bytes, idempotent)
        finally:
            if response.raw is not None:
                response.close()
        return _parse_counts(endpoint, content) if counts else _parse_answer(endpoint, content)

    @staticmethod
    def _task_id_from(answer: object) -> str:
        try:
            return normalise_task_id(answer)
        except ValueError:
            raise ProviderRetryableError("in.php: malformed task id") from None


def _never_connected(error: requests.ConnectionError) -> bool:
    """True when the request surely never reached the provider (refused, DNS, no route)."""
    text = repr(error.args)
    markers = ("NewConnectionError", "NameResolutionError", "Connection refused")
    return any(marker in text for marker in markers)


def _read_capped(
    endpoint: str,
    response: requests.Response,
    deadline: float,
    max_bytes: int,
    idempotent: bool,
) -> bytes:
    """The body, read one socket receive at a time so the call's deadline holds between drips."""
    raw = response.raw
    if not isinstance(raw, urllib3.BaseHTTPResponse):  # a transport that already holds the body
        content = response.content
        if len(content) > max_bytes:
            raise ProviderRetryableError(f"{endpoint}: answer over {max_bytes} bytes")
        return content
    chunks: list[bytes] = []
    size = 0
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ProviderRetryableError(
                    f"{endpoint}: answer not complete within the call deadline",
                    resend_is_safe=idempotent,
                )
            _limit_wait(raw, remaining)
            chunk = raw.read1(READ_CHUNK_BYTES)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > max_bytes:
                raise ProviderRetryableError(f"{endpoint}: answer over {max_bytes} bytes")
            chunks.append(chunk)
    except (urllib3.exceptions.HTTPError, OSError) as error:
        raise ProviderRetryableError(
            f"{endpoint}: answer not received: {type(error).__name__}", resend_is_safe=idempotent
        ) from None


def _limit_wait(raw: urllib3.BaseHTTPResponse, seconds: float) -> None:
    """No single receive may wait past the call's deadline."""
    sock = getattr(getattr(raw, "connection", None), "sock", None)
    if sock is not None:
        sock.settimeout(seconds)


def _parse_answer(endpoint: str, content: bytes) -> Reply:
    """JSON ``{"status": 0|1, "request": ...}``, or the plain-text forms ``OK|x`` / ``ERROR_X``.

    CaptchaAI answers some kinds (reCAPTCHA Enterprise, Cloudflare Challenge) in ``result``, with
    the solver's ``user_agent`` beside it (captchaai 1.0.1, core/registry.py ``solution_key`` and
    ``returns_user_agent``; helpers/extract.py): a solved answer is ``result`` when the provider
    sent one, else ``request``. Hostile answers (deep nesting, non-UTF-8, odd types) become a
    retryable error, never a crash.
    """
    body = content.decode("utf-8", errors="replace").strip()
    document = _json_document(body)
    if isinstance(document, dict) and "status" in document:
        status_field = document.get("status")
        status = 1 if status_field in (1, "1") and not isinstance(status_field, bool) else 0
        request = document.get("request", "")
        result = document.get("result")
        if status == 1 and result not in (None, ""):
            request = result
        if isinstance(request, dict | list):
            # JSON answers (GeeTest, grids, BLS, Lemin) sent as JSON, not as a string: kept
            # whatever its shape (nested too), compact, as the answer's exact text.
            request = _compact_json(endpoint, request, len(body))
        if isinstance(request, bool) or not isinstance(request, str | int):
            raise ProviderRetryableError(f"{endpoint}: malformed answer (len={len(body)})")
        user_agent = document.get("user_agent")
        return Reply(status, request, user_agent if isinstance(user_agent, str) else None)
    if body.startswith("OK|"):
        return Reply(1, body[3:])
    if PLAIN_CODE.fullmatch(body):
        return Reply(0, body)
    raise ProviderRetryableError(f"{endpoint}: malformed answer (len={len(body)})")


def _parse_counts(endpoint: str, content: bytes) -> Reply:
    """threadsinfo's ``{"threads": N, "working_threads": M}``; anything else as _parse_answer."""
    document = _json_document(content.decode("utf-8", errors="replace").strip())
    if isinstance(document, dict) and "threads" in document:
        return Reply(1, document)
    return _parse_answer(endpoint, content)


def _json_document(body: str) -> object:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def _compact_json(endpoint: str, value: object, length: int) -> str:
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except RecursionError:
        raise ProviderRetryableError(f"{endpoint}: malformed answer (len={length})") from None


def _raise_for(verdict: ProviderAnswer, where: str) -> None:
    message, code = f"{where}: {verdict.value}", verdict.value
    if verdict.kind is AnswerKind.ACCOUNT:
        raise ProviderAccountError(message, code=code)
    if verdict.kind is AnswerKind.RETRYABLE or verdict.kind is AnswerKind.NOT_READY:
        raise ProviderRetryableError(message, code=code)
    raise ProviderRejectedError(message, code=code)
