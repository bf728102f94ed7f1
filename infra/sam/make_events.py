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
files equal what this module produces. The pingbacks carry a sample capability minted under the
sample secret for tasks no table holds: `make sam-local-events` (infra/sam/local_events.py)
records real tasks in the local table and rewrites events/ with their ids and capabilities.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from pingback_guard.logic import capability

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

SAMPLE_OWNER = f"arn:aws:iam::{ACCOUNT_ID}:user/captcha-worker"
SAMPLE_REQUEST_FIELDS = {
    "googlekey": "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-",
    "pageurl": "https://www.google.com/recaptcha/api2/demo",
}

Event = dict[str, Any]


@dataclass(frozen=True)
class SampleTasks:
    """The tasks the events act on: one solved by its pingback, one unsolvable."""

    solved_id: str
    solved_capability: str
    failed_id: str
    failed_capability: str

    @property
    def solved_nonce(self) -> str:
        return nonce_of(self.solved_capability)

    @property
    def failed_nonce(self) -> str:
        return nonce_of(self.failed_capability)


def nonce_of(capability_token: str) -> str:
    return capability_token.split(".")[1]


# The committed samples' issue time: fixed, so they do not change when regenerated (a callback
# refuses them once they are older than two retention windows; local_events mints fresh ones).
SAMPLE_ISSUED_AT = 1_796_000_000


def _sample_capability(seed: int) -> str:
    """Deterministic: the committed events do not change when regenerated."""
    return capability.mint(
        SAMPLE_CALLBACK_SECRET, SAMPLE_ISSUED_AT, random_bytes=lambda n: bytes([seed]) * n
    ).token


COMMITTED_SAMPLE = SampleTasks(
    solved_id=SAMPLE_TASK_ID,
    solved_capability=_sample_capability(1),
    failed_id=SAMPLE_FAILED_TASK_ID,
    failed_capability=_sample_capability(2),
)


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


def provider_callback(
    raw: Event, *, capability_token: str, method: str, request_id: str, **request: Any
) -> Event:
    """A provider's pingback to a task's pingback URL (its capability in the path)."""
    return http_event(
        raw,
        method=method,
        route_path="/callback/{secret}",
        raw_path=f"/callback/{capability_token}",
        path_parameters={"secret": capability_token},
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


def on_task(raw: Event, task_id: str, *, method: str, suffix: str = "", **request: Any) -> Event:
    """A worker's call on /tasks/{task_id}<suffix>."""
    return worker_request(
        raw,
        method=method,
        route_path=f"/tasks/{{task_id}}{suffix}",
        raw_path=f"/tasks/{task_id}{suffix}",
        path_parameters={"task_id": task_id},
        **request,
    )


def callback_post_form(raw: Event, sample: SampleTasks) -> Event:
    """2captcha: POST application/x-www-form-urlencoded id, code, rate (base64 body)."""
    form = urlencode({"id": sample.solved_id, "code": sample_token(), "rate": SAMPLE_RATE})
    return provider_callback(
        raw,
        capability_token=sample.solved_capability,
        method="POST",
        body=form.encode(),
        content_type="application/x-www-form-urlencoded",
        base64_body=True,
        request_id="CbPoStFoRm01Aw=",
    )


def callback_get(raw: Event, sample: SampleTasks, *, unsolvable: bool = False) -> Event:
    """CaptchaAI: GET /callback/{capability}?id=..&code=.."""
    task_id = sample.failed_id if unsolvable else sample.solved_id
    return provider_callback(
        raw,
        capability_token=sample.failed_capability if unsolvable else sample.solved_capability,
        method="GET",
        query={"id": task_id, "code": UNSOLVABLE if unsolvable else sample_token()},
        request_id="CbGeT0000001Aw=",
    )


def callback_post_json(raw: Event, sample: SampleTasks) -> Event:
    body = json.dumps({"id": sample.solved_id, "code": sample_token()}).encode()
    return provider_callback(
        raw,
        capability_token=sample.solved_capability,
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
            "sitekey": SAMPLE_REQUEST_FIELDS["googlekey"],
            "page_url": SAMPLE_REQUEST_FIELDS["pageurl"],
        }
    ).encode()
    return worker_request(
        raw, method="POST", raw_path="/tasks", body=body, request_id="SuBmIt000001Aw="
    )


def get_task(raw: Event, task_id: str) -> Event:
    return on_task(raw, task_id, method="GET", request_id="GeTtAsK00001Aw=")


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
    return on_task(raw, SAMPLE_TASK_ID, method="PUT", body=body, request_id="ReGiStEr0001Aw=")


def create_smoke_task(raw: Event) -> Event:
    """`pingback-guard smoke`'s synthetic task (AdminPrincipalArn only: 403 for anyone else)."""
    return worker_request(
        raw, method="POST", raw_path="/smoke-tasks", body=b"{}", request_id="SmOkEnEw0001Aw="
    )


def delete_smoke_task(raw: Event) -> Event:
    return worker_request(
        raw,
        method="DELETE",
        route_path="/smoke-tasks/{task_id}",
        raw_path=f"/smoke-tasks/{SMOKE_SAMPLE_TASK_ID}",
        path_parameters={"task_id": SMOKE_SAMPLE_TASK_ID},
        request_id="SmOkEdEl0001Aw=",
    )


def report_task(raw: Event, task_id: str) -> Event:
    body = json.dumps({"correct": False}).encode()
    return on_task(
        raw, task_id, method="POST", suffix="/report", body=body, request_id="RePoRt000001Aw="
    )


# The shape of a smoke task id (logic/smoke.py): 20 digits starting with 9.
SMOKE_SAMPLE_TASK_ID = "90000000000000000001"
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


def replay_batch(raw: Event, sample: SampleTasks) -> Event:
    """Two dead-letter messages as the SQS event source delivers them to ReplayFunction: the
    sample tasks' pingbacks, each with the nonce its capability proved."""
    template = raw["Records"][0]
    received_at = SAMPLE_EPOCH_MS // 1000
    messages = [
        ("2e1424d4-f796-459a-8184-9c92662be6da", sample.solved_id, sample_token(), "1"),
        ("4d6c1b8e-6c2f-4a55-9b0a-4f3e5f1c2a10", sample.failed_id, UNSOLVABLE, "3"),
    ]
    nonces = {sample.solved_id: sample.solved_nonce, sample.failed_id: sample.failed_nonce}
    records = []
    for message_id, task_id, code, receive_count in messages:
        record = copy.deepcopy(template)
        body = json.dumps(
            {
                "task_id": task_id,
                "code": code,
                "received_at": received_at,
                "source": "callback",
                "nonce": nonces[task_id],
            }
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


def build(
    sample: SampleTasks = COMMITTED_SAMPLE, invoke_dir: Path = INVOKE_DIR
) -> dict[Path, Event]:
    http = _load("http_api_proxy.json")
    sqs = _load("sqs_receive_message.json")
    return {
        RAW_DIR / "callback_post_form_2captcha.json": callback_post_form(http, COMMITTED_SAMPLE),
        RAW_DIR / "callback_get_captchaai.json": callback_get(http, COMMITTED_SAMPLE),
        invoke_dir / "callback_post_form.json": callback_post_form(http, sample),
        invoke_dir / "callback_get.json": callback_get(http, sample),
        invoke_dir / "callback_get_unsolvable.json": callback_get(http, sample, unsolvable=True),
        invoke_dir / "callback_post_json.json": callback_post_json(http, sample),
        invoke_dir / "verification_2captcha_txt.json": verification_txt(http),
        invoke_dir / "submit_task.json": submit_task(http),
        invoke_dir / "get_task.json": get_task(http, sample.solved_id),
        invoke_dir / "issue_pingback_url.json": issue_pingback_url(http),
        invoke_dir / "register_task.json": register_task(http),
        invoke_dir / "report_task.json": report_task(http, sample.solved_id),
        invoke_dir / "create_smoke_task.json": create_smoke_task(http),
        invoke_dir / "delete_smoke_task.json": delete_smoke_task(http),
        invoke_dir / "in_php_post_form.json": two_captcha_call(
            http,
            method="POST",
            endpoint="/in.php",
            fields=SAMPLE_2CAPTCHA_SUBMIT,
            request_id="InPhPpOsT001Aw=",
        ),
        invoke_dir / "in_php_get.json": two_captcha_call(
            http,
            method="GET",
            endpoint="/in.php",
            fields={**SAMPLE_2CAPTCHA_SUBMIT, "json": "1"},
            request_id="InPhPgEt0001Aw=",
        ),
        invoke_dir / "res_php_get.json": two_captcha_call(
            http,
            method="GET",
            endpoint="/res.php",
            fields={"key": SAMPLE_WORKER_KEY, "action": "get", "id": sample.solved_id},
            request_id="ReSpHpGeT001Aw=",
        ),
        invoke_dir / "res_php_post_report.json": two_captcha_call(
            http,
            method="POST",
            endpoint="/res.php",
            fields={"key": SAMPLE_WORKER_KEY, "action": "reportbad", "id": sample.solved_id},
            request_id="ReSpHpPoSt01Aw=",
        ),
        invoke_dir / "replay_dead_letters.json": replay_batch(sqs, sample),
        invoke_dir / "poller_schedule.json": poller_schedule(),
    }


def sample_in(invoke_dir: Path) -> SampleTasks:
    """The sample tasks the pingbacks in `invoke_dir` are for (written by build)."""

    def task_and_capability(name: str) -> tuple[str, str]:
        event: Event = json.loads((invoke_dir / name).read_text(encoding="utf-8"))
        return event["queryStringParameters"]["id"], event["pathParameters"]["secret"]

    solved_id, solved_capability = task_and_capability("callback_get.json")
    failed_id, failed_capability = task_and_capability("callback_get_unsolvable.json")
    return SampleTasks(solved_id, solved_capability, failed_id, failed_capability)


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
