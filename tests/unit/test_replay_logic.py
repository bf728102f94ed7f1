from __future__ import annotations

import json

import pytest

from pingback_guard.domain.errors import InvalidCallbackError, StoreUnavailableError
from pingback_guard.domain.task import (
    CaptchaRequest,
    DeliveryPath,
    NewTask,
    TaskResult,
    TaskStatus,
)
from pingback_guard.logic.replay import ReplayOutcome, ReplayService
from pingback_guard.queue.dead_letter import decode_message, encode_message
from tests.fakes import InMemoryTaskStore, unavailable

TOKEN = "03AFcWeA5" + "r" * 500


def test_message_round_trip_keeps_the_first_receive_time() -> None:
    body = encode_message(TaskResult("5", TOKEN, DeliveryPath.CALLBACK, 12.5), "table down")
    assert json.loads(body)["reason"] == "table down"
    assert decode_message(body) == TaskResult("5", TOKEN, DeliveryPath.REPLAY, 12.5)


def test_replay_stores_then_absorbs_duplicates() -> None:
    store = InMemoryTaskStore()
    service = ReplayService(store)
    body = encode_message(TaskResult("5", TOKEN, DeliveryPath.CALLBACK, 12.5), "x")
    assert service.replay(body) is ReplayOutcome.STORED
    assert service.replay(body) is ReplayOutcome.DUPLICATE
    task = store.get("5")
    assert task is not None and (task.status, task.delivered_via) == (
        TaskStatus.SOLVED,
        DeliveryPath.REPLAY,
    )


def test_replay_of_a_failure() -> None:
    store = InMemoryTaskStore()
    ReplayService(store).replay(
        encode_message(TaskResult("6", "ERROR_CAPTCHA_UNSOLVABLE", DeliveryPath.CALLBACK, 1), "x")
    )
    task = store.get("6")
    assert task is not None and task.status is TaskStatus.FAILED


def test_store_still_down_raises_so_sqs_retries() -> None:
    store = InMemoryTaskStore()
    store.fail_next.append(unavailable())
    with pytest.raises(StoreUnavailableError):
        ReplayService(store).replay(
            encode_message(TaskResult("7", TOKEN, DeliveryPath.CALLBACK, 1), "x")
        )


@pytest.mark.parametrize(
    "body",
    [
        "",
        "{}",
        "[]",
        '{"task_id": "x1", "code": "a", "received_at": 1}',
        '{"task_id": "1", "code": "a"}',
    ],
)
def test_malformed_messages_fail_and_are_eventually_parked(body: str) -> None:
    with pytest.raises(InvalidCallbackError):
        ReplayService(InMemoryTaskStore()).replay(body)


def test_a_queued_registration_is_replayed_as_pending_once() -> None:
    store = InMemoryTaskStore()
    task = NewTask("9", CaptchaRequest("turnstile", "0x4AAA", "https://example.test"), 100.0, 220.0)
    body = encode_message(task, "table down")
    assert decode_message(body) == task
    assert ReplayService(store).replay(body) is ReplayOutcome.REGISTERED
    assert ReplayService(store).replay(body) is ReplayOutcome.DUPLICATE
    stored = store.get("9")
    assert stored is not None and (stored.status, stored.due_at) == (TaskStatus.PENDING, 220.0)


def test_a_registration_replayed_after_the_result_keeps_the_result() -> None:
    store = InMemoryTaskStore()
    store.record_result(TaskResult("9", TOKEN, DeliveryPath.CALLBACK, 150.0))
    task = NewTask("9", CaptchaRequest("turnstile", "0x4AAA", "https://example.test"), 100.0, 220.0)
    assert ReplayService(store).replay(encode_message(task, "x")) is ReplayOutcome.DUPLICATE
    stored = store.get("9")
    assert stored is not None and stored.status is TaskStatus.SOLVED and stored.request is not None
