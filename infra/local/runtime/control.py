"""The control API on 127.0.0.1, for tests, the chaos runner and benchmarks.

POST   /_local/invoke/{LogicalId}   body = event (empty: {}); returns the invocation
POST   /_local/gateway              {"up": false} | {"up": true}
GET    /_local/faults               the fault rules in force
POST   /_local/faults               a list of rules (or {"rules": [...]}): replaces them
DELETE /_local/faults               removes every rule
GET    /_local/calls?since=N        AWS call accounting (counts, and the calls numbered above N)
DELETE /_local/calls                forgets the accounting so far
GET    /_local/health               gateway state, per-function and per-poller statistics
GET    /_local/info                 the ready line's document
GET    /_local/alarms               alarm states and every state change (local CloudWatch)
"""

import json
import urllib.parse
from collections.abc import Callable
from typing import Any, Protocol

from infra.local.apigateway.http_api import HttpResponse, json_response
from infra.local.lambda_.pool import Invocation, PoolClosed
from infra.local.runtime.faults import FaultRule, InvalidFaultRule
from infra.local.runtime.http_server import LocalHttpServer, QuietHandler

_PREFIX = "/_local/"
_MAX_BODY_BYTES = 16 * 1024 * 1024


class ControlTarget(Protocol):
    def invoke(self, logical_id: str, event: Any) -> Invocation: ...

    def set_gateway(self, up: bool) -> None: ...

    def faults(self) -> list[FaultRule]: ...

    def set_faults(self, rules: list[FaultRule]) -> None: ...

    def calls_report(self, since: int = 0) -> dict[str, Any]: ...

    def reset_calls(self) -> None: ...

    def health(self) -> dict[str, Any]: ...

    def info(self) -> dict[str, Any]: ...

    def alarms(self) -> dict[str, Any]: ...


class BadRequest(ValueError):
    pass


class UnknownFunction(LookupError):
    """No function with this logical id in the template."""


class ControlApi:
    def __init__(self, target: ControlTarget) -> None:
        self._target = target

    def handle(self, method: str, path: str, query: dict[str, str], body: bytes) -> HttpResponse:
        if not path.startswith(_PREFIX):
            return json_response(404, {"message": "Not Found"})
        resource, _, argument = path[len(_PREFIX) :].partition("/")
        action = self._actions().get((method, resource))
        if action is None:
            return json_response(404, {"message": f"no {method} /_local/{resource}"})
        try:
            return json_response(200, action(argument, query, body))
        except (BadRequest, InvalidFaultRule, json.JSONDecodeError) as invalid:
            return json_response(400, {"message": str(invalid)})
        except UnknownFunction as unknown:
            return json_response(404, {"message": f"no function {unknown}"})
        except PoolClosed:
            return json_response(503, {"message": "the local stack is stopping"})

    def _actions(self) -> dict[tuple[str, str], Callable[[str, dict[str, str], bytes], Any]]:
        target = self._target
        return {
            ("POST", "invoke"): lambda name, _q, body: target.invoke(
                name, _json(body, {})
            ).to_json(),
            ("POST", "gateway"): self._switch_gateway,
            ("GET", "faults"): lambda _a, _q, _b: [rule.to_json() for rule in target.faults()],
            ("POST", "faults"): self._set_faults,
            ("DELETE", "faults"): lambda _a, _q, _b: self._replace_faults([]),
            ("GET", "calls"): lambda _a, query, _b: target.calls_report(int(query.get("since", 0))),
            ("DELETE", "calls"): lambda _a, _q, _b: target.reset_calls(),
            ("GET", "health"): lambda _a, _q, _b: target.health(),
            ("GET", "info"): lambda _a, _q, _b: target.info(),
            ("GET", "alarms"): lambda _a, _q, _b: target.alarms(),
        }

    def _switch_gateway(self, _argument: str, _query: dict[str, str], body: bytes) -> Any:
        document = _json(body, None)
        if not isinstance(document, dict) or not isinstance(document.get("up"), bool):
            raise BadRequest('expected {"up": true} or {"up": false}')
        self._target.set_gateway(document["up"])
        return {"up": document["up"]}

    def _set_faults(self, _argument: str, _query: dict[str, str], body: bytes) -> Any:
        document = _json(body, None)
        rules = document.get("rules") if isinstance(document, dict) else document
        if not isinstance(rules, list):
            raise BadRequest('expected a list of fault rules or {"rules": [...]}')
        return self._replace_faults([FaultRule.from_json(rule) for rule in rules])

    def _replace_faults(self, rules: list[FaultRule]) -> Any:
        self._target.set_faults(rules)
        return [rule.to_json() for rule in rules]


def _json(body: bytes, default: Any) -> Any:
    return json.loads(body) if body.strip() else default


class _ControlHandler(QuietHandler):
    server: LocalHttpServer

    def do_request(self) -> None:
        api: ControlApi = self.server.app
        body = self.read_body(_MAX_BODY_BYTES)
        if body is None:
            self.write_response(json_response(413, {"message": "Request Entity Too Large"}))
            return
        path, _, raw_query = self.path.partition("?")
        query = dict(urllib.parse.parse_qsl(raw_query))
        self.write_response(api.handle(self.command, path, query, body))

    do_GET = do_request
    do_POST = do_request
    do_DELETE = do_request


def control_server(target: ControlTarget, port: int) -> LocalHttpServer:
    return LocalHttpServer(port, _ControlHandler, ControlApi(target))
