"""One contract, three stores: DynamoDbTaskStore on moto and on DynamoDB Local (AWS's own engine),
and the unit tests' InMemoryTaskStore."""

from __future__ import annotations

from typing import Any

import pytest

from pingback_guard.data import due_index as due_index_module
from pingback_guard.data.store import TaskStore
from pingback_guard.domain.task import (
    DeliveryPath,
    IssuedPingbackUrl,
    NewTask,
    PingbackUrlClaim,
    RecordedSolution,
    RegistrationOutcome,
    ReportAttempt,
    ReportClaim,
    ReportVerdict,
    StoreOutcome,
    SubmissionOutcome,
    TaskOrigin,
    TaskResult,
    TaskStatus,
)
from tests.fakes import InMemoryTaskStore, nonce_for, token_request
from tests.waiting import run_at_once

REQUEST = token_request(
    "userrecaptcha", "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-", "https://example.test/login"
)
TOKEN = "03AFcWeA6" + "x" * 600
OTHER_TOKEN = "03AFcWeA7" + "y" * 600
OWNER = "arn:aws:iam::123456789012:user/worker"


STORE_FIXTURES = {"dynamodb": "dynamo_store", "dynamodb-local": "dynamodb_local_store"}


@pytest.fixture(params=["dynamodb", "dynamodb-local", "memory"])
def store(request: pytest.FixtureRequest) -> TaskStore:
    if request.param in STORE_FIXTURES:
        result: TaskStore = request.getfixturevalue(STORE_FIXTURES[request.param])
        return result
    return InMemoryTaskStore()


def submit(
    store: TaskStore, task_id: str, at: float = 1000.0, first_poll: float = 1120.0
) -> SubmissionOutcome:
    return store.record_submission(
        NewTask(task_id, REQUEST, at, first_poll, nonce=nonce_for(task_id), owner=OWNER)
    )


def report(task_id: str, verdict: ReportVerdict, at: float, window_start: float) -> ReportAttempt:
    """Any principal's report (no owner), with a one-minute lease."""
    return ReportAttempt(
        task_id, verdict, owner=None, now=at, window_start=window_start, lease_seconds=60
    )


def solved(
    task_id: str,
    code: str = TOKEN,
    via: DeliveryPath = DeliveryPath.CALLBACK,
    at: float = 1030.0,
    nonce: str | None = "own",
) -> TaskResult:
    """A result; pingbacks (callback, replay) carry their task's own nonce unless told."""
    proven = nonce_for(task_id) if nonce == "own" else nonce
    return TaskResult(
        task_id, code, via, at, nonce=proven if via is not DeliveryPath.POLL else None
    )


def test_submission_is_pending_and_due_after_the_callback_timeout(store: TaskStore) -> None:
    assert submit(store, "100") is SubmissionOutcome.CREATED
    task = store.get("100")
    assert task is not None
    assert task.status is TaskStatus.PENDING
    assert task.request == REQUEST
    assert task.due_at == 1120.0
    assert [t.task_id for t in store.due_tasks(now=1119.0, limit=10)] == []
    assert [t.task_id for t in store.due_tasks(now=1120.0, limit=10)] == ["100"]


def test_a_stored_solution_comes_back_with_its_task_as_written(store: TaskStore) -> None:
    """The write that stores a solution hands back the task (its request: the answer's kind),
    so judging the answer needs no read; a write that stores nothing hands back none."""
    submit(store, "150")
    recorded = store.record_solution(solved("150"))
    assert recorded.outcome is StoreOutcome.STORED
    assert recorded.task is not None
    assert (recorded.task.request, recorded.task.status, recorded.task.solution) == (
        REQUEST,
        TaskStatus.SOLVED,
        TOKEN,
    )
    assert recorded.task == store.get("150")
    assert store.record_solution(solved("150")) == RecordedSolution(StoreOutcome.DUPLICATE)
    unregistered = store.record_solution(solved("151"))
    assert unregistered.outcome is StoreOutcome.STORED_UNREGISTERED
    assert unregistered.task is not None
    assert unregistered.task.request is None


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
    assert store.record_result(solved("104")) is StoreOutcome.STORED_UNREGISTERED
    assert submit(store, "104") is SubmissionOutcome.RESULT_ALREADY_STORED
    task = store.get("104")
    assert task is not None
    assert (task.status, task.solution) == (TaskStatus.SOLVED, TOKEN)
    assert task.request == REQUEST and task.submitted_at == 1000.0
    assert store.due_tasks(now=99999.0, limit=10) == []


def test_failure_before_submission_is_kept_and_not_polled(store: TaskStore) -> None:
    assert (
        store.record_failure(solved("105", code="ERROR_CAPTCHA_UNSOLVABLE"))
        is StoreOutcome.STORED_UNREGISTERED
    )
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
    each_code = iter(codes)
    outcomes = run_at_once(8, lambda: store.record_result(solved("111", code=next(each_code))))
    assert outcomes.count(StoreOutcome.STORED) == 1
    assert outcomes.count(StoreOutcome.CONFLICT) == len(codes) - 1
    task = store.get("111")
    assert task is not None and task.solution in codes


def test_due_query_follows_pagination(dynamo_store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(due_index_module, "QUERY_PAGE_SIZE", 2)
    for n in range(25):
        submit(dynamo_store, str(4000 + n))
    due = dynamo_store.due_tasks(now=5000.0, limit=100)
    assert sorted(t.task_id for t in due) == [str(4000 + n) for n in range(25)]


def test_reschedule_records_the_last_check_and_the_due_index_projects_it_with_the_method(
    store: TaskStore,
) -> None:
    submit(store, "300")
    [fresh] = store.due_tasks(now=1120.0, limit=10)
    assert (fresh.last_checked_at, fresh.method) == (None, "userrecaptcha")
    assert store.reschedule_poll("300", due_at=1130.0, poll_attempts=1, last_checked_at=1120.0)
    [checked] = store.due_tasks(now=1130.0, limit=10)
    assert (checked.last_checked_at, checked.poll_attempts, checked.method) == (
        1120.0,
        1,
        "userrecaptcha",
    )
    assert store.reschedule_poll("300", due_at=1140.0, poll_attempts=2)
    [kept] = store.due_tasks(now=1140.0, limit=10)
    assert kept.last_checked_at == 1120.0


def test_next_due_at_is_the_earliest_pending_due_time_in_the_window(store: TaskStore) -> None:
    for task_id, due in (("401", 1150.0), ("402", 1130.0), ("403", 1200.0)):
        submit(store, task_id, first_poll=due)
    store.record_result(solved("402"))
    assert store.next_due_at(after=1100.0, until=1190.0) == 1150.0
    assert store.next_due_at(after=1100.0, until=1140.0) is None


def test_one_poller_lease_at_a_time_and_what_it_learned_survives(store: TaskStore) -> None:
    first = store.acquire_poller_lease("a", now=1000.0, until=1060.0)
    assert first.acquired and first.solve_samples == {} and first.busy_at is None
    second = store.acquire_poller_lease("b", now=1010.0, until=1070.0)
    assert (second.acquired, second.held_until) == (False, 1060.0)
    store.release_poller_lease("b", now=1011.0, solve_samples={"hcaptcha": [1.0]})  # not its own
    assert not store.acquire_poller_lease("b", now=1012.0, until=1070.0).acquired
    store.release_poller_lease(
        "a", now=1020.0, solve_samples={"userrecaptcha": [12.5, 30.0]}, busy_at=1015.0
    )
    third = store.acquire_poller_lease("b", now=1021.0, until=1080.0)
    assert third.acquired and third.solve_samples == {"userrecaptcha": [12.5, 30.0]}
    assert third.busy_at == 1015.0  # when the last holder had a task to check
    # An idle holder's release keeps the last busy moment.
    store.release_poller_lease("b", now=1030.0, solve_samples={})
    assert store.acquire_poller_lease("c", now=1031.0, until=1090.0).busy_at == 1015.0


def test_a_holder_says_it_has_work_before_it_gives_the_lease_back(store: TaskStore) -> None:
    store.acquire_poller_lease("a", now=1000.0, until=1060.0)
    store.mark_poller_busy("someone-else", 1001.0)  # not its lease: nothing
    store.mark_poller_busy("a", 1002.0)
    store.release_poller_lease("a", now=1003.0, solve_samples={})
    assert store.acquire_poller_lease("b", now=1004.0, until=1064.0).busy_at == 1002.0


def test_one_claim_to_succeed_the_holder_until_a_new_holder_or_its_end(
    store: TaskStore,
) -> None:
    store.acquire_poller_lease("holder", now=1000.0, until=1070.0)
    assert store.claim_poller_succession("waiting", now=1010.0, until=1050.0)
    assert store.claim_poller_succession("waiting", now=1011.0, until=1050.0)  # its own
    assert not store.claim_poller_succession("third", now=1012.0, until=1072.0)
    store.release_poller_lease("holder", now=1040.0, solve_samples={})
    # A new holder (not the claimant) ends the claim: the claimant may claim again.
    assert store.acquire_poller_lease("scheduled", now=1040.5, until=1110.5).acquired
    assert store.claim_poller_succession("waiting", now=1041.0, until=1050.0)
    assert not store.claim_poller_succession("third", now=1042.0, until=1102.0)
    assert store.claim_poller_succession("third", now=1050.0, until=1102.0)  # ended


def test_an_abandoned_lease_ends_by_itself(store: TaskStore) -> None:
    assert store.acquire_poller_lease("crashed", now=1000.0, until=1060.0).acquired
    assert store.acquire_poller_lease("next", now=1060.0, until=1120.0).acquired


def test_the_lease_item_is_never_a_due_task(store: TaskStore) -> None:
    store.acquire_poller_lease("a", now=1000.0, until=1060.0)
    assert store.due_tasks(now=10_000.0, limit=10) == []
    assert store.next_due_at(after=0.0, until=10_000.0) is None


def test_due_reads_keep_to_the_shards_asked_for(store: TaskStore) -> None:
    for n in range(40):
        submit(store, str(5000 + n), at=1000.0, first_poll=1100.0)
    shards = store.due_shard_count()
    by_shard = {str(5000 + n): store.due_shard(str(5000 + n)) for n in range(40)}
    assert set(by_shard.values()) <= set(range(shards)) and len(set(by_shard.values())) > 2
    wanted = frozenset({1, 3})
    due = store.due_tasks(now=1200.0, limit=100, shards=wanted)
    assert {t.task_id for t in due} == {i for i, shard in by_shard.items() if shard in wanted}
    assert store.next_due_at(after=0.0, until=2000.0, shards=frozenset()) is None
    assert store.next_due_at(after=0.0, until=2000.0, shards=wanted) == 1100.0


def test_one_helper_per_group_and_the_main_holder_sees_the_live_ones(store: TaskStore) -> None:
    assert store.acquire_helper_lease(2, "h2", now=1000.0, until=1070.0)
    assert not store.acquire_helper_lease(2, "other", now=1010.0, until=1080.0)
    assert store.acquire_helper_lease(5, "h5", now=1000.0, until=1030.0)
    store.record_helper_load(2, "h2", 3.25)
    store.record_helper_load(2, "other", 9.0)  # not its lease: nothing
    live = store.live_helpers(7, now=1040.0)  # h5's lease lapsed (a crashed helper)
    assert list(live) == [2]
    assert (live[2].held_until, live[2].load_seconds) == (1070.0, 3.25)
    store.release_helper_lease(2, "h2", now=1050.0)
    assert store.live_helpers(7, now=1051.0) == {}
    assert store.acquire_helper_lease(2, "next", now=1052.0, until=1120.0)
    assert store.acquire_poller_lease("main", now=1052.0, until=1120.0).acquired  # its own item
    assert store.due_tasks(now=10_000.0, limit=10) == []


# ------------------------------------------------------------------ per-task pingback proof


def test_another_tasks_nonce_decides_nothing_on_a_registered_task(store: TaskStore) -> None:
    submit(store, "120")
    forged = solved("120", code=OTHER_TOKEN, nonce=nonce_for("999"))
    assert store.record_result(forged) is StoreOutcome.REJECTED
    failure = solved("120", code="ERROR_CAPTCHA_UNSOLVABLE", nonce=nonce_for("999"))
    assert store.record_failure(failure) is StoreOutcome.REJECTED
    task = store.get("120")
    assert task is not None and task.status is TaskStatus.PENDING and task.solution is None
    assert store.record_result(solved("120")) is StoreOutcome.STORED


def test_another_nonce_is_rejected_on_a_solved_task_not_called_a_conflict(
    store: TaskStore,
) -> None:
    submit(store, "121")
    store.record_result(solved("121"))
    forged = solved("121", code=OTHER_TOKEN, nonce=nonce_for("999"))
    assert store.record_result(forged) is StoreOutcome.REJECTED


def test_a_pre_seeded_result_with_another_nonce_is_discarded_at_registration(
    store: TaskStore,
) -> None:
    seeded = solved("122", code=OTHER_TOKEN, nonce=nonce_for("999"))
    assert store.record_result(seeded) is StoreOutcome.STORED_UNREGISTERED
    assert submit(store, "122") is SubmissionOutcome.PROVISIONAL_DISCARDED
    task = store.get("122")
    assert task is not None
    assert (task.status, task.solution, task.nonce) == (TaskStatus.PENDING, None, nonce_for("122"))
    assert [t.task_id for t in store.due_tasks(now=99999.0, limit=10)] == ["122"]
    assert store.record_result(solved("122")) is StoreOutcome.STORED


def test_a_pre_seeded_failure_with_another_nonce_is_discarded_too(store: TaskStore) -> None:
    seeded = solved("123", code="ERROR_CAPTCHA_UNSOLVABLE", nonce=nonce_for("999"))
    store.record_failure(seeded)
    assert submit(store, "123") is SubmissionOutcome.PROVISIONAL_DISCARDED
    task = store.get("123")
    assert task is not None and (task.status, task.error) == (TaskStatus.PENDING, None)


def test_a_registration_without_a_nonce_discards_any_provisional_result(
    store: TaskStore,
) -> None:
    store.record_result(solved("124"))
    legacy = NewTask("124", REQUEST, 1000.0, 1120.0)
    assert store.record_submission(legacy) is SubmissionOutcome.PROVISIONAL_DISCARDED
    task = store.get("124")
    assert task is not None and (task.status, task.nonce) == (TaskStatus.PENDING, None)


def test_registering_twice_writes_nothing_the_second_time(store: TaskStore) -> None:
    submit(store, "125")
    store.record_result(solved("125"))
    assert submit(store, "125", at=5000.0) is SubmissionOutcome.ALREADY_REGISTERED
    task = store.get("125")
    assert task is not None and (task.status, task.submitted_at) == (TaskStatus.SOLVED, 1000.0)


def test_registration_keeps_nonce_and_owner(store: TaskStore) -> None:
    submit(store, "126")
    task = store.get("126")
    assert task is not None and (task.nonce, task.owner) == (nonce_for("126"), OWNER)


def test_the_legacy_whole_secret_decides_only_tasks_without_a_nonce(store: TaskStore) -> None:
    store.record_submission(NewTask("127", REQUEST, 1000.0, 1120.0))
    submit(store, "128")
    assert store.record_result(solved("128", nonce=None)) is StoreOutcome.REJECTED
    assert store.record_result(solved("129", nonce=None)) is StoreOutcome.REJECTED
    assert store.get("129") is None
    assert store.record_result(solved("127", nonce=None)) is StoreOutcome.STORED
    assert store.record_result(solved("127", nonce=nonce_for("127"))) is StoreOutcome.REJECTED


def test_poll_results_need_no_proof(store: TaskStore) -> None:
    submit(store, "130")
    assert store.record_result(solved("130", via=DeliveryPath.POLL)) is StoreOutcome.STORED


def test_a_replayed_pingback_follows_the_same_rule(store: TaskStore) -> None:
    submit(store, "131")
    forged = solved("131", via=DeliveryPath.REPLAY, nonce=nonce_for("999"))
    assert store.record_result(forged) is StoreOutcome.REJECTED
    assert store.record_result(solved("131", via=DeliveryPath.REPLAY)) is StoreOutcome.STORED


def test_provisional_results_live_one_retention_window(dynamo_store: Any, dynamodb: Any) -> None:
    dynamo_store.record_result(solved("132", at=1030.0))
    raw = dynamodb.get_item(TableName="pingback-guard-tasks-test", Key={"task_id": {"S": "132"}})
    assert int(raw["Item"]["expires_at"]["N"]) == 1030 + 600
    submit(dynamo_store, "132")
    raw = dynamodb.get_item(TableName="pingback-guard-tasks-test", Key={"task_id": {"S": "132"}})
    assert int(raw["Item"]["expires_at"]["N"]) == 1000 + 7 * 86400


def stored_attribute(dynamodb: Any, task_id: str, name: str) -> str | None:
    raw = dynamodb.get_item(TableName="pingback-guard-tasks-test", Key={"task_id": {"S": task_id}})
    value = raw["Item"].get(name)
    return None if value is None else str(value["S"])


def test_every_task_says_whether_its_result_is_forwarded_never_where(
    dynamo_store: Any, dynamodb: Any
) -> None:
    """`pingback_forward` reaches the result event (the forward rule skips "no"); the URL stays
    in the table."""
    forwarded = NewTask(
        "134", REQUEST, 1000.0, 1120.0, nonce_for("134"), OWNER,
        forward_url="https://worker.example/captcha-done",
    )  # fmt: skip
    assert dynamo_store.record_submission(forwarded) is SubmissionOutcome.CREATED
    assert stored_attribute(dynamodb, "134", "pingback_forward") == "yes"
    submit(dynamo_store, "135")
    assert stored_attribute(dynamodb, "135", "pingback_forward") == "no"
    # Its own pingback first: the submit that registers the task says it with its result.
    dynamo_store.record_result(solved("136"))
    assert stored_attribute(dynamodb, "136", "pingback_forward") is None
    submit(dynamo_store, "136")
    assert stored_attribute(dynamodb, "136", "pingback_forward") == "no"
    register(dynamo_store, "137", OWNER, nonce_for("137"))
    assert stored_attribute(dynamodb, "137", "pingback_forward") == "no"


# ------------------------------------------------------------------ freshness (issue 10)


def test_usable_until_counts_from_the_earliest_finish_with_the_kinds_lifetime(
    store: TaskStore,
) -> None:
    store.record_submission(
        NewTask(
            "120", token_request("turnstile", "0x4AAAAAAA", "https://example.test/"), 1000, 1120
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
    wins = run_at_once(8, lambda: store.claim_read_through("126", now=1200.0, interval_seconds=5))
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
    claim = store.claim_report(report("130", ReportVerdict.BAD, 1100.0, 200.0))
    assert claim is ReportClaim.CLAIMED
    assert store.confirm_report("130", claimed_at=1100.0) is True
    again = store.claim_report(report("130", ReportVerdict.GOOD, 9000.0, 200.0))
    assert again is ReportClaim.ALREADY_REPORTED
    task = store.get("130")
    assert task is not None and (task.reported, task.reported_at) == (ReportVerdict.BAD, 1100.0)


def test_report_refusals_say_why(store: TaskStore) -> None:
    submit(store, "131")
    assert (
        store.claim_report(report("131", ReportVerdict.BAD, 1100.0, 200.0))
        is ReportClaim.NOT_SOLVED
    )
    assert (
        store.claim_report(report("132", ReportVerdict.BAD, 1100.0, 200.0))
        is ReportClaim.UNKNOWN_TASK
    )
    assert store.get("132") is None
    store.record_result(solved("131", at=1030.0))
    assert (
        store.claim_report(report("131", ReportVerdict.BAD, 2000.0, 1031.0))
        is ReportClaim.WINDOW_CLOSED
    )
    task = store.get("131")
    assert task is not None and task.reported is None


def test_a_released_or_lapsed_claim_can_be_claimed_again(store: TaskStore) -> None:
    submit(store, "133")
    store.record_result(solved("133", at=1030.0))
    store.claim_report(report("133", ReportVerdict.BAD, 1100.0, 200.0))
    assert store.release_report("133", claimed_at=1100.0) is True
    task = store.get("133")
    assert task is not None and task.reported is None
    store.claim_report(report("133", ReportVerdict.GOOD, 1110.0, 200.0))
    held = store.claim_report(report("133", ReportVerdict.BAD, 1169.0, 200.0))
    assert held is ReportClaim.ALREADY_REPORTED
    lapsed = store.claim_report(report("133", ReportVerdict.BAD, 1171.0, 200.0))
    assert lapsed is ReportClaim.CLAIMED
    assert store.confirm_report("133", claimed_at=1110.0) is False  # the lapsed claim is not ours
    assert store.release_report("133", claimed_at=1110.0) is False


# ------------------------------------------------------------------ claims on an id (issue 22)

RIVAL = "arn:aws:iam::123456789012:user/rogue"


def register(store: TaskStore, task_id: str, owner: str, nonce: str) -> RegistrationOutcome:
    return store.record_registration(
        NewTask(task_id, REQUEST, 1000.0, 1120.0, nonce, owner, TaskOrigin.REGISTER)
    )


def test_the_stacks_submit_replaces_a_registration_with_its_result(store: TaskStore) -> None:
    rogue = nonce_for("rogue")
    assert register(store, "140", RIVAL, rogue) is RegistrationOutcome.CREATED
    assert store.record_result(solved("140", "FORGED", nonce=rogue)) is StoreOutcome.STORED
    assert submit(store, "140") is SubmissionOutcome.REGISTRATION_REPLACED
    task = store.get("140")
    assert task is not None
    assert (task.status, task.solution, task.owner) == (TaskStatus.PENDING, None, OWNER)
    assert task.origin is TaskOrigin.SUBMIT
    assert store.record_result(solved("140", nonce=rogue)) is StoreOutcome.REJECTED
    assert store.record_result(solved("140")) is StoreOutcome.STORED
    assert submit(store, "140") is SubmissionOutcome.ALREADY_REGISTERED


def test_a_registration_never_replaces_a_submit(store: TaskStore) -> None:
    submit(store, "141")
    outcome = register(store, "141", RIVAL, nonce_for("rogue"))
    assert outcome is RegistrationOutcome.HELD_ELSEWHERE
    task = store.get("141")
    assert task is not None and task.owner == OWNER and not task.rivals


def test_two_registrations_contest_until_one_claims_pingback_decides(store: TaskStore) -> None:
    first, second = nonce_for("first"), nonce_for("second")
    register(store, "142", OWNER, first)
    assert register(store, "142", RIVAL, second) is RegistrationOutcome.CONTESTED
    assert register(store, "142", RIVAL, second) is RegistrationOutcome.SAME_AGAIN
    contested = store.get("142")
    assert contested is not None and contested.rivals == {second: RIVAL}
    assert contested.due_at is None
    assert store.record_result(solved("142", nonce=nonce_for("third"))) is StoreOutcome.REJECTED
    assert store.record_result(solved("142", nonce=second)) is StoreOutcome.STORED
    decided = store.get("142")
    assert decided is not None
    assert (decided.owner, decided.nonce, decided.rivals) == (RIVAL, second, {})
    assert store.record_result(solved("142", "FORGED", nonce=first)) is StoreOutcome.REJECTED


def test_a_capability_keeps_one_provisional_result(store: TaskStore) -> None:
    rogue = nonce_for("rogue")
    assert store.record_result(solved("143", nonce=rogue)) is StoreOutcome.STORED_UNREGISTERED
    assert store.record_result(solved("143", nonce=rogue)) is StoreOutcome.DUPLICATE
    assert store.record_result(solved("144", nonce=rogue)) is StoreOutcome.REJECTED
    assert store.get("144") is None


def test_a_pingback_url_registers_one_id_for_its_principal_in_its_window(
    store: TaskStore,
) -> None:
    nonce = nonce_for("url")
    store.record_pingback_url(IssuedPingbackUrl(nonce, OWNER, 1000.0, 1600.0, 2200.0))
    assert store.claim_pingback_url(nonce, RIVAL, "145", 1001.0) is PingbackUrlClaim.REFUSED
    assert store.claim_pingback_url(nonce, OWNER, "145", 1001.0) is PingbackUrlClaim.CLAIMED
    assert store.claim_pingback_url(nonce, OWNER, "145", 1002.0) is PingbackUrlClaim.CLAIMED
    assert store.claim_pingback_url(nonce, OWNER, "146", 1003.0) is PingbackUrlClaim.REFUSED
    late = nonce_for("late")
    store.record_pingback_url(IssuedPingbackUrl(late, OWNER, 1000.0, 1600.0, 2200.0))
    assert store.claim_pingback_url(late, OWNER, "147", 1601.0) is PingbackUrlClaim.REFUSED
    never = nonce_for("never")
    assert store.claim_pingback_url(never, OWNER, "148", 1001.0) is PingbackUrlClaim.REFUSED
    # A registered URL keeps no provisional result under another id.
    assert store.record_result(solved("149", nonce=nonce)) is StoreOutcome.REJECTED


def smoke_task(task_id: str, owner: str = OWNER, at: float = 1000.0) -> NewTask:
    return NewTask(
        task_id, REQUEST, at, at, nonce=nonce_for(task_id), owner=owner, origin=TaskOrigin.SMOKE
    )


def test_a_smoke_task_is_pending_never_due_and_decided_by_its_own_pingback(
    store: TaskStore,
) -> None:
    assert store.record_smoke_task(smoke_task("90000000000000000001")) is True
    task = store.get("90000000000000000001")
    assert task is not None
    assert (task.status, task.origin, task.owner, task.due_at) == (
        TaskStatus.PENDING,
        TaskOrigin.SMOKE,
        OWNER,
        None,
    )
    assert store.due_tasks(now=10**10, limit=10) == []
    assert store.record_result(solved("90000000000000000001", nonce="forged")) is (
        StoreOutcome.REJECTED
    )
    assert store.record_result(solved("90000000000000000001")) is StoreOutcome.STORED


def test_a_smoke_task_takes_only_an_id_nothing_holds(store: TaskStore) -> None:
    submit(store, "90000000000000000002")
    assert store.record_smoke_task(smoke_task("90000000000000000002")) is False
    task = store.get("90000000000000000002")
    assert task is not None and task.origin is TaskOrigin.SUBMIT
    assert store.record_result(solved("90000000000000000003")) is StoreOutcome.STORED_UNREGISTERED
    assert store.record_smoke_task(smoke_task("90000000000000000003")) is False


def test_only_its_owner_deletes_a_smoke_task_and_nothing_else_is_deleted(
    store: TaskStore,
) -> None:
    store.record_smoke_task(smoke_task("90000000000000000004"))
    submit(store, "104")
    assert store.delete_smoke_task("90000000000000000004", "arn:aws:iam::123456789012:user/x") is (
        False
    )
    assert store.delete_smoke_task("104", OWNER) is False
    assert store.get("104") is not None
    store.record_result(solved("90000000000000000004"))
    assert store.delete_smoke_task("90000000000000000004", OWNER) is True
    assert store.get("90000000000000000004") is None
    assert store.delete_smoke_task("90000000000000000004", OWNER) is False


def test_a_smoke_task_is_never_reported_and_a_submit_replaces_it(store: TaskStore) -> None:
    store.record_smoke_task(smoke_task("90000000000000000005"))
    store.record_result(solved("90000000000000000005", at=1030.0))
    claim = store.claim_report(report("90000000000000000005", ReportVerdict.GOOD, 1040.0, 900.0))
    assert claim is ReportClaim.UNKNOWN_TASK
    assert submit(store, "90000000000000000005") is SubmissionOutcome.REGISTRATION_REPLACED
    task = store.get("90000000000000000005")
    assert task is not None
    assert (task.origin, task.status, task.solution) == (
        TaskOrigin.SUBMIT,
        TaskStatus.PENDING,
        None,
    )


def test_a_smoke_task_lives_one_retention_window(dynamo_store: Any, dynamodb: Any) -> None:
    dynamo_store.record_smoke_task(smoke_task("90000000000000000006", at=1000.0))
    raw = dynamodb.get_item(
        TableName="pingback-guard-tasks-test", Key={"task_id": {"S": "90000000000000000006"}}
    )
    assert int(raw["Item"]["expires_at"]["N"]) == 1000 + 600


def test_a_backlog_beyond_the_limit_yields_the_most_overdue_whatever_their_shard(
    store: TaskStore,
) -> None:
    """Forty tasks over the index's shards, each due a second after the previous one: a read of
    five returns the five most overdue, oldest first, not the first shard's five."""
    due_at = {str(5000 + n): 2000.0 + n for n in range(40)}
    for task_id, first_poll in reversed(list(due_at.items())):
        submit(store, task_id, first_poll=first_poll)
    due = store.due_tasks(now=9000.0, limit=5)
    assert [task.task_id for task in due] == [str(5000 + n) for n in range(5)]


def test_a_task_keeps_its_provider_account_and_older_tasks_read_as_account_1(
    store: TaskStore,
) -> None:
    # Given a task submitted through account "b" and one through account 1 (no field)
    store.record_submission(
        NewTask(
            "700",
            REQUEST,
            1000.0,
            1120.0,
            nonce=nonce_for("700"),
            owner=OWNER,
            provider_account="b",
        )
    )
    submit(store, "701")

    # When the result lands and the poller reads the accounts of its due tasks (one unknown)
    store.record_result(solved("700"))
    accounts = store.provider_accounts_of(["700", "701", "702"])

    # Then each task reads as its own account; an unknown id as account 1
    assert accounts == {"700": "b", "701": None, "702": None}
    found = store.get("700")
    assert found is not None and found.provider_account == "b"
