"""Give moto's DynamoDB the per-item atomicity real DynamoDB has.

moto evaluates a ConditionExpression and then applies the write as two steps, so two threads
(or two requests to a threaded moto server) can both pass ``attribute_not_exists(solution)``.
DynamoDB never allows that. Every suite and the local stack call this before they start moto, so
a race our code loses is a real bug and not moto's.

Query and Scan walk the table's item dict (every item: moto has no index structure), and a write
adding an item during the walk made them fail with "dictionary changed size during iteration" (a
500 to the caller, seen in the 10,000-task soak). They walk a snapshot of the items instead:
taking the write lock for the walk would hold every write for as long as a Query over the whole
table takes (seconds at 10,000 items on a busy machine). And an UpdateItem replaces the item with
an updated copy instead of changing it in place: moto changed the very object a Query was reading,
so the due index once returned an item whose `due_at` the poller had just removed (a KeyError in
the soak), which DynamoDB never does (every read sees an item whole, before or after a write).
"""

from __future__ import annotations

import copy
import functools
import threading
from collections import defaultdict
from collections.abc import Callable
from typing import Any

WRITE_METHODS = ("put_item", "update_item", "delete_item", "transact_write_items")
_lock = threading.RLock()
_MARK = "_pingback_guard_atomic"


class SnapshotItems(defaultdict[Any, Any]):
    """A table's items whose ``values()`` is a list taken at once (atomic under the GIL)."""

    def values(self) -> list[Any]:  # type: ignore[override]
        return list(super().values())


def make_dynamodb_writes_atomic() -> None:
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.table import Table

    for name in WRITE_METHODS:
        original = getattr(DynamoDBBackend, name)
        if getattr(original, _MARK, False):
            continue
        if name == "update_item":
            original = _copy_on_write(original)
        setattr(DynamoDBBackend, name, _serialised(original))
    if not getattr(Table.__init__, _MARK, False):
        Table.__init__ = _with_snapshot_items(Table.__init__)  # type: ignore[method-assign]


def _serialised(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def locked(*args: Any, **kwargs: Any) -> Any:
        with _lock:
            return method(*args, **kwargs)

    setattr(locked, _MARK, True)
    return locked


def _copy_on_write(update_item: Callable[..., Any]) -> Callable[..., Any]:
    from moto.dynamodb.models.dynamo_type import DynamoType

    @functools.wraps(update_item)
    def update_a_copy(backend: Any, table_name: str, key: Any, *args: Any, **kwargs: Any) -> Any:
        table = backend.get_table(table_name)
        if isinstance(key, dict) and table.hash_key_attr in key:
            items, position = table.items, DynamoType(key[table.hash_key_attr])
            if table.range_key_attr in key:
                items, position = items.get(position, {}), DynamoType(key[table.range_key_attr])
            if position in items:
                items[position] = copy.deepcopy(items[position])
        return update_item(backend, table_name, key, *args, **kwargs)

    return update_a_copy


def _with_snapshot_items(init: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(init)
    def snapshot_init(table: Any, *args: Any, **kwargs: Any) -> None:
        init(table, *args, **kwargs)
        table.items = SnapshotItems(dict, table.items)

    setattr(snapshot_init, _MARK, True)
    return snapshot_init
