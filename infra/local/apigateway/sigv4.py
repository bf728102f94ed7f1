"""SigV4 verification for IAM-authorised routes, as API Gateway does it (service execute-api).

The signature is recomputed with botocore over exactly the headers the caller signed, with the
secret key of the local principal named by the access key; a caller is known only if it signs
with one of the local credentials (infra.local.runtime.aws.LOCAL_PRINCIPALS).
"""

import datetime
import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from infra.local.runtime.aws import LocalPrincipal

SERVICE = "execute-api"
MAX_CLOCK_SKEW_SECONDS = 300
_AUTHORIZATION = re.compile(
    r"^AWS4-HMAC-SHA256\s+Credential=(?P<access_key>[^/,\s]+)/(?P<date>\d{8})/(?P<region>[^/]+)/"
    r"(?P<service>[^/]+)/aws4_request,\s*SignedHeaders=(?P<signed>[a-z0-9;._-]+),\s*"
    r"Signature=(?P<signature>[0-9a-f]{64})$"
)
_AMZ_DATE_FORMAT = "%Y%m%dT%H%M%SZ"


@dataclass(frozen=True)
class Denied:
    """Why API Gateway would answer 403 (its own message texts)."""

    message: str


FORBIDDEN = Denied("Forbidden")
INVALID_TOKEN = Denied("The security token included in the request is invalid.")
SIGNATURE_MISMATCH = Denied(
    "The request signature we calculated does not match the signature you provided."
)
SIGNATURE_EXPIRED = Denied("Signature expired.")
WRONG_SCOPE = Denied("Credential should be scoped to a valid region and to execute-api.")


@dataclass(frozen=True)
class SignedRequest:
    method: str
    host: str
    raw_path: str
    raw_query: str
    headers: Mapping[str, str]
    """Lower-case names."""
    body: bytes


def verify(
    request: SignedRequest,
    principals: Mapping[str, LocalPrincipal],
    region: str,
    now: float,
) -> LocalPrincipal | Denied:
    """The caller whose signature is valid, or why the request is refused."""
    match = _AUTHORIZATION.match(request.headers.get("authorization", "").strip())
    if match is None:
        return FORBIDDEN
    principal = principals.get(match["access_key"])
    token = request.headers.get("x-amz-security-token")
    if principal is None or (token is not None and token != principal.session_token):
        return INVALID_TOKEN
    denied = _header_denial(match, request.headers, region, now)
    if denied is not None:
        return denied
    signed = match["signed"].split(";")
    expected = _signature(request, signed, principal, region, request.headers["x-amz-date"])
    if not _body_hash_matches(request) or not hmac.compare_digest(expected, match["signature"]):
        return SIGNATURE_MISMATCH
    return principal


def _header_denial(
    match: re.Match[str], headers: Mapping[str, str], region: str, now: float
) -> Denied | None:
    if match["region"] != region or match["service"] != SERVICE:
        return WRONG_SCOPE
    if not {"host", "x-amz-date"} <= set(match["signed"].split(";")):
        return FORBIDDEN
    amz_date = headers.get("x-amz-date", "")
    return None if _fresh(amz_date, match["date"], now) else SIGNATURE_EXPIRED


def _fresh(amz_date: str, scope_date: str, now: float) -> bool:
    try:
        signed_at = datetime.datetime.strptime(amz_date, _AMZ_DATE_FORMAT).replace(
            tzinfo=datetime.UTC
        )
    except ValueError:
        return False
    in_window = abs(signed_at.timestamp() - now) <= MAX_CLOCK_SKEW_SECONDS
    return in_window and amz_date.startswith(scope_date)


def _body_hash_matches(request: SignedRequest) -> bool:
    claimed = request.headers.get("x-amz-content-sha256")
    return claimed is None or claimed == hashlib.sha256(request.body).hexdigest()


def _signature(
    request: SignedRequest,
    signed: list[str],
    principal: LocalPrincipal,
    region: str,
    amz_date: str,
) -> str:
    query = f"?{request.raw_query}" if request.raw_query else ""
    rebuilt = AWSRequest(
        method=request.method.upper(),
        url=f"http://{request.host}{request.raw_path}{query}",
        data=request.body,
        headers={name: request.headers.get(name, "") for name in signed},
    )
    rebuilt.context["timestamp"] = amz_date
    signer = SigV4Auth(
        Credentials(principal.access_key, principal.secret_key, principal.session_token),
        SERVICE,
        region,
    )
    canonical = signer.canonical_request(rebuilt)
    return str(signer.signature(signer.string_to_sign(rebuilt, canonical), rebuilt))
