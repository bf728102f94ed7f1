"""Botocore hooks that account for every AWS call and apply fault rules: the one mechanism the
local stack's workers, the bench and the handler tests count calls and make AWS fail with.

A worker installs them before the handler module is imported, through botocore's list of
built-in handlers, so every session and client the function creates (boto3 default session,
Powertools' own sessions) carries them; the bench and tests attach them to one session or client.
A call is accounted once however many times botocore retries it. With an authorizer (the local
stack's workers), a call AWS would refuse is answered with the service's AccessDenied error
before it reaches moto (infra/local/iam).
"""

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

import botocore.handlers
from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.exceptions import EndpointConnectionError
from botocore.hooks import BaseEventHooks

from infra.local.iam.authorizer import Authorizer
from infra.local.iam.calls import ApiCall
from infra.local.runtime.calls import OUTCOME_OK, AwsCall
from infra.local.runtime.faults import FaultRule

CRASH_EXIT_CODE = 70
KEY_ATTRIBUTE = "task_id"
_FACTS = "pingback_guard_local_call"
_INJECTED = "pingback_guard_local_fault"
_PARAMS = "pingback_guard_local_params"
_NETWORK_FAULTS = ("crash", "unavailable")
_CRASH_AFTER = "crash_after"
_THROTTLE_CODES = {"dynamodb": "ProvisionedThroughputExceededException"}
_DEFAULT_THROTTLE_CODE = "ThrottlingException"


@dataclass(frozen=True)
class _CallFacts:
    service: str
    operation: str
    started: float
    table: str | None
    task_ids: tuple[str, ...]
    update_expression: str | None
    condition_expression: str | None


class AwsCallHooks:
    def __init__(
        self,
        function: str,
        report: Callable[[AwsCall], None],
        authorizer: Authorizer | None = None,
    ) -> None:
        self._function = function
        self._report = report
        self._authorizer = authorizer
        self._rules: tuple[FaultRule, ...] = ()
        self._lock = threading.Lock()
        self.request_id: str | None = None

    def set_rules(self, rules: tuple[FaultRule, ...]) -> None:
        with self._lock:
            self._rules = rules

    def install(self) -> None:
        """Into every session and client created from now on, in this process."""
        botocore.handlers.BUILTIN_HANDLERS.extend(self._handlers())

    def attach(self, events: BaseEventHooks) -> None:
        """Into one session's or client's events (a session: before its clients are created)."""
        for event_name, handler in self._handlers():
            events.register(event_name, handler)

    def _handlers(self) -> list[tuple[str, Callable[..., Any]]]:
        return [
            ("before-parameter-build", self._remember_call),
            ("before-call", self._before_call),
            ("after-call", self._account_response),
            ("after-call-error", self._account_exception),
        ]

    def _remember_call(
        self, params: Mapping[str, Any], model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        context[_PARAMS] = dict(params)
        context[_FACTS] = _CallFacts(
            service=model.service_model.service_name,
            operation=model.name,
            started=time.monotonic(),
            table=_table_name(params),
            task_ids=tuple(_task_ids(params)),
            update_expression=_text(params.get("UpdateExpression")),
            condition_expression=_text(params.get("ConditionExpression")),
        )

    def _before_call(
        self, params: Mapping[str, Any], context: dict[str, Any], **_: Any
    ) -> tuple[AWSResponse, dict[str, Any]] | None:
        """A fault that keeps the call from reaching AWS, then IAM's decision, then the rest."""
        facts: _CallFacts | None = context.get(_FACTS)
        if facts is None:
            return None
        rule = self._firing_rule(facts)
        if rule is not None and rule.mode in _NETWORK_FAULTS:
            self._fail_before_sending(facts, rule, params)
        if self._authorizer is not None:
            call = ApiCall(facts.service, facts.operation, context[_PARAMS], params.get("url", ""))
            refusal = self._authorizer.refusal(call)
            if refusal is not None:
                # In the function's log, where a refused grant is looked for first.
                print(f"[twin IAM] {facts.operation} refused: {refusal}", file=sys.stderr)
                return self._authorizer.denied_response(facts.service, refusal)
        return None if rule is None else self._apply_fault(facts, rule, context)

    def _fail_before_sending(
        self, facts: _CallFacts, rule: FaultRule, params: Mapping[str, Any]
    ) -> NoReturn:
        if rule.mode == "crash":
            self._send(facts, "WorkerCrashed", injected=rule.mode, answered=False)
            _crash()
        self._send(facts, EndpointConnectionError.__name__, injected=rule.mode, answered=False)
        raise EndpointConnectionError(endpoint_url=params.get("url", ""))

    def _apply_fault(
        self, facts: _CallFacts, rule: FaultRule, context: dict[str, Any]
    ) -> tuple[AWSResponse, dict[str, Any]] | None:
        context[_INJECTED] = rule.mode
        if rule.mode == "delay":
            time.sleep(rule.delay_seconds)
            return None
        if rule.mode == _CRASH_AFTER:
            return None  # sent as it is; the worker ends once it is answered
        return _throttled(facts.service)

    def _account_response(
        self,
        http_response: AWSResponse,
        parsed: Mapping[str, Any],
        context: dict[str, Any],
        **_: Any,
    ) -> None:
        facts: _CallFacts | None = context.get(_FACTS)
        if facts is None:
            return
        status = http_response.status_code
        outcome = (
            OUTCOME_OK if status < 300 else parsed.get("Error", {}).get("Code", f"HTTP{status}")
        )
        scanned = parsed.get("ScannedCount")
        self._send(
            facts,
            str(outcome),
            injected=context.get(_INJECTED),
            scanned_count=None if scanned is None else int(scanned),
        )
        if context.get(_INJECTED) == _CRASH_AFTER:
            _crash()

    def _account_exception(self, exception: Exception, context: dict[str, Any], **_: Any) -> None:
        facts: _CallFacts | None = context.get(_FACTS)
        if facts is not None:
            self._send(facts, type(exception).__name__, answered=False)

    def _firing_rule(self, facts: _CallFacts) -> FaultRule | None:
        with self._lock:
            rules = self._rules
        for rule in rules:
            if rule.fires_for(self._function, facts.service, facts.operation):
                return rule
        return None

    def _send(
        self,
        facts: _CallFacts,
        outcome: str,
        injected: str | None = None,
        answered: bool = True,
        scanned_count: int | None = None,
    ) -> None:
        self._report(
            AwsCall(
                function=self._function,
                service=facts.service,
                operation=facts.operation,
                outcome=outcome,
                time=time.time(),
                duration_ms=round((time.monotonic() - facts.started) * 1000, 3),
                request_id=self.request_id,
                injected=injected,
                table=facts.table,
                task_ids=facts.task_ids,
                update_expression=facts.update_expression,
                condition_expression=facts.condition_expression,
                answered=answered,
                scanned_count=scanned_count,
            )
        )


def _crash() -> NoReturn:
    """Like a runtime killed mid-request: no cleanup, no response."""
    os._exit(CRASH_EXIT_CODE)


def _throttled(service: str) -> tuple[AWSResponse, dict[str, Any]]:
    code = _THROTTLE_CODES.get(service, _DEFAULT_THROTTLE_CODE)
    parsed = {
        "Error": {"Code": code, "Message": "Rate exceeded (fault injected by the local stack)"},
        "ResponseMetadata": {"HTTPStatusCode": 400},
    }
    return AWSResponse("", 400, HTTPHeaders(), None), parsed


def _table_name(params: Mapping[str, Any]) -> str | None:
    if "TableName" in params:
        return str(params["TableName"])
    for item in params.get("TransactItems", []):
        for operation in item.values():
            return str(operation.get("TableName"))
    for table in params.get("RequestItems", {}):
        return str(table)
    return None


def _text(value: Any) -> str | None:
    """An expression as written; None for the objects boto3's resource layer has not yet built."""
    return value if isinstance(value, str) else None


def _task_ids(params: Mapping[str, Any]) -> Iterator[str]:
    for key_or_item in _keys_and_items(params):
        value = key_or_item.get(KEY_ATTRIBUTE)
        if isinstance(value, dict) and "S" in value:
            yield str(value["S"])
        elif isinstance(value, str):
            yield value


def _keys_and_items(params: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every item or key in a DynamoDB request, whatever the operation."""
    for name in ("Key", "Item"):
        if name in params:
            yield params[name]
    for transact_item in params.get("TransactItems", []):
        for operation in transact_item.values():
            yield from _keys_and_items(operation)
    for requests in params.get("RequestItems", {}).values():
        if isinstance(requests, dict):
            yield from requests.get("Keys", [])
            continue
        for request in requests:
            for operation in request.values():
                yield from _keys_and_items(operation)
