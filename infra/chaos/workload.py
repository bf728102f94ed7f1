"""The worker side of a chaos run: tasks submitted through POST /tasks on a steady schedule."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import requests

from infra.local.signing import local_signed_session

SITEKEY = "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-"
PAGE_URL = "https://www.google.com/recaptcha/api2/demo"
SUBMIT_THREADS = 8
SUBMIT_PATIENCE_SECONDS = 90.0
RETRY_PAUSE_SECONDS = 2.0


@dataclass
class SubmitLog:
    accepted: list[str] = field(default_factory=list)
    answers: Counter[int] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, status: int, task_id: str | None) -> None:
        with self.lock:
            self.answers[status] += 1
            if task_id:
                self.accepted.append(task_id)

    def failed(self, reason: str) -> None:
        with self.lock:
            self.errors[reason] += 1


def submit_via_api(api_url: str) -> Callable[[SubmitLog], None]:
    """A worker that retries a refused connection, as any worker would while the API is down.

    A 503 is not retried: it may carry the id of a task the provider already accepted.
    """
    session = local_signed_session()

    def submit(log: SubmitLog) -> None:
        give_up = time.monotonic() + SUBMIT_PATIENCE_SECONDS
        while True:
            try:
                answer = session.post(
                    f"{api_url}/tasks",
                    json={"method": "userrecaptcha", "sitekey": SITEKEY, "page_url": PAGE_URL},
                    timeout=30,
                )
            except requests.ConnectionError as error:
                if time.monotonic() < give_up:
                    time.sleep(RETRY_PAUSE_SECONDS)
                    continue
                log.failed(type(error).__name__)
                return
            except requests.RequestException as error:
                log.failed(type(error).__name__)
                return
            json_body = answer.headers.get("content-type") == "application/json"
            log.note(answer.status_code, (answer.json() if json_body else {}).get("task_id"))
            return

    return submit


def run_schedule(
    count: int,
    spread_seconds: float,
    started: float,
    submit: Callable[[SubmitLog], None],
    log: SubmitLog,
    stop: threading.Event,
) -> None:
    """Submit ``count`` tasks evenly over ``spread_seconds`` from ``started`` (bounded threads)."""
    with ThreadPoolExecutor(max_workers=SUBMIT_THREADS, thread_name_prefix="submit") as pool:
        for index in range(count):
            due = started + index * spread_seconds / max(count, 1)
            if stop.wait(max(0.0, due - time.time())):
                return
            pool.submit(submit, log)


@dataclass
class ForgeryLog:
    answers: Counter[int] = field(default_factory=Counter)
    refused_connections: int = 0

    @property
    def accepted(self) -> int:
        return self.answers[200]


def forge_callbacks(
    api_url: str,
    known_ids: Callable[[], list[str]],
    log: ForgeryLog,
    stop: threading.Event,
    every_seconds: float = 0.5,
) -> None:
    """An attacker who knows real task ids but not the secret, posting forged tokens."""
    session = requests.Session()
    attempt = 0
    while not stop.wait(every_seconds):
        attempt += 1
        ids = known_ids() or ["1"]
        task_id = ids[attempt % len(ids)]
        forged_secret = f"forged{attempt:020d}"
        try:
            answer = session.get(
                f"{api_url}/callback/{forged_secret}",
                params={"id": task_id, "code": f"FORGED{attempt:010d}"},
                timeout=10,
            )
        except requests.RequestException:
            log.refused_connections += 1
            continue
        log.answers[answer.status_code] += 1
