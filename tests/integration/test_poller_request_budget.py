"""The real provider client and poller against a loopback res.php that refuses ids=: the sweep's
bound counts real HTTP requests (issue 9: 501 requests with a bound of 5 before)."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from pingback_guard.domain.task import NewTask
from pingback_guard.logic.poll_schedule import SolveTimes
from pingback_guard.logic.poller import PollerService
from pingback_guard.provider.captchaai import CaptchaAiClient
from tests.fakes import RECAPTCHA_REQUEST, UNIT_POLL_POLICY, InMemoryTaskStore


class RefusesIds(BaseHTTPRequestHandler):
    requests_seen: list[dict[str, list[str]]] = []

    def do_GET(self) -> None:
        query = parse_qs(urlsplit(self.path).query)
        RefusesIds.requests_seen.append(query)
        code = "ERROR_BAD_PARAMETERS" if "ids" in query else "CAPCHA_NOT_READY"
        body = json.dumps({"status": 0, "request": code}).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        return None


@pytest.fixture
def provider_url() -> Iterator[str]:
    RefusesIds.requests_seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), RefusesIds)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join(5)
    server.server_close()


def test_an_odd_ids_answer_cannot_push_a_sweep_past_its_bound(provider_url: str) -> None:
    store = InMemoryTaskStore()
    for number in range(500):
        store.record_submission(NewTask(str(10_000 + number), RECAPTCHA_REQUEST, 1000.0, 1020.0))
    policy = dataclasses.replace(
        UNIT_POLL_POLICY,
        backoff_base_seconds=5,
        backoff_max_seconds=60,
        ids_per_request=100,
        deadline_margin_seconds=1,
    )
    client = CaptchaAiClient(provider_url, lambda: "k" * 32, call_deadline_seconds=5)
    service = PollerService(store, client, policy, SolveTimes(default_seconds=20))
    report = service.sweep(now=1030.0, remaining_seconds=lambda: 60.0)
    assert len(RefusesIds.requests_seen) == report.requests == 5
    # ids= only in the requests already in flight when the first refusal came back
    batches = sum("ids" in query for query in RefusesIds.requests_seen)
    assert 1 <= batches <= policy.request_workers
    assert (report.batch_refused, report.not_ready, report.budget_exhausted) == (
        batches,
        5 - batches,
        1,
    )
