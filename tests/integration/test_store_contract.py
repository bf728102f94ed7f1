"""One contract, two stores: DynamoDbTaskStore on moto and the unit tests' InMemoryTaskStore."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from pingback_guard.data import dynamodb as dynamodb_module
from pingback_guard.data.store import TaskStore
from pingback_guard.domain.task import (
    CaptchaRequest,
    DeliveryPath,
    NewTask,
    ReportClaim,
    ReportVerdict,
    StoreOutcome,
    SubmissionOutcome,
    TaskResult,
    TaskStatus,
)
from tests.fakes import InMemoryTaskStore

REQUEST = CaptchaRequest(
    "userrecaptcha", "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-", "https://example.test/login"
)
TOKEN = "03AFcWeA6" + "x" * 600
OTHER_TOKEN = "03AFcWeA7" + "y" * 600


@pytest.fixture(params=["dynamodb", "memory"])
def store(request: pytest.FixtureRequest) -> TaskStore:
    if request.param == "dynamodb":
        result: TaskStore = request.getfixturevalue("dynamo_store")
        return result
    return InMemoryTaskStore()


def submit(
    store: TaskStore, task_id: str, at: float = 1000.0, first_poll: float = 1120.0
) -> SubmissionOutcome:
    return store.record_submission(NewTask(task_id, REQUEST, at, first_poll))


def solved(
    task_id: str, code: str = TOKEN, via: DeliveryPath = DeliveryPath.CALLBACK, at: float = 1030.0
) -> TaskResult:
    return TaskResult(task_id, code, via, at)


def test_submission_is_pending_and_due_after_the_callback_timeout(store: TaskStore) -> None:
    assert submit(store, "100") is SubmissionOutcome.CREATED
    task = store.get("100")
    assert task is not None
    assert task.status is TaskStatus.PENDING
    assert task.request == REQUEST
    assert task.due_at == 1120.0
    assert [t.task_id for t in store.due_tasks(now=1119.0, limit=10)] == []
    assert [t.task_id for t in store.due_tasks(now=1120.0, limit=10)] == ["100"]


def test_first_result_is_stored_and_leaves_the_due_index(store: TaskStore) -> None:
    submit(store, "101")
    assert store.record_result(solved("101")) is StoreOutcome.STORED
    task = store.get("101")
    assert task is not None
    assert (task.status, task.solution, task.delivered_via) == (
        TaskStatus.SOLVED,
        TOKEN,
        DeliveryPath.CALLBACK,
    )
    assert task.received_at == 1030.0
    assert store.due_tasks(now=99999.0, limit=10) == []


def test_same_code_again_is_a_duplicate_and_changes_nothing(store: TaskStore) -> None:
    submit(store, "102")
    store.record_result(solved("102"))
    assert (
        store.record_result(solved("102", via=DeliveryPath.POLL, at=2000.0))
        is StoreOutcome.DUPLICATE
    )
    task = store.get("102")
    assert task is not None
    assert (task.delivered_via, task.received_at) == (DeliveryPath.CALLBACK, 1030.0)


def test_different_second_code_is_a_conflict_and_the_first_stays(store: TaskStore) -> None:
    submit(store, "103")
    store.record_result(solved("103"))
    assert store.record_result(solved("103", code=OTHER_TOKEN)) is StoreOutcome.CONFLICT
    task = store.get("103")
    assert task is not None and task.solution == TOKEN


def test_callback_before_submission_is_stored_and_submission_does_not_clobber_it(
    store: TaskStore,
) -> None:
    assert store.record_result(solved("104")) is StoreOutcome.STORED
    assert submit(store, "104") is SubmissionOutcome.RESULT_ALREADY_STORED
    task = store.get("104")
    assert task is not None
    assert (task.status, task.solution) == (TaskStatus.SOLVED, TOKEN)
    assert task.request == REQUEST and task.submitted_at == 1000.0
    assert store.due_tasks(now=99999.0, limit=10) == []


def test_failure_before_submission_is_kept_and_not_polled(store: TaskStore) -> None:
    store.record_failure(solved("105", code="ERROR_CAPTCHA_UNSOLVABLE"))
    assert submit(store, "105") is SubmissionOutcome.RESULT_ALREADY_STORED
    task = store.get("105")
    assert task is not None and task.status is TaskStatus.FAILED
    assert store.due_tasks(now=99999.0, limit=10) == []


def test_failed_then_solved_the_solution_replaces_the_failure(store: TaskStore) -> None:
    submit(store, "106")
    assert (
        store.record_failure(solved("106", code="ERROR_CAPTCHA_UNSOLVABLE")) is StoreOutcome.STORED
    )
    assert (
        store.record_failure(solved("106", code="ERROR_CAPTCHA_UNSOLVABLE"))
        is StoreOutcome.DUPLICATE
    )
    assert store.record_result(solved("106")) is StoreOutcome.STORED
    task = store.get("106")
    assert task is not None
    assert (task.status, task.solution, task.error) == (TaskStatus.SOLVED, TOKEN, None)


def test_a_failure_never_replaces_a_solution(store: TaskStore) -> None:
    submit(store, "107")
    store.record_result(solved("107"))
    assert (
        store.record_failure(solved("107", code="ERROR_CAPTCHA_UNSOLVABLE"))
        is StoreOutcome.CONFLICT
    )
    task = store.get("107")
    assert task is not None and (task.status, task.solution) == (TaskStatus.SOLVED, TOKEN)


def test_expired_then_solved(store: TaskStore) -> None:
    submit(store, "108")
    assert store.mark_expired("108", now=1700.0) is True
    task = store.get("108")
    assert task is not None and task.status is TaskStatus.EXPIRED
    assert store.due_tasks(now=99999.0, limit=10) == []
    assert store.record_result(solved("108", via=DeliveryPath.REPLAY)) is StoreOutcome.STORED
    task = store.get("108")
    assert task is not None and (task.status, task.delivered_via) == (
        TaskStatus.SOLVED,
        DeliveryPath.REPLAY,
    )


def test_expire_and_reschedule_only_touch_pending_tasks(store: TaskStore) -> None:
    submit(store, "109")
    store.record_result(solved("109"))
    assert store.mark_expired("109", now=5000.0) is False
    assert store.reschedule_poll("109", due_at=5000.0, poll_attempts=1) is False
    assert store.mark_expired("does-not-matter-1", now=1.0) is False
    task = store.get("109")
    assert task is not None and task.status is TaskStatus.SOLVED


def test_reschedule_moves_the_due_time_and_counts_attempts(store: TaskStore) -> None:
    submit(store, "110")
    assert store.reschedule_poll("110", due_at=1300.0, poll_attempts=1) is True
    assert store.due_tasks(now=1200.0, limit=10) == []
    due = store.due_tasks(now=1300.0, limit=10)
    assert [(t.task_id, t.poll_attempts, t.submitted_at) for t in due] == [("110", 1, 1000.0)]


def test_due_index_returns_only_due_pending_tasks_across_shards(store: TaskStore) -> None:
    for n in range(40):
        submit(store, str(2000 + n), at=1000.0, first_poll=1100.0 + n)
    for n in range(0, 40, 4):
        store.record_result(solved(str(2000 + n)))
    due = store.due_tasks(now=1119.0, limit=100)
    expected = {str(2000 + n) for n in range(20) if n % 4}
    assert {t.task_id for t in due} == expected
    assert len(due) == len(expected)


def test_due_index_respects_the_limit(store: TaskStore) -> None:
    for n in range(30):
        submit(store, str(3000 + n))
    assert len(store.due_tasks(now=5000.0, limit=7)) == 7


def test_unknown_task_reads_as_none(store: TaskStore) -> None:
    assert store.get("999999") is None


def test_concurrent_writers_exactly_one_result_is_stored(store: TaskStore) -> None:
    submit(store, "111")
    codes = [f"03AFcWeA{n}" + "z" * 500 for n in range(8)]
    outcomes: list[StoreOutcome] = []
    barrier = threading.Barrier(len(codes))

    def write(code: str) -> None:
        barrier.wait()
        outcomes.append(store.record_result(solved("111", code=code)))

    threads = [threading.Thread(target=write, args=(code,)) for code in codes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert outcomes.count(StoreOutcome.STORED) == 1
    assert outcomes.count(StoreOutcome.CONFLICT) == len(codes) - 1
    task = store.get("111")
    assert task is not None and task.solution in codes


def test_due_query_follows_pagination(dynamo_store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dynamodb_module, "QUERY_PAGE_SIZE", 2)
    for n in range(25):
        submit(dynamo_store, str(4000 + n))
    due = dynamo_store.due_tasks(now=5000.0, limit=100)
    assert sorted(t.task_id for t in due) == [str(4000 + n) for n in range(25)]


# ------------------------------------------------------------------ freshness (issue 10)


def test_usable_until_counts_from_the_earliest_finish_with_the_kinds_lifetime(
    store: TaskStore,
) -> None:
    store.record_submission(
        NewTask(
            "120", CaptchaRequest("turnstile", "0x4AAAAAAA", "https://example.test/"), 1000, 1120
        )
    )
    late = TaskResult("120", TOKEN, DeliveryPath.READ_THROUGH, 1090.0, finished_after=1040.0)
    assert store.record_result(late) is StoreOutcome.STORED
    task = store.get("120")
    assert task is not None
    assert (task.finished_after, task.received_at, task.usable_until) == (1040.0, 1090.0, 1340.0)
    assert task.delivered_via is DeliveryPath.READ_THROUGH


def test_a_pingback_finished_when_it_arrived(store: TaskStore) -> None:
    submit(store, "121")
    store.record_result(solved("121", at=1030.0))
    task = store.get("121")
    assert task is not None
    assert (task.finished_after, task.usable_until) == (1030.0, 1150.0)


def test_a_result_before_its_submission_gets_the_shortest_lifetime(store: TaskStore) -> None:
    store.record_result(solved("122", at=1030.0))
    task = store.get("122")
    assert task is not None and task.usable_until == 1030.0 + 120.0


def test_read_through_guard_admits_one_caller_per_interval(store: TaskStore) -> None:
    submit(store, "123")
    assert store.claim_read_through("123", now=1200.0, interval_seconds=5) is True
    assert store.claim_read_through("123", now=1204.9, interval_seconds=5) is False
    assert store.claim_read_through("123", now=1205.0, interval_seconds=5) is True
    task = store.get("123")
    assert task is not None and task.read_through_at == 1205.0


def test_read_through_guard_refuses_unknown_and_finished_tasks(store: TaskStore) -> None:
    assert store.claim_read_through("124", now=1200.0, interval_seconds=5) is False
    assert store.get("124") is None
    submit(store, "125")
    store.record_result(solved("125"))
    assert store.claim_read_through("125", now=1200.0, interval_seconds=5) is False


def test_concurrent_read_through_claims_exactly_one_wins(store: TaskStore) -> None:
    submit(store, "126")
    wins: list[bool] = []
    barrier = threading.Barrier(8)

    def claim() -> None:
        barrier.wait()
        wins.append(store.claim_read_through("126", now=1200.0, interval_seconds=5))

    threads = [threading.Thread(target=claim) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert wins.count(True) == 1


def test_not_ready_moves_last_checked_forward_only_while_pending(store: TaskStore) -> None:
    submit(store, "127")
    assert store.record_not_ready("127", checked_at=1200.0) is True
    assert store.record_not_ready("127", checked_at=1150.0) is False
    task = store.get("127")
    assert task is not None and task.last_checked_at == 1200.0
    store.record_result(solved("127"))
    assert store.record_not_ready("127", checked_at=1300.0) is False
    assert store.record_not_ready("no-such-1", checked_at=1300.0) is False


def test_report_is_claimed_once_and_confirmed(store: TaskStore) -> None:
    submit(store, "130")
    store.record_result(solved("130", at=1030.0))
    claim = store.claim_report(
        "130", ReportVerdict.BAD, 1100.0, window_start=200.0, lease_seconds=60
    )
    assert claim is ReportClaim.CLAIMED
    assert store.confirm_report("130", claimed_at=1100.0) is True
    again = store.claim_report(
        "130", ReportVerdict.GOOD, 9000.0, window_start=200.0, lease_seconds=60
    )
    assert again is ReportClaim.ALREADY_REPORTED
    task = store.get("130")
    assert task is not None and (task.reported, task.reported_at) == (ReportVerdict.BAD, 1100.0)


def test_report_refusals_say_why(store: TaskStore) -> None:
    submit(store, "131")
    assert (
        store.claim_report("131", ReportVerdict.BAD, 1100.0, window_start=200.0, lease_seconds=60)
        is ReportClaim.NOT_SOLVED
    )
    assert (
        store.claim_report("132", ReportVerdict.BAD, 1100.0, window_start=200.0, lease_seconds=60)
        is ReportClaim.UNKNOWN_TASK
    )
    assert store.get("132") is None
    store.record_result(solved("131", at=1030.0))
    assert (
        store.claim_report("131", ReportVerdict.BAD, 2000.0, window_start=1031.0, lease_seconds=60)
        is ReportClaim.WINDOW_CLOSED
    )
    task = store.get("131")
    assert task is not None and task.reported is None


def test_a_released_or_lapsed_claim_can_be_claimed_again(store: TaskStore) -> None:
    submit(store, "133")
    store.record_result(solved("133", at=1030.0))
    store.claim_report("133", ReportVerdict.BAD, 1100.0, window_start=200.0, lease_seconds=60)
    assert store.release_report("133", claimed_at=1100.0) is True
    task = store.get("133")
    assert task is not None and task.reported is None
    store.claim_report("133", ReportVerdict.GOOD, 1110.0, window_start=200.0, lease_seconds=60)
    held = store.claim_report(
        "133", ReportVerdict.BAD, 1169.0, window_start=200.0, lease_seconds=60
    )
    assert held is ReportClaim.ALREADY_REPORTED
    lapsed = store.claim_report(
        "133", ReportVerdict.BAD, 1171.0, window_start=200.0, lease_seconds=60
    )
    assert lapsed is ReportClaim.CLAIMED
    assert store.confirm_report("133", claimed_at=1110.0) is False  # the lapsed claim is not ours
    assert store.release_report("133", claimed_at=1110.0) is False
