"""The real provider client as a function's settings describe it (kept out of aws_clients so
functions that never call the provider never import requests). What only a made client needs
(requests, the client, the API key's reader: Powertools Parameters) is imported when one is
made: a function that makes its client on first use (ProviderOnFirstUse) does not load it at
cold start."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pingback_guard.settings.provider import ExtraAccount, ProviderSettings

if TYPE_CHECKING:
    import requests

    from pingback_guard.domain.task import CaptchaRequest
    from pingback_guard.logic.accounts import ProviderAccounts
    from pingback_guard.provider.answers import ProviderAnswer
    from pingback_guard.provider.captchaai import CaptchaAiClient, RetryPolicy
    from pingback_guard.provider.client import ProviderClient


def captchaai_client(
    provider: ProviderSettings,
    retry: RetryPolicy | None = None,
    connections: int = 10,
    account: ExtraAccount | None = None,
) -> CaptchaAiClient:
    """The API key is read from SSM (cached) on use, never at cold start. ``connections``: the
    requests its caller has in flight at once, each kept on a connection of its own.
    ``account``: one of the extra accounts (None: account 1), its key, provider and codes."""
    from pingback_guard.provider.answers import CAPTCHAAI, TWOCAPTCHA
    from pingback_guard.provider.captchaai import CaptchaAiClient
    from pingback_guard.secret_readers import api_key_reader

    parameter = provider.api_key_parameter if account is None else account.api_key_parameter
    return CaptchaAiClient(
        provider.base_url if account is None else account.base_url,
        api_key_reader(parameter, provider.api_key_cache_seconds),
        connect_timeout_seconds=provider.connect_timeout_seconds,
        call_deadline_seconds=provider.call_deadline_seconds,
        retry=retry,
        session=pooled_session(connections),
        codes=TWOCAPTCHA if account is not None and account.dialect == "2captcha" else CAPTCHAAI,
    )


def provider_accounts(
    provider: ProviderSettings,
    *,
    single_attempt: bool = False,
    connections: int = 10,
    wrap: Callable[[CaptchaAiClient], ProviderClient] = lambda client: client,
    on_threads_busy: Callable[[str | None], None] = lambda _account: None,
    on_account_refused: Callable[[str | None, str], None] = lambda _account, _code: None,
) -> ProviderAccounts:
    """Account 1 and the extra accounts (logic/accounts.py), each with its own client;
    ``wrap`` (tracing) wraps every account's client; ``single_attempt``: one attempt per call
    (a worker is waiting on the answer, and its next request retries)."""
    from pingback_guard.logic.accounts import ProviderAccount, ProviderAccounts
    from pingback_guard.provider.captchaai import RetryPolicy

    retry = RetryPolicy(attempts=1) if single_attempt else None
    accounts = []
    for extra in (None, *provider.extra_accounts):
        client = captchaai_client(provider, retry, connections, extra)
        name = None if extra is None else extra.name
        accounts.append(ProviderAccount(name, wrap(client), client))
    return ProviderAccounts(
        accounts, on_threads_busy=on_threads_busy, on_account_refused=on_account_refused
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


def single_attempt_client(
    provider: ProviderSettings, account: ExtraAccount | None = None
) -> CaptchaAiClient:
    """One attempt per call: a worker is waiting on the answer, and its next request retries."""
    from pingback_guard.provider.captchaai import RetryPolicy

    return captchaai_client(provider, retry=RetryPolicy(attempts=1), account=account)


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


def accounts_on_first_use(
    provider: ProviderSettings, *, single_attempt: bool = False
) -> ProviderAccounts:
    """Every account's client made at its first call (ProviderOnFirstUse), for the functions
    that read and report through a task's own account and rarely call the provider."""
    from pingback_guard.logic.accounts import ProviderAccount, ProviderAccounts

    def made(extra: ExtraAccount | None) -> ProviderClient:
        if single_attempt:
            return ProviderOnFirstUse(lambda: single_attempt_client(provider, extra))
        return ProviderOnFirstUse(lambda: captchaai_client(provider, account=extra))

    return ProviderAccounts(
        [
            ProviderAccount(None if extra is None else extra.name, made(extra))
            for extra in (None, *provider.extra_accounts)
        ]
    )
