"""Who may see a task (logic.access) and who is calling (handlers.principal)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from pingback_guard.domain.principals import owner_of
from pingback_guard.domain.task import Task, TaskStatus
from pingback_guard.handlers.principal import caller_principal
from pingback_guard.logic.access import may_access

OWNER = "arn:aws:iam::123456789012:user/worker"
OTHER = "arn:aws:sts::123456789012:assumed-role/workers/other"
ADMIN = "arn:aws:iam::123456789012:role/ops"


def task(owner: str | None, nonce: str | None, submitted_at: float | None = 1.0) -> Task:
    return Task(
        "1",
        TaskStatus.PENDING,
        None,
        submitted_at,
        None,
        None,
        None,
        None,
        0,
        None,
        owner=owner,
        nonce=nonce,
    )


@pytest.mark.parametrize(
    ("stored", "principal", "admin", "allowed"),
    [
        (task(OWNER, "n"), OWNER, "", True),
        (task(OWNER, "n"), OTHER, "", False),
        (task(OWNER, "n"), ADMIN, ADMIN, True),
        (task(OWNER, "n"), ADMIN, "", False),
        (task(None, None), OTHER, "", True),  # recorded before owners existed
        (task(None, "n", submitted_at=None), OWNER, "", False),  # provisional: nobody's yet
        (task(None, "n", submitted_at=None), ADMIN, ADMIN, True),
    ],
)
def test_may_access(stored: Task, principal: str, admin: str, allowed: bool) -> None:
    assert may_access(stored, principal, admin) is allowed


def event(authorizer: Any) -> dict[str, Any]:
    return {"requestContext": {"authorizer": authorizer}}


@pytest.mark.parametrize(
    ("shaped", "expected"),
    [
        (event({"iam": {"userArn": OWNER}}), OWNER),
        (event({"iam": {"userArn": None}}), None),
        (event({"iam": {"userArn": ["x"]}}), None),
        (event({"iam": {"userArn": "not-an-arn"}}), None),
        (event({"iam": {"userArn": "arn:\ud800"}}), None),
        (event({"iam": {"userArn": "arn:" + "x" * 3000}}), None),
        (event({"jwt": {"claims": {}}}), None),
        (event(None), None),
        ({}, None),
        ({"requestContext": "x"}, None),
    ],
)
def test_caller_principal(shaped: dict[str, Any], expected: str | None) -> None:
    assert caller_principal(shaped) == expected


@pytest.mark.parametrize(
    ("caller", "owner"),
    [
        (
            "arn:aws:sts::123456789012:assumed-role/captcha-workers/i-0abc123",
            "arn:aws:iam::123456789012:role/captcha-workers",
        ),
        (
            "arn:aws-cn:sts::123456789012:assumed-role/captcha-workers/any-name-it-chose",
            "arn:aws-cn:iam::123456789012:role/captcha-workers",
        ),
        (
            "arn:aws:iam::123456789012:role/service/ops/captcha-workers",
            "arn:aws:iam::123456789012:role/captcha-workers",
        ),
        ("arn:aws:iam::123456789012:user/worker", "arn:aws:iam::123456789012:user/worker"),
        (
            "arn:aws:sts::123456789012:federated-user/bob",
            "arn:aws:sts::123456789012:federated-user/bob",
        ),
    ],
)
def test_a_task_belongs_to_the_role_not_to_the_session_that_assumed_it(
    caller: str, owner: str
) -> None:
    assert owner_of(caller) == owner


def test_every_session_of_one_role_and_the_admin_role_compare_alike() -> None:
    role = owner_of("arn:aws:sts::123456789012:assumed-role/captcha-workers/session-a")
    stored = replace(task(OWNER, "n"), owner=role)
    other_session = owner_of("arn:aws:sts::123456789012:assumed-role/captcha-workers/session-b")
    assert may_access(stored, other_session)
    admin = owner_of("arn:aws:iam::123456789012:role/ops/pingback-admin")
    admin_session = owner_of("arn:aws:sts::123456789012:assumed-role/pingback-admin/alice")
    assert may_access(stored, admin_session, admin)
    assert not may_access(stored, owner_of("arn:aws:sts::123456789012:assumed-role/other/x"))
