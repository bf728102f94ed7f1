"""The chaos workload: a schedule that a slow stack stretches but never piles up, and that stops
at once, leaving no thread that keeps the process alive. Fast: no stack."""

from __future__ import annotations

import threading
import time

from infra.chaos.workload import SubmitLog, run_schedule
from tests.waiting import wait_until


def test_a_slow_stack_stretches_the_schedule_without_piling_up_submits() -> None:
    log = SubmitLog()
    at_once = [0, 0]
    lock = threading.Lock()

    def slow_submit(submits: SubmitLog) -> None:
        with lock:
            at_once[0] += 1
            at_once[1] = max(at_once)
        time.sleep(0.05)
        with lock:
            at_once[0] -= 1
        submits.note(202, "id")

    started = time.time()
    run_schedule(40, 0.1, started, slow_submit, log, threading.Event(), threads=2)

    assert log.finished == 40
    assert at_once[1] == 2
    assert time.time() - started >= 40 / 2 * 0.05  # outlasted the 0.1 s plan, and finished
    assert log.first_at is not None and log.last_at is not None and log.last_at > log.first_at


def test_stop_returns_at_once_and_a_submit_still_waiting_never_holds_the_process() -> None:
    release = threading.Event()
    stuck_for = 30

    def stuck_submit(submits: SubmitLog) -> None:
        release.wait(stuck_for)

    stop = threading.Event()
    schedule = threading.Thread(
        target=run_schedule,
        args=(100, 1.0, time.time(), stuck_submit, SubmitLog(), stop),
        kwargs={"threads": 4},
    )
    schedule.start()
    wait_until(lambda: [t for t in threading.enumerate() if t.name.startswith("submit-")], 10)
    stop.set()
    schedule.join(timeout=stuck_for / 2)  # returned at once: before a stuck submit ever could
    try:
        assert not schedule.is_alive()
        waiting = [t for t in threading.enumerate() if t.name.startswith("submit-")]
        assert waiting and all(thread.daemon for thread in waiting)
    finally:
        release.set()
