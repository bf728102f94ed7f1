"""A per-worker key speaks for its owner as the IAM routes and $connect count that principal."""

from __future__ import annotations

import pytest

from pingback_guard.domain.principals import owner_of
from pingback_guard.logic.worker_keys import WorkerKeys
from tests.fakes import InMemoryWorkerKeys

ROLE = "arn:aws:iam::123456789012:role/captcha-workers"


@pytest.mark.parametrize(
    "stored_owner",
    [
        "arn:aws:sts::123456789012:assumed-role/captcha-workers/fleet-a-7",
        "arn:aws:iam::123456789012:role/fleets/eu/captcha-workers",
    ],
)
def test_a_key_issued_before_owners_were_normalized_speaks_for_its_role(
    stored_owner: str,
) -> None:
    keys = InMemoryWorkerKeys()
    key = keys.issue(stored_owner)
    # The IAM routes (handlers/principal.py) and $connect see any session of the role so.
    assert WorkerKeys(keys).owner_of(key) == ROLE == owner_of(stored_owner)
