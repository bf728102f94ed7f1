"""The provider (in.php / res.php) as the functions that call it see it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pingback_guard.domain.errors import ConfigurationError
from pingback_guard.settings.env import Env

ACCOUNT_NAME = re.compile(r"[A-Za-z0-9_.-]{1,32}")
# The code tables of provider/answers.py an account's provider is read with.
PROVIDER_DIALECTS = ("captchaai", "2captcha")


@dataclass(frozen=True)
class ExtraAccount:
    """A provider account beside account 1: its key is the SSM SecureString
    ``<PROVIDER_API_KEY_PARAMETER>-<name>``; its provider, account 1's unless given."""

    name: str
    api_key_parameter: str
    base_url: str
    dialect: str = "captchaai"


@dataclass(frozen=True)
class ProviderSettings:
    base_url: str
    api_key_parameter: str
    api_key_cache_seconds: int
    connect_timeout_seconds: float
    call_deadline_seconds: float
    extra_accounts: tuple[ExtraAccount, ...] = ()

    @property
    def call_bound_seconds(self) -> float:
        """The longest one res.php request may take: its connect, then its whole answer within
        the call deadline (CaptchaAiClient never retries a res.php request)."""
        return self.connect_timeout_seconds + self.call_deadline_seconds

    @classmethod
    def from_env(cls, env: Env) -> ProviderSettings:
        base_url = env.provider_url("PROVIDER_BASE_URL")
        api_key_parameter = env.text("PROVIDER_API_KEY_PARAMETER")
        return cls(
            base_url=base_url,
            api_key_parameter=api_key_parameter,
            api_key_cache_seconds=env.integer("SECRET_CACHE_SECONDS", 0, 3600, 300),
            connect_timeout_seconds=env.number("PROVIDER_CONNECT_TIMEOUT_SECONDS", 0.1, 30, 3.05),
            call_deadline_seconds=env.number("PROVIDER_CALL_DEADLINE_SECONDS", 0.2, 60, 10),
            extra_accounts=extra_accounts(env, base_url, api_key_parameter),
        )


def extra_accounts(env: Env, base_url: str, api_key_parameter: str) -> tuple[ExtraAccount, ...]:
    """PROVIDER_EXTRA_ACCOUNTS: ``name[|base_url[|dialect]]`` entries, comma-separated; empty:
    account 1 alone."""
    accounts: list[ExtraAccount] = []
    for entry in filter(
        None, (part.strip() for part in env.optional_text("PROVIDER_EXTRA_ACCOUNTS").split(","))
    ):
        name, url, dialect = [*entry.split("|"), "", ""][:3]
        if not ACCOUNT_NAME.fullmatch(name) or name in {a.name for a in accounts}:
            raise ConfigurationError("PROVIDER_EXTRA_ACCOUNTS: a name is malformed or repeated")
        if dialect and dialect not in PROVIDER_DIALECTS:
            raise ConfigurationError(
                f"PROVIDER_EXTRA_ACCOUNTS: dialect is one of {PROVIDER_DIALECTS}"
            )
        own_url = (
            Env({"PROVIDER_EXTRA_ACCOUNTS": url}).provider_url("PROVIDER_EXTRA_ACCOUNTS")
            if url
            else base_url
        )
        accounts.append(
            ExtraAccount(name, f"{api_key_parameter}-{name}", own_url, dialect or "captchaai")
        )
    return tuple(accounts)
