"""Authorizes a function's AWS calls as AWS would, before they reach moto.

Each call becomes one or more IAM requests (infra/local/iam/calls.py), each evaluated against
the function's role policies and the target's resource policy by the policy evaluator, with the
request context AWS builds for a Lambda function's role session. AWS's evaluation logic:
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html
(within one account an Allow in either the identity or the resource policy suffices; an explicit
Deny in any wins). The refusal is the error the service answers on AWS, as botocore parses it.
"""

import fnmatch
import json
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from botocore.awsrequest import AWSResponse, HTTPHeaders

from infra.local.iam.calls import ApiCall, CallSite, IamRequest, UnmappedCall, iam_requests
from infra.local.iam.evaluator import Decision, EvaluationError, PolicyEvaluator
from infra.local.runtime.aws import ACCOUNT_ID

Policy = dict[str, Any]

# The request context of a Lambda function's calls with its execution role's session
# (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-keys.html).
# aws:SecureTransport is "true": on AWS the SDK calls every service over HTTPS, although the
# twin's workers talk plain HTTP to moto on loopback.
_ABSENT_FOR_ROLE_SESSIONS = frozenset(
    key.lower()
    for key in (
        "aws:SourceAccount",
        "aws:SourceArn",
        "aws:SourceOrgID",
        "aws:SourceOrgPaths",
        "aws:PrincipalServiceName",
        "aws:PrincipalServiceNamesList",
        "aws:CalledVia",
        "aws:CalledViaFirst",
        "aws:CalledViaLast",
        "aws:SourceVpc",
        "aws:SourceVpce",
        "aws:VpcSourceIp",
        "aws:MultiFactorAuthPresent",
        "aws:MultiFactorAuthAge",
        "aws:username",
        "aws:FederatedProvider",
    )
)
_LEADING_KEYS = "dynamodb:LeadingKeys"
# Actions whose partition keys calls.py does not read: a policy conditioned on them fails loudly.
_NO_LEADING_KEYS = frozenset({"dynamodb:Query"})
# Decisions kept per worker: the keys differ per partition key where a policy tests
# dynamodb:LeadingKeys (one per WebSocket connection record), so the cache is bounded.
_MAX_DECISIONS = 10_000


@dataclass(frozen=True)
class AuthorizationProfile:
    """One function's principal and every policy that can decide its calls (JSON for workers)."""

    function_name: str
    role_arn: str
    principal_tags: dict[str, str]
    identity_policies: list[dict[str, Any]]
    """[{"name": ..., "policy": {...}}], inline policies then managed ones."""
    resource_policies: dict[str, Policy]
    """Resource ARN -> its policy (statements of several policy resources merged)."""
    region: str
    account: str = ACCOUNT_ID
    table_hash_keys: dict[str, str] = field(default_factory=dict)
    management_apis: dict[str, str] = field(default_factory=dict)

    @property
    def session_arn(self) -> str:
        """Lambda's session of the execution role: assumed-role/<role name>/<function name>."""
        role_name = self.role_arn.rsplit("/", 1)[-1]
        return f"arn:aws:sts::{self.account}:assumed-role/{role_name}/{self.function_name}"

    @property
    def call_site(self) -> CallSite:
        return CallSite(self.region, self.account, self.table_hash_keys, self.management_apis)

    def policies(self) -> Iterator[Policy]:
        for identity_policy in self.identity_policies:
            yield identity_policy["policy"]
        yield from self.resource_policies.values()

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> "AuthorizationProfile":
        return cls(**document)


@dataclass(frozen=True)
class Refusal:
    request: IamRequest
    decision: Decision

    def __str__(self) -> str:
        decision = self.decision
        why = f"explicit Deny ({decision.denied_by})" if decision.explicit_deny else "no Allow"
        return f"{self.request.action} on {self.request.resource}: {why}"


@dataclass
class AuthorizerStats:
    decisions: int = 0
    evaluated: int = 0
    """Decisions the evaluator made (the others came from the cache)."""
    seconds: float = 0.0
    """Time spent deciding, cache hits included."""


class Authorizer:
    """One function's authorizer; decisions are cached by (action, resource, context)."""

    def __init__(self, profile: AuthorizationProfile, evaluator: PolicyEvaluator) -> None:
        self._profile = profile
        self._site = profile.call_site
        self._evaluator = evaluator
        self._referenced = _referenced_condition_keys(profile)
        self._leading_keys_tested_by = _actions_testing(profile, _LEADING_KEYS)
        self._principal_context = self._principal_values()
        self._decisions: dict[tuple[str, str, str], Decision] = {}
        self._lock = threading.Lock()
        self.stats = AuthorizerStats()

    def refusal(self, call: ApiCall) -> Refusal | None:
        """The first IAM request of the call that AWS would deny, or None."""
        started = time.perf_counter()
        try:
            for request in iam_requests(call, self._site):
                decision = self._decide(request)
                if not decision.allowed:
                    return Refusal(request, decision)
            return None
        finally:
            with self._lock:
                self.stats.seconds += time.perf_counter() - started

    def denied_response(self, service: str, refusal: Refusal) -> tuple[AWSResponse, dict[str, Any]]:
        return access_denied(service, self._profile, refusal)

    def _decide(self, request: IamRequest) -> Decision:
        context = self._context(request)
        key = (request.action, request.resource, json.dumps(context, sort_keys=True))
        with self._lock:
            self.stats.decisions += 1
            known = self._decisions.get(key)
        if known is not None:
            return known
        decision = self._evaluator.decide(self._simulation(request, context))
        with self._lock:
            if len(self._decisions) >= _MAX_DECISIONS:
                self._decisions.clear()
            self._decisions[key] = decision
            self.stats.evaluated += 1
        return decision

    def _simulation(self, request: IamRequest, context: dict[str, Any]) -> dict[str, Any]:
        profile = self._profile
        simulation: dict[str, Any] = {
            "request": {
                "principal": profile.session_arn,
                "action": request.action,
                "resource": {"resource": request.resource, "accountId": profile.account},
                "contextVariables": context,
            },
            "identityPolicies": profile.identity_policies,
            "serviceControlPolicies": [],
            "resourceControlPolicies": [],
        }
        resource_policy = profile.resource_policies.get(request.resource)
        if resource_policy is not None:
            simulation["resourcePolicy"] = resource_policy
        return simulation

    def _principal_values(self) -> dict[str, str]:
        profile = self._profile
        values = {
            "aws:PrincipalArn": profile.role_arn,
            "aws:PrincipalAccount": profile.account,
            "aws:PrincipalType": "AssumedRole",
            "aws:PrincipalIsAWSService": "false",
            "aws:ViaAWSService": "false",
            "aws:SecureTransport": "true",
            "aws:RequestedRegion": profile.region,
            **{f"aws:PrincipalTag/{key}": value for key, value in profile.principal_tags.items()},
        }
        known = {key.lower() for key in values} | {_LEADING_KEYS.lower()}
        unknown = {
            key
            for key in self._referenced - known - _ABSENT_FOR_ROLE_SESSIONS
            if not key.startswith("aws:principaltag/")  # a tag the role lacks: absent
        }
        if unknown:
            raise EvaluationError(
                f"the twin does not know the value of condition key(s) {sorted(unknown)} "
                f"for {profile.function_name}'s calls: add them to infra/local/iam/authorizer.py"
            )
        return {key: value for key, value in values.items() if key.lower() in self._referenced}

    def _context(self, request: IamRequest) -> dict[str, Any]:
        context: dict[str, Any] = dict(self._principal_context)
        if _LEADING_KEYS.lower() in self._referenced and request.action.startswith("dynamodb:"):
            tested = any(
                fnmatch.fnmatchcase(request.action.lower(), pattern)
                for pattern in self._leading_keys_tested_by
            )
            if request.action in _NO_LEADING_KEYS and tested:
                raise UnmappedCall(f"{request.action}: dynamodb:LeadingKeys is not read")
            if request.leading_keys is not None:
                context[_LEADING_KEYS] = list(request.leading_keys)
        return context


def _referenced_condition_keys(profile: AuthorizationProfile) -> frozenset[str]:
    """Every condition key any policy of the profile tests, lowercased (keys ignore case)."""
    keys: set[str] = set()
    for policy in profile.policies():
        statements = policy.get("Statement", [])
        for statement in statements if isinstance(statements, list) else [statements]:
            for operands in statement.get("Condition", {}).values():
                keys.update(str(key).lower() for key in operands)
    return frozenset(keys)


def _actions_testing(profile: AuthorizationProfile, key: str) -> frozenset[str]:
    """The action patterns (lowercased) of the statements that test condition ``key``: a key
    the twin cannot read matters only to the calls those statements are about."""
    patterns: set[str] = set()
    for policy in profile.policies():
        statements = policy.get("Statement", [])
        for statement in statements if isinstance(statements, list) else [statements]:
            tested = {
                str(name).lower()
                for operands in statement.get("Condition", {}).values()
                for name in operands
            }
            if key.lower() in tested:
                actions = statement.get("Action", [])
                for action in actions if isinstance(actions, list) else [actions]:
                    patterns.add(str(action).lower())
    return frozenset(patterns)


# ---------------------------------------------------------------- the services' refusals
# What each service answers, as botocore parses it:
# - DynamoDB, SSM, Secrets Manager, EventBridge (JSON protocols): AccessDeniedException, 400
#   https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/CommonErrors.html
# - SQS: AccessDenied, 403, "Access to the resource https://sqs.<region>.amazonaws.com/ is denied."
#   https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/troubleshooting-access-denied.html
# - CloudWatch (query protocol): AccessDenied, 403
# - SNS: AuthorizationError, 403 (https://docs.aws.amazon.com/sns/latest/api/API_Publish.html)
# - API Gateway Management API: ForbiddenException, 403 (botocore's apigatewaymanagementapi model)
# - Lambda (REST-JSON): AccessDeniedException, 403, with IAM's message
# IAM's message: https://docs.aws.amazon.com/IAM/latest/UserGuide/troubleshoot_access-denied.html
_JSON_DENIED = ("AccessDeniedException", 400)
_DENIED_BY_SERVICE = {
    "sqs": ("AccessDenied", 403),
    "cloudwatch": ("AccessDenied", 403),
    "sns": ("AuthorizationError", 403),
    "apigatewaymanagementapi": ("ForbiddenException", 403),
    "lambda": ("AccessDeniedException", 403),
}


def access_denied(
    service: str, profile: AuthorizationProfile, refusal: Refusal
) -> tuple[AWSResponse, dict[str, Any]]:
    code, status = _DENIED_BY_SERVICE.get(service, _JSON_DENIED)
    parsed = {
        "Error": {"Code": code, "Message": _message(service, profile, refusal)},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    return AWSResponse("", status, HTTPHeaders(), None), parsed


def _message(service: str, profile: AuthorizationProfile, refusal: Refusal) -> str:
    if service == "sqs":
        return f"Access to the resource https://sqs.{profile.region}.amazonaws.com/ is denied."
    if service == "apigatewaymanagementapi":
        return "Forbidden"
    action, resource = refusal.request.action, refusal.request.resource
    decision = refusal.decision
    policy_type = "resource-based" if decision.denied_by == "resource" else "identity-based"
    why = (
        f"with an explicit deny in a {policy_type} policy"
        if decision.explicit_deny
        else f"because no identity-based policy allows the {action} action"
    )
    return (
        f"User: {profile.session_arn} is not authorized to perform: {action} "
        f"on resource: {resource} {why}"
    )
