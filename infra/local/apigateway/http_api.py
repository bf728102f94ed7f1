"""API Gateway HTTP API behaviour: route matching, payload format 2.0 events, response mapping."""

import base64
import json
import re
import time
import urllib.parse
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from infra.local.lambda_.triggers import HttpRoute
from infra.local.runtime.aws import LOCAL_PRINCIPALS, LocalPrincipal

_TEXT_TYPES = re.compile(
    r"^(text/|application/(json|xml|javascript|ld\+json|[\w.+-]*\+(json|xml)))"
)
_REQUEST_TIME_FORMAT = "%d/%b/%Y:%H:%M:%S +0000"


@dataclass(frozen=True)
class HttpRequest:
    method: str
    raw_path: str
    raw_query: str
    headers: Sequence[tuple[str, str]]
    body: bytes
    source_ip: str
    domain_name: str
    protocol: str = "HTTP/1.1"


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    cookies: Sequence[str] = ()
    body: bytes = b""


def json_response(status: int, document: Any) -> HttpResponse:
    return HttpResponse(
        status, {"content-type": "application/json"}, (), json.dumps(document).encode()
    )


NOT_FOUND = json_response(404, {"message": "Not Found"})
INTERNAL_SERVER_ERROR = json_response(500, {"message": "Internal Server Error"})
SERVICE_UNAVAILABLE = json_response(503, {"message": "Service Unavailable"})
TOO_LARGE = json_response(413, {"message": "Request Entity Too Large"})


@dataclass(frozen=True)
class RouteMatch:
    route: HttpRoute
    path_parameters: dict[str, str]


class RouteTable:
    """Picks the route API Gateway would: literal segments before {params}, {greedy+} last."""

    def __init__(self, routes: Sequence[HttpRoute]) -> None:
        self._routes = sorted(routes, key=_specificity)

    def match(self, method: str, raw_path: str) -> RouteMatch | None:
        segments = raw_path.split("/")[1:]
        for route in self._routes:
            if route.method not in ("ANY", method.upper()):
                continue
            parameters = _match_path(route.path.split("/")[1:], segments)
            if parameters is not None:
                return RouteMatch(route, parameters)
        return None


def _specificity(route: HttpRoute) -> tuple[int, int, int]:
    segments = route.path.split("/")
    greedy = sum(segment.endswith("+}") for segment in segments)
    parameters = sum(segment.startswith("{") for segment in segments)
    return greedy, parameters, int(route.method == "ANY")


def _match_path(template: Sequence[str], segments: Sequence[str]) -> dict[str, str] | None:
    parameters: dict[str, str] = {}
    for index, part in enumerate(template):
        if part.startswith("{") and part.endswith("+}"):
            rest = segments[index:]
            if not rest or not rest[0]:
                return None
            parameters[part[1:-2]] = urllib.parse.unquote("/".join(rest))
            return parameters
        if index >= len(segments):
            return None
        if part.startswith("{") and part.endswith("}"):
            if not segments[index]:
                return None
            parameters[part[1:-1]] = urllib.parse.unquote(segments[index])
        elif part != segments[index]:
            return None
    return parameters if len(segments) == len(template) else None


@dataclass(frozen=True)
class ApiContext:
    account_id: str
    stage: str = "$default"
    region: str = "us-east-1"
    principals: Mapping[str, LocalPrincipal] = field(default_factory=lambda: LOCAL_PRINCIPALS)
    """The callers IAM-authorised routes accept, by access key."""


def build_event(
    request: HttpRequest,
    matched: RouteMatch,
    api: ApiContext,
    caller: LocalPrincipal | None = None,
) -> dict[str, Any]:
    """The payload format 2.0 event API Gateway sends for this request (caller: SigV4-verified)."""
    headers = _joined_headers(request)
    cookies = [cookie.strip() for cookie in headers.pop("cookie", "").split(";") if cookie.strip()]
    now = time.time()
    request_id = base64.b32encode(uuid.uuid4().bytes[:10]).decode().rstrip("=")
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": matched.route.route_key,
        "rawPath": request.raw_path,
        "rawQueryString": request.raw_query,
        "headers": headers,
        "requestContext": {
            "accountId": api.account_id,
            "apiId": matched.route.api_id,
            "domainName": request.domain_name,
            "domainPrefix": request.domain_name.split(".")[0],
            "http": {
                "method": request.method.upper(),
                "path": request.raw_path,
                "protocol": request.protocol,
                "sourceIp": request.source_ip,
                "userAgent": headers.get("user-agent", ""),
            },
            "requestId": request_id,
            "routeKey": matched.route.route_key,
            "stage": api.stage,
            "time": time.strftime(_REQUEST_TIME_FORMAT, time.gmtime(now)),
            "timeEpoch": int(now * 1000),
        },
        "isBase64Encoded": False,
    }
    if cookies:
        event["cookies"] = cookies
    query = _query_parameters(request.raw_query)
    if query:
        event["queryStringParameters"] = query
    if matched.path_parameters:
        event["pathParameters"] = matched.path_parameters
    if caller is not None:
        event["requestContext"]["authorizer"] = {"iam": _iam_identity(caller, api.account_id)}
    if request.body:
        event.update(_body_fields(request.body, headers.get("content-type", "")))
    return event


def _joined_headers(request: HttpRequest) -> dict[str, str]:
    """Lower-case names, repeated headers joined with commas, plus API Gateway's forwarding ones."""
    joined: dict[str, str] = {}
    for name, value in request.headers:
        key = name.lower()
        joined[key] = f"{joined[key]},{value}" if key in joined else value
    joined["x-forwarded-for"] = request.source_ip
    joined["x-forwarded-proto"] = "http"
    joined.setdefault("host", request.domain_name)
    joined["x-forwarded-port"] = request.domain_name.rsplit(":", 1)[-1]
    return joined


def _query_parameters(raw_query: str) -> dict[str, str]:
    grouped: dict[str, list[str]] = {}
    for name, value in urllib.parse.parse_qsl(raw_query, keep_blank_values=True):
        grouped.setdefault(name, []).append(value)
    return {name: ",".join(values) for name, values in grouped.items()}


def _body_fields(body: bytes, content_type: str) -> dict[str, Any]:
    """Text bodies as they are; binary and form bodies base64-encoded, as API Gateway does."""
    media_type = content_type.split(";", maxsplit=1)[0].strip().lower()
    if _TEXT_TYPES.match(media_type):
        try:
            return {"body": body.decode("utf-8"), "isBase64Encoded": False}
        except UnicodeDecodeError:
            pass
    return {"body": base64.b64encode(body).decode(), "isBase64Encoded": True}


def _iam_identity(caller: LocalPrincipal, account_id: str) -> dict[str, Any]:
    """requestContext.authorizer.iam of payload format 2.0 for an IAM user."""
    return {
        "accessKey": caller.access_key,
        "accountId": account_id,
        "callerId": caller.user_id,
        "principalOrgId": None,
        "userArn": caller.user_arn,
        "userId": caller.user_id,
        "cognitoIdentity": None,
    }


def map_result(result: Any) -> HttpResponse:
    """What API Gateway answers for a function's (successful) result."""
    if isinstance(result, dict) and "statusCode" in result:
        return _mapped_response(result)
    return json_response(200, result)


def _mapped_response(result: Mapping[str, Any]) -> HttpResponse:
    """A response object; a malformed one is a 500, as on API Gateway."""
    body = result.get("body")
    if body is None:
        body = ""
    if not isinstance(body, str):
        return INTERNAL_SERVER_ERROR
    try:
        status = int(result["statusCode"])
        raw = (
            base64.b64decode(body, validate=True)
            if result.get("isBase64Encoded")
            else body.encode()
        )
        headers = {
            str(name).lower(): str(value) for name, value in (result.get("headers") or {}).items()
        }
        cookies = [str(cookie) for cookie in result.get("cookies") or []]
    except (TypeError, ValueError, AttributeError):
        return INTERNAL_SERVER_ERROR
    return HttpResponse(status, headers, cookies, raw)
