"""in.php / res.php spoken by the stack: per-worker keys, the provider's words, owner scoping."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from pingback_guard.domain.errors import (
    ProviderAccountError,
    ProviderRejectedError,
    ProviderRetryableError,
)
from pingback_guard.domain.request_budgets import RequestLimits
from pingback_guard.domain.task import DeliveryPath, TaskResult, TaskStatus
from pingback_guard.domain.worker_keys import DEFAULT_THREADS, Dialect
from pingback_guard.logic.compat import Event, Outcome, ProtocolAnswer
from pingback_guard.logic.compat_results import CompatResults
from pingback_guard.logic.compat_submit import CompatSubmit, parse_fields
from pingback_guard.logic.get_task import TaskQuery
from pingback_guard.logic.key_threads import KeyThreads
from pingback_guard.logic.report import ReportService
from pingback_guard.logic.request_budgets import BalanceSource, Endpoint, KeyBudget, SharedBalance
from pingback_guard.logic.submit import IssuedPingback, PendingTasks, SubmitService
from pingback_guard.logic.worker_keys import KeyRefusal, WorkerKeys
from tests.fakes import (
    FakeDeadLetterQueue,
    FakeProvider,
    InMemoryKeyThreads,
    InMemoryRequestBudgets,
    InMemoryTaskStore,
    InMemoryWorkerKeys,
)

WORKER = "arn:aws:iam::123456789012:user/worker"
OTHER = "arn:aws:iam::123456789012:user/someone-else"
TOKEN = "03AFcWeA5" + "q" * 300
SUBMIT = {
    "method": "userrecaptcha",
    "googlekey": "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-",
    "pageurl": "https://www.google.com/recaptcha/api2/demo",
    "version": "v2",
    "enterprise": "0",
    "soft_id": "4580",
}
PINGBACK = IssuedPingback("nonce", "https://api.test/callback/v1.nonce.mac")
NO_LIMIT = RequestLimits(per_second=10000, per_minute=10000)


class Stack:
    """The in.php and res.php logic over one in-memory store, provider, key table and budget
    table (budgets no test here reaches, unless given)."""

    def __init__(
        self,
        in_php: RequestLimits = NO_LIMIT,
        res_php: RequestLimits = NO_LIMIT,
        balance: BalanceSource | None = None,
        dialect: Dialect = Dialect.TWOCAPTCHA,
        threads: int = DEFAULT_THREADS,
    ) -> None:
        self.store = InMemoryTaskStore()
        self.provider = FakeProvider()
        self.budgets = InMemoryRequestBudgets()
        self.keys = InMemoryWorkerKeys()
        self.worker_key = self.keys.issue(WORKER, dialect=dialect, threads=threads)
        self.other_key = self.keys.issue(OTHER, dialect=dialect, threads=threads)
        self.now = 1000.0
        self.threads = InMemoryKeyThreads()
        key_threads = KeyThreads(self.threads, clock=lambda: self.now)
        keys = WorkerKeys(self.keys)
        submit = SubmitService(
            self.store,
            self.provider,
            FakeDeadLetterQueue(),
            PendingTasks(120, clock=lambda: self.now),
            sleep=lambda _: None,
        )
        self.in_php = CompatSubmit(
            keys, submit, budget=self._budget(Endpoint.IN_PHP, in_php), threads=key_threads
        )
        self.res_php = CompatResults(
            keys,
            TaskQuery(self.store),
            ReportService(self.store, self.provider, 900, clock=lambda: self.now),
            SharedBalance(self.budgets, balance or self.provider, 60, clock=lambda: self.now),
            clock=lambda: self.now,
            budget=self._budget(Endpoint.RES_PHP, res_php),
            threads=key_threads,
        )

    def _budget(self, endpoint: Endpoint, limits: RequestLimits) -> KeyBudget:
        return KeyBudget(self.budgets, endpoint, limits, clock=lambda: self.now)

    def submit(self, key: str, **fields: str) -> Outcome:
        return self.in_php.submit({"key": key, **SUBMIT, **fields}, lambda: PINGBACK)

    def res(self, key: str, **fields: str) -> Outcome:
        return self.res_php.answer({"key": key, **fields})

    def solve(self, task_id: str, code: str = TOKEN, user_agent: str | None = None) -> None:
        self.store.record_result(
            TaskResult(task_id, code, DeliveryPath.POLL, self.now, user_agent=user_agent)
        )


@pytest.fixture
def stack() -> Stack:
    return Stack()


def words(outcome: Outcome) -> tuple[int, str]:
    return outcome.answer.status, outcome.answer.plain


def test_submit_answers_ok_with_the_provider_s_id_and_records_it_for_the_key_s_owner(
    stack: Stack,
) -> None:
    outcome = stack.submit(stack.worker_key)
    assert outcome.event is Event.SUBMITTED
    task_id = stack.provider.submitted[0][0]
    assert words(outcome) == (1, f"OK|{task_id}")
    assert outcome.answer.render(as_json=True) == f'{{"status":1,"request":"{task_id}"}}'
    task = stack.store.get(task_id)
    assert task is not None and task.owner == WORKER and task.status is TaskStatus.PENDING
    # Our per-task pingback URL goes to the provider, never the client's own.
    assert stack.provider.submitted[0][1] == PINGBACK.url
    assert task.request is not None and task.request.fields["googlekey"] == SUBMIT["googlekey"]


@pytest.mark.parametrize(
    ("key", "answer"),
    [
        ("", KeyRefusal.MALFORMED),
        ("not-a-key", KeyRefusal.MALFORMED),
        ("0123456789ABCDEF0123456789ABCDEF", KeyRefusal.MALFORMED),
        ("0123456789abcdef0123456789abcdef", KeyRefusal.UNKNOWN),
    ],
)
def test_a_key_that_speaks_for_nobody_gets_the_protocol_s_key_error(
    stack: Stack, key: str, answer: KeyRefusal
) -> None:
    for outcome in (stack.submit(key), stack.res(key, action="get", id="1")):
        assert words(outcome) == (0, answer.value)
        assert outcome.event is Event.KEY_REFUSED
    assert stack.provider.submitted == []


def test_a_revoked_key_is_a_key_that_does_not_exist(stack: Stack) -> None:
    task_id = stack.submit(stack.worker_key).task_id
    stack.keys.revoke(stack.worker_key)
    assert words(stack.submit(stack.worker_key)) == (0, "ERROR_KEY_DOES_NOT_EXIST")
    assert words(stack.res(stack.worker_key, action="get", id=str(task_id))) == (
        0,
        "ERROR_KEY_DOES_NOT_EXIST",
    )


def test_a_key_whose_id_matches_but_digest_does_not_is_refused() -> None:
    keys = InMemoryWorkerKeys()
    key = keys.issue(WORKER)
    record = next(iter(keys.records.values()))
    keys.records[record.key_id] = type(record)(record.key_id, "0" * 64, WORKER, 1.0)
    assert WorkerKeys(keys).owner_of(key) is KeyRefusal.UNKNOWN


def test_get_answers_not_ready_then_the_token_then_the_same_token(stack: Stack) -> None:
    task_id = str(stack.submit(stack.worker_key).task_id)
    assert words(stack.res(stack.worker_key, action="get", id=task_id)) == (0, "CAPCHA_NOT_READY")
    stack.solve(task_id)
    for _ in range(2):
        outcome = stack.res(stack.worker_key, action="get", id=task_id)
        assert words(outcome) == (1, f"OK|{TOKEN}")
        assert outcome.answer.render(as_json=True) == f'{{"status":1,"request":"{TOKEN}"}}'


def test_a_captchaai_key_reads_the_answer_in_result_too() -> None:
    """CaptchaAI's SDK reads some kinds' answers from ``result`` (captchaai 1.0.1
    core/registry.py); 2captcha's extendedResponse would hand an extra field to its caller."""
    stack = Stack(dialect=Dialect.CAPTCHAAI)
    task_id = str(stack.submit(stack.worker_key).task_id)
    stack.solve(task_id)
    outcome = stack.res(stack.worker_key, action="get", id=task_id)
    assert outcome.answer.render(as_json=True) == (
        f'{{"status":1,"request":"{TOKEN}","result":"{TOKEN}"}}'
    )


def test_another_owner_s_task_and_an_unknown_one_look_the_same(stack: Stack) -> None:
    task_id = str(stack.submit(stack.worker_key).task_id)
    stack.solve(task_id)
    foreign = stack.res(stack.other_key, action="get", id=task_id)
    unknown = stack.res(stack.other_key, action="get", id="99999999999")
    assert words(foreign) == words(unknown) == (0, "ERROR_WRONG_CAPTCHA_ID")
    assert TOKEN not in foreign.answer.render(as_json=True)
    assert words(stack.res(stack.other_key, action="get", ids=task_id)) == (
        1,
        "ERROR_WRONG_CAPTCHA_ID",
    )
    assert words(stack.res(stack.other_key, action="reportbad", id=task_id)) == (
        0,
        "ERROR_WRONG_CAPTCHA_ID",
    )
    assert stack.provider.reports == []


def test_ids_answers_each_id_in_order(stack: Stack) -> None:
    first = str(stack.submit(stack.worker_key).task_id)
    second = str(stack.submit(stack.worker_key).task_id)
    stack.solve(second)
    outcome = stack.res(stack.worker_key, action="get", ids=f"{first},{second},12,x")
    assert words(outcome) == (
        1,
        f"CAPCHA_NOT_READY|{TOKEN}|ERROR_WRONG_CAPTCHA_ID|ERROR_WRONG_ID_FORMAT",
    )


def test_a_failed_task_answers_the_provider_s_error(stack: Stack) -> None:
    task_id = str(stack.submit(stack.worker_key).task_id)
    stack.store.record_failure(
        TaskResult(task_id, "ERROR_CAPTCHA_UNSOLVABLE", DeliveryPath.POLL, stack.now)
    )
    assert words(stack.res(stack.worker_key, action="get", id=task_id)) == (
        0,
        "ERROR_CAPTCHA_UNSOLVABLE",
    )


def test_an_expired_task_is_unsolvable_for_the_client(stack: Stack) -> None:
    task_id = str(stack.submit(stack.worker_key).task_id)
    stack.store.mark_expired(task_id, stack.now + 700)
    assert words(stack.res(stack.worker_key, action="get", id=task_id)) == (
        0,
        "ERROR_CAPTCHA_UNSOLVABLE",
    )


def test_report_once_then_the_provider_s_duplicate_word(stack: Stack) -> None:
    task_id = str(stack.submit(stack.worker_key).task_id)
    assert words(stack.res(stack.worker_key, action="reportgood", id=task_id)) == (
        0,
        "ERROR_WRONG_CAPTCHA_ID",
    )
    stack.solve(task_id)
    assert words(stack.res(stack.worker_key, action="reportbad", id=task_id)) == (
        1,
        "OK_REPORT_RECORDED",
    )
    assert stack.provider.reports == [(task_id, False)]
    assert words(stack.res(stack.worker_key, action="reportbad", id=task_id)) == (
        0,
        "ERROR_DUPLICATE_REPORT",
    )


def test_getbalance_is_the_provider_account_s_balance(stack: Stack) -> None:
    assert words(stack.res(stack.worker_key, action="getbalance")) == (1, "1.0")


@pytest.mark.parametrize(
    ("fields", "answer"),
    [
        ({"action": ""}, "ERROR_EMPTY_ACTION"),
        ({"action": "steal"}, "ERROR_BAD_PARAMETERS"),
        ({"action": "get", "id": "12a"}, "ERROR_WRONG_ID_FORMAT"),
        ({"action": "get", "ids": ",".join(["1"] * 101)}, "ERROR_BAD_PARAMETERS"),
    ],
)
def test_res_php_refusals_use_the_provider_s_codes(
    stack: Stack, fields: Mapping[str, str], answer: str
) -> None:
    assert words(stack.res(stack.worker_key, **fields)) == (0, answer)


@pytest.mark.parametrize(
    ("missing", "answer"),
    [
        ("googlekey", "ERROR_GOOGLEKEY"),
        ("pageurl", "ERROR_PAGEURL"),
        ("method", "ERROR_BAD_PARAMETERS"),
    ],
)
def test_submit_refusals_use_the_provider_s_codes(missing: str, answer: str) -> None:
    with pytest.raises(ValueError, match=answer):
        parse_fields({name: value for name, value in SUBMIT.items() if name != missing})


@pytest.mark.parametrize(
    ("failure", "answer", "http_status"),
    [
        (ProviderAccountError("in.php: x", code="ERROR_ZERO_BALANCE"), "ERROR_ZERO_BALANCE", 200),
        (ProviderRejectedError("in.php: x", code="ERROR_BAD_PROXY"), "ERROR_BAD_PROXY", 200),
        (ProviderRetryableError("in.php: connect timeout"), "ERROR_NO_SLOT_AVAILABLE", 503),
    ],
)
def test_provider_failures_pass_its_words_or_ask_for_a_retry(
    stack: Stack, failure: Exception, answer: str, http_status: int
) -> None:
    stack.provider.failure = lambda: failure
    outcome = stack.submit(stack.worker_key)
    assert outcome.answer == ProtocolAnswer(0, answer, answer, http_status)


def test_the_key_table_down_asks_for_a_retry_and_submits_nothing(stack: Stack) -> None:
    stack.keys.available = False
    for outcome in (stack.submit(stack.worker_key), stack.res(stack.worker_key, action="get")):
        assert outcome.answer.http_status == 503
        assert outcome.event is Event.STORE_UNAVAILABLE
    assert stack.provider.submitted == []


def test_the_client_s_pingback_is_kept_with_its_task_never_sent_to_the_provider(
    stack: Stack,
) -> None:
    forward = "https://worker.example/pingback?x=1"
    task_id = str(stack.submit(stack.worker_key, pingback=forward).task_id)
    task = stack.store.get(task_id)
    assert task is not None and task.forward_url == forward
    assert stack.provider.submitted[0][1] == PINGBACK.url
    request = stack.provider.submitted_requests[0]
    assert forward not in repr(request)


@pytest.mark.parametrize(
    "url",
    [
        "http://worker.example/p",
        "ftp://worker.example/p",
        "https://u:p@worker.example/",
        "http://127.0.0.1:9001/2018-06-01/runtime/invocation/next",
    ],
)
def test_a_pingback_the_stack_will_not_call_is_refused(stack: Stack, url: str) -> None:
    assert words(stack.submit(stack.worker_key, pingback=url)) == (0, "ERROR_BAD_PARAMETERS")
    assert stack.provider.submitted == []


def test_2captcha_s_geetest_v4_method_is_geetest_version_4() -> None:
    request = parse_fields(
        {
            "method": "geetest_v4",
            "captcha_id": "e392e1d7fd421dc63325744d5a2b9c73",
            "pageurl": SUBMIT["pageurl"],
        }
    )
    assert request.method == "geetest" and request.fields["version"] == "4"
