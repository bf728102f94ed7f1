"""The request context the authorizer hands the evaluator, its cache and the refusals' shapes
(a recording fake evaluator: no sidecar, no network)."""

from __future__ import annotations

from typing import Any

import pytest

from infra.local.iam.authorizer import AuthorizationProfile, Authorizer
from infra.local.iam.calls import ApiCall
from infra.local.iam.evaluator import Decision, EvaluationError

ROLE = "arn:aws:iam::123456789012:role/stack-PushFunctionRole-ABC"
QUEUE_URL = "http://127.0.0.1:5000/123456789012/dlq"
QUEUE = "arn:aws:sqs:us-east-1:123456789012:dlq"
TABLE = "arn:aws:dynamodb:us-east-1:123456789012:table/Tasks"
QUEUE_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Deny",
            "Principal": "*",
            "Action": "sqs:*",
            "Resource": QUEUE,
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        },
        {
            "Effect": "Deny",
            "Principal": "*",
            "Action": "sqs:SendMessage",
            "Resource": QUEUE,
            "Condition": {
                "ArnNotEquals": {"aws:PrincipalArn": [ROLE]},
                "StringNotEquals": {"aws:PrincipalTag/operator": "true"},
            },
        },
    ],
}
LEADING_KEYS_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Action": "dynamodb:PutItem",
            "Resource": TABLE,
            "Condition": {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["#push-*"]}},
        }
    ],
}


class RecordingEvaluator:
    def __init__(self, decision: Decision) -> None:
        self.decision = decision
        self.simulations: list[dict[str, Any]] = []

    def decide(self, simulation: dict[str, Any]) -> Decision:
        self.simulations.append(simulation)
        return self.decision


ALLOW = Decision(allowed=True, explicit_deny=False, denied_by="")


def profile(**changes: Any) -> AuthorizationProfile:
    fields: dict[str, Any] = {
        "function_name": "stack-PushFunction-XYZ",
        "role_arn": ROLE,
        "principal_tags": {"team": "ops"},
        "identity_policies": [{"name": "push", "policy": LEADING_KEYS_POLICY}],
        "resource_policies": {QUEUE: QUEUE_POLICY},
        "region": "us-east-1",
        "table_hash_keys": {"Tasks": "task_id"},
        **changes,
    }
    return AuthorizationProfile(**fields)


def send() -> ApiCall:
    return ApiCall("sqs", "SendMessage", {"QueueUrl": QUEUE_URL, "MessageBody": "{}"})


def put(task_id: str) -> ApiCall:
    item = {"task_id": {"S": task_id}}
    return ApiCall("dynamodb", "PutItem", {"TableName": "Tasks", "Item": item})


def test_the_context_carries_the_keys_the_policies_test_with_the_role_sessions_values() -> None:
    evaluator = RecordingEvaluator(ALLOW)
    Authorizer(profile(), evaluator).refusal(send())
    (simulation,) = evaluator.simulations
    assert simulation["request"] == {
        "principal": "arn:aws:sts::123456789012:assumed-role/stack-PushFunctionRole-ABC/"
        "stack-PushFunction-XYZ",
        "action": "sqs:SendMessage",
        "resource": {"resource": QUEUE, "accountId": "123456789012"},
        # SecureTransport true: the SDK's HTTPS on AWS; the role lacks the operator tag.
        "contextVariables": {"aws:PrincipalArn": ROLE, "aws:SecureTransport": "true"},
    }
    assert simulation["resourcePolicy"] == QUEUE_POLICY
    assert simulation["identityPolicies"] == [{"name": "push", "policy": LEADING_KEYS_POLICY}]


def test_principal_tags_come_from_the_role() -> None:
    evaluator = RecordingEvaluator(ALLOW)
    Authorizer(profile(principal_tags={"operator": "true"}), evaluator).refusal(send())
    context = evaluator.simulations[0]["request"]["contextVariables"]
    assert context["aws:PrincipalTag/operator"] == "true"


def test_leading_keys_are_the_items_partition_key_and_part_of_the_cache_key() -> None:
    evaluator = RecordingEvaluator(ALLOW)
    authorizer = Authorizer(profile(), evaluator)
    for task_id in ("#push-a", "#push-a", "#push-b"):
        authorizer.refusal(put(task_id))
    leading_keys = [
        s["request"]["contextVariables"]["dynamodb:LeadingKeys"] for s in evaluator.simulations
    ]
    assert leading_keys == [["#push-a"], ["#push-b"]]
    assert "resourcePolicy" not in evaluator.simulations[0]
    assert (authorizer.stats.decisions, authorizer.stats.evaluated) == (3, 2)


def test_a_refusal_is_the_services_error_with_iams_message() -> None:
    denied = Decision(allowed=False, explicit_deny=True, denied_by="resource")
    authorizer = Authorizer(profile(), RecordingEvaluator(denied))
    refusal = authorizer.refusal(put("task-1"))
    assert refusal is not None
    response, parsed = authorizer.denied_response("dynamodb", refusal)
    assert response.status_code == 400
    assert parsed["Error"] == {
        "Code": "AccessDeniedException",
        "Message": "User: arn:aws:sts::123456789012:assumed-role/stack-PushFunctionRole-ABC/"
        f"stack-PushFunction-XYZ is not authorized to perform: dynamodb:PutItem on resource: "
        f"{TABLE} with an explicit deny in a resource-based policy",
    }


def test_a_policy_testing_a_key_the_twin_cannot_fill_fails_loudly() -> None:
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": "sqs:SendMessage",
                "Resource": QUEUE,
                "Condition": {"IpAddress": {"aws:SourceIp": "203.0.113.0/24"}},
            }
        ],
    }
    with pytest.raises(EvaluationError, match="aws:sourceip"):
        Authorizer(
            profile(identity_policies=[{"name": "p", "policy": policy}]), RecordingEvaluator(ALLOW)
        )
