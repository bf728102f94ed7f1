"""What each function is allowed to do, read from the deployed template: its role (inline and
managed policies, tags) and every resource policy the template gives a target.

Resource policies come from AWS::SQS::QueuePolicy, AWS::SNS::TopicPolicy,
AWS::Events::EventBusPolicy, AWS::SecretsManager::ResourcePolicy and AWS::KMS::Key (KeyPolicy).
Every value is resolved by the twin's CloudFormation resolver, as deployed.
"""

import functools
import json
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import unquote

from infra.local.cloudformation.deploy import DeployedStack
from infra.local.iam.authorizer import AuthorizationProfile, Policy
from infra.local.iam.calls import queue_arn
from infra.local.lambda_.functions import FunctionSpec
from infra.local.runtime.aws import ACCOUNT_ID, AwsEndpoint

_AWS_MANAGED_PREFIX = "arn:aws:iam::aws:policy/"


class UnsupportedRoleError(ValueError):
    """A function's role the twin cannot reproduce (no role in the template, say)."""


def authorization_profiles(
    stack: DeployedStack,
    specs: Mapping[str, FunctionSpec],
    endpoint: AwsEndpoint,
    management_apis: Mapping[str, str],
) -> dict[str, AuthorizationProfile]:
    """Each function's profile, by logical id; `management_apis`: local base URL -> API id."""
    roles = _roles(stack, endpoint)
    resource_policies = _resource_policies(stack, endpoint.region)
    table_hash_keys = dict(_table_hash_keys(stack))
    profiles: dict[str, AuthorizationProfile] = {}
    for logical_id, spec in specs.items():
        if spec.role_arn not in roles:
            raise UnsupportedRoleError(f"{logical_id}: role {spec.role_arn} is no template role")
        identity_policies, tags = roles[spec.role_arn]
        profiles[logical_id] = AuthorizationProfile(
            function_name=spec.function_name,
            role_arn=spec.role_arn,
            principal_tags=tags,
            identity_policies=identity_policies,
            resource_policies=resource_policies,
            region=endpoint.region,
            table_hash_keys=table_hash_keys,
            management_apis=dict(management_apis),
        )
    return profiles


def _roles(
    stack: DeployedStack, endpoint: AwsEndpoint
) -> dict[str, tuple[list[dict[str, Any]], dict[str, str]]]:
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
