"""The real provider client as a function's settings describe it (kept out of aws_clients so
functions that never call the provider never import requests)."""

from pingback_guard.aws_clients import api_key_reader
from pingback_guard.provider.captchaai import CaptchaAiClient, RetryPolicy
from pingback_guard.settings import ProviderSettings


def captchaai_client(
    provider: ProviderSettings, retry: RetryPolicy | None = None
) -> CaptchaAiClient:
    """The API key is read from SSM (cached) on use, never at cold start."""
    return CaptchaAiClient(
        provider.base_url,
        api_key_reader(provider.api_key_parameter, provider.api_key_cache_seconds),
        connect_timeout_seconds=provider.connect_timeout_seconds,
        call_deadline_seconds=provider.call_deadline_seconds,
        retry=retry,
    )
