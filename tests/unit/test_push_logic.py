"""Push delivery rules (issue 24): only the owner's connections get a result, a reconnecting
worker gets the current state of its own tasks, gone connections are forgotten; what is pushed
is the GET view (issue 23: the answer parsed for its kind)."""

from __future__ import annotations

import pytest

from pingback_guard.domain.task import CaptchaRequest, DeliveryPath, NewTask, TaskResult
from pingback_guard.logic.get_task import worker_view
from pingback_guard.logic.push import (
    MAX_MESSAGE_BYTES,
    InvalidSubscription,
    PushService,
    ResultEvent,
    parse_subscription,
    result_of_event,
)
from tests.fakes import (
    FakeSender,
    InMemoryConnectionStore,
    InMemoryPushReads,
    InMemoryTaskStore,
    token_request,
)

OWNER = "arn:aws:iam::123456789012:user/worker"
OTHER = "arn:aws:iam::123456789012:user/other"
TOKEN = "03AFcWeA5" + "p" * 300
NOW = 2000.0


def pushing(
    max_per_owner: int = 2,
) -> tuple[PushService, InMemoryTaskStore, InMemoryConnectionStore, FakeSender]:
    tasks, connections, sender = InMemoryTaskStore(), InMemoryConnectionStore(), FakeSender()
    service = PushService(
        connections,
        InMemoryPushReads(tasks, connections),
        sender.send,
        connection_ttl_seconds=7200,
        max_connections_per_owner=max_per_owner,
    )
    return service, tasks, connections, sender


def solved_event(task_id: str, owner: str = OWNER) -> ResultEvent:
    """A SOLVED task's result event: it names the owner, the view is the table's."""
    return result_of_event(task_id, {"status": "SOLVED", "owner": owner})


def task_of(tasks: InMemoryTaskStore, task_id: str, owner: str, solved: bool = True) -> None:
    request = token_request("userrecaptcha", "sitekey", "https://example.test/")
    tasks.record_submission(NewTask(task_id, request, NOW - 30, NOW - 5, owner=owner))
    if solved:
        tasks.record_result(TaskResult(task_id, TOKEN, DeliveryPath.CALLBACK, received_at=NOW - 1))


def test_a_final_result_goes_to_every_connection_of_its_owner_and_no_other() -> None:
    service, tasks, _, sender = pushing()
    task_of(tasks, "101", OWNER)
    for connection_id, owner in (("a", OWNER), ("b", OWNER), ("c", OTHER)):
        assert service.connect(connection_id, owner, NOW)
    report = service.deliver(solved_event("101"), NOW)
    assert sorted(connection for connection, _ in sender.sent) == ["a", "b"]
    message = sender.sent[0][1]
    assert message["type"] == "task" and message["task"]["solution"] == TOKEN
    assert message["task"]["status"] == "SOLVED" and report.sent == 2


def test_a_pending_task_or_an_owner_without_connections_pushes_nothing() -> None:
    service, tasks, _, sender = pushing()
    task_of(tasks, "101", OWNER, solved=False)
    task_of(tasks, "102", OWNER)
    assert service.deliver(solved_event("101"), NOW).sent == 0
    assert service.deliver(solved_event("102"), NOW).no_connection == 1
    assert sender.sent == []


def test_a_gone_connection_is_forgotten_and_a_failed_push_counted() -> None:
    service, tasks, connections, sender = pushing()
    task_of(tasks, "101", OWNER)
    service.connect("gone", OWNER, NOW)
    service.connect("flaky", OWNER, NOW)
    sender.gone.add("gone")
    sender.failing.add("flaky")
    report = service.deliver(solved_event("101"), NOW)
    assert (report.gone, report.failed, report.sent) == (1, 1, 0)
    assert set(connections.connections) == {"flaky"}


def test_on_subscribe_a_worker_gets_the_final_state_of_its_own_tasks_only() -> None:
    service, tasks, _, sender = pushing()
    task_of(tasks, "101", OWNER)
    task_of(tasks, "102", OWNER, solved=False)
    task_of(tasks, "103", OTHER)
    service.connect("a", OWNER, NOW)
    service.subscribe("a", ["101", "102", "103", "999"], NOW)
    [(connection, message)] = sender.sent
    assert connection == "a" and message["type"] == "tasks"
    assert [(t["task_id"], t["status"]) for t in message["tasks"]] == [("101", "SOLVED")]
    sender.sent.clear()
    service.subscribe("a", ["102", "103"], NOW)
    assert sender.sent == []  # nothing final of its own: no message


def test_a_subscribe_answer_of_50_solved_tokens_comes_in_messages_under_the_frame_limit() -> None:
    """Issue 32 item 4: 50 solved reCAPTCHA tasks made one 238 KB answer, over API Gateway's
    128 KB message (and 32 KB frame) limit: the worker got nothing. Each message now holds whole
    views within one frame, every view once, in the order asked."""
    service, tasks, _, sender = pushing()
    token = "03AFcWeA" + "x" * 2200
    ids = [str(1000 + n) for n in range(50)]
    for task_id in ids:
        request = token_request("userrecaptcha", "sitekey", "https://example.test/")
        tasks.record_submission(NewTask(task_id, request, NOW - 30, NOW - 5, owner=OWNER))
        tasks.record_result(TaskResult(task_id, token, DeliveryPath.POLL, received_at=NOW - 1))
    service.connect("a", OWNER, NOW)
    report = service.subscribe("a", ids, NOW)
    assert len(sender.sent) > 1 and max(sender.sizes) <= MAX_MESSAGE_BYTES
    pushed = [view["task_id"] for _, message in sender.sent for view in message["tasks"]]
    assert pushed == ids and all(m["type"] == "tasks" for _, m in sender.sent)
    assert report.sent == len(sender.sent)


def test_a_refused_subscribe_answer_is_not_a_failed_result_push() -> None:
    """Any principal could fire the push-failed alarm at will with an oversized subscribe
    answer: an answer the Management API refuses is counted apart (PushAnswerFailed), and only
    a result that could not be pushed counts as PushFailed."""
    service, tasks, _, sender = pushing()
    task_of(tasks, "101", OWNER)
    service.connect("a", OWNER, NOW)
    sender.failing.add("a")
    report = service.subscribe("a", ["101"], NOW)
    assert (report.failed, report.answer_failed) == (0, 1)
    assert service.deliver(solved_event("101"), NOW).failed == 1


def test_a_principal_holds_a_bounded_number_of_connections() -> None:
    service, _, _, _ = pushing()
    assert service.connect("a", OWNER, NOW) and service.connect("b", OWNER, NOW)
    assert not service.connect("c", OWNER, NOW)
    service.disconnect("a")
    assert service.connect("c", OWNER, NOW)


def test_an_expired_connection_record_gets_no_push() -> None:
    service, tasks, _, sender = pushing()
    task_of(tasks, "101", OWNER)
    service.connect("old", OWNER, NOW - 7300)
    assert service.deliver(solved_event("101"), NOW).no_connection == 1 and sender.sent == []


@pytest.mark.parametrize(
    "body",
    [
        None,
        "",
        "[]",
        '{"task_ids": []}',
        '{"task_ids": "101"}',
        '{"task_ids": ["x1"]}',
        '{"task_ids": [' + ",".join(['"1"'] * 51) + "]}",
    ],
)
def test_a_malformed_subscription_is_refused(body: str | None) -> None:
    with pytest.raises(InvalidSubscription):
        parse_subscription(body)


def test_a_subscription_names_up_to_50_ids_once_each() -> None:
    assert parse_subscription('{"action": "subscribe", "task_ids": ["7", 7, "8"]}') == ["7", "8"]


def detail(**fields: str) -> dict[str, str]:
    """A result event's detail as the pipe's input template writes it (strings, "" if absent)."""
    return {
        "schema_version": "1",
        "task_id": "101",
        "status": "SOLVED",
        "previous_status": "PENDING",
        "delivered_via": "callback",
        "finished_at_earliest": str(NOW - 2),
        "finished_at_latest": str(NOW - 1),
        "usable_until": str(NOW + 118),
        "error": "",
        "owner": OWNER,
        "solution": TOKEN,
        **fields,
    }


def test_a_failed_result_event_is_pushed_without_reading_the_task() -> None:
    service, tasks, _, sender = pushing()
    service.connect("a", OWNER, NOW)
    event = result_of_event(
        "101", detail(status="FAILED", solution="", error="ERROR_CAPTCHA_UNSOLVABLE")
    )
    assert event.owner == OWNER and event.view is not None
    service.deliver(event, NOW)  # the task is not even in this store
    [(_, message)] = sender.sent
    view = message["task"]
    assert (view["status"], view["error"]) == ("FAILED", "ERROR_CAPTCHA_UNSOLVABLE")
    assert (view["solution"], view["usable"], view["usable_until"]) == (None, False, None)
    assert view["finished_at_earliest"] == NOW - 2 and view["token_age_seconds"] is None
    assert not tasks.tasks


@pytest.mark.parametrize(
    "fields",
    [{}, {"solution": ""}, {"status": "PENDING"}],
    ids=["solved", "token not published", "not final"],
)
def test_an_event_that_cannot_say_it_all_leaves_the_table_to_say_it(fields: dict[str, str]) -> None:
    event = result_of_event("101", detail(**fields))
    assert (event.owner, event.view) == (OWNER, None)


def test_an_event_without_an_owner_pushes_nothing_and_reads_nothing() -> None:
    service, tasks, connections, sender = pushing()
    task_of(tasks, "101", OWNER)
    service.connect("a", OWNER, NOW)
    event = result_of_event("101", detail(owner=""))
    assert event.owner is None
    assert service.deliver(event, NOW).sent == 0 and sender.sent == []
    assert connections.reads == 0


def test_a_result_costs_one_table_read_however_it_is_pushed() -> None:
    """Push read the task, then the owner's connections (2.46 reads per task in the soak): the
    event names the owner, so the task and the connections come in one read, and a failed or
    expired task's event says it all, so only the connections are read."""
    tasks, connections, sender = InMemoryTaskStore(), InMemoryConnectionStore(), FakeSender()
    reads = InMemoryPushReads(tasks, connections)
    service = PushService(
        connections, reads, sender.send, connection_ttl_seconds=7200, max_connections_per_owner=2
    )
    task_of(tasks, "101", OWNER)
    service.connect("a", OWNER, NOW)
    service.connect("b", OWNER, NOW)
    service.deliver(solved_event("101"), NOW)
    assert (reads.reads, connections.reads) == (1, 0)
    failed = result_of_event("102", detail(task_id="102", status="FAILED", error="ERROR_X"))
    service.deliver(failed, NOW)
    assert (reads.reads, connections.reads) == (1, 1)
    assert len(sender.sent) == 4


def test_a_task_owned_by_another_than_the_event_says_is_not_pushed() -> None:
    service, tasks, _, sender = pushing()
    task_of(tasks, "101", OTHER)
    service.connect("a", OWNER, NOW)
    assert service.deliver(solved_event("101", OWNER), NOW).sent == 0 and sender.sent == []


IMAGE_REQUEST = CaptchaRequest("base64", {"phrase": "1"})
GEETEST_REQUEST = CaptchaRequest("geetest", {"gt": "g", "challenge": "c", "pageurl": "https://a"})
SECCODE = '{"challenge":"c","validate":"v","seccode":"v|jordan"}'


def test_a_pushed_solution_is_the_view_a_get_answers_raw_and_parsed_for_its_kind() -> None:
    """Given a solved image task and a solved GeeTest task, what is pushed (on the result and on
    subscribe) is their GET view: the raw answer, its parsed form, and no usable_until for an
    answer without a lifetime. Before, a push worker got neither the parsed form nor that."""
    service, tasks, _, sender = pushing()
    for task_id, request, answer in (
        ("201", IMAGE_REQUEST, "два слова"),
        ("202", GEETEST_REQUEST, SECCODE),
    ):
        tasks.record_submission(NewTask(task_id, request, NOW - 30, NOW - 5, owner=OWNER))
        tasks.record_result(TaskResult(task_id, answer, DeliveryPath.POLL, received_at=NOW - 1))
    service.connect("a", OWNER, NOW)
    service.deliver(solved_event("201"), NOW)
    service.subscribe("a", ["202"], NOW)
    image = sender.sent[0][1]["task"]
    [geetest] = sender.sent[1][1]["tasks"]
    for task_id, view in (("201", image), ("202", geetest)):
        stored = tasks.get(task_id)
        assert stored is not None and view == worker_view(stored, NOW)
    assert (image["kind"], image["answer"], image["answer_fits"]) == (
        "image",
        {"type": "text", "text": "два слова"},
        True,
    )
    assert (image["usable_until"], image["usable"]) == (None, True)
    assert geetest["solution"] == SECCODE and geetest["answer"]["seccode"] == "v|jordan"
