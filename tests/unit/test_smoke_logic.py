"""The smoke check's synthetic tasks: the admin's own, under ids nothing holds, never sent to the
provider, decided by their own pingback once."""

from __future__ import annotations

import itertools

import pytest

from pingback_guard.domain.errors import StoreError
from pingback_guard.domain.task import (
    NewTask,
    TaskOrigin,
    TaskStatus,
)
from pingback_guard.logic import capability
from pingback_guard.logic.get_task import ReadThroughPolicy, TaskQuery
from pingback_guard.logic.poll_schedule import CheckSchedule, SolveTimes
from pingback_guard.logic.smoke import (
    SMOKE_TASK_ID_DIGITS,
    NotAdminError,
    SmokeService,
    random_smoke_task_id,
)
from tests.fakes import FakeProvider, InMemoryTaskStore, token_request

ADMIN = "arn:aws:iam::123456789012:role/operator"
WORKER = "arn:aws:iam::123456789012:user/worker"
SECRET = "s" * 40
BASE = "https://api.example.test"
NOW = 1_000_000.0
KEPT = 600.0


def service(
    store: InMemoryTaskStore, admin: str = ADMIN, ids: list[str] | None = None
) -> SmokeService:
    numbered = iter(ids) if ids else (f"9{n:019d}" for n in itertools.count(1))
    return SmokeService(store, admin, KEPT, new_task_id=lambda: next(numbered), clock=lambda: NOW)


def test_a_smoke_task_is_the_admins_own_pending_task_with_its_own_pingback_url() -> None:
    store = InMemoryTaskStore()
    created = service(store).create(ADMIN, BASE, SECRET)
    task = store.get(created.task_id)
    assert task is not None
    assert (task.status, task.origin, task.owner, task.due_at) == (
        TaskStatus.PENDING,
        TaskOrigin.SMOKE,
        ADMIN,
        None,
    )
    assert created.pingback_url.startswith(f"{BASE}/callback/v2.")
    proof = capability.proven(created.pingback_url.rsplit("/", 1)[1], [SECRET])
    assert proof is not None and proof.nonce == task.nonce
    assert created.expires_at == NOW + KEPT


@pytest.mark.parametrize(("admin", "caller"), [("", ADMIN), (ADMIN, WORKER), ("", "")])
def test_only_the_admin_principal_creates_or_deletes_smoke_tasks(admin: str, caller: str) -> None:
    store = InMemoryTaskStore()
    with pytest.raises(NotAdminError):
        service(store, admin).create(caller, BASE, SECRET)
    with pytest.raises(NotAdminError):
        service(store, admin).delete(caller, "90000000000000000001")
    assert store.tasks == {}


def test_an_id_the_table_holds_is_never_taken_and_a_second_free_one_is() -> None:
    store = InMemoryTaskStore()
    request = token_request("userrecaptcha", "key", "https://example.test/")
    store.record_submission(NewTask("90000000000000000001", request, NOW, NOW + 20))
    created = service(store, ids=["90000000000000000001", "90000000000000000002"]).create(
        ADMIN, BASE, SECRET
    )
    assert created.task_id == "90000000000000000002"
    assert store.tasks["90000000000000000001"].origin is TaskOrigin.SUBMIT


def test_no_free_id_is_a_store_error_not_a_loop() -> None:
    store = InMemoryTaskStore()
    taken = ["90000000000000000001"] * 3
    service(store, ids=taken[:1]).create(ADMIN, BASE, SECRET)
    with pytest.raises(StoreError):
        service(store, ids=taken).create(ADMIN, BASE, SECRET)


def test_delete_removes_only_the_callers_smoke_task() -> None:
    store = InMemoryTaskStore()
    smoke = service(store)
    created = smoke.create(ADMIN, BASE, SECRET)
    assert smoke.delete(ADMIN, "71000000001") is False
    assert smoke.delete(ADMIN, created.task_id) is True
    assert store.get(created.task_id) is None
    assert smoke.delete(ADMIN, created.task_id) is False


def test_smoke_ids_are_20_digits_starting_with_9_beyond_any_provider_id() -> None:
    ids = {random_smoke_task_id() for _ in range(50)}
    assert len(ids) == 50
    for task_id in ids:
        assert len(task_id) == SMOKE_TASK_ID_DIGITS and task_id.isdigit() and task_id[0] == "9"


def test_get_never_checks_a_smoke_task_at_the_provider() -> None:
    """Given a PENDING smoke task long past any likely solve time, a GET answers it as it is."""
    store = InMemoryTaskStore()
    created = service(store).create(ADMIN, BASE, SECRET)
    provider = FakeProvider()
    policy = ReadThroughPolicy(CheckSchedule(5, 60), SolveTimes(default_seconds=20))
    view = TaskQuery(store, provider, policy).view(created.task_id, NOW + 3600, ADMIN)
    assert view is not None and view["status"] == "PENDING"
    assert provider.requests == []
