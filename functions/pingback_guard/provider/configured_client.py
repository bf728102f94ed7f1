"""The real provider client as a function's settings describe it (kept out of aws_clients so
functions that never call the provider never import requests). What only a made client needs
(requests, the client, the API key's reader: Powertools Parameters) is imported when one is
made: a function that makes its client on first use (ProviderOnFirstUse) does not load it at
cold start."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pingback_guard.settings.provider import ProviderSettings

if TYPE_CHECKING:
    import requests

    from pingback_guard.domain.task import CaptchaRequest
    from pingback_guard.provider.answers import ProviderAnswer
    from pingback_guard.provider.captchaai import CaptchaAiClient, RetryPolicy
    from pingback_guard.provider.client import ProviderClient


def captchaai_client(
    provider: ProviderSettings, retry: RetryPolicy | None = None, connections: int = 10
) -> CaptchaAiClient:
    """The API key is read from SSM (cached) on use, never at cold start. ``connections``: the
    requests its caller has in flight at once, each kept on a connection of its own."""
    from pingback_guard.provider.captchaai import CaptchaAiClient
    from pingback_guard.secret_readers import api_key_reader

    return CaptchaAiClient(
        provider.base_url,
        api_key_reader(provider.api_key_parameter, provider.api_key_cache_seconds),
        connect_timeout_seconds=provider.connect_timeout_seconds,
        call_deadline_seconds=provider.call_deadline_seconds,
        retry=retry,
        session=pooled_session(connections),
    )


def pooled_session(connections: int) -> requests.Session:
    """A session that keeps ``connections`` connections to the provider (requests' default
    pool keeps 10 and opens, then drops, one more for each request beyond them)."""
    import requests
    from requests.adapters import HTTPAdapter

    session = requests.Session()
    adapter = HTTPAdapter(pool_maxsize=connections)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    return session


def single_attempt_client(provider: ProviderSettings) -> CaptchaAiClient:
    """One attempt per call: a worker is waiting on the answer, and its next request retries."""
    from pingback_guard.provider.captchaai import RetryPolicy

    return captchaai_client(provider, retry=RetryPolicy(attempts=1))


class ProviderOnFirstUse:
    """A ProviderClient made at its first call: for a function whose requests mostly never
    reach the provider (GET /tasks/{id} asks res.php only for an overdue task), importing
    requests and building its session is not paid at cold start."""

    def __init__(self, make: Callable[[], ProviderClient]) -> None:
        self._make = make
        self._made: ProviderClient | None = None

    def _client(self) -> ProviderClient:
        if self._made is None:
            self._made = self._make()
        return self._made

    def submit(self, request: CaptchaRequest, pingback_url: str) -> str:
        return self._client().submit(request, pingback_url)

    def get_results(self, task_ids: Sequence[str]) -> dict[str, ProviderAnswer]:
        return self._client().get_results(task_ids)

    def report(self, task_id: str, *, good: bool) -> None:
        self._client().report(task_id, good=good)

    def balance(self) -> float:
        return self._client().balance()
