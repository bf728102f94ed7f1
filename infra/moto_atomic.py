"""Give moto's DynamoDB the per-item atomicity real DynamoDB has.

moto evaluates a ConditionExpression and then applies the write as two steps, so two threads
(or two requests to a threaded moto server) can both pass ``attribute_not_exists(solution)``.
DynamoDB never allows that. Every suite and the local stack call this before they start moto, so
a race our code loses is a real bug and not moto's.

Query and Scan walk the table's item dict (every item: moto has no index structure), so a write
adding an item during a walk made them fail with "dictionary changed size during iteration" (a
500 to the caller); at 10,000 items under steady writes the poller's due-task queries failed.
They take the same lock.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

WRITE_METHODS = ("put_item", "update_item", "delete_item", "transact_write_items")
WALKING_READ_METHODS = ("query", "scan")
_lock = threading.RLock()
_MARK = "_pingback_guard_atomic"


def make_dynamodb_writes_atomic() -> None:
    from moto.dynamodb.models import DynamoDBBackend

    for name in WRITE_METHODS + WALKING_READ_METHODS:
        original = getattr(DynamoDBBackend, name)
        if getattr(original, _MARK, False):
            continue
        setattr(DynamoDBBackend, name, _serialised(original))


def _serialised(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def locked(*args: Any, **kwargs: Any) -> Any:
        with _lock:
            return method(*args, **kwargs)

    setattr(locked, _MARK, True)
    return locked
