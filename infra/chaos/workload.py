"""The worker side of a chaos run: tasks submitted through POST /tasks on a steady schedule."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import requests

from infra.chaos.kind_mix import documents
from infra.local.apigateway.signing import local_signed_session

SUBMIT_THREADS = 8
SUBMIT_PATIENCE_SECONDS = 90.0
RETRY_PAUSE_SECONDS = 2.0
# requests' names for "the request was sent and no answer came in time": the provider task may
# exist, but the worker never learns its id.
NO_ANSWER_ERRORS = frozenset({"ReadTimeout", "Timeout", "ChunkedEncodingError"})


@dataclass
class SubmitLog:
    accepted: list[str] = field(default_factory=list)
    answers: Counter[int] = field(default_factory=Counter)
    with_task_id: Counter[int] = field(default_factory=Counter)
    """Answers that carried a task id, by status: a 202, or a 503 after the provider took it."""
    errors: Counter[str] = field(default_factory=Counter)
    sent_again: int = 0
    """503s without a task id (nothing sent to the provider: its threads were busy, or it could
    not be asked) that the worker sent again, as the worker client does."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    first_at: float | None = None
    last_at: float | None = None
    """When the first submit started and the last one ended (an answer or an error)."""

    def note(self, status: int, task_id: str | None) -> None:
        with self.lock:
            self.answers[status] += 1
            self.last_at = time.time()
            if task_id:
                self.with_task_id[status] += 1
                self.accepted.append(task_id)

    def again(self) -> None:
        with self.lock:
            self.sent_again += 1

    def failed(self, reason: str) -> None:
        with self.lock:
            self.errors[reason] += 1
            self.last_at = time.time()

    def started(self) -> None:
        with self.lock:
            self.first_at = self.first_at or time.time()

    @property
    def finished(self) -> int:
        with self.lock:
            return sum(self.answers.values()) + sum(self.errors.values())

    @property
    def unanswered(self) -> int:
        """Submits sent but not answered in time (the stack may still have registered them)."""
        with self.lock:
            return sum(n for reason, n in self.errors.items() if reason in NO_ANSWER_ERRORS)


def submit_via_api(
    api_url: str, on_accepted: Callable[[str], None] = lambda _task_id: None
) -> Callable[[SubmitLog], None]:
    """Workers submitting the kinds of infra.chaos.kind_mix in its proportions, each retrying
    a refused connection, as any worker would while the API is down.

    A 503 with a task id (the provider accepted it, the table did not record it) is not sent
    again: it would be a second task. One without (nothing sent) is, as the worker client does.
    `on_accepted` hears every task id a submit returned.
    """
    session = local_signed_session()
    mix = documents()

    def submit(log: SubmitLog) -> None:
        give_up = time.monotonic() + SUBMIT_PATIENCE_SECONDS
        document = next(mix)
        while True:
            try:
                answer = session.post(f"{api_url}/tasks", json=document, timeout=30)
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
            task_id = (answer.json() if json_body else {}).get("task_id")
            if answer.status_code == 503 and not task_id and time.monotonic() < give_up:
                log.again()
                time.sleep(RETRY_PAUSE_SECONDS)
                continue
            log.note(answer.status_code, task_id)
            if answer.status_code == 202 and task_id:
                on_accepted(str(task_id))
            return

    return submit


def run_schedule(
    count: int,
    spread_seconds: float,
    started: float,
    submit: Callable[[SubmitLog], None],
    log: SubmitLog,
    stop: threading.Event,
    threads: int = SUBMIT_THREADS,
) -> None:
    """Submit ``count`` tasks evenly over ``spread_seconds`` from ``started``; return when every
    submit has ended, or at once when ``stop`` is set.

    Like a worker fleet of ``threads`` workers: at most that many submits wait for an answer at
    once, and a submit that falls behind the schedule goes as soon as a worker is free (the run
    then lasts longer than planned; it never piles up unbounded). Each submit runs on a daemon
    thread, so one still waiting for its answer never keeps the process from exiting.
    """
    workers = threading.BoundedSemaphore(threads)
    ended = threading.Semaphore(0)

    def one_submit() -> None:
        try:
            log.started()
            submit(log)
        finally:
            workers.release()
            ended.release()

    launched = 0
    for index in range(count):
        due = started + index * spread_seconds / max(count, 1)
        if stop.wait(max(0.0, due - time.time())) or not _acquire(workers, stop):
            return
        threading.Thread(target=one_submit, name=f"submit-{index}", daemon=True).start()
        launched += 1
    for _ in range(launched):
        if not _acquire(ended, stop):
            return


def _acquire(semaphore: threading.Semaphore, stop: threading.Event) -> bool:
    """Take the semaphore, unless the run stops first."""
    while not semaphore.acquire(timeout=0.5):
        if stop.is_set():
            return False
    return True


FORGED_CODE_PREFIX = "FORGED"
# How an attacker holding real pingback URLs tries to decide tasks that are not theirs.
FORGERY_KINDS = (
    "wrong_secret",  # a made-up path secret on a real task id
    "other_tasks_url",  # task A's real capability URL with task B's id
    "future_id",  # a real capability URL on ids the provider may hand out next
    "forged_capability",  # a real nonce with a made-up MAC, or a made-up nonce
)


@dataclass
class ForgeryLog:
    """HTTP answers per kind of forgery; whether one decided a task is judged from the table."""

    answers: Counter[int] = field(default_factory=Counter)
    by_kind: dict[str, Counter[int]] = field(
        default_factory=lambda: {kind: Counter() for kind in FORGERY_KINDS}
    )
    refused_connections: int = 0

    def note(self, kind: str, status: int) -> None:
        self.answers[status] += 1
        self.by_kind[kind][status] += 1


def is_forged_code(code: object) -> bool:
    return isinstance(code, str) and code.startswith(FORGED_CODE_PREFIX)


def forge_callbacks(
    api_url: str,
    known_tasks: Callable[[], list[tuple[str, str | None]]],
    log: ForgeryLog,
    stop: threading.Event,
    every_seconds: float = 0.5,
) -> None:
    """An attacker who sees real task ids and real pingback URLs (the provider's traffic)."""
    session = requests.Session()
    attempt = 0
    while not stop.wait(every_seconds):
        attempt += 1
        kind = FORGERY_KINDS[attempt % len(FORGERY_KINDS)]
        forgery = _forgery(kind, attempt, api_url, known_tasks() or [("1", None)])
        if forgery is None:
            continue
        url, task_id = forgery
        code = f"{FORGED_CODE_PREFIX}{attempt:010d}"
        try:
            answer = session.get(url, params={"id": task_id, "code": code}, timeout=10)
        except requests.RequestException:
            log.refused_connections += 1
            continue
        log.note(kind, answer.status_code)


def _forgery(
    kind: str, attempt: int, api_url: str, tasks: list[tuple[str, str | None]]
) -> tuple[str, str] | None:
    """The URL and the task id of one forged pingback of ``kind``; None while no task but the
    leaked URL's own is known (a URL answering for its own task is the provider's pingback, not
    a forgery: the CI run once counted such an answer, early in the run, as a forged decision)."""
    victim_id = tasks[attempt % len(tasks)][0]
    urls = [url for _, url in tasks if url and "/callback/v2." in url]
    if kind == "wrong_secret" or not urls:
        return f"{api_url}/callback/forged{attempt:020d}", victim_id
    leaked = urls[(attempt * 7 + 3) % len(urls)]
    if kind == "other_tasks_url":
        others = [task_id for task_id, url in tasks if url != leaked]
        return (leaked, others[attempt % len(others)]) if others else None
    if kind == "future_id":
        newest = max(int(task_id) for task_id, _ in tasks)
        return leaked, str(newest + 1 + attempt % 97)
    base, _, capability = leaked.rpartition("/")
    _, nonce, issued, mac = capability.split(".")
    forged = f"v2.{nonce}.{issued}.{mac[::-1]}" if attempt % 2 else f"v2.{mac}.{issued}.{nonce}"
    return f"{base}/{forged}", victim_id
