from __future__ import annotations

import json
from typing import Any

import pytest

from pingback_guard.domain.errors import StoreUnavailableError
from pingback_guard.domain.task import (
    DeliveryPath,
    NewTask,
    TaskResult,
    TaskStatus,
)
from pingback_guard.logic.replay import RejectedMessageError, ReplayOutcome, ReplayService
from pingback_guard.queue.dead_letter import decode_message, encode_message
from tests.fakes import InMemoryTaskStore, nonce_for, token_request, unavailable

TOKEN = "03AFcWeA5" + "r" * 500
NOW = 1_800_000_000.0
T0 = NOW - 100
OWNER = "arn:aws:iam::123456789012:user/worker"
REQUEST = token_request("turnstile", "0x4AAA", "https://example.test")


def service(store: InMemoryTaskStore) -> ReplayService:
    return ReplayService(store, clock=lambda: NOW)


def result(task_id: str, code: str = TOKEN, nonce: str | None = "own") -> TaskResult:
    proven = nonce_for(task_id) if nonce == "own" else nonce
    return TaskResult(task_id, code, DeliveryPath.CALLBACK, T0 + 12.5, nonce=proven)


def registration(task_id: str, **changes: Any) -> NewTask:
    fields: dict[str, Any] = {
        "task_id": task_id,
        "request": REQUEST,
        "submitted_at": T0,
        "first_poll_at": T0 + 120,
        "nonce": nonce_for(task_id),
        "owner": OWNER,
        **changes,
    }
    return NewTask(**fields)


def test_message_round_trip_keeps_the_first_receive_time_and_the_nonce() -> None:
    body = encode_message(result("5"), "table down")
    assert json.loads(body)["reason"] == "table down"
    assert decode_message(body) == TaskResult(
        "5", TOKEN, DeliveryPath.REPLAY, T0 + 12.5, nonce=nonce_for("5")
    )


def test_replay_stores_then_absorbs_duplicates() -> None:
    store = InMemoryTaskStore()
    store.record_submission(registration("5"))
    body = encode_message(result("5"), "x")
    assert service(store).replay(body) is ReplayOutcome.STORED
    assert service(store).replay(body) is ReplayOutcome.DUPLICATE
    task = store.get("5")
    assert task is not None and (task.status, task.delivered_via) == (
        TaskStatus.SOLVED,
        DeliveryPath.REPLAY,
    )


def test_a_replayed_pingback_with_another_tasks_nonce_decides_nothing() -> None:
    store = InMemoryTaskStore()
    store.record_submission(registration("5"))
    forged = encode_message(result("5", nonce=nonce_for("6")), "x")
    assert service(store).replay(forged) is ReplayOutcome.REJECTED
    task = store.get("5")
    assert task is not None and task.status is TaskStatus.PENDING


def test_a_pre_upgrade_message_without_nonce_decides_only_a_task_without_one() -> None:
    store = InMemoryTaskStore()
    store.record_submission(registration("5", nonce=None, owner=None))
    store.record_submission(registration("6"))
    assert service(store).replay(encode_message(result("5", nonce=None), "x")) is (
        ReplayOutcome.STORED
    )
    assert service(store).replay(encode_message(result("6", nonce=None), "x")) is (
        ReplayOutcome.REJECTED
    )


def test_replay_of_a_failure() -> None:
    store = InMemoryTaskStore()
    store.record_submission(registration("6"))
    service(store).replay(encode_message(result("6", "ERROR_CAPTCHA_UNSOLVABLE"), "x"))
    task = store.get("6")
    assert task is not None and task.status is TaskStatus.FAILED


def test_store_still_down_raises_so_sqs_retries() -> None:
    store = InMemoryTaskStore()
    store.fail_next.append(unavailable())
    with pytest.raises(StoreUnavailableError):
        service(store).replay(encode_message(result("7"), "x"))


@pytest.mark.parametrize(
    "body",
    [
        "",
        "{}",
        "[]",
        '{"task_id": "x1", "code": "a", "received_at": 1}',
        '{"task_id": "1", "code": "a"}',
        "[" * 100_000,
        "[" * 50_000,
        '{"task_id": "1", "code": ["03AF"], "received_at": 1790000000}',
        '{"task_id": "1", "code": {"a": 1}, "received_at": 1790000000}',
    ],
)
def test_malformed_messages_fail_and_are_eventually_parked(body: str) -> None:
    with pytest.raises(RejectedMessageError):
        service(InMemoryTaskStore()).replay(body)


def _result_message(**changes: Any) -> str:
    document = json.loads(encode_message(result("8"), "x"))
    document.update(changes)
    return json.dumps(document)


def _registration_message(**changes: Any) -> str:
    document = json.loads(encode_message(registration("8"), "x"))
    for key, value in changes.items():
        if key == "method":
            document["request"][key] = value
        elif key in {"sitekey", "pageurl"}:
            document["request"]["fields"][key] = value
        elif key == "fields":
            document["request"]["fields"].update(value)
        else:
            document[key] = value
    return json.dumps(document)


@pytest.mark.parametrize(
    "body",
    [
        _result_message(code="a" * 100_000),
        _result_message(code="CAPCHA_NOT_READY"),
        _result_message(code="я" * 4097),
        _result_message(received_at=1e15),  # year 33,000
        _result_message(received_at=-1),
        _result_message(received_at=NOW + 3600),
        _result_message(nonce="not-a-nonce"),
        _result_message(nonce=12),
        _registration_message(method="evil"),
        _registration_message(sitekey="has spaces"),
        _registration_message(pageurl="javascript:alert(1)"),
        _registration_message(fields={"cookie_jar": "x"}),
        _registration_message(fields={"action": "a" * 5000}),
        _registration_message(submitted_at=1e15),
        _registration_message(first_poll_at=T0 - 5),
        _registration_message(first_poll_at=T0 + 10 * 86400),
        _registration_message(owner="not an arn"),
        _registration_message(nonce="A" * 40),
    ],
)
def test_messages_breaking_the_edge_rules_are_refused_and_store_nothing(body: str) -> None:
    store = InMemoryTaskStore()
    with pytest.raises(RejectedMessageError):
        service(store).replay(body)
    assert store.tasks == {} and store.writes == 0


def test_a_queued_registration_is_replayed_as_pending_once() -> None:
    store = InMemoryTaskStore()
    task = registration("9")
    body = encode_message(task, "table down")
    assert decode_message(body) == task
    assert service(store).replay(body) is ReplayOutcome.REGISTERED
    assert service(store).replay(body) is ReplayOutcome.DUPLICATE
    stored = store.get("9")
    assert stored is not None and (stored.status, stored.due_at) == (TaskStatus.PENDING, T0 + 120)
    assert (stored.nonce, stored.owner) == (nonce_for("9"), OWNER)


def test_a_registration_replayed_after_its_own_pingback_keeps_the_result() -> None:
    store = InMemoryTaskStore()
    store.record_result(result("9"))
    outcome = service(store).replay(encode_message(registration("9"), "x"))
    assert outcome is ReplayOutcome.DUPLICATE
    stored = store.get("9")
    assert stored is not None and stored.status is TaskStatus.SOLVED and stored.request is not None


def test_a_registration_replayed_over_a_forged_result_discards_it() -> None:
    store = InMemoryTaskStore()
    store.record_result(result("9", nonce=nonce_for("1")))
    outcome = service(store).replay(encode_message(registration("9"), "x"))
    assert outcome is ReplayOutcome.PROVISIONAL_DISCARDED
    stored = store.get("9")
    assert stored is not None and stored.status is TaskStatus.PENDING and stored.solution is None
