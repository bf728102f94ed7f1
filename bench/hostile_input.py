"""What the worst body costs each public route: CPU per request, for the bodies issue 39 asks
for (escape floods, unclosed strings, deep nesting, percent-encoding floods, boundary tricks,
many keys, huge ids lists), each through the code its handler runs for it before any store call.

- ``/in.php`` and ``/res.php``: the handler's reader (protocol_pairs) into the logic, with a key
  table that knows no key (what an anonymous caller costs) or, for ``ids=``, one that knows the
  key, a budget that admits and a store that holds no task (what a key holder costs);
- the callback: parse_callback behind a valid capability (a leaked URL; a forged one is refused
  by its HMAC before the body is read);
- ``POST /tasks``, ``PUT /tasks/{id}``, ``POST /tasks/{id}/report`` (IAM routes): json_body and
  the route's parser; ``POST /pingback-urls`` reads no body (its row says so);
- push messages: parse_subscription.

Run standalone: ``python -m bench.hostile_input``; ``python -m bench`` runs it as a section.
"""

from __future__ import annotations

import base64
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

from bench.compat_refusals import NoKeys, floods
from bench.outcome import Headline, SectionOutcome, markdown_table
from pingback_guard.domain.errors import InvalidCallbackError
from pingback_guard.domain.worker_keys import WorkerKey, digest_of
from pingback_guard.handlers.protocol import (
    MAX_RESULT_BODY_BYTES,
    MAX_SUBMIT_BODY_BYTES,
    FieldsRead,
    MalformedRequestError,
    protocol_pairs,
)
from pingback_guard.handlers.responses import MAX_JSON_BODY_BYTES, InvalidBodyError, json_body
from pingback_guard.kinds.json_fields import request_from_json
from pingback_guard.kinds.registry import MAX_REQUEST_BYTES, InvalidFieldError
from pingback_guard.logic.compat_results import MAX_IDS, CompatResults
from pingback_guard.logic.compat_submit import CompatSubmit
from pingback_guard.logic.get_task import TaskQuery
from pingback_guard.logic.pingback_request import (
    MAX_CALLBACK_BODY_BYTES,
    CallbackRequest,
    parse_callback,
)
from pingback_guard.logic.push import (
    MAX_SUBSCRIPTION_BYTES,
    InvalidSubscription,
    parse_subscription,
)
from pingback_guard.logic.register import InvalidRegistrationError, parse_registration
from pingback_guard.logic.report import InvalidReportError, ReportService, parse_report
from pingback_guard.logic.request_budgets import BalanceSource, KeyBudget
from pingback_guard.logic.submit import IssuedPingback, SubmitService
from pingback_guard.logic.worker_keys import WorkerKeys

TARGET_MS = 50.0
RUNS = 3
WORKER_KEY = "5ec7e7c0ffee5ec7e7c0ffee5ec7e7c0"
UNKNOWN_KEY = "0123456789abcdef0123456789abcdef"
JSON = "application/json"
OWNER = "arn:aws:iam::123456789012:user/worker"
SECTION = "hostile_input"
TITLE = "10. CPU per request for the worst body of each public route (hostile input)"


@dataclass(frozen=True)
class Body:
    route: str
    shape: str
    body_bytes: int
    run: Callable[[], str]


@dataclass(frozen=True)
class Cost:
    route: str
    shape: str
    body_bytes: int
    cpu_ms: float
    answer: str


class OneKey:
    """The worker-key table knowing WORKER_KEY only."""

    def find(self, key_id: str) -> WorkerKey | None:
        digest = digest_of(WORKER_KEY)
        return (
            WorkerKey(digest.key_id, digest.digest, OWNER, 1.0) if key_id == digest.key_id else None
        )


class AlwaysAdmits:
    refusal = "ERROR: 1005"

    def admits(self, key_id: str) -> bool:
        return True

    def admits_reads(self, key_id: str, reads: int) -> bool:
        return True


class NoTasks:
    """A task table with no task: each id is one (network) read, no CPU of note."""

    def get(self, task_id: str) -> None:
        return None


def _event(body: bytes, content_type: str, query: str = "") -> dict[str, Any]:
    return {
        "rawQueryString": query,
        "headers": {"content-type": content_type},
        "body": base64.b64encode(body).decode(),
        "isBase64Encoded": True,
        "requestContext": {"http": {"method": "POST"}, "domainName": "api.test"},
    }


def _in_php(event: dict[str, Any]) -> str:
    service = CompatSubmit(
        WorkerKeys(NoKeys()), cast(SubmitService, None), budget=cast(KeyBudget, None)
    )
    try:
        outcome = service.submit(FieldsRead(protocol_pairs(event, MAX_SUBMIT_BODY_BYTES)), _never)
    except MalformedRequestError as error:
        return f"ERROR_BAD_PARAMETERS ({error})"
    return outcome.answer.plain


def _res_php(event: dict[str, Any], keys: object = None) -> str:
    service = CompatResults(
        WorkerKeys(cast(Any, keys or NoKeys())),
        TaskQuery(cast(Any, NoTasks())),
        cast(ReportService, None),
        cast(BalanceSource, None),
        budget=cast(KeyBudget, AlwaysAdmits()),
    )
    try:
        outcome = service.answer(FieldsRead(protocol_pairs(event, MAX_RESULT_BODY_BYTES)))
    except MalformedRequestError as error:
        return f"ERROR_BAD_PARAMETERS ({error})"
    answer = outcome.answer.plain
    return answer if len(answer) <= 60 else f"{answer[:40]}... ({len(answer)} chars)"


def _never() -> IssuedPingback:
    raise AssertionError("a refused request never reaches the submit")


def _json_route(body: bytes, max_bytes: int, parse: Callable[[object], object]) -> str:
    try:
        parse(json_body(_event(body, JSON), max_bytes))
    except (InvalidBodyError, InvalidFieldError, InvalidRegistrationError, InvalidReportError) as e:
        return f"400 ({str(e)[:60]})"
    return "accepted"


def _callback(body: bytes, content_type: str) -> str:
    request = CallbackRequest("POST", {}, content_type, body)
    try:
        parse_callback(request, received_at=time.time(), nonce="n")
    except InvalidCallbackError as error:
        return f"400 ({str(error)[:60]})"
    return "accepted"


def _push(body: bytes) -> str:
    try:
        parse_subscription(body.decode("utf-8", "surrogateescape"))
    except InvalidSubscription as error:
        return f"400 ({str(error)[:60]})"
    return "accepted"


def json_floods(size: int) -> dict[str, bytes]:
    """The worst JSON bodies of ``size`` bytes for a parser that bounds nesting and size."""
    return {
        "escape flood, unclosed string": b"{" + b'\\"' * (size // 2 - 1),
        "escaped quotes in one long string": b'{"a":"' + b'\\"' * (size // 2 - 8) + b'"}',
        "deep nesting": b"[" * (size // 2) + b"]" * (size // 2),
        "brackets inside a string, then 33 deep": (
            b'["' + b"[" * (size - 80) + b'",' + b"[" * 33 + b"]" * 33 + b"]"
        ),
        "many tiny members": b"{" + b'"a":1,' * ((size - 8) // 6) + b'"a":1}',
        "one huge number": b'{"a":' + b"9" * (size - 8) + b"}",
        "unicode escapes": b'{"a":"' + b"\\u00e9" * ((size - 8) // 6) + b'"}',
        "many short strings after 40 objects": (
            b"[" + b"{}," * 40 + b'"a",' * ((size - 130) // 4) + b'"a"]'
        ),
        "closing brackets flood": b"[" * 33 + b"]" * (size - 33),
    }


FORM = "application/x-www-form-urlencoded"


def in_php_bodies() -> list[Body]:
    found = [
        Body("/in.php", name, len(base64.b64decode(event["body"])), partial(_in_php, event))
        for name, event in floods().items()
    ]
    found += [
        Body("/in.php", f"JSON, {shape}", len(body), partial(_in_php, _event(body, JSON)))
        for shape, body in json_floods(MAX_REQUEST_BYTES).items()
    ]
    percent = b"a=" + b"%41" * (MAX_SUBMIT_BODY_BYTES // 3 - 1)
    pairs = b"&".join([b"body=" + b"%2B" * 45_000] * 17)
    near_boundaries = b"--" + b"b" * 69 + b"\r\n"
    boundary_trick = (
        b"--"
        + b"b" * 70
        + b'\r\nContent-Disposition: form-data; name="a"\r\n\r\n'
        + near_boundaries * (MAX_SUBMIT_BODY_BYTES // len(near_boundaries) - 1)
        + b"--"
        + b"b" * 70
        + b"--\r\n"
    )
    header_flood = b"--f\r\nContent-Disposition: form-data; name=" + b"a" * MAX_SUBMIT_BODY_BYTES
    keys = b"&".join([b"key=" + WORKER_KEY.encode(), b"key=" + UNKNOWN_KEY.encode()] * 99)
    return [
        *found,
        Body(
            "/in.php",
            "urlencoded, 2.4 MB percent-encoding flood, no key",
            len(percent),
            partial(_in_php, _event(percent, FORM)),
        ),
        Body(
            "/in.php",
            "urlencoded, 17 fields of 135 KB of %2B each, no key",
            len(pairs),
            partial(_in_php, _event(pairs, FORM)),
        ),
        Body(
            "/in.php",
            "multipart, 2.4 MB of lines one byte short of the boundary",
            len(boundary_trick),
            partial(_in_php, _event(boundary_trick, "multipart/form-data; boundary=" + "b" * 70)),
        ),
        Body(
            "/in.php",
            "multipart, one 2.4 MB header line",
            len(header_flood),
            partial(_in_php, _event(header_flood, "multipart/form-data; boundary=f")),
        ),
        Body(
            "/in.php",
            "multipart, non-Latin-1 boundary",
            8,
            partial(_in_php, _event(b"--\xc4\x80x\r\n", "multipart/form-data; boundary=\u0100x")),
        ),
        Body(
            "/in.php",
            "urlencoded, 198 keys, two values alternating",
            len(keys),
            partial(_in_php, _event(keys, FORM)),
        ),
    ]


def res_php_bodies() -> list[Body]:
    found = [
        Body(
            "/res.php",
            f"JSON as text/plain, {shape}",
            len(body),
            partial(_res_php, _event(body, "text/plain")),
        )
        for shape, body in json_floods(MAX_RESULT_BODY_BYTES).items()
    ]
    distinct = ",".join(f"{72_000_000_000 + n}" for n in range(MAX_IDS))
    repeated = ",".join(["72000000001"] * MAX_IDS)
    percent = b"a=" + b"%41" * (MAX_RESULT_BODY_BYTES // 3 - 1)
    return [
        *found,
        Body(
            "/res.php",
            f"ids= of {MAX_IDS} distinct ids, known key",
            len(distinct),
            partial(
                _res_php, _event(b"", "", f"key={WORKER_KEY}&action=get&ids={distinct}"), OneKey()
            ),
        ),
        Body(
            "/res.php",
            f"ids= of one id {MAX_IDS} times, known key",
            len(repeated),
            partial(
                _res_php, _event(b"", "", f"key={WORKER_KEY}&action=get&ids={repeated}"), OneKey()
            ),
        ),
        Body(
            "/res.php",
            "urlencoded percent flood, no key",
            len(percent),
            partial(_res_php, _event(percent, FORM)),
        ),
    ]


def callback_bodies() -> list[Body]:
    route = "callback (valid capability)"
    form = b"id=1&code=" + b"%41" * (MAX_CALLBACK_BODY_BYTES // 3 - 4)
    return [
        *(
            Body(route, f"JSON, {shape}", len(body), partial(_callback, body, JSON))
            for shape, body in json_floods(MAX_CALLBACK_BODY_BYTES).items()
        ),
        Body(route, "form, percent flood", len(form), partial(_callback, form, FORM)),
        Body(
            route,
            "form, 16 KB of '&'",
            MAX_CALLBACK_BODY_BYTES,
            partial(_callback, b"&" * MAX_CALLBACK_BODY_BYTES, FORM),
        ),
    ]


def iam_route_bodies() -> list[Body]:
    routes: list[tuple[str, int, Callable[[object], object]]] = [
        ("POST /tasks", MAX_REQUEST_BYTES, request_from_json),
        ("PUT /tasks/{id}", MAX_REQUEST_BYTES, partial(parse_registration, "72000000001")),
        ("POST /tasks/{id}/report", MAX_JSON_BODY_BYTES, parse_report),
    ]
    found = [
        Body(route, f"JSON, {shape}", len(body), partial(_json_route, body, max_bytes, parse))
        for route, max_bytes, parse in routes
        for shape, body in json_floods(max_bytes).items()
    ]
    return [*found, Body("POST /pingback-urls", "any body (never read)", 0, _not_read)]


def push_bodies() -> list[Body]:
    return [
        Body("push subscribe", f"JSON, {shape}", len(body), partial(_push, body))
        for shape, body in json_floods(MAX_SUBSCRIPTION_BYTES).items()
    ]


def bodies() -> list[Body]:
    return [
        *in_php_bodies(),
        *res_php_bodies(),
        *callback_bodies(),
        *iam_route_bodies(),
        *push_bodies(),
    ]


def _not_read() -> str:
    return "not read"


def measure() -> list[Cost]:
    costs = []
    for body in bodies():
        answer, samples = "", []
        for _ in range(RUNS):
            started = time.process_time()
            answer = body.run()
            samples.append((time.process_time() - started) * 1000)
        costs.append(
            Cost(body.route, body.shape, body.body_bytes, statistics.median(samples), answer)
        )
    return costs


def report_lines(costs: list[Cost]) -> list[str]:
    rows = [
        (c.route, c.shape, f"{c.body_bytes / 1e3:,.1f} KB", f"{c.cpu_ms:.1f}", c.answer)
        for c in costs
    ]
    worst = max(costs, key=lambda c: c.cpu_ms)
    return [
        f"CPU per request (median of {RUNS}, one shared core), target < {TARGET_MS:.0f} ms:",
        "",
        *markdown_table(["route", "body", "size", "CPU ms", "answer"], rows),
        "",
        f"worst: {worst.cpu_ms:.1f} ms CPU, {worst.route}, {worst.shape} "
        f"({'met' if worst.cpu_ms < TARGET_MS else 'MISSED'})",
    ]


def measure_hostile_input() -> SectionOutcome:
    costs = measure()
    worst = max(costs, key=lambda c: c.cpu_ms)
    return SectionOutcome(
        key=SECTION,
        title=TITLE,
        data={"costs": [c.__dict__ for c in costs], "target_ms": TARGET_MS},
        headlines=[
            Headline(
                "Worst body's CPU per request (any public route)",
                f"{worst.cpu_ms:.1f} ms ({worst.route}, {worst.shape})",
                f"< {TARGET_MS:.0f} ms",
                worst.cpu_ms < TARGET_MS,
            )
        ],
        details=report_lines(costs),
    )


def main() -> None:
    print("\n".join(report_lines(measure())))


if __name__ == "__main__":
    main()
