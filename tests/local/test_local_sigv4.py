"""The local gateway's SigV4 check, against signatures made by the worker client's signer."""

from __future__ import annotations

import time
import urllib.parse
from dataclasses import replace

import pytest
import requests
from botocore.credentials import Credentials

from infra.local.apigateway.signing import credentials_of
from infra.local.apigateway.sigv4 import (
    FORBIDDEN,
    INVALID_TOKEN,
    SIGNATURE_EXPIRED,
    SIGNATURE_MISMATCH,
    WRONG_SCOPE,
    SignedRequest,
    verify,
)
from infra.local.runtime.aws import LOCAL_PRINCIPALS, OTHER_WORKER, WORKER, LocalPrincipal
from pingback_guard_client.signing import SigV4RequestAuth

REGION = "us-east-1"
URL = "http://127.0.0.1:8123/tasks/42?view=full"


def signed(
    credentials: Credentials,
    method: str = "POST",
    url: str = URL,
    body: bytes | None = b'{"method": "userrecaptcha"}',
    region: str = REGION,
) -> SignedRequest:
    prepared = requests.Request(
        method, url, data=body, headers={"content-type": "application/json"}
    ).prepare()
    SigV4RequestAuth(region, credentials)(prepared)
    parts = urllib.parse.urlsplit(url)
    headers = {name.lower(): value for name, value in prepared.headers.items()}
    headers["host"] = parts.netloc
    return SignedRequest(method, parts.netloc, parts.path, parts.query, headers, body or b"")


def check(request: SignedRequest, now: float | None = None) -> object:
    return verify(request, LOCAL_PRINCIPALS, REGION, time.time() if now is None else now)


@pytest.mark.parametrize("principal", [WORKER, OTHER_WORKER])
def test_a_request_signed_with_a_local_credential_names_its_principal(
    principal: LocalPrincipal,
) -> None:
    assert check(signed(credentials_of(principal))) == principal
    assert check(signed(credentials_of(principal), method="GET", body=None)) == principal


def test_an_unsigned_request_is_forbidden() -> None:
    request = signed(credentials_of(WORKER))
    headers = {k: v for k, v in request.headers.items() if k != "authorization"}
    assert check(replace(request, headers=headers)) == FORBIDDEN


@pytest.mark.parametrize(
    "tamper",
    [
        {"body": b'{"method": "hcaptcha"}'},
        {"raw_path": "/tasks/43"},
        {"raw_query": "view=other"},
        {"method": "PUT"},
    ],
)
def test_a_request_changed_after_signing_is_refused(tamper: dict[str, object]) -> None:
    assert check(replace(signed(credentials_of(WORKER)), **tamper)) == SIGNATURE_MISMATCH  # type: ignore[arg-type]


def test_a_wrong_secret_key_is_refused() -> None:
    wrong = Credentials(WORKER.access_key, "not-the-secret", WORKER.session_token)
    assert check(signed(wrong)) == SIGNATURE_MISMATCH


def test_an_unknown_access_key_or_session_token_is_refused() -> None:
    assert check(signed(Credentials("AKIAUNKNOWN", "x"))) == INVALID_TOKEN
    wrong_token = Credentials(WORKER.access_key, WORKER.secret_key, "another-token")
    assert check(signed(wrong_token)) == INVALID_TOKEN


def test_a_signature_for_another_region_or_an_old_one_is_refused() -> None:
    assert check(signed(credentials_of(WORKER), region="eu-west-1")) == WRONG_SCOPE
    assert check(signed(credentials_of(WORKER)), now=time.time() + 600) == SIGNATURE_EXPIRED
