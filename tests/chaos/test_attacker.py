"""The chaos attacker's forgeries and how the checker judges them (no stack needed)."""

from __future__ import annotations

from typing import Any

from infra.chaos.checker import forged_decisions, forged_provisional, result_writes_per_task
from infra.chaos.workload import FORGERY_KINDS, _forgery

API = "http://127.0.0.1:3000"
TASKS: list[tuple[str, str | None]] = [
    ("1001", f"{API}/callback/v2.{'A' * 22}.1800000000.{'B' * 21}Q"),
    ("1050", f"{API}/callback/v2.{'C' * 22}.1800000000.{'D' * 21}g"),
]


def test_each_kind_aims_a_real_or_forged_url_at_a_task_that_is_not_the_urls_own() -> None:
    for attempt in range(1, 40):
        kind = FORGERY_KINDS[attempt % len(FORGERY_KINDS)]
        forgery = _forgery(kind, attempt, API, TASKS)
        assert forgery is not None
        url, task_id = forgery
        own = {u: t for t, u in TASKS if u}
        if kind == "other_tasks_url":
            assert url in own and own[url] != task_id
        elif kind == "future_id":
            assert url in own and int(task_id) > 1050
        elif kind == "forged_capability":
            assert url not in own and "/callback/v2." in url
        else:
            assert "/callback/forged" in url


def test_a_leaked_url_is_never_aimed_at_its_own_task_even_when_it_is_the_only_one() -> None:
    # Given the attacker knows one task only (the start of a run)
    only = TASKS[:1]
    # Then it sends no "other task's URL" forgery rather than the task's own URL
    for attempt in range(1, 40):
        assert _forgery("other_tasks_url", attempt, API, only) is None


def test_accepted_means_a_provider_task_holds_the_attackers_code() -> None:
    truth = [{"id": "1001"}, {"id": "1050"}]
    table: dict[str, dict[str, Any]] = {
        "1001": {"solution": "03AFreal", "submitted_at": 1.0},
        "1050": {"error": "FORGED0000000007", "submitted_at": 1.0},
        "1077": {"solution": "FORGED0000000009"},
    }
    assert forged_decisions(truth, table) == ["1050"]
    assert forged_provisional(truth, table) == ["1077"]


def test_provisional_writes_do_not_count_as_a_tasks_result_writes() -> None:
    calls = [
        {
            "operation": "UpdateItem",
            "outcome": "ok",
            "task_ids": ["7"],
            "update_expression": "SET solution = :code, nonce = :nonce REMOVE due_at",
            "condition_expression": "attribute_not_exists(#status)",
        },
        {
            "operation": "UpdateItem",
            "outcome": "ok",
            "task_ids": ["7"],
            "update_expression": "SET solution = :code REMOVE due_at",
        },
    ]
    assert result_writes_per_task(calls) == {"7": 1}
