"""Fn::GetAtt values of resources moto's CloudFormation created, read back through moto's APIs."""

from collections.abc import Callable
from typing import Any

from infra.local.cloudformation.intrinsics import UnresolvableError
from infra.local.runtime.aws import ACCOUNT_ID, AwsEndpoint

AttributeReader = Callable[[AwsEndpoint, str], dict[str, Any]]


def _queue(endpoint: AwsEndpoint, queue_url: str) -> dict[str, Any]:
    attributes = endpoint.client("sqs").get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["QueueArn"]
    )["Attributes"]
    return {
        "Arn": attributes["QueueArn"],
        "QueueName": queue_url.rstrip("/").rsplit("/", 1)[-1],
        "QueueUrl": queue_url,
    }


def _table(endpoint: AwsEndpoint, table_name: str) -> dict[str, Any]:
    table = endpoint.client("dynamodb").describe_table(TableName=table_name)["Table"]
    return {"Arn": table["TableArn"], "StreamArn": table.get("LatestStreamArn")}


def _function(endpoint: AwsEndpoint, function_name: str) -> dict[str, Any]:
    configuration = endpoint.client("lambda").get_function(FunctionName=function_name)[
        "Configuration"
    ]
    return {"Arn": configuration["FunctionArn"]}


def _role(endpoint: AwsEndpoint, role_name: str) -> dict[str, Any]:
    role = endpoint.client("iam").get_role(RoleName=role_name)["Role"]
    return {"Arn": role["Arn"], "RoleId": role["RoleId"]}


def _topic(_endpoint: AwsEndpoint, topic_arn: str) -> dict[str, Any]:
    return {"TopicArn": topic_arn, "TopicName": topic_arn.rsplit(":", 1)[-1]}


def _key(endpoint: AwsEndpoint, key_id: str) -> dict[str, Any]:
    metadata = endpoint.client("kms").describe_key(KeyId=key_id)["KeyMetadata"]
    return {"Arn": metadata["Arn"], "KeyId": metadata["KeyId"]}


def _log_group(endpoint: AwsEndpoint, name: str) -> dict[str, Any]:
    return {"Arn": f"arn:aws:logs:{endpoint.region}:{ACCOUNT_ID}:log-group:{name}:*"}


def _rule(endpoint: AwsEndpoint, name: str) -> dict[str, Any]:
    return {"Arn": endpoint.client("events").describe_rule(Name=name)["Arn"]}


def _parameter(endpoint: AwsEndpoint, name: str) -> dict[str, Any]:
    parameter = endpoint.client("ssm").get_parameter(Name=name)["Parameter"]
    return {"Type": parameter["Type"], "Value": parameter["Value"]}


def _bucket(endpoint: AwsEndpoint, name: str) -> dict[str, Any]:
    return {
        "Arn": f"arn:aws:s3:::{name}",
        "DomainName": f"{name}.s3.amazonaws.com",
        "RegionalDomainName": f"{name}.s3.{endpoint.region}.amazonaws.com",
    }


def _managed_policy(_endpoint: AwsEndpoint, policy_arn: str) -> dict[str, Any]:
    return {"PolicyArn": policy_arn}


_READERS: dict[str, AttributeReader] = {
    "AWS::SQS::Queue": _queue,
    "AWS::DynamoDB::Table": _table,
    "AWS::Lambda::Function": _function,
    "AWS::IAM::Role": _role,
    "AWS::IAM::ManagedPolicy": _managed_policy,
    "AWS::SNS::Topic": _topic,
    "AWS::KMS::Key": _key,
    "AWS::Logs::LogGroup": _log_group,
    "AWS::Events::Rule": _rule,
    "AWS::SSM::Parameter": _parameter,
    "AWS::S3::Bucket": _bucket,
}


def read_attributes(endpoint: AwsEndpoint, resource_type: str, physical_id: str) -> dict[str, Any]:
    reader = _READERS.get(resource_type)
    if reader is None:
        raise UnresolvableError(f"Fn::GetAtt on {resource_type} is not supported locally")
    return reader(endpoint, physical_id)
