"""How requests reach the stack: a small seam so the client can be tested without HTTP."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import requests
import urllib3.exceptions


@dataclass(frozen=True)
class HttpAnswer:
    status: int
    body: Any
    """The parsed JSON body, or None."""
    retry_after: float | None = None


class TransportFailure(Exception):
    """No answer. `sent` is False when the request certainly never reached the stack."""

    def __init__(self, message: str, sent: bool) -> None:
        super().__init__(message)
        self.sent = sent


class Transport(Protocol):
    def request(self, method: str, path: str, body: Mapping[str, Any] | None) -> HttpAnswer: ...

    def close(self) -> None: ...


class RequestsTransport:
    """JSON over a (SigV4-signing) requests session."""

    def __init__(self, base_url: str, session: requests.Session, timeout: float = 30.0) -> None:
        self._base_url = base_url.rstrip("/")
        self._session = session
        self._timeout = timeout

    def request(self, method: str, path: str, body: Mapping[str, Any] | None) -> HttpAnswer:
        try:
            response = self._session.request(
                method,
                self._base_url + path,
                data=None if body is None else json.dumps(body).encode(),
                headers={"content-type": "application/json"} if body is not None else None,
                timeout=self._timeout,
            )
        except requests.RequestException as error:
            raise TransportFailure(type(error).__name__, sent=_maybe_sent(error)) from None
        return HttpAnswer(response.status_code, _json(response), _retry_after(response))

    def close(self) -> None:
        self._session.close()


def _maybe_sent(error: requests.RequestException) -> bool:
    if isinstance(error, requests.ConnectTimeout):
        return False
    reason = getattr(error.args[0], "reason", None) if error.args else None
    return not isinstance(reason, urllib3.exceptions.NewConnectionError)


def _json(response: requests.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _retry_after(response: requests.Response) -> float | None:
    try:
        return float(response.headers["retry-after"])
    except (KeyError, ValueError):
        return None
