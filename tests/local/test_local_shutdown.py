"""An orderly stop: sources first, requests in flight answered, then the logs closed; nothing
left behind that keeps the process alive, and no error at exit."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from infra.local import LocalOptions, LocalStack
from infra.local.stack import DRAIN_SECONDS
from tests.local.support import FIXTURE_TEMPLATE, PROVIDER_API_KEY, child_pids
from tests.waiting import wait_until

pytestmark = pytest.mark.local_stack

IN_FLIGHT = 6


def test_stop_answers_requests_in_flight_then_closes_the_logs_and_leaves_nothing_running(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    threads_before = set(threading.enumerate())
    stack = LocalStack(
        LocalOptions(
            template=FIXTURE_TEMPLATE,
            time_scale=60,
            provider_api_key=PROVIDER_API_KEY,
            run_dir=tmp_path,
            stack_name="shutdown",
        )
    )
    api = stack.start().api_url
    with ThreadPoolExecutor(IN_FLIGHT) as clients:
        answers = [
            clients.submit(requests.get, f"{api}/echo/slow?sleep=1.5", timeout=20)
            for _ in range(IN_FLIGHT)
        ]
        # Every request is read and waiting for its function.
        wait_until(lambda: stack.requests_in_flight() == IN_FLIGHT, timeout=30)
        stopping = time.monotonic()
        stack.stop()
        stopped_in = time.monotonic() - stopping
        statuses = sorted(answer.result().status_code for answer in answers)

    assert statuses == [200] * IN_FLIGHT
    # Stopped when the last request was answered, not at the drain's limit.
    assert stopped_in < DRAIN_SECONDS
    with pytest.raises(requests.ConnectionError):
        requests.get(f"{api}/echo/late", timeout=5)
    access_log = (tmp_path / "logs" / "gateway.log").read_text()
    assert access_log.count("GET /echo/{name}") == IN_FLIGHT
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err
    assert "closed file" not in captured.err
    left = [t for t in set(threading.enumerate()) - threads_before if t.is_alive()]
    assert not [t for t in left if not t.daemon], left
    wait_until(lambda: not child_pids(), timeout=10)
