"""The interface logic uses to talk to a 2captcha-compatible provider."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from pingback_guard.domain.task import CaptchaRequest
from pingback_guard.provider.answers import ProviderAnswer


@dataclass(frozen=True)
class ThreadUsage:
    """res.php ``threadsinfo``: the plan's threads and how many are solving now."""

    threads: int
    working_threads: int

    @property
    def is_full(self) -> bool:
        return self.working_threads >= self.threads


class ProviderClient(Protocol):
    def submit(self, request: CaptchaRequest, pingback_url: str) -> str:
        """Submit a task to in.php; returns the provider's task id as a string."""

    def get_results(self, task_ids: Sequence[str]) -> dict[str, ProviderAnswer]:
        """Answers from res.php for these ids (one batched request where supported)."""

    def report(self, task_id: str, *, good: bool) -> None:
        """reportgood / reportbad for a solved task."""

    def balance(self) -> float: ...


class ThreadsReader(Protocol):
    def threads_info(self) -> ThreadUsage:
        """res.php ``threadsinfo``: the account's thread cap and the threads solving now."""
