"""A task is submitted, recorded, polled, read through and reported through its own provider
account (logic/accounts.py), and tasks written before accounts existed are account 1's."""

from __future__ import annotations

from pingback_guard.domain.errors import ProviderAccountError
from pingback_guard.domain.task import (
    DeliveryPath,
    NewTask,
    ReportClaim,
    ReportVerdict,
    TaskResult,
    TaskStatus,
)
from pingback_guard.logic.accounts import ProviderAccount, ProviderAccounts
from pingback_guard.logic.get_task import ReadThroughPolicy, TaskQuery
from pingback_guard.logic.poll_schedule import CheckSchedule, SolveTimes
from pingback_guard.logic.poller import PollerService
from pingback_guard.logic.report import ReportService
from pingback_guard.logic.submit import IssuedPingback, PendingTasks, SubmitService
from pingback_guard.queue.dead_letter import decode_message, encode_message
from tests.fakes import (
    RECAPTCHA_REQUEST,
    UNIT_POLL_POLICY,
    FakeDeadLetterQueue,
    FakeProvider,
    InMemoryTaskStore,
    nonce_for,
)

TOKEN = "03AFcWeA5" + "t" * 700
SUBMITTED = 1000.0
WORKER = "arn:aws:iam::123456789012:user/worker"
PINGBACK = IssuedPingback(nonce_for("x"), f"https://cb.test/callback/v1.{nonce_for('x')}.mac")


def two_accounts(first: FakeProvider, second: FakeProvider) -> ProviderAccounts:
    return ProviderAccounts([ProviderAccount(None, first), ProviderAccount("b", second)])


def pending(store: InMemoryTaskStore, task_id: str, account: str | None) -> None:
    store.record_submission(
        NewTask(
            task_id,
            RECAPTCHA_REQUEST,
            SUBMITTED,
            SUBMITTED + 20,
            owner=WORKER,
            provider_account=account,
        )
    )


def test_a_submit_refused_by_account_1_is_recorded_with_the_account_that_took_it() -> None:
    # Given account 1 out of balance and account "b" working
    broke = FakeProvider(failure=lambda: ProviderAccountError("x", code="ERROR_ZERO_BALANCE"))
    spare = FakeProvider(next_task_id=555)
    store = InMemoryTaskStore()
    service = SubmitService(
        store, two_accounts(broke, spare), FakeDeadLetterQueue(), PendingTasks(120)
    )

    # When a worker submits
    task = service.submit(RECAPTCHA_REQUEST, PINGBACK, WORKER)

    # Then "b" has it, and so does the table
    assert (task.task_id, task.provider_account) == ("555", "b")
    recorded = store.get("555")
    assert recorded is not None and recorded.provider_account == "b"


def test_a_submission_queued_for_replay_keeps_its_account() -> None:
    task = NewTask("9", RECAPTCHA_REQUEST, SUBMITTED, SUBMITTED + 20, provider_account="b")
    replayed = decode_message(encode_message(task, "table down"))
    assert isinstance(replayed, NewTask) and replayed.provider_account == "b"


def test_the_poller_asks_each_account_for_its_own_tasks_only() -> None:
    # Given a task of each account and an old task with no account (account 1's)
    store = InMemoryTaskStore()
    pending(store, "1", None)
    pending(store, "2", "b")
    pending(store, "3", None)
    first = FakeProvider(answers={"1": TOKEN})
    second = FakeProvider(answers={"2": TOKEN})
    poller = PollerService(
        store, two_accounts(first, second), UNIT_POLL_POLICY, SolveTimes(default_seconds=20)
    )

    report = poller.sweep(now=SUBMITTED + 130, remaining_seconds=lambda: 900.0)

    assert sorted(id_ for ids in first.requests for id_ in ids) == ["1", "3"]
    assert second.requests == [["2"]]
    assert report.recovered == 2
    assert store.get("2").status is TaskStatus.SOLVED  # type: ignore[union-attr]


def test_one_account_refusing_leaves_the_other_account_s_tasks_polled() -> None:
    store = InMemoryTaskStore()
    pending(store, "1", None)
    pending(store, "2", "b")
    broke = FakeProvider(failure=lambda: ProviderAccountError("x", code="ERROR_KEY_DOES_NOT_EXIST"))
    second = FakeProvider(answers={"2": TOKEN})
    poller = PollerService(
        store, two_accounts(broke, second), UNIT_POLL_POLICY, SolveTimes(default_seconds=20)
    )

    report = poller.sweep(now=SUBMITTED + 130, remaining_seconds=lambda: 900.0)

    assert report.account_error is None  # the sweep went on
    assert store.get("2").status is TaskStatus.SOLVED  # type: ignore[union-attr]
    assert store.get("1").status is TaskStatus.PENDING  # type: ignore[union-attr]


def test_a_task_of_an_account_no_longer_configured_waits_and_stops_no_sweep() -> None:
    store = InMemoryTaskStore()
    pending(store, "1", None)
    pending(store, "2", "gone")
    first = FakeProvider(answers={"1": TOKEN})
    poller = PollerService(
        store, two_accounts(first, FakeProvider()), UNIT_POLL_POLICY, SolveTimes(20)
    )

    report = poller.sweep(now=SUBMITTED + 130, remaining_seconds=lambda: 900.0)

    assert report.account_error is None
    assert report.recovered == 1
    assert store.get("2").status is TaskStatus.PENDING  # type: ignore[union-attr]


def test_a_waiting_worker_s_read_through_asks_the_task_s_own_account() -> None:
    store = InMemoryTaskStore()
    pending(store, "2", "b")
    first, second = FakeProvider(), FakeProvider(answers={"2": TOKEN})
    query = TaskQuery(
        store,
        two_accounts(first, second),
        ReadThroughPolicy(CheckSchedule(5, 60), SolveTimes(default_seconds=20)),
        clock=lambda: SUBMITTED + 200,
    )

    view = query.view("2", principal=WORKER, now=SUBMITTED + 200)

    assert view is not None and view["status"] == "SOLVED"
    assert first.requests == []
    assert second.requests == [["2"]]


def test_a_report_goes_to_the_task_s_own_account() -> None:
    store = InMemoryTaskStore()
    pending(store, "2", "b")
    store.record_result(TaskResult("2", TOKEN, DeliveryPath.CALLBACK, SUBMITTED + 30))
    first, second = FakeProvider(), FakeProvider()
    reports = ReportService(store, two_accounts(first, second), 900, clock=lambda: SUBMITTED + 60)

    claim = reports.report("2", ReportVerdict.GOOD, WORKER)

    assert claim is ReportClaim.CLAIMED
    assert (first.reports, second.reports) == ([], [("2", True)])
