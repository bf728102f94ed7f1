"""The interface logic uses to talk to a 2captcha-compatible provider."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pingback_guard.domain.task import CaptchaRequest
from pingback_guard.provider.answers import ProviderAnswer


class ProviderClient(Protocol):
    def submit(self, request: CaptchaRequest, pingback_url: str) -> str:
        """Submit a task to in.php; returns the provider's task id as a string."""

    def get_results(self, task_ids: Sequence[str]) -> dict[str, ProviderAnswer]:
        """Answers from res.php for these ids (one batched request where supported)."""

    def report(self, task_id: str, *, good: bool) -> None:
        """reportgood / reportbad for a solved task."""

    def balance(self) -> float: ...
