"""What the two functions that hand out pingback URLs (submit and register) share: the callback
secret, the URLs' base and how their tasks are recorded PENDING."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pingback_guard import secret_readers
from pingback_guard.logic.submit import IssuedPingback, PendingTasks, issue_pingback

if TYPE_CHECKING:
    from pingback_guard.settings.pingbacks import PingbackIssueSettings


class PingbackIssuer:
    def __init__(self, settings: PingbackIssueSettings) -> None:
        self._public_base_url = settings.public_base_url
        self.read_secrets = secret_readers.callback_secrets_reader(settings.callback_secret)
        self.pending = PendingTasks(
            settings.callback_timeout_seconds, settings.expected_solve_seconds
        )

    def base_url(self, request: Mapping[str, Any]) -> str:
        """The stack's public base URL when it has one, else the API's own domain."""
        domain = (request.get("requestContext") or {}).get("domainName")
        return self._public_base_url or f"https://{domain}"

    def issue(self, request: Mapping[str, Any]) -> IssuedPingback:
        return issue_pingback(self.base_url(request), self.read_secrets(False).current, time.time())
