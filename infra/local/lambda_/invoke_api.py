"""Lambda's Invoke API on 127.0.0.1, for the functions that invoke another of the stack's
functions (the submit's wake of the poller): moto cannot run them, the runtime's workers can.

Each function's workers get ``AWS_ENDPOINT_URL_LAMBDA`` pointing here (botocore's per-service
endpoint variable), so only their Lambda calls come here; IAM has authorized the call inside the
worker already (infra/local/iam: lambda:InvokeFunction on the function's ARN), as AWS does
before it queues the event. https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html:

- ``POST /2015-03-31/functions/{FunctionName}/invocations``, FunctionName a name, an ARN or a
  partial ARN (``123456789012:function:name``), ``X-Amz-Invocation-Type`` header.
- ``Event``: 202 with no body once the event is in the function's asynchronous queue, which
  runs, retries and gives up on it as Lambda does (async_invocations.py). Payload up to 1 MB.
- ``RequestResponse`` (the default): 200 with the function's response, ``X-Amz-Function-Error:
  Unhandled`` when it failed; payload up to 6 MB. ``DryRun``: 204.
- An unknown function: 404 ``ResourceNotFoundException``; a payload too large: 413
  ``RequestEntityTooLargeException``; not JSON: 400 ``InvalidRequestContentException``.
Not emulated: throttling of synchronous invocations (429: they wait for a free worker instead),
qualifiers other than ``$LATEST``, ClientContext, log tails.
"""

import json
import urllib.parse
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from infra.local.apigateway.gateway import Invoker
from infra.local.apigateway.http_api import HttpResponse
from infra.local.lambda_.function_names import parse_function_name
from infra.local.lambda_.pool import PoolClosed
from infra.local.lambda_.triggers import FunctionIndex
from infra.local.runtime.http_server import LOCALHOST, LocalHttpServer, QuietHandler
from infra.local.runtime.stats import SharedStats

_PATH_PREFIX = "/2015-03-31/functions/"
_PATH_SUFFIX = "/invocations"
# Invoke's payload quotas, by invocation type (the page above).
MAX_PAYLOAD_BYTES = {"Event": 1024 * 1024, "RequestResponse": 6 * 1024 * 1024, "DryRun": 0}
_LATEST = "$LATEST"
AsyncInvoker = Callable[[str, Any], str]
"""(function logical id, event) -> the request id of the event queued for it."""


@dataclass
class InvokeStats(SharedStats):
    queued: int = 0
    """Event invocations accepted (202)."""
    answered: int = 0
    """RequestResponse invocations answered."""
    refused: int = 0


class _Refused(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


@dataclass(frozen=True)
class _Call:
    logical_id: str
    invocation_type: str
    event: Any


class LambdaInvokeApi:
    def __init__(
        self, functions: FunctionIndex, invoke: Invoker, invoke_async: AsyncInvoker
    ) -> None:
        self._functions = functions
        self._invoke = invoke
        self._invoke_async = invoke_async
        self.stats = InvokeStats()

    def handle(
        self,
        path: str,
        query: dict[str, str],
        headers: dict[str, str],
        body: bytes | None,
    ) -> HttpResponse:
        """``headers`` lowercased; ``body`` None when larger than any payload Invoke takes."""
        request_id = str(uuid.uuid4())
        try:
            call = self._call(path, query, headers, body)
        except _Refused as refused:
            self.stats.add(refused=1)
            document = json.dumps({"Type": "User", "message": str(refused)}).encode()
            error_headers = {
                "x-amzn-RequestId": request_id,
                "x-amzn-ErrorType": refused.code,
                "content-type": "application/json",
            }
            return HttpResponse(refused.status, error_headers, (), document)
        if call.invocation_type == "DryRun":
            return HttpResponse(204, {"x-amzn-RequestId": request_id})
        if call.invocation_type == "Event":
            queued_id = self._invoke_async(call.logical_id, call.event)
            self.stats.add(queued=1)
            return HttpResponse(202, {"x-amzn-RequestId": queued_id})
        return self._answer(call)

    def _call(
        self, path: str, query: dict[str, str], headers: dict[str, str], body: bytes | None
    ) -> _Call:
        name = _function_name(path)
        if name is None:
            raise _Refused(404, "UnknownOperationException", "Unknown operation")
        invocation_type = headers.get("x-amz-invocation-type", "RequestResponse")
        if invocation_type not in MAX_PAYLOAD_BYTES:
            raise _Refused(400, "InvalidParameterValueException", "Invalid InvocationType")
        named = parse_function_name(name)
        logical_id = self._functions.find(named.name)
        if logical_id is None or query.get("Qualifier", named.qualifier) not in (None, _LATEST):
            raise _Refused(404, "ResourceNotFoundException", f"Function not found: {name}")
        limit = MAX_PAYLOAD_BYTES[invocation_type]
        if body is None or len(body) > limit:
            size = "the" if body is None else f"{len(body)} byte"
            raise _Refused(
                413,
                "RequestEntityTooLargeException",
                f"{size} payload is too large for the {invocation_type} invocation type"
                f" (limit {limit} bytes)",
            )
        try:
            event = json.loads(body) if body.strip() else {}
        except json.JSONDecodeError:
            raise _Refused(
                400, "InvalidRequestContentException", "Could not parse request body"
            ) from None
        return _Call(logical_id, invocation_type, event)

    def _answer(self, call: _Call) -> HttpResponse:
        try:
            invocation = self._invoke(call.logical_id, call.event)
        except PoolClosed:
            return HttpResponse(503, {"x-amzn-ErrorType": "ServiceException"})
        self.stats.add(answered=1)
        headers = {"x-amzn-RequestId": invocation.request_id, "X-Amz-Executed-Version": _LATEST}
        if not invocation.ok:
            headers["X-Amz-Function-Error"] = "Unhandled"
            return HttpResponse(200, headers, (), json.dumps(invocation.error).encode())
        return HttpResponse(200, headers, (), json.dumps(invocation.result).encode())


def _function_name(path: str) -> str | None:
    path = urllib.parse.unquote(path)
    if not path.startswith(_PATH_PREFIX) or not path.endswith(_PATH_SUFFIX):
        return None
    return path[len(_PATH_PREFIX) : -len(_PATH_SUFFIX)] or None


class _InvokeHandler(QuietHandler):
    server: LocalHttpServer

    def do_POST(self) -> None:
        api: LambdaInvokeApi = self.server.app
        body = self.read_body(max(MAX_PAYLOAD_BYTES.values()))
        path, _, raw_query = self.path.partition("?")
        headers = {name.lower(): value for name, value in self.headers.items()}
        query = dict(urllib.parse.parse_qsl(raw_query))
        self.write_response(api.handle(path, query, headers, body))


def lambda_invoke_server(
    functions: FunctionIndex, invoke: Invoker, invoke_async: AsyncInvoker
) -> LocalHttpServer:
    """Bound to a free port at once: its URL goes into the workers' environment."""
    return LocalHttpServer(0, _InvokeHandler, LambdaInvokeApi(functions, invoke, invoke_async))


def endpoint_url(server: LocalHttpServer) -> str:
    return f"http://{LOCALHOST}:{server.port}"
