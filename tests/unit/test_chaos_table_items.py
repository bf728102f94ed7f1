"""The chaos checker reads tasks from a table Scan: the poller's lease and the pingback URLs'
items are not tasks."""

from infra.chaos import checker
from infra.chaos.checker import table_items, table_requests_by_call
from pingback_guard.data.capabilities import PINGBACK_URL_KEY_PREFIX
from pingback_guard.data.dynamodb_table import NON_TASK_KEY_PREFIX
from pingback_guard.data.poller_lease import POLLER_LEASE_KEY


def test_items_that_are_not_tasks_are_not_counted() -> None:
    page = {
        "Items": [
            {"task_id": {"S": "71000000001"}, "status": {"S": "SOLVED"}},
            {"task_id": {"S": POLLER_LEASE_KEY}, "holder": {"S": "x"}, "lease_until": {"N": "1"}},
            {"task_id": {"S": PINGBACK_URL_KEY_PREFIX + "n"}, "provisional_task": {"S": "7"}},
        ]
    }
    assert list(table_items([page])) == ["71000000001"]


def test_the_checker_knows_the_stores_prefix_of_non_task_keys() -> None:
    assert checker.NON_TASK_KEY_PREFIX == NON_TASK_KEY_PREFIX
    assert POLLER_LEASE_KEY.startswith(NON_TASK_KEY_PREFIX)
    assert PINGBACK_URL_KEY_PREFIX.startswith(NON_TASK_KEY_PREFIX)


def test_table_requests_are_counted_per_task_by_function_and_operation() -> None:
    calls = [
        {"function": "PushFunction", "operation": "GetItem", "outcome": "ok"},
        {"function": "PushFunction", "operation": "GetItem", "outcome": "EndpointConnectionError"},
        {"function": "CallbackFunction", "operation": "UpdateItem", "outcome": "ok"},
    ]
    assert table_requests_by_call(calls, tasks=2) == {
        "PushFunction GetItem": 1.0,
        "CallbackFunction UpdateItem": 0.5,
    }
