"""A failed chaos verdict says what each lost or wrong-code task's item holds."""

from __future__ import annotations

from decimal import Decimal

from infra.chaos.checker import verdict

TRUTH = [
    {"id": 1, "outcome": "solved", "code": "token-1"},
    {"id": 2, "outcome": "solved", "code": "token-2"},
    {"id": 3, "outcome": "solved", "code": "token-3", "submitted_at": 100.0, "finished_at": 112.5},
]


def test_a_wrong_code_is_traced_to_the_task_it_belongs_to_and_a_lost_task_to_its_status() -> None:
    table = {
        "1": {"status": "SOLVED", "solution": "token-1", "submitted_at": 1.0, "nonce": "n1"},
        # Given task 2 holds task 3's token, and task 3 was marked FAILED by a poll
        "2": {"status": "SOLVED", "solution": "token-3", "submitted_at": 1.0, "nonce": "n2"},
        "3": {
            "status": "FAILED",
            "error": "ERROR_WRONG_CAPTCHA_ID",
            "delivered_via": "poll",
            "submitted_at": 100.4,
            "poll_attempts": Decimal(12),
            "last_checked_at": 300.0,
            "received_at": Decimal("700"),
        },
    }

    judged = verdict(TRUTH, table, [], {})

    assert judged.wrong_code == ["2"] and judged.lost == ["3"]
    assert judged.failures_explained["2"]["code_is"] == "task 3's"
    assert judged.failures_explained["3"] == {
        "status": "FAILED",
        "delivered_via": "poll",
        "registered": True,
        "has_nonce": False,
        "error": "ERROR_WRONG_CAPTCHA_ID",
        "result_writes": 0,
        "code_is": "unknown",
        "poll_attempts": 12,
        # Then its timeline shows the poller came back long after the provider finished it
        "seconds_after_provider_submit": {
            "registered": 0.4,
            "finished": 12.5,
            "last_checked": 200.0,
            "result": 600.0,
        },
    }
