"""The simulator's single seeded source of randomness."""

from __future__ import annotations

import random
import threading
from collections.abc import Sequence
from typing import TypeVar

Item = TypeVar("Item")


class SharedRandom:
    """One seeded `random.Random`, shared by every thread of a simulator.

    Draws that cannot change the result (a rate of 0 or 1, an empty range) consume nothing,
    so switching a fault off leaves the sequence of the remaining draws unchanged.
    """

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)
        self._lock = threading.Lock()

    def chance(self, rate: float) -> bool:
        """True with probability `rate`."""
        if rate <= 0.0:
            return False
        if rate >= 1.0:
            return True
        with self._lock:
            return self._random.random() < rate

    def uniform(self, low: float, high: float) -> float:
        if low == high:
            return low
        with self._lock:
            return self._random.uniform(low, high)

    def lognormal(self, mu: float, sigma: float) -> float:
        with self._lock:
            return self._random.lognormvariate(mu, sigma)

    def integer(self, low: int, high: int) -> int:
        """An integer in [low, high], both included."""
        with self._lock:
            return self._random.randint(low, high)

    def choice(self, options: Sequence[Item]) -> Item:
        with self._lock:
            return self._random.choice(options)

    def shuffle(self, items: list[Item]) -> None:
        with self._lock:
            self._random.shuffle(items)

    def hex_key(self) -> str:
        """32 hexadecimal characters, the shape of a provider API key."""
        with self._lock:
            return f"{self._random.getrandbits(128):032x}"
