"""Provider calls in X-Ray, recorded by hand: what was asked and how it ended, nothing more.

The X-Ray SDK's own HTTP patches record a failed call's exception text, and that text carries the
URL with the API key; so the functions patch botocore only, and this wrapper adds one subsegment
per provider call with a name, the number of ids and the outcome's type: never a URL, a query,
a token or an exception's text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from aws_lambda_powertools.tracing.base import BaseProvider

from pingback_guard.domain.task import CaptchaRequest
from pingback_guard.provider.answers import ProviderAnswer
from pingback_guard.provider.client import ProviderClient

Result = TypeVar("Result")


class TracedProvider:
    def __init__(self, provider: ProviderClient, recorder: BaseProvider) -> None:
        self._provider = provider
        self._recorder = recorder

    def submit(self, request: CaptchaRequest, pingback_url: str) -> str:
        return self._traced("in.php", 1, lambda: self._provider.submit(request, pingback_url))

    def get_results(self, task_ids: Sequence[str]) -> dict[str, ProviderAnswer]:
        return self._traced(
            "res.php get", len(task_ids), lambda: self._provider.get_results(task_ids)
        )

    def report(self, task_id: str, *, good: bool) -> None:
        self._traced("res.php report", 1, lambda: self._provider.report(task_id, good=good))

    def balance(self) -> float:
        return self._traced("res.php getbalance", 0, self._provider.balance)

    def _traced(self, name: str, ids: int, call: Callable[[], Result]) -> Result:
        failure: Exception | None = None
        with self._recorder.in_subsegment(name=name) as subsegment:
            try:
                result = call()
            except Exception as error:
                # Raised outside the subsegment: X-Ray would record the exception's text.
                failure = error
            subsegment.put_annotation("ids", str(ids))
            subsegment.put_annotation("outcome", type(failure).__name__ if failure else "ok")
        if failure is not None:
            raise failure
        return result
