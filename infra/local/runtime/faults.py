"""Fault rules: make AWS calls made inside the function workers fail, for chaos runs and tests.

A rule: {"function": "CallbackFunction" | "*", "service": "dynamodb" | "*", "operation":
"UpdateItem" | "*", "mode": "unavailable" | "throttle" | "crash" | "crash_after" | "delay",
"probability": 0..1,
"until": epoch seconds | null, "delay_seconds": s}. `unavailable` raises a connection error,
`throttle` a ProvisionedThroughputExceededException/ThrottlingException, `crash` ends the worker
process abruptly before the call is sent, `crash_after` ends it once the call was answered (the
write happened, the invocation fails: what Lambda's asynchronous retries run again), `delay`
holds the call `delay_seconds` and then sends it (a slow store: the caller may time out while
the write still happens).
"""

import random
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

FAULT_MODES = frozenset({"unavailable", "throttle", "crash", "crash_after", "delay"})
MAX_DELAY_SECONDS = 60.0
WILDCARD = "*"


class InvalidFaultRule(ValueError):
    pass


@dataclass(frozen=True)
class FaultRule:
    mode: str
    function: str = WILDCARD
    service: str = WILDCARD
    operation: str = WILDCARD
    probability: float = 1.0
    until: float | None = None
    delay_seconds: float = 0.0

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> "FaultRule":
        unknown = set(document) - set(cls.__dataclass_fields__)
        if unknown:
            raise InvalidFaultRule(f"unknown fault rule fields: {sorted(unknown)}")
        if document.get("mode") not in FAULT_MODES:
            raise InvalidFaultRule(f"mode must be one of {sorted(FAULT_MODES)}")
        probability = float(document.get("probability", 1.0))
        if not 0.0 <= probability <= 1.0:
            raise InvalidFaultRule("probability must be between 0 and 1")
        until = document.get("until")
        delay_seconds = float(document.get("delay_seconds", 0.0))
        if (document["mode"] == "delay") != (0.0 < delay_seconds <= MAX_DELAY_SECONDS):
            raise InvalidFaultRule(
                f"delay_seconds (0 < s <= {MAX_DELAY_SECONDS:g}) goes with mode delay, only with it"
            )
        return cls(
            mode=str(document["mode"]),
            function=str(document.get("function", WILDCARD)),
            service=str(document.get("service", WILDCARD)),
            operation=str(document.get("operation", WILDCARD)),
            probability=probability,
            until=None if until is None else float(until),
            delay_seconds=delay_seconds,
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def expired(self, now: float) -> bool:
        return self.until is not None and now >= self.until

    def fires_for(self, function: str, service: str, operation: str) -> bool:
        """Whether this call fails now: it matches, the rule is live, and the dice say so."""
        return (
            self.function in (WILDCARD, function)
            and self.service in (WILDCARD, service)
            and self.operation in (WILDCARD, operation)
            and not self.expired(time.time())
            and random.random() < self.probability
        )
