"""SigV4 signing of requests to the stack's IAM-authorised routes (service `execute-api`)."""

from __future__ import annotations

from typing import Any

import botocore.session
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from requests import PreparedRequest, Session
from requests.auth import AuthBase

SERVICE = "execute-api"
# Only these request headers are signed: an HTTP client may add or rewrite the others.
_SIGNED_REQUEST_HEADERS = ("content-type",)
_SIGNATURE_HEADERS = ("Authorization", "X-Amz-Date", "X-Amz-Security-Token")


class NoCredentials(RuntimeError):
    """The default AWS credential chain found no credentials."""


def default_credentials() -> Credentials:
    """Credentials from the default AWS chain (environment, profile, SSO, container, instance)."""
    credentials = botocore.session.Session().get_credentials()
    if credentials is None:
        raise NoCredentials("no AWS credentials found by the default credential chain")
    return credentials


class SigV4RequestAuth(AuthBase):
    """A requests auth that signs each request (again on each retry) for execute-api."""

    def __init__(self, region: str, credentials: Credentials | None = None) -> None:
        self._region = region
        self._credentials = credentials

    def __call__(self, request: PreparedRequest) -> PreparedRequest:
        if self._credentials is None:
            self._credentials = default_credentials()
        # Refreshable credentials (SSO, instance roles) may rotate: sign with a consistent snapshot.
        frozen = self._credentials.get_frozen_credentials()
        signable = AWSRequest(
            method=request.method,
            url=request.url,
            data=_body_bytes(request.body),
            headers={
                name: value
                for name, value in request.headers.items()
                if name.lower() in _SIGNED_REQUEST_HEADERS
            },
        )
        SigV4Auth(
            Credentials(str(frozen.access_key), str(frozen.secret_key), frozen.token),
            SERVICE,
            self._region,
        ).add_auth(signable)
        for name in _SIGNATURE_HEADERS:
            if name in signable.headers:
                request.headers[name] = signable.headers[name]
        return request


def signed_headers(url: str, region: str, credentials: Credentials | None = None) -> dict[str, str]:
    """SigV4 headers for a GET of ``url`` (a WebSocket API's `$connect`: ws(s) signs as http(s))."""
    frozen = (credentials or default_credentials()).get_frozen_credentials()
    signable = AWSRequest(method="GET", url=_http_url(url))
    SigV4Auth(
        Credentials(str(frozen.access_key), str(frozen.secret_key), frozen.token),
        SERVICE,
        region,
    ).add_auth(signable)
    return {name: signable.headers[name] for name in _SIGNATURE_HEADERS if name in signable.headers}


def _http_url(url: str) -> str:
    scheme, separator, rest = url.partition("://")
    return {"wss": "https", "ws": "http"}.get(scheme, scheme) + separator + rest


def signed_session(region: str, credentials: Credentials | None = None) -> Session:
    """A requests session whose every request is SigV4-signed (default credential chain if none)."""
    session = Session()
    session.auth = SigV4RequestAuth(region, credentials)
    return session


def _body_bytes(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, bytes):
        return body
    raise TypeError("only in-memory request bodies can be signed")
