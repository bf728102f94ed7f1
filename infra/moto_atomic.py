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

Atomicity is per item, as in DynamoDB: a write holds the lock of its item's partition key (one of
64 striped locks), not one lock for the whole backend. With one lock, every write of the local
stack queued behind whichever write the GIL had just descheduled, and under the soak's load a
write took about a second (the poller, one thread, recovered about one task a second). A
transaction holds every stripe; the stream of a table takes its records one at a time (moto
numbers a record by the length of its list).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import threading
from collections import defaultdict
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

ITEM_WRITE_METHODS = ("put_item", "update_item", "delete_item")
LOCK_STRIPES = 64
_item_locks = tuple(threading.RLock() for _ in range(LOCK_STRIPES))
_stream_lock = threading.Lock()
_MARK = "_pingback_guard_atomic"


class SnapshotItems(defaultdict[Any, Any]):
    """A table's items whose ``values()`` is a list taken at once (atomic under the GIL)."""

    def values(self) -> list[Any]:  # type: ignore[override]
        return list(super().values())


def make_dynamodb_writes_atomic() -> None:
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.table import StreamShard, Table

    for name in ITEM_WRITE_METHODS:
        original = getattr(DynamoDBBackend, name)
        if getattr(original, _MARK, False):
            continue
        if name == "update_item":
            original = _copy_on_write(original)
        setattr(DynamoDBBackend, name, _one_write_per_item(original))
    if not getattr(DynamoDBBackend.transact_write_items, _MARK, False):
        DynamoDBBackend.transact_write_items = _holding(  # type: ignore[method-assign]
            _item_locks, DynamoDBBackend.transact_write_items
        )
    if not getattr(StreamShard.add, _MARK, False):
        StreamShard.add = _holding((_stream_lock,), StreamShard.add)  # type: ignore[method-assign]
    if not getattr(Table.__init__, _MARK, False):
        Table.__init__ = _with_snapshot_items(Table.__init__)  # type: ignore[method-assign]


def item_lock(backend: Any, table_name: str, item_or_key: Any) -> threading.RLock:
    """The lock a write of this item holds: its table's and partition key's stripe."""
    from moto.dynamodb.exceptions import ResourceNotFoundException

    try:
        partition_key = item_or_key[backend.get_table(table_name).hash_key_attr]
    except (ResourceNotFoundException, KeyError, TypeError):
        return _item_locks[0]  # moto answers the request with its own error
    stripe = hash((table_name, json.dumps(partition_key, sort_keys=True))) % LOCK_STRIPES
    return _item_locks[stripe]


def _one_write_per_item(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def locked(backend: Any, table_name: str, *args: Any, **kwargs: Any) -> Any:
        item_or_key = args[0] if args else kwargs.get("item_attrs", kwargs.get("key"))
        with item_lock(backend, table_name, item_or_key):
            return method(backend, table_name, *args, **kwargs)

    setattr(locked, _MARK, True)
    return locked


def _holding(
    locks: Sequence[AbstractContextManager[Any]], method: Callable[..., Any]
) -> Callable[..., Any]:
    """The method with every one of these locks held, taken in their order."""

    @functools.wraps(method)
    def locked(*args: Any, **kwargs: Any) -> Any:
        with contextlib.ExitStack() as held:
            for lock in locks:
                held.enter_context(lock)
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
