"""What each principal is allowed to do, read from the deployed template: each role (inline and
managed policies, tags) and every resource policy the template gives a target.

Resource policies come from AWS::SQS::QueuePolicy, AWS::SNS::TopicPolicy,
AWS::Events::EventBusPolicy, AWS::SecretsManager::ResourcePolicy, AWS::KMS::Key (KeyPolicy) and
AWS::Lambda::Permission (a function's policy). Every value is resolved by the twin's
CloudFormation resolver, as deployed.
"""

import functools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from infra.local.cloudformation.deploy import DeployedStack
from infra.local.iam.authorizer import AuthorizationProfile, Policy
from infra.local.iam.calls import queue_arn
from infra.local.lambda_.functions import FunctionSpec
from infra.local.runtime.aws import ACCOUNT_ID, AwsEndpoint

_AWS_MANAGED_PREFIX = "arn:aws:iam::aws:policy/"
Role = tuple[list[dict[str, Any]], dict[str, str]]
"""A role's identity policies ([{"name", "policy"}]) and its tags."""


class UnsupportedRoleError(ValueError):
    """A role the twin cannot reproduce (no role in the template, say)."""


@dataclass(frozen=True)
class StackPolicies:
    """Every template role and every resource policy of a deployed stack."""

    region: str
    roles: Mapping[str, Role]
    """Role ARN -> its identity policies and tags."""
    resource_policies: Mapping[str, Policy]
    """Resource ARN -> its policy (statements of several policy resources merged)."""
    table_hash_keys: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, stack: DeployedStack, endpoint: AwsEndpoint) -> "StackPolicies":
        return cls(
            region=endpoint.region,
            roles=_roles(stack, endpoint),
            resource_policies=_resource_policies(stack, endpoint.region),
            table_hash_keys=dict(_table_hash_keys(stack)),
        )

    def profile(
        self, role_arn: str, session_name: str, management_apis: Mapping[str, str] | None = None
    ) -> AuthorizationProfile:
        """The principal a service's session of `role_arn` is (a function's, a pipe's, ...)."""
        if role_arn not in self.roles:
            raise UnsupportedRoleError(f"role {role_arn} is no template role")
        identity_policies, tags = self.roles[role_arn]
        return AuthorizationProfile(
            function_name=session_name,
            role_arn=role_arn,
            principal_tags=tags,
            identity_policies=identity_policies,
            resource_policies=dict(self.resource_policies),
            region=self.region,
            table_hash_keys=dict(self.table_hash_keys),
            management_apis=dict(management_apis or {}),
        )


def authorization_profiles(
    stack: DeployedStack,
    specs: Mapping[str, FunctionSpec],
    endpoint: AwsEndpoint,
    management_apis: Mapping[str, str],
    policies: StackPolicies | None = None,
) -> dict[str, AuthorizationProfile]:
    """Each function's profile, by logical id; `management_apis`: local base URL -> API id."""
    policies = policies or StackPolicies.read(stack, endpoint)
    profiles: dict[str, AuthorizationProfile] = {}
    for logical_id, spec in specs.items():
        try:
            profiles[logical_id] = policies.profile(
                spec.role_arn, spec.function_name, management_apis
            )
        except UnsupportedRoleError as unsupported:
            raise UnsupportedRoleError(f"{logical_id}: {unsupported}") from None
    return profiles


def _roles(stack: DeployedStack, endpoint: AwsEndpoint) -> dict[str, Role]:
    """Role ARN -> (identity policies, tags)."""
    roles = {}
    attached = _attached_policies(stack)
    for logical_id, definition in stack.resources_of_type("AWS::IAM::Role"):
        properties = stack.resolver.resolve(definition.get("Properties", {}))
        policies = [
            {"name": str(policy["PolicyName"]), "policy": policy["PolicyDocument"]}
            for policy in properties.get("Policies", [])
        ]
        policies += [
            {"name": str(arn), "policy": _managed_policy(endpoint, str(arn))}
            for arn in properties.get("ManagedPolicyArns", [])
        ]
        policies += attached.get(str(stack.resources.physical_id(logical_id)), [])
        tags = {str(tag["Key"]): str(tag["Value"]) for tag in properties.get("Tags", [])}
        roles[str(stack.resources.attribute(logical_id, "Arn"))] = (policies, tags)
    return roles


def _attached_policies(stack: DeployedStack) -> dict[str, list[dict[str, Any]]]:
    """Role name -> the AWS::IAM::Policy documents the stack attaches to it (a policy of its
    own, as a role that names its function's ARN needs)."""
    attached: dict[str, list[dict[str, Any]]] = {}
    for _, definition in stack.resources_of_type("AWS::IAM::Policy"):
        properties = stack.resolver.resolve(definition.get("Properties", {}))
        policy = {"name": str(properties["PolicyName"]), "policy": properties["PolicyDocument"]}
        for role_name in properties.get("Roles", []):
            attached.setdefault(str(role_name), []).append(policy)
    return attached


def _managed_policy(endpoint: AwsEndpoint, policy_arn: str) -> Policy:
    """An AWS managed policy's document as moto ships it (SAM roles attach
    AWSLambdaBasicExecutionRole), or a customer managed one as the stack created it in moto."""
    if policy_arn.startswith(_AWS_MANAGED_PREFIX):
        name = policy_arn.rsplit("/", 1)[-1]
        return dict(_aws_managed_policies()[name]["Document"])
    iam = endpoint.client("iam")
    version = iam.get_policy(PolicyArn=policy_arn)["Policy"]["DefaultVersionId"]
    document = iam.get_policy_version(PolicyArn=policy_arn, VersionId=version)["PolicyVersion"][
        "Document"
    ]
    return json.loads(unquote(document)) if isinstance(document, str) else dict(document)


@functools.cache
def _aws_managed_policies() -> dict[str, Any]:
    from moto.iam.aws_managed_policies import aws_managed_policies_data

    policies: dict[str, Any] = json.loads(aws_managed_policies_data)
    return policies


def _resource_policies(stack: DeployedStack, region: str) -> dict[str, Policy]:
    merged: dict[str, Policy] = {}
    for arn, policy in _policies_by_resource(stack, region):
        statements = policy["Statement"]
        target = merged.setdefault(arn, {"Version": policy.get("Version", "2012-10-17")})
        target.setdefault("Statement", []).extend(
            statements if isinstance(statements, list) else [statements]
        )
    return merged


def _policies_by_resource(stack: DeployedStack, region: str) -> Iterator[tuple[str, Policy]]:
    def resolved(resource_type: str) -> Iterator[tuple[str, dict[str, Any]]]:
        for logical_id, definition in stack.resources_of_type(resource_type):
            yield logical_id, stack.resolver.resolve(definition.get("Properties", {}))

    for _, properties in resolved("AWS::SQS::QueuePolicy"):
        for url in properties["Queues"]:
            yield queue_arn(str(url), region), properties["PolicyDocument"]
    for _, properties in resolved("AWS::SNS::TopicPolicy"):
        for topic in properties["Topics"]:
            yield str(topic), properties["PolicyDocument"]
    for _, properties in resolved("AWS::SecretsManager::ResourcePolicy"):
        yield str(properties["SecretId"]), properties["ResourcePolicy"]
    for _, properties in resolved("AWS::Events::EventBusPolicy"):
        yield _bus_arn(properties, region), _bus_policy(properties)
    for logical_id, properties in resolved("AWS::KMS::Key"):
        if "KeyPolicy" in properties:  # Ref of a key is its id
            key_id = stack.resources.physical_id(logical_id)
            yield f"arn:aws:kms:{region}:{ACCOUNT_ID}:key/{key_id}", properties["KeyPolicy"]
    for logical_id, properties in _permissions(stack):
        statement = function_policy_statement(logical_id, properties, region)
        yield str(statement["Resource"]), {"Version": "2012-10-17", "Statement": [statement]}


def _permissions(stack: DeployedStack) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every AWS::Lambda::Permission the stack deploys: moto's CloudFormation adds them to its
    functions but lists them with no physical id, so they are read from the template (their
    Condition evaluated as CloudFormation does)."""
    for logical_id, definition in stack.template["Resources"].items():
        if definition["Type"] != "AWS::Lambda::Permission":
            continue
        if "Condition" in definition and not stack.resolver.condition(definition["Condition"]):
            continue
        yield logical_id, stack.resolver.resolve(definition.get("Properties", {}))


def function_policy_statement(
    sid: str, permission: Mapping[str, Any], region: str
) -> dict[str, Any]:
    """The statement an AWS::Lambda::Permission adds to its function's policy, as Lambda's
    AddPermission writes it (https://docs.aws.amazon.com/lambda/latest/dg/access-control-resource-based.html,
    https://docs.aws.amazon.com/lambda/latest/api/API_AddPermission.html): a service principal
    as {"Service": ...}, an account as its root; SourceArn as ArnLike, SourceAccount and
    PrincipalOrgID as StringEquals."""
    function = str(permission["FunctionName"])
    if not function.startswith("arn:"):
        function = f"arn:aws:lambda:{region}:{ACCOUNT_ID}:function:{function}"
    principal = str(permission["Principal"])
    if principal.endswith(".amazonaws.com"):
        principals: Any = {"Service": principal}
    elif principal.isdigit():
        principals = {"AWS": f"arn:aws:iam::{principal}:root"}
    else:
        principals = "*" if principal == "*" else {"AWS": principal}
    conditions: dict[str, dict[str, str]] = {}
    if "SourceArn" in permission:
        conditions["ArnLike"] = {"AWS:SourceArn": str(permission["SourceArn"])}
    for key, condition_key in (
        ("SourceAccount", "AWS:SourceAccount"),
        ("PrincipalOrgID", "aws:PrincipalOrgID"),
        ("FunctionUrlAuthType", "lambda:FunctionUrlAuthType"),
    ):
        if key in permission:
            conditions.setdefault("StringEquals", {})[condition_key] = str(permission[key])
    statement = {
        "Sid": sid,
        "Effect": "Allow",
        "Principal": principals,
        "Action": str(permission["Action"]),
        "Resource": function,
    }
    return {**statement, "Condition": conditions} if conditions else statement


def _bus_arn(properties: Mapping[str, Any], region: str) -> str:
    bus = str(properties.get("EventBusName", "default"))
    if bus.startswith("arn:"):
        return bus
    return f"arn:aws:events:{region}:{ACCOUNT_ID}:event-bus/{bus}"


def _bus_policy(properties: Mapping[str, Any]) -> Policy:
    """An EventBusPolicy gives a whole Policy, or one Statement named by StatementId."""
    if "Policy" in properties:
        return dict(properties["Policy"])
    return {
        "Version": "2012-10-17",
        "Statement": [{"Sid": properties["StatementId"], **properties["Statement"]}],
    }


def _table_hash_keys(stack: DeployedStack) -> Iterator[tuple[str, str]]:
    for logical_id, definition in stack.resources_of_type("AWS::DynamoDB::Table"):
        key_schema = definition.get("Properties", {}).get("KeySchema", [])
        for key in key_schema:
            if key.get("KeyType") == "HASH":
                yield stack.resources.physical_id(logical_id), str(key["AttributeName"])
