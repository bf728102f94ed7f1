"""DynamoDB item sizes and capacity units, by the rules AWS documents for on-demand billing.

Items are in the wire format boto3's client returns: ``{"name": {"S": "text"}, ...}``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

WRITE_UNIT_BYTES = 1024
READ_UNIT_BYTES = 4096
CONTAINER_OVERHEAD_BYTES = 3
CONTAINER_ELEMENT_OVERHEAD_BYTES = 1
SCALAR_FLAG_BYTES = 1
# Every item in a table or index is stored (and billed) with this much bookkeeping.
STORAGE_OVERHEAD_BYTES = 100
INDEX_ENTRY_OVERHEAD_BYTES = 100


def item_size(item: Mapping[str, Mapping[str, Any]]) -> int:
    """Bytes DynamoDB counts for an item: attribute names plus values."""
    return sum(_utf8(name) + value_size(value) for name, value in item.items())


def value_size(value: Mapping[str, Any]) -> int:
    (kind, content), *_ = value.items()
    if kind == "S":
        return _utf8(content)
    if kind == "N":
        return number_size(content)
    if kind == "B":
        return len(content)
    if kind in {"BOOL", "NULL"}:
        return SCALAR_FLAG_BYTES
    if kind == "M":
        return CONTAINER_OVERHEAD_BYTES + sum(
            _utf8(name) + value_size(element) + CONTAINER_ELEMENT_OVERHEAD_BYTES
            for name, element in content.items()
        )
    if kind == "L":
        return CONTAINER_OVERHEAD_BYTES + sum(
            value_size(element) + CONTAINER_ELEMENT_OVERHEAD_BYTES for element in content
        )
    if kind == "SS":
        return sum(_utf8(element) for element in content)
    if kind == "NS":
        return sum(number_size(element) for element in content)
    if kind == "BS":
        return sum(len(element) for element in content)
    raise ValueError(f"unknown attribute type {kind!r}")


def number_size(text: str) -> int:
    """One byte per two significant digits, plus one."""
    digits = text.lstrip("+-").lower().split("e", 1)[0].replace(".", "").strip("0")
    return math.ceil(max(len(digits), 1) / 2) + 1


def index_entry_size(
    item: Mapping[str, Mapping[str, Any]], key_and_projected_attributes: frozenset[str]
) -> int:
    """Bytes of an item's entry in a secondary index (what its writes and reads are sized by)."""
    projected = {
        name: value for name, value in item.items() if name in key_and_projected_attributes
    }
    return item_size(projected) + INDEX_ENTRY_OVERHEAD_BYTES


def write_units(size_bytes: int) -> int:
    return max(1, math.ceil(size_bytes / WRITE_UNIT_BYTES))


def strong_read_units(size_bytes: int) -> float:
    return float(max(1, math.ceil(size_bytes / READ_UNIT_BYTES)))


def eventual_read_units(size_bytes: int) -> float:
    """Query, Scan and index reads: half a unit per started 4 KB of items read."""
    return strong_read_units(size_bytes) / 2


def _utf8(text: str) -> int:
    return len(text.encode("utf-8"))
