"""Every role the template grants a send is an allowed sender of the resource's own policy.

The queue, bus and topic policies deny sends to every principal but a list of roles; an explicit
Deny in a resource policy overrides any Allow in the caller's identity policy, so a role granted
the send but left out of that list is silently refused on AWS (issue 31, item 4: the compat
submit's dead-letter fallback). https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tests.template.conftest import as_list, of_type

EVALUATION_LOGIC_DOC = (
    "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html"
)
RESOURCE_POLICY_TYPES = {
    "AWS::SQS::QueuePolicy": "PolicyDocument",
    "AWS::SNS::TopicPolicy": "PolicyDocument",
    "AWS::Events::EventBusPolicy": None,  # the statement is the resource's own property
}


@dataclass(frozen=True)
class SenderDeny:
    """A Deny of `action` on `target` to every principal but `exempt` (role logical ids)."""

    policy: str
    sid: str
    action: str
    target: str
    exempt: frozenset[str]


def test_every_role_granted_a_send_is_an_allowed_sender(translated: dict[str, Any]) -> None:
    resources = translated["Resources"]
    denies = list(sender_denies(resources))
    assert {deny.policy for deny in denies} >= {
        "DeadLetterQueuePolicy",
        "ParkingQueuePolicy",
        "ResultEventsDeadLetterQueuePolicy",
        "PingbackForwardFailedQueuePolicy",
        "ResultConsumerFailedQueuePolicy",
        "ResultEventBusPolicy",
        "AlarmTopicPolicy",
    }
    # Not vacuous: the roles the rule protects are found.
    assert roles_granted(resources, "sqs:SendMessage", "DeadLetterQueue") == {
        "SubmitFunctionRole",
        "CompatSubmitFunctionRole",
        "CallbackFunctionRole",
    }
    assert roles_granted(resources, "events:PutEvents", "ResultEventBus") == {
        "ResultEventsPipeRole"
    }
    assert refused_senders(resources) == []


def test_a_sender_missing_from_a_queue_policy_is_named_with_the_rule(
    translated: dict[str, Any],
) -> None:
    resources = copy.deepcopy(translated["Resources"])
    (senders,) = [
        statement
        for statement in resources["DeadLetterQueuePolicy"]["Properties"]["PolicyDocument"][
            "Statement"
        ]
        if statement["Sid"] == "OnlyProducersSend"
    ]
    allowed = senders["Condition"]["ArnNotEquals"]["aws:PrincipalArn"]
    allowed.remove({"Fn::GetAtt": ["CompatSubmitFunctionRole", "Arn"]})
    assert refused_senders(resources) == [
        "CompatSubmitFunctionRole is granted sqs:SendMessage on DeadLetterQueue, but"
        " DeadLetterQueuePolicy (OnlyProducersSend) denies it: an explicit Deny overrides the"
        f" Allow ({EVALUATION_LOGIC_DOC})"
    ]


def test_a_bus_publisher_missing_from_the_bus_policy_is_named(
    translated: dict[str, Any],
) -> None:
    resources = copy.deepcopy(translated["Resources"])
    statement = resources["ResultEventBusPolicy"]["Properties"]["Statement"]
    exempt = statement["Condition"]["ArnNotEquals"]["aws:PrincipalArn"]["Fn::If"]
    exempt[1] = exempt[2] = []
    assert [line.split(",")[0] for line in refused_senders(resources)] == [
        "ResultEventsPipeRole is granted events:PutEvents on ResultEventBus"
    ]


def refused_senders(resources: dict[str, Any]) -> list[str]:
    """One line per role granted a send its target's policy denies it."""
    return [
        f"{role} is granted {deny.action} on {deny.target}, but {deny.policy} ({deny.sid})"
        f" denies it: an explicit Deny overrides the Allow ({EVALUATION_LOGIC_DOC})"
        for deny in sender_denies(resources)
        for role in sorted(roles_granted(resources, deny.action, deny.target) - deny.exempt)
    ]


def sender_denies(resources: dict[str, Any]) -> Iterator[SenderDeny]:
    for policy_name, policy in resources.items():
        if policy["Type"] not in RESOURCE_POLICY_TYPES:
            continue
        for statement in _statements(policy):
            if statement["Effect"] != "Deny" or _denies_plain_http(statement):
                continue
            exempt = _exempt_roles(statement.get("Condition", {}))
            for action in as_list(statement["Action"]):
                for target in as_list(statement["Resource"]):
                    yield SenderDeny(
                        policy_name,
                        str(statement.get("Sid", policy["Properties"].get("StatementId"))),
                        action,
                        _logical_id(target),
                        exempt,
                    )


def roles_granted(resources: dict[str, Any], action: str, target: str) -> set[str]:
    """The roles whose own policies allow `action` on the resource `target` (logical id)."""
    return {
        name
        for name, role in of_type(resources, "AWS::IAM::Role").items()
        for policy in role["Properties"].get("Policies", [])
        for statement in as_list(policy["PolicyDocument"]["Statement"])
        if statement["Effect"] == "Allow"
        and action in as_list(statement["Action"])
        and target in {_logical_id(resource) for resource in as_list(statement["Resource"])}
    }


def _statements(policy: dict[str, Any]) -> list[dict[str, Any]]:
    document_key = RESOURCE_POLICY_TYPES[policy["Type"]]
    properties = policy["Properties"]
    if document_key is None:
        return [properties["Statement"]]
    return list(as_list(properties[document_key]["Statement"]))


def _denies_plain_http(statement: dict[str, Any]) -> bool:
    return statement.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}


def _exempt_roles(condition: dict[str, Any]) -> frozenset[str]:
    """Roles named in the Deny's ArnNotEquals aws:PrincipalArn (every branch of an Fn::If)."""
    listed = condition.get("ArnNotEquals", {}).get("aws:PrincipalArn", [])
    return frozenset(
        arn["Fn::GetAtt"][0]
        for arn in _branches(listed)
        if isinstance(arn, dict) and "Fn::GetAtt" in arn
    )


def _branches(value: Any) -> list[Any]:
    if isinstance(value, dict) and "Fn::If" in value:
        _, when_true, when_false = value["Fn::If"]
        return _branches(when_true) + _branches(when_false)
    return list(as_list(value))


def _logical_id(reference: Any) -> str:
    """The resource a Resource entry names: Fn::GetAtt [X, Arn] or Ref X (else the text)."""
    if isinstance(reference, dict) and "Fn::GetAtt" in reference:
        return str(reference["Fn::GetAtt"][0])
    if isinstance(reference, dict) and "Ref" in reference:
        return str(reference["Ref"])
    return str(reference)
