"""Derive the project's sample Lambda events from the raw `sam local generate-event` output.

The raw events (tests/events/http_api_proxy.json, sqs_receive_message.json,
scheduled_event.json) come from `make sam-events`. This module reshapes them into events as
API Gateway (HTTP API, payload 2.0), SQS and EventBridge Scheduler really deliver them for this
stack's routes, deterministically (no clock, no randomness), and writes:

- tests/events/callback_post_form_2captcha.json   2captcha pingback: POST form id, code, rate
- tests/events/callback_get_captchaai.json        CaptchaAI pingback: GET ?id=..&code=..
- events/*.json                                   one event per route/trigger, for
                                                  `sam local invoke -e` (docs/operations.md)

Run: `python -m infra.sam.make_events` (from the repository root). A test checks the committed
files equal what this module produces.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[2]
RAW_DIR = ROOT / "tests" / "events"
INVOKE_DIR = ROOT / "events"

ACCOUNT_ID = "123456789012"
REGION = "us-east-1"
API_ID = "a1b2c3d4e5"
DOMAIN_NAME = f"{API_ID}.execute-api.{REGION}.amazonaws.com"
# The sample callback secret: 40 alphanumerics like the generated one. Local/test use only.
SAMPLE_CALLBACK_SECRET = "PgLocalCallbackSecretForTestsOnly0000001"  # noqa: S105 - sample
SAMPLE_TASK_ID = "73026473457"
SAMPLE_FAILED_TASK_ID = "73026473458"
SAMPLE_RATE = "0.00299"
SAMPLE_EPOCH_MS = 1767225600000  # 2026-01-01T00:00:00Z
LOCAL_DLQ_NAME = "pingback-guard-local-dead-letter"
UNSOLVABLE = "ERROR_CAPTCHA_UNSOLVABLE"
PROVIDER_IP = "203.0.113.10"  # TEST-NET-3: stands for the provider's pingback sender
WORKER_IP = "198.51.100.20"  # TEST-NET-2: stands for a worker calling the task API

Event = dict[str, Any]


def sample_token(length: int = 1024) -> str:
    """A deterministic stand-in for a reCAPTCHA token (base64url alphabet, ~1 KB)."""
    out = "03AFcWeA"
    block = b"pingback-guard-sample-token"
    while len(out) < length:
        block = hashlib.sha256(block).digest()
        out += base64.urlsafe_b64encode(block).decode().rstrip("=")
    return out[:length]


def _load(name: str) -> Event:
    loaded: Event = json.loads((RAW_DIR / name).read_text())
    return loaded


def http_event(
    raw: Event,
    *,
    method: str,
    route_path: str,
    raw_path: str,
    path_parameters: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    body: bytes | None = None,
    content_type: str | None = None,
    base64_body: bool = False,
    iam_caller: bool = False,
    source_ip: str = PROVIDER_IP,
    user_agent: str = "python-requests/2.32.3",
    request_id: str = "Rq1AbCdEfGhIjKw=",
) -> Event:
    """Reshape the generated HTTP API (payload 2.0) event into one route of this stack."""
    event = copy.deepcopy(raw)
    route_key = f"{method} {route_path}"
    raw_query = urlencode(query) if query else ""
    headers = {
        "accept": "*/*",
        "host": DOMAIN_NAME,
        "user-agent": user_agent,
        "x-amzn-trace-id": "Root=1-677e1a00-0123456789abcdef01234567",
        "x-forwarded-for": source_ip,
        "x-forwarded-port": "443",
        "x-forwarded-proto": "https",
    }
    if body is not None:
        headers["content-length"] = str(len(body))
    if content_type is not None:
        headers["content-type"] = content_type
    event.update(
        {
            "routeKey": route_key,
            "rawPath": raw_path,
            "rawQueryString": raw_query,
            "headers": headers,
        }
    )
    # Keys API Gateway leaves out when they have no value.
    for key in ("cookies", "queryStringParameters", "pathParameters", "stageVariables", "body"):
        event.pop(key, None)
    if query:
        event["queryStringParameters"] = dict(query)
    if path_parameters:
        event["pathParameters"] = dict(path_parameters)
    if body is not None:
        event["body"] = base64.b64encode(body).decode() if base64_body else body.decode()
    event["isBase64Encoded"] = bool(body is not None and base64_body)

    ctx = event["requestContext"]
    ctx.pop("authentication", None)  # mTLS only
    ctx.pop("authorizer", None)
    if iam_caller:
        ctx["authorizer"] = {
            "iam": {
                "accessKey": "AKIAIOSFODNN7EXAMPLE",
                "accountId": ACCOUNT_ID,
                "callerId": "AIDAEXAMPLEWORKER0001",
                "cognitoIdentity": None,
                "principalOrgId": None,
                "userArn": f"arn:aws:iam::{ACCOUNT_ID}:user/captcha-worker",
                "userId": "AIDAEXAMPLEWORKER0001",
            }
        }
    ctx.update(
        {
            "accountId": ACCOUNT_ID,
            "apiId": API_ID,
            "domainName": DOMAIN_NAME,
            "domainPrefix": API_ID,
            "requestId": request_id,
            "routeKey": route_key,
            "stage": "$default",
            "time": "01/Jan/2026:00:00:00 +0000",
            "timeEpoch": SAMPLE_EPOCH_MS,
        }
    )
    ctx["http"] = {
        "method": method,
        "path": raw_path,
        "protocol": "HTTP/1.1",
        "sourceIp": source_ip,
        "userAgent": user_agent,
    }
    return event


def provider_callback(raw: Event, *, method: str, request_id: str, **request: Any) -> Event:
    """A provider's pingback to the sample callback URL."""
    return http_event(
        raw,
        method=method,
        route_path="/callback/{secret}",
        raw_path=f"/callback/{SAMPLE_CALLBACK_SECRET}",
        path_parameters={"secret": SAMPLE_CALLBACK_SECRET},
        request_id=request_id,
        **request,
    )


def worker_request(
    raw: Event,
    *,
    method: str,
    raw_path: str,
    request_id: str,
    route_path: str | None = None,
    path_parameters: dict[str, str] | None = None,
    body: bytes | None = None,
) -> Event:
    """A worker's SigV4-signed call to the task API (a JSON body, when it has one)."""
    return http_event(
        raw,
        method=method,
        route_path=route_path or raw_path,
        raw_path=raw_path,
        path_parameters=path_parameters,
        body=body,
        content_type=None if body is None else "application/json",
        iam_caller=True,
        source_ip=WORKER_IP,
        user_agent="Boto3/1.35.0 md/Botocore#1.35.0",
        request_id=request_id,
    )


def on_sample_task(raw: Event, *, method: str, suffix: str = "", **request: Any) -> Event:
    """A worker's call on /tasks/{task_id}<suffix> for the sample task."""
    return worker_request(
        raw,
        method=method,
        route_path=f"/tasks/{{task_id}}{suffix}",
        raw_path=f"/tasks/{SAMPLE_TASK_ID}{suffix}",
        path_parameters={"task_id": SAMPLE_TASK_ID},
        **request,
    )


def callback_post_form(raw: Event) -> Event:
    """2captcha: POST application/x-www-form-urlencoded id, code, rate (base64 body)."""
    form = urlencode({"id": SAMPLE_TASK_ID, "code": sample_token(), "rate": SAMPLE_RATE})
    return provider_callback(
        raw,
        method="POST",
        body=form.encode(),
        content_type="application/x-www-form-urlencoded",
        base64_body=True,
        request_id="CbPoStFoRm01Aw=",
    )


def callback_get(raw: Event, *, task_id: str = SAMPLE_TASK_ID, code: str | None = None) -> Event:
    """CaptchaAI: GET /callback/{secret}?id=..&code=.."""
    return provider_callback(
        raw,
        method="GET",
        query={"id": task_id, "code": sample_token() if code is None else code},
        request_id="CbGeT0000001Aw=",
    )


def callback_post_json(raw: Event) -> Event:
    body = json.dumps({"id": SAMPLE_TASK_ID, "code": sample_token()}).encode()
    return provider_callback(
        raw,
        method="POST",
        body=body,
        content_type="application/json",
        request_id="CbPoStJsOn01Aw=",
    )


def verification_txt(raw: Event) -> Event:
    return http_event(
        raw,
        method="GET",
        route_path="/2captcha.txt",
        raw_path="/2captcha.txt",
        request_id="VeRiFy000001Aw=",
    )


def submit_task(raw: Event) -> Event:
    body = json.dumps(
        {
            "method": "userrecaptcha",
            "sitekey": "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-",
            "page_url": "https://www.google.com/recaptcha/api2/demo",
        }
    ).encode()
    return worker_request(
        raw, method="POST", raw_path="/tasks", body=body, request_id="SuBmIt000001Aw="
    )


def get_task(raw: Event) -> Event:
    return on_sample_task(raw, method="GET", request_id="GeTtAsK00001Aw=")


def issue_pingback_url(raw: Event) -> Event:
    return worker_request(
        raw, method="POST", raw_path="/pingback-urls", body=b"{}", request_id="IsSuEuRl0001Aw="
    )


def register_task(raw: Event) -> Event:
    """The pingback_url is a placeholder: take a real one from POST /pingback-urls."""
    body = json.dumps(
        {
            "pingback_url": f"https://{DOMAIN_NAME}/callback/v1.AAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA",
            "method": "userrecaptcha",
            "sitekey": "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-",
            "page_url": "https://www.google.com/recaptcha/api2/demo",
        }
    ).encode()
    return on_sample_task(raw, method="PUT", body=body, request_id="ReGiStEr0001Aw=")


def report_task(raw: Event) -> Event:
    body = json.dumps({"correct": False}).encode()
    return on_sample_task(
        raw, method="POST", suffix="/report", body=body, request_id="RePoRt000001Aw="
    )


# A made-up per-worker key (pingback-guard keys issue prints real ones): 32 hex characters.
SAMPLE_WORKER_KEY = "0123456789abcdef0123456789abcdef"
SAMPLE_2CAPTCHA_SUBMIT = {
    "key": SAMPLE_WORKER_KEY,
    "method": "userrecaptcha",
    "googlekey": "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-",
    "pageurl": "https://www.google.com/recaptcha/api2/demo",
    "soft_id": "4580",
}


def two_captcha_call(
    raw: Event, *, method: str, endpoint: str, fields: dict[str, str], request_id: str
) -> Event:
    """A 2captcha client's call to /in.php or /res.php: query string, or a form body."""
    body = urlencode(fields).encode() if method == "POST" else None
    return http_event(
        raw,
        method=method,
        route_path=endpoint,
        raw_path=endpoint,
        query=None if body else fields,
        body=body,
        content_type="application/x-www-form-urlencoded" if body else None,
        base64_body=body is not None,
        source_ip=WORKER_IP,
        request_id=request_id,
    )


def replay_batch(raw: Event) -> Event:
    """Two dead-letter messages as the SQS event source delivers them to ReplayFunction."""
    template = raw["Records"][0]
    received_at = SAMPLE_EPOCH_MS // 1000
    messages = [
        ("2e1424d4-f796-459a-8184-9c92662be6da", SAMPLE_TASK_ID, sample_token(), "1"),
        ("4d6c1b8e-6c2f-4a55-9b0a-4f3e5f1c2a10", SAMPLE_FAILED_TASK_ID, UNSOLVABLE, "3"),
    ]
    records = []
    for message_id, task_id, code, receive_count in messages:
        record = copy.deepcopy(template)
        body = json.dumps(
            {"task_id": task_id, "code": code, "received_at": received_at, "source": "callback"}
        )
        record.update(
            {
                "messageId": message_id,
                "receiptHandle": f"AQEB{hashlib.sha256(message_id.encode()).hexdigest()}",
                "body": body,
                "md5OfBody": hashlib.md5(body.encode(), usedforsecurity=False).hexdigest(),
                "eventSourceARN": f"arn:aws:sqs:{REGION}:{ACCOUNT_ID}:{LOCAL_DLQ_NAME}",
                "awsRegion": REGION,
            }
        )
        record["attributes"] = {
            "ApproximateReceiveCount": receive_count,
            "SentTimestamp": str(SAMPLE_EPOCH_MS),
            "SenderId": "AROAEXAMPLECALLBACK01:pingback-guard-CallbackFunction",
            "ApproximateFirstReceiveTimestamp": str(SAMPLE_EPOCH_MS + 5),
        }
        records.append(record)
    return {"Records": records}


def poller_schedule() -> Event:
    """The template's ScheduleV2 `Input` once Scheduler has filled in its context attributes."""
    return {
        "source": "pingback-guard.scheduler",
        "scheduled_time": "2026-01-01T00:00:00Z",
        "execution_id": "d32c5kddcf5bb8c3",
        "attempt": "1",
    }


def build() -> dict[Path, Event]:
    http = _load("http_api_proxy.json")
    sqs = _load("sqs_receive_message.json")
    return {
        RAW_DIR / "callback_post_form_2captcha.json": callback_post_form(http),
        RAW_DIR / "callback_get_captchaai.json": callback_get(http),
        INVOKE_DIR / "callback_post_form.json": callback_post_form(http),
        INVOKE_DIR / "callback_get.json": callback_get(http),
        INVOKE_DIR / "callback_get_unsolvable.json": callback_get(
            http, task_id=SAMPLE_FAILED_TASK_ID, code=UNSOLVABLE
        ),
        INVOKE_DIR / "callback_post_json.json": callback_post_json(http),
        INVOKE_DIR / "verification_2captcha_txt.json": verification_txt(http),
        INVOKE_DIR / "submit_task.json": submit_task(http),
        INVOKE_DIR / "get_task.json": get_task(http),
        INVOKE_DIR / "issue_pingback_url.json": issue_pingback_url(http),
        INVOKE_DIR / "register_task.json": register_task(http),
        INVOKE_DIR / "report_task.json": report_task(http),
        INVOKE_DIR / "in_php_post_form.json": two_captcha_call(
            http,
            method="POST",
            endpoint="/in.php",
            fields=SAMPLE_2CAPTCHA_SUBMIT,
            request_id="InPhPpOsT001Aw=",
        ),
        INVOKE_DIR / "in_php_get.json": two_captcha_call(
            http,
            method="GET",
            endpoint="/in.php",
            fields={**SAMPLE_2CAPTCHA_SUBMIT, "json": "1"},
            request_id="InPhPgEt0001Aw=",
        ),
        INVOKE_DIR / "res_php_get.json": two_captcha_call(
            http,
            method="GET",
            endpoint="/res.php",
            fields={"key": SAMPLE_WORKER_KEY, "action": "get", "id": SAMPLE_TASK_ID},
            request_id="ReSpHpGeT001Aw=",
        ),
        INVOKE_DIR / "res_php_post_report.json": two_captcha_call(
            http,
            method="POST",
            endpoint="/res.php",
            fields={"key": SAMPLE_WORKER_KEY, "action": "reportbad", "id": SAMPLE_TASK_ID},
            request_id="ReSpHpPoSt01Aw=",
        ),
        INVOKE_DIR / "replay_dead_letters.json": replay_batch(sqs),
        INVOKE_DIR / "poller_schedule.json": poller_schedule(),
    }


def render(event: Event) -> str:
    return json.dumps(event, indent=2) + "\n"


def main() -> int:
    for path, event in build().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(event))
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
