"""The chaos checker reads tasks from a table Scan: the poller's lease item is not a task."""

from infra.chaos import checker
from infra.chaos.checker import table_items
from pingback_guard.data.dynamodb import POLLER_LEASE_KEY


def test_the_poller_lease_is_not_counted_as_a_task() -> None:
    page = {
        "Items": [
            {"task_id": {"S": "71000000001"}, "status": {"S": "SOLVED"}},
            {"task_id": {"S": POLLER_LEASE_KEY}, "holder": {"S": "x"}, "lease_until": {"N": "1"}},
        ]
    }
    assert list(table_items([page])) == ["71000000001"]


def test_the_checker_knows_the_stores_lease_key() -> None:
    assert checker.POLLER_LEASE_KEY == POLLER_LEASE_KEY
