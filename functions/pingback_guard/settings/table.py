"""The task table, as every function that reads or writes tasks sees it."""

from __future__ import annotations

from dataclasses import dataclass

from pingback_guard.domain.task import TokenLifetimes
from pingback_guard.settings.env import Env, retention_seconds


@dataclass(frozen=True)
class TableSettings:
    table_name: str
    due_index_name: str
    due_shards: int
    result_ttl_seconds: int
    token_lifetimes: TokenLifetimes
    # A pingback for an id no task registered yet is kept one retention window.
    provisional_ttl_seconds: int

    @classmethod
    def from_env(cls, env: Env) -> TableSettings:
        return cls(
            table_name=env.text("TASKS_TABLE_NAME"),
            due_index_name=env.text("DUE_INDEX_NAME"),
            due_shards=env.integer("DUE_SHARDS", 1, 256),
            result_ttl_seconds=env.integer("RESULT_TTL_DAYS", 1, 365) * 86400,
            provisional_ttl_seconds=int(retention_seconds(env)),
            token_lifetimes=TokenLifetimes(
                recaptcha=env.number("RECAPTCHA_TOKEN_LIFETIME_SECONDS", 1, 3600),
                hcaptcha=env.number("HCAPTCHA_TOKEN_LIFETIME_SECONDS", 1, 3600),
                turnstile=env.number("TURNSTILE_TOKEN_LIFETIME_SECONDS", 1, 3600),
                geetest=env.number("GEETEST_TOKEN_LIFETIME_SECONDS", 1, 3600),
                cloudflare_challenge=env.number("CLOUDFLARE_CLEARANCE_LIFETIME_SECONDS", 1, 86400),
                captchafox=env.number("CAPTCHAFOX_TOKEN_LIFETIME_SECONDS", 1, 3600),
                friendly_captcha=env.number("FRIENDLY_CAPTCHA_TOKEN_LIFETIME_SECONDS", 1, 3600),
                lemin=env.number("LEMIN_TOKEN_LIFETIME_SECONDS", 1, 3600),
            ),
        )
