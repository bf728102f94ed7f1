"""Which IAM action on which ARN each API call the functions make asks for, and the policy
statement a Lambda permission adds (no network)."""

from __future__ import annotations

from typing import Any

import pytest

from infra.local.iam.calls import ApiCall, CallSite, IamRequest, UnmappedCall, iam_requests
from infra.local.iam.profiles import function_policy_statement

SITE = CallSite(
    region="eu-west-1",
    account="123456789012",
    table_hash_keys={"Tasks": "task_id"},
    management_apis={"http://127.0.0.1:4510": "abc123"},
)
TABLE = "arn:aws:dynamodb:eu-west-1:123456789012:table/Tasks"
QUEUE_URL = "http://127.0.0.1:5000/123456789012/pingback-guard-DeadLetterQueue-X"
QUEUE = "arn:aws:sqs:eu-west-1:123456789012:pingback-guard-DeadLetterQueue-X"


def key(task_id: str) -> dict[str, Any]:
    return {"task_id": {"S": task_id}}


POLLER_ARN = "arn:aws:lambda:eu-west-1:123456789012:function:poller"
STREAM = f"{TABLE}/stream/2026-12-05T09:00:00.000"


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (
            ApiCall("dynamodb", "UpdateItem", {"TableName": "Tasks", "Key": key("t1")}),
            [IamRequest("dynamodb:UpdateItem", TABLE, ("t1",))],
        ),
        (
            ApiCall("dynamodb", "PutItem", {"TableName": "Tasks", "Item": key("#push-c")}),
            [IamRequest("dynamodb:PutItem", TABLE, ("#push-c",))],
        ),
        (
            ApiCall("dynamodb", "Query", {"TableName": "Tasks", "IndexName": "DueIndex"}),
            [IamRequest("dynamodb:Query", f"{TABLE}/index/DueIndex")],
        ),
        (
            ApiCall("dynamodb", "Query", {"TableName": "Tasks"}),
            [IamRequest("dynamodb:Query", TABLE)],
        ),
        (
            ApiCall(
                "dynamodb",
                "TransactWriteItems",
                {
                    "TransactItems": [
                        {"Update": {"TableName": "Tasks", "Key": key("a")}},
                        {"Put": {"TableName": "Tasks", "Item": key("b")}},
                        {"ConditionCheck": {"TableName": "Tasks", "Key": key("c")}},
                        {"Delete": {"TableName": "Tasks", "Key": key("d")}},
                    ]
                },
            ),
            [
                IamRequest("dynamodb:UpdateItem", TABLE, ("a",)),
                IamRequest("dynamodb:PutItem", TABLE, ("b",)),
                IamRequest("dynamodb:ConditionCheckItem", TABLE, ("c",)),
                IamRequest("dynamodb:DeleteItem", TABLE, ("d",)),
            ],
        ),
        (
            ApiCall(
                "dynamodb",
                "BatchGetItem",
                {
                    "RequestItems": {
                        "Tasks": {
                            "Keys": [
                                {"task_id": {"S": "7"}},
                                {"task_id": {"S": "#push-c"}},
                                {"task_id": {"S": "7"}},
                            ]
                        }
                    }
                },
            ),
            [IamRequest("dynamodb:BatchGetItem", TABLE, ("7", "#push-c"))],
        ),
        (
            ApiCall(
                "dynamodb",
                "BatchWriteItem",
                {
                    "RequestItems": {
                        "Tasks": [
                            {"PutRequest": {"Item": {"task_id": {"S": "#push-a"}}}},
                            {"DeleteRequest": {"Key": {"task_id": {"S": "#push-b"}}}},
                        ]
                    }
                },
            ),
            [IamRequest("dynamodb:BatchWriteItem", TABLE, ("#push-a", "#push-b"))],
        ),
        (
            ApiCall("sqs", "SendMessage", {"QueueUrl": QUEUE_URL, "MessageBody": "{}"}),
            [IamRequest("sqs:SendMessage", QUEUE)],
        ),
        (
            ApiCall("sqs", "SendMessageBatch", {"QueueUrl": QUEUE_URL, "Entries": []}),
            [IamRequest("sqs:SendMessage", QUEUE)],
        ),
        (
            ApiCall("sqs", "DeleteMessageBatch", {"QueueUrl": QUEUE_URL, "Entries": []}),
            [IamRequest("sqs:DeleteMessage", QUEUE)],
        ),
        (
            ApiCall("ssm", "GetParameter", {"Name": "/pingback-guard/provider-api-key"}),
            [
                IamRequest(
                    "ssm:GetParameter",
                    "arn:aws:ssm:eu-west-1:123456789012:parameter/pingback-guard/provider-api-key",
                )
            ],
        ),
        (
            ApiCall(
                "secretsmanager",
                "GetSecretValue",
                {"SecretId": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:cb-AbC123"},
            ),
            [
                IamRequest(
                    "secretsmanager:GetSecretValue",
                    "arn:aws:secretsmanager:eu-west-1:123456789012:secret:cb-AbC123",
                )
            ],
        ),
        (
            ApiCall("events", "PutEvents", {"Entries": [{"EventBusName": "results"}, {}]}),
            [
                IamRequest(
                    "events:PutEvents", "arn:aws:events:eu-west-1:123456789012:event-bus/default"
                ),
                IamRequest(
                    "events:PutEvents", "arn:aws:events:eu-west-1:123456789012:event-bus/results"
                ),
            ],
        ),
        (
            ApiCall("cloudwatch", "PutMetricData", {"Namespace": "PingbackGuard"}),
            [IamRequest("cloudwatch:PutMetricData", "*")],
        ),
        (
            ApiCall(
                "apigatewaymanagementapi",
                "PostToConnection",
                {"ConnectionId": "Zm9v=", "Data": b"{}"},
                "http://127.0.0.1:4510/v1/@connections/Zm9v%3D",
            ),
            [
                IamRequest(
                    "execute-api:ManageConnections",
                    "arn:aws:execute-api:eu-west-1:123456789012:abc123/v1/POST/@connections/Zm9v=",
                )
            ],
        ),
        (
            ApiCall(
                "apigatewaymanagementapi",
                "DeleteConnection",
                {"ConnectionId": "c"},
                "https://xyz789.execute-api.eu-west-1.amazonaws.com/prod/@connections/c",
            ),
            [
                IamRequest(
                    "execute-api:ManageConnections",
                    "arn:aws:execute-api:eu-west-1:123456789012:xyz789/prod/DELETE/@connections/c",
                )
            ],
        ),
        (
            ApiCall("sns", "Publish", {"TopicArn": "arn:aws:sns:eu-west-1:123456789012:alarms"}),
            [IamRequest("sns:Publish", "arn:aws:sns:eu-west-1:123456789012:alarms")],
        ),
        (ApiCall("sts", "GetCallerIdentity", {}), []),
        (
            ApiCall("lambda", "Invoke", {"FunctionName": "poller", "InvocationType": "Event"}),
            [IamRequest("lambda:InvokeFunction", POLLER_ARN)],
        ),
        (
            ApiCall("lambda", "Invoke", {"FunctionName": "poller", "Qualifier": "live"}),
            [IamRequest("lambda:InvokeFunction", f"{POLLER_ARN}:live")],
        ),
        (
            ApiCall("lambda", "Invoke", {"FunctionName": "123456789012:function:poller:7"}),
            [IamRequest("lambda:InvokeFunction", f"{POLLER_ARN}:7")],
        ),
        (
            ApiCall("lambda", "Invoke", {"FunctionName": POLLER_ARN}),
            [IamRequest("lambda:InvokeFunction", POLLER_ARN)],
        ),
        (
            ApiCall("dynamodbstreams", "DescribeStream", {"StreamArn": STREAM}),
            [IamRequest("dynamodb:DescribeStream", STREAM)],
        ),
        (
            ApiCall("dynamodbstreams", "GetShardIterator", {"StreamArn": STREAM, "ShardId": "s"}),
            [IamRequest("dynamodb:GetShardIterator", STREAM)],
        ),
        (
            ApiCall("dynamodbstreams", "GetRecords", {"ShardIterator": f"{STREAM}|1|AAAA/b+c="}),
            [IamRequest("dynamodb:GetRecords", STREAM)],
        ),
    ],
    ids=lambda value: value.operation if isinstance(value, ApiCall) else "",
)
def test_each_call_asks_for_its_action_on_its_resource(
    call: ApiCall, expected: list[IamRequest]
) -> None:
    assert iam_requests(call, SITE) == expected


@pytest.mark.parametrize(
    "call",
    [
        ApiCall("dynamodb", "CreateTable", {"TableName": "Tasks"}),
        ApiCall("sqs", "CreateQueue", {"QueueName": "q"}),
        ApiCall("s3", "GetObject", {"Bucket": "b", "Key": "k"}),
        ApiCall("secretsmanager", "GetSecretValue", {"SecretId": "by-name"}),
        ApiCall("dynamodbstreams", "GetRecords", {"ShardIterator": "opaque"}),
        ApiCall("dynamodbstreams", "ListStreams", {}),
        ApiCall(
            "apigatewaymanagementapi",
            "PostToConnection",
            {},
            "http://127.0.0.1:9999/v1/@connections/c",
        ),
    ],
    ids=lambda call: f"{call.service}:{call.operation}",
)
def test_a_call_the_twin_cannot_map_fails_loudly(call: ApiCall) -> None:
    with pytest.raises(UnmappedCall):
        iam_requests(call, SITE)


@pytest.mark.parametrize(
    ("permission", "principal", "condition"),
    [
        (
            {"Principal": "events.amazonaws.com", "SourceArn": "arn:aws:events:r:1:rule/x"},
            {"Service": "events.amazonaws.com"},
            {"ArnLike": {"AWS:SourceArn": "arn:aws:events:r:1:rule/x"}},
        ),
        (
            {"Principal": "123456789012", "SourceAccount": "123456789012"},
            {"AWS": "arn:aws:iam::123456789012:root"},
            {"StringEquals": {"AWS:SourceAccount": "123456789012"}},
        ),
        ({"Principal": "*"}, "*", None),
    ],
    ids=["service", "account", "anyone"],
)
def test_a_lambda_permission_is_the_statement_add_permission_writes(
    permission: dict[str, str], principal: Any, condition: dict[str, Any] | None
) -> None:
    statement = function_policy_statement(
        "Permit",
        {"Action": "lambda:InvokeFunction", "FunctionName": "poller", **permission},
        "eu-west-1",
    )
    expected = {
        "Sid": "Permit",
        "Effect": "Allow",
        "Principal": principal,
        "Action": "lambda:InvokeFunction",
        "Resource": POLLER_ARN,
    }
    assert statement == (expected if condition is None else {**expected, "Condition": condition})
