"""The real provider client as a function's settings describe it (kept out of aws_clients so
functions that never call the provider never import requests)."""

import requests
from requests.adapters import HTTPAdapter

from pingback_guard.aws_clients import api_key_reader
from pingback_guard.provider.captchaai import CaptchaAiClient, RetryPolicy
from pingback_guard.settings import ProviderSettings


def captchaai_client(
    provider: ProviderSettings, retry: RetryPolicy | None = None, connections: int = 10
) -> CaptchaAiClient:
    """The API key is read from SSM (cached) on use, never at cold start. ``connections``: the
    requests its caller has in flight at once, each kept on a connection of its own."""
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
    session = requests.Session()
    adapter = HTTPAdapter(pool_maxsize=connections)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    return session
