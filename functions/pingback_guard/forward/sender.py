"""The only code that calls a worker's own pingback URL (in.php's ``pingback``): 2captcha's
pingback, a form POST of ``id`` and ``code``. One request, a short deadline, no redirect (it
would carry the token elsewhere); a failure names neither the URL nor the code."""

from __future__ import annotations

from typing import Protocol

import requests

from pingback_guard.domain.errors import ForwardFailedError

CONNECT_TIMEOUT_SECONDS = 3.05
READ_TIMEOUT_SECONDS = 5.0
USER_AGENT = "pingback-guard/0.1 (pingback forward)"


class ForwardSender(Protocol):
    def send(self, url: str, task_id: str, code: str) -> None:
        """Deliver; ForwardFailedError when the worker's server did not take it (2xx)."""


class HttpForwardSender:
    def __init__(self, session: requests.Session | None = None) -> None:
        self._session = session or requests.Session()
        self._session.headers["User-Agent"] = USER_AGENT

    def send(self, url: str, task_id: str, code: str) -> None:
        try:
            answer = self._session.post(
                url,
                data={"id": task_id, "code": code},
                timeout=(CONNECT_TIMEOUT_SECONDS, READ_TIMEOUT_SECONDS),
                allow_redirects=False,
            )
        except requests.RequestException as error:
            raise ForwardFailedError(f"forward: {type(error).__name__}") from None
        answer.close()
        if not 200 <= answer.status_code < 300:
            raise ForwardFailedError(f"forward: HTTP {answer.status_code}")
