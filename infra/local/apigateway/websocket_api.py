"""The template's API Gateway WebSocket APIs, locally (issue 24's push).

From the template: each `AWS::ApiGatewayV2::Api` with `ProtocolType: WEBSOCKET`, its routes
(`RouteKey`, `AuthorizationType`, the Lambda proxy integration behind `Target`) and its stage.
A loopback WebSocket server (the `websockets` package, threads) plays API Gateway:

- `$connect`: an `AWS_IAM` route verifies the handshake's SigV4 signature against the local
  principals (403 otherwise), then invokes the route's function with the WebSocket event shape;
  a function answering other than 2xx refuses the connection with that status;
- messages: routed by `$request.body.action` (the only selection expression served), else to
  `$default`; with neither, API Gateway's "Forbidden" message goes back;
- close: `$disconnect`. The server sends no keepalive pings of its own, as API Gateway.
- limits (apigateway/limits.py): a client message over the message quota closes the connection
  with 1009; a route's function slower than the integration timeout counts as failed (it runs
  on); the Management API refuses a post over the message quota (PayloadTooLargeException) and
  sends a longer one in frames no larger than the frame quota. The twin does not refuse a client
  frame over the frame quota when its message is within the message quota.

A second loopback HTTP server plays the Management API (`POST|GET|DELETE /{stage}/@connections/
{id}`, 410 GoneException for an unknown connection) that functions reach through the endpoint
variable the runtime points at it. It can be taken down (every connection closed, connections
refused), as when push is out.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import threading
import time
import urllib.parse
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response
from websockets.sync.server import Server, ServerConnection, serve

from infra.local.apigateway.gateway import Invoker, invoke_within
from infra.local.apigateway.http_api import ApiContext, HttpResponse, json_response
from infra.local.apigateway.limits import (
    WEBSOCKET_FRAME_BYTES,
    WEBSOCKET_INTEGRATION_TIMEOUT_SECONDS,
    WEBSOCKET_MESSAGE_BYTES,
)
from infra.local.apigateway.sigv4 import Denied, SignedRequest, verify
from infra.local.cloudformation.deploy import DeployedStack
from infra.local.lambda_.pool import PoolClosed
from infra.local.lambda_.triggers import FunctionIndex
from infra.local.runtime.aws import LocalPrincipal
from infra.local.runtime.http_server import LOCALHOST, LocalHttpServer, QuietHandler
from infra.local.runtime.stats import SharedStats

logger = logging.getLogger(__name__)

_INTEGRATION_FUNCTION_ARN = re.compile(r"functions/(arn:[^/]+)/invocations")
_ACTION_SELECTION = "$request.body.action"
_MANAGEMENT_PATH = re.compile(r"^/(?P<stage>[^/]+)/@connections/(?P<connection>[^/]+)$")
# UTF-8 takes at most 4 bytes a character: a text fragment this long fits in one frame.
_FRAME_CHARACTERS = WEBSOCKET_FRAME_BYTES // 4
_REQUEST_TIME_FORMAT = "%d/%b/%Y:%H:%M:%S +0000"
_FORBIDDEN_MESSAGE = "Forbidden"


@dataclass(frozen=True)
class WebSocketRoute:
    route_key: str
    function: str
    iam_auth: bool


@dataclass(frozen=True)
class WebSocketApiSpec:
    logical_id: str
    api_id: str
    stage: str
    routes: Mapping[str, WebSocketRoute]


def websocket_apis(stack: DeployedStack, functions: FunctionIndex) -> list[WebSocketApiSpec]:
    """The WebSocket APIs the template declares, with the routes served locally."""
    found = []
    for logical_id, definition in stack.resources_of_type("AWS::ApiGatewayV2::Api"):
        properties = stack.resolver.resolve(definition.get("Properties", {}))
        if properties.get("ProtocolType") != "WEBSOCKET":
            continue
        if properties.get("RouteSelectionExpression") != _ACTION_SELECTION:
            logger.warning("%s: only %s routes are served", logical_id, _ACTION_SELECTION)
        api_id = stack.resources.physical_id(logical_id)
        found.append(
            WebSocketApiSpec(
                logical_id=logical_id,
                api_id=api_id,
                stage=_stage_of(stack, api_id),
                routes=_routes_of(stack, api_id, functions),
            )
        )
    return found


def _of_api(stack: DeployedStack, resource_type: str, api_id: str) -> list[tuple[str, Any]]:
    resolved = (
        (logical_id, stack.resolver.resolve(definition.get("Properties", {})))
        for logical_id, definition in stack.resources_of_type(resource_type)
    )
    return [(logical_id, props) for logical_id, props in resolved if props.get("ApiId") == api_id]


def _stage_of(stack: DeployedStack, api_id: str) -> str:
    stages = [props["StageName"] for _, props in _of_api(stack, "AWS::ApiGatewayV2::Stage", api_id)]
    return str(stages[0]) if stages else "$default"


def _routes_of(
    stack: DeployedStack, api_id: str, functions: FunctionIndex
) -> dict[str, WebSocketRoute]:
    integrations = {
        stack.resources.physical_id(logical_id): props
        for logical_id, props in _of_api(stack, "AWS::ApiGatewayV2::Integration", api_id)
    }
    routes: dict[str, WebSocketRoute] = {}
    for logical_id, props in _of_api(stack, "AWS::ApiGatewayV2::Route", api_id):
        integration = integrations.get(str(props.get("Target", "")).removeprefix("integrations/"))
        uri = str((integration or {}).get("IntegrationUri", ""))
        match = _INTEGRATION_FUNCTION_ARN.search(uri)
        function = functions.find(match.group(1) if match else uri)
        if function is None:
            logger.warning("%s: no local function behind it, not served", logical_id)
            continue
        key = str(props["RouteKey"])
        routes[key] = WebSocketRoute(key, function, props.get("AuthorizationType") == "AWS_IAM")
    return routes


@dataclass
class WebSocketStats(SharedStats):
    connected: int = 0
    refused: int = 0
    disconnected: int = 0
    messages: int = 0
    posted: int = 0
    gone: int = 0


@dataclass
class _Client:
    connection: ServerConnection
    connection_id: str
    connected_at: float
    identity: dict[str, Any]
    sending: threading.Lock = field(default_factory=threading.Lock)
    """One message at a time: the library refuses a send while a fragmented one is under way."""

    def send(self, message: str | bytes) -> None:
        """In frames no larger than API Gateway's (one frame when it fits)."""
        size = len(message) if isinstance(message, bytes) else len(message.encode())
        with self.sending:
            if size <= WEBSOCKET_FRAME_BYTES:
                self.connection.send(message)
            else:
                self.connection.send(_frames(message))


class LocalWebSocketApi:
    """One WebSocket API of the template on 127.0.0.1, with its Management API beside it."""

    def __init__(
        self,
        spec: WebSocketApiSpec,
        invoke: Invoker,
        api: ApiContext,
        integration_timeout: float = WEBSOCKET_INTEGRATION_TIMEOUT_SECONDS,
    ) -> None:
        self.spec = spec
        self._invoke = invoke
        self._integration_timeout = integration_timeout
        self._api = api
        self._port = 0
        self._server: Server | None = None
        self._thread: threading.Thread | None = None
        self._management = LocalHttpServer(0, _ManagementHandler, self)
        self._clients: dict[str, _Client] = {}
        self._handshakes: dict[ServerConnection, _Client] = {}
        self._lock = threading.Lock()
        self.stats = WebSocketStats()

    @property
    def url(self) -> str:
        return f"ws://{LOCALHOST}:{self._port}/{self.spec.stage}"

    @property
    def management_url(self) -> str:
        """What a function's Management API client takes as endpoint_url (the stage's URL)."""
        return f"http://{LOCALHOST}:{self._management.port}/{self.spec.stage}"

    def start(self) -> None:
        self._management.start()
        self.set_up(True)

    def stop(self) -> None:
        self.set_up(False)
        self._management.stop()

    def set_up(self, up: bool) -> None:
        """Down: every connection is closed ($disconnect runs) and new ones are refused."""
        with self._lock:
            if up == (self._server is not None):
                return
            if up:
                self._server = serve(
                    self._serve,
                    LOCALHOST,
                    self._port,
                    process_request=self._handshake,
                    compression=None,
                    # API Gateway never closes a connection over a late pong (only after 10
                    # idle minutes); the library's server pings did, whenever this busy process
                    # answered late (the soak's pushed workers lost their connection).
                    ping_interval=None,
                    # Past it the library closes the connection with 1009, as API Gateway does.
                    max_size=WEBSOCKET_MESSAGE_BYTES,
                )
                self._port = int(self._server.socket.getsockname()[1])
                self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
                self._thread.start()
                return
            server, thread = self._server, self._thread
            self._server = self._thread = None
        assert server is not None
        assert thread is not None
        server.shutdown()
        for client in self._connected():
            client.connection.close()
        thread.join(5)

    @property
    def is_up(self) -> bool:
        return self._server is not None

    def connection_ids(self) -> list[str]:
        return [client.connection_id for client in self._connected()]

    def _connected(self) -> list[_Client]:
        with self._lock:
            return list(self._clients.values())

    # ------------------------------------------------------------ the WebSocket side

    def _handshake(self, connection: ServerConnection, request: Request) -> Response | None:
        path, _, query = request.path.partition("?")
        if path.rstrip("/") != f"/{self.spec.stage}":
            return connection.respond(HTTPStatus.NOT_FOUND, "Not Found\n")
        route = self.spec.routes.get("$connect")
        headers = {name.lower(): value for name, value in request.headers.raw_items()}
        identity = _identity(connection, headers)
        if route is not None and route.iam_auth:
            caller = self._verify(path, query, headers)
            if isinstance(caller, Denied):
                self.stats.add(refused=1)
                return connection.respond(HTTPStatus.FORBIDDEN, caller.message + "\n")
            identity.update(_iam_identity(caller, self._api.account_id))
        client = _Client(connection, _connection_id(), time.time(), identity)
        if route is not None:
            status = self._call(route, client, "CONNECT", headers=headers)
            if not 200 <= status < 300:
                self.stats.add(refused=1)
                return connection.respond(status, HTTPStatus(status).phrase + "\n")
        with self._lock:
            self._handshakes[connection] = client
        return None

    def _verify(self, path: str, query: str, headers: dict[str, str]) -> LocalPrincipal | Denied:
        signed = SignedRequest(
            method="GET",
            host=headers.get("host", ""),
            raw_path=path,
            raw_query=query,
            headers=headers,
            body=b"",
        )
        return verify(signed, self._api.principals, self._api.region, time.time())

    def _serve(self, connection: ServerConnection) -> None:
        with self._lock:
            client = self._handshakes.pop(connection)
            self._clients[client.connection_id] = client
        self.stats.add(connected=1)
        try:
            for message in connection:
                self.stats.add(messages=1)
                self._route(client, message)
        except ConnectionClosed:
            pass
        finally:
            with self._lock:
                self._clients.pop(client.connection_id, None)
            self.stats.add(disconnected=1)
            route = self.spec.routes.get("$disconnect")
            if route is not None:
                self._call(route, client, "DISCONNECT")

    def _route(self, client: _Client, message: str | bytes) -> None:
        text = message if isinstance(message, str) else message.decode("utf-8", "replace")
        try:
            document = json.loads(text)
            action = document.get("action") if isinstance(document, dict) else None
        except ValueError:
            action = None
        route = self.spec.routes.get(str(action)) if action is not None else None
        route = route or self.spec.routes.get("$default")
        if route is None:
            answer = {"message": _FORBIDDEN_MESSAGE, "connectionId": client.connection_id}
            client.send(json.dumps(answer))
            return
        self._call(route, client, "MESSAGE", body=text)

    def _call(
        self,
        route: WebSocketRoute,
        client: _Client,
        event_type: str,
        *,
        headers: dict[str, str] | None = None,
        body: str | None = None,
    ) -> int:
        """Invoke the route's function; the status API Gateway takes from its answer."""
        event = self._event(route, client, event_type, headers, body)
        try:
            invocation = invoke_within(
                self._invoke, route.function, event, self._integration_timeout
            )
        except PoolClosed:
            return 503
        if invocation is None:
            return 504
        if not invocation.ok:
            return 500
        result = invocation.result
        if isinstance(result, dict) and "statusCode" in result:
            try:
                return int(result["statusCode"])
            except (TypeError, ValueError):
                return 500
        return 200

    def _event(
        self,
        route: WebSocketRoute,
        client: _Client,
        event_type: str,
        headers: dict[str, str] | None,
        body: str | None,
    ) -> dict[str, Any]:
        """The Lambda proxy event API Gateway sends for a WebSocket route."""
        now = time.time()
        request_id = base64.b32encode(uuid.uuid4().bytes[:10]).decode().rstrip("=")
        context: dict[str, Any] = {
            "routeKey": route.route_key,
            "eventType": event_type,
            "extendedRequestId": request_id,
            "requestTime": time.strftime(_REQUEST_TIME_FORMAT, time.gmtime(now)),
            "messageDirection": "IN",
            "stage": self.spec.stage,
            "connectedAt": int(client.connected_at * 1000),
            "requestTimeEpoch": int(now * 1000),
            "identity": client.identity,
            "requestId": request_id,
            "domainName": f"{LOCALHOST}:{self._port}",
            "connectionId": client.connection_id,
            "apiId": self.spec.api_id,
        }
        event: dict[str, Any] = {"requestContext": context, "isBase64Encoded": False}
        if headers is not None:
            event["headers"] = headers
            event["multiValueHeaders"] = {name: [value] for name, value in headers.items()}
        if event_type == "MESSAGE":
            context["messageId"] = request_id
            event["body"] = body
        if event_type == "DISCONNECT":
            context.update(disconnectStatusCode=1000, disconnectReason="")
        return event

    # ------------------------------------------------------------ the Management API side

    def manage(self, method: str, raw_path: str, body: bytes) -> HttpResponse:
        match = _MANAGEMENT_PATH.match(raw_path)
        if match is None or match["stage"] != self.spec.stage:
            return json_response(404, {"message": "Not Found"})
        connection_id = urllib.parse.unquote(match["connection"])
        with self._lock:
            client = self._clients.get(connection_id)
        if client is None:
            self.stats.add(gone=1)
            return _gone()
        if method == "POST":
            return self._post(client, body)
        if method == "DELETE":
            client.connection.close()
            return HttpResponse(204)
        return json_response(
            200,
            {
                "connectedAt": _iso(client.connected_at),
                "identity": {"sourceIp": client.identity.get("sourceIp")},
                "lastActiveAt": _iso(time.time()),
            },
        )

    def _post(self, client: _Client, body: bytes) -> HttpResponse:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        try:
            client.send(body if text is None else text)
        except ConnectionClosed:
            self.stats.add(gone=1)
            return _gone()
        self.stats.add(posted=1)
        return HttpResponse(200)


class _ManagementHandler(QuietHandler):
    server: LocalHttpServer

    def do_request(self) -> None:
        api: LocalWebSocketApi = self.server.app
        body = self.read_body(WEBSOCKET_MESSAGE_BYTES)
        if body is None:
            self.write_response(_payload_too_large())
            return
        self.write_response(api.manage(self.command, self.path.partition("?")[0], body))

    do_GET = do_request
    do_POST = do_request
    do_DELETE = do_request


def _frames(message: str | bytes) -> list[str] | list[bytes]:
    """The message's fragments, each within one frame (a short message is one fragment)."""
    if isinstance(message, str):
        step = _FRAME_CHARACTERS
        return [message[start : start + step] for start in range(0, len(message), step)] or [""]
    step = WEBSOCKET_FRAME_BYTES
    return [message[start : start + step] for start in range(0, len(message), step)] or [b""]


def _payload_too_large() -> HttpResponse:
    """PostToConnection's PayloadTooLargeException (413), as botocore's model reads it."""
    response = json_response(413, {"message": "The data has exceeded the maximum size allowed."})
    headers = {**response.headers, "x-amzn-errortype": "PayloadTooLargeException"}
    return HttpResponse(413, headers, (), response.body)


def _gone() -> HttpResponse:
    response = json_response(410, {"__type": "GoneException", "message": None})
    headers = {**response.headers, "x-amzn-errortype": "GoneException"}
    return HttpResponse(410, headers, (), response.body)


def _connection_id() -> str:
    return base64.b64encode(uuid.uuid4().bytes[:10]).decode()


def _identity(connection: ServerConnection, headers: Mapping[str, str]) -> dict[str, Any]:
    source_ip = connection.remote_address[0] if connection.remote_address else LOCALHOST
    return {"sourceIp": source_ip, "userAgent": headers.get("user-agent", "")}


def _iam_identity(caller: LocalPrincipal, account_id: str) -> dict[str, Any]:
    """requestContext.identity of an IAM-authorised WebSocket connection (REST-style)."""
    return {
        "accessKey": caller.access_key,
        "accountId": account_id,
        "caller": caller.user_id,
        "user": caller.user_id,
        "userArn": caller.user_arn,
        "cognitoIdentityId": None,
        "cognitoIdentityPoolId": None,
        "cognitoAuthenticationType": None,
        "cognitoAuthenticationProvider": None,
    }


def _iso(moment: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))
