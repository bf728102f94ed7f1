"""Which IAM action on which resource ARN an AWS API call asks for: what AWS authorizes.

Only the operations mapped here are known; any other call raises UnmappedCall, so a function
that starts calling something new fails loudly on the twin instead of being let through.
Sources, per service (the "Actions, resources, and condition keys" pages of the Service
Authorization Reference, https://docs.aws.amazon.com/service-authorization/latest/reference/):
- DynamoDB: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/api-permissions-reference.html
  (a transaction is authorized per item as the item's own action, ConditionCheck as
  dynamodb:ConditionCheckItem; a Query or Scan of an index on the index's ARN).
- SQS: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-api-permissions-reference.html
  (a *Batch action needs the permission of its single action).
- API Gateway Management API: https://docs.aws.amazon.com/apigateway/latest/developerguide/apigateway-how-to-call-websocket-api-connections.html
  (execute-api:ManageConnections on
  arn:aws:execute-api:region:account:api-id/stage/METHOD/@connections/id).
- Lambda: https://docs.aws.amazon.com/lambda/latest/dg/lambda-api-permissions-ref.html
  (Invoke is lambda:InvokeFunction on the function's ARN, a version's or alias's ARN when the
  call names one).
- DynamoDB Streams (a pipe's reads): https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazondynamodb.html
  (dynamodb:DescribeStream, GetShardIterator, GetRecords on the stream's ARN; a shard iterator
  starts with its stream's ARN, "<stream arn>|1|...", on AWS as in moto).
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from infra.local.lambda_.function_names import parse_function_name


class UnmappedCall(LookupError):
    """An API call the twin does not know how to authorize: map it in infra/local/iam/calls.py."""


@dataclass(frozen=True)
class IamRequest:
    """One authorization AWS makes for a call: an action on a resource."""

    action: str
    resource: str
    leading_keys: tuple[str, ...] | None = None
    """dynamodb:LeadingKeys, the partition key values the request touches (DynamoDB items)."""


@dataclass(frozen=True)
class CallSite:
    """Where the call's resources live, for the ARNs the request parameters do not carry."""

    region: str
    account: str
    table_hash_keys: Mapping[str, str] = field(default_factory=dict)
    """Table name -> its partition key attribute (for dynamodb:LeadingKeys)."""
    management_apis: Mapping[str, str] = field(default_factory=dict)
    """A WebSocket API's local Management API base URL (scheme://host:port) -> its API id."""


@dataclass(frozen=True)
class ApiCall:
    service: str
    """botocore's service name (dynamodb, sqs, apigatewaymanagementapi, ...)."""
    operation: str
    params: Mapping[str, Any]
    """The call's parameters as the caller gave them."""
    url: str = ""
    """The request URL botocore built (only the Management API's ARN needs it)."""


def iam_requests(call: ApiCall, site: CallSite) -> list[IamRequest]:
    """Every authorization the call needs; an empty list for calls AWS does not authorize."""
    mapper = _MAPPERS.get(call.service)
    if mapper is None:
        raise UnmappedCall(f"{call.service}:{call.operation} (service not mapped)")
    requests = mapper(call, site)
    if requests is None:
        raise UnmappedCall(f"{call.service}:{call.operation} (operation not mapped)")
    return requests


# ---------------------------------------------------------------- DynamoDB
_DYNAMODB_TABLE_OPERATIONS = frozenset(
    {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "DescribeTable", "Query", "Scan"}
)
_TRANSACT_ITEM_ACTIONS = {
    "Get": "GetItem",
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}


def _dynamodb(call: ApiCall, site: CallSite) -> list[IamRequest] | None:
    params = call.params
    if call.operation in _DYNAMODB_TABLE_OPERATIONS:
        resource = _table_arn(site, str(params["TableName"]))
        if call.operation in ("Query", "Scan") and "IndexName" in params:
            resource = f"{resource}/index/{params['IndexName']}"
        return [IamRequest(f"dynamodb:{call.operation}", resource, _leading_keys(params, site))]
    if call.operation in ("TransactWriteItems", "TransactGetItems"):
        return [_transact_item(item, site) for item in params["TransactItems"]]
    if call.operation in ("BatchGetItem", "BatchWriteItem"):
        return [
            IamRequest(
                f"dynamodb:{call.operation}",
                _table_arn(site, str(table)),
                _batch_leading_keys(str(table), requests, site),
            )
            for table, requests in params["RequestItems"].items()
        ]
    return None


def _batch_leading_keys(table: str, requests: Any, site: CallSite) -> tuple[str, ...] | None:
    """Every partition key value a batch names in one table: BatchGetItem's Keys, or each
    BatchWriteItem request's Key or Item (dynamodb:LeadingKeys is multivalued)."""
    named = (
        [{"Key": key} for key in requests.get("Keys", [])]
        if isinstance(requests, Mapping)
        else [operation for request in requests for operation in request.values()]
    )
    values: list[str] = []
    for operation in named:
        leading = _leading_keys({"TableName": table, **operation}, site)
        if leading is None:
            return None
        values.extend(leading)
    return tuple(dict.fromkeys(values))


def _transact_item(item: Mapping[str, Any], site: CallSite) -> IamRequest:
    ((kind, operation),) = item.items()
    resource = _table_arn(site, str(operation["TableName"]))
    return IamRequest(
        f"dynamodb:{_TRANSACT_ITEM_ACTIONS[kind]}", resource, _leading_keys(operation, site)
    )


def _table_arn(site: CallSite, table: str) -> str:
    if table.startswith("arn:"):
        return table
    return f"arn:aws:dynamodb:{site.region}:{site.account}:table/{table}"


def _leading_keys(params: Mapping[str, Any], site: CallSite) -> tuple[str, ...] | None:
    """The partition key value of the item a request names (Key or Item), if it names one."""
    hash_key = site.table_hash_keys.get(str(params.get("TableName", "")))
    item = params.get("Key", params.get("Item"))
    if hash_key is None or not isinstance(item, Mapping) or hash_key not in item:
        return None
    value = item[hash_key]
    if isinstance(value, Mapping):  # the client's wire form: {"S": "..."}
        ((_, value),) = value.items()
    return (str(value),)


# ---------------------------------------------------------------- SQS
_SQS_ACTIONS = {
    "SendMessage": "SendMessage",
    "SendMessageBatch": "SendMessage",
    "ReceiveMessage": "ReceiveMessage",
    "DeleteMessage": "DeleteMessage",
    "DeleteMessageBatch": "DeleteMessage",
    "ChangeMessageVisibility": "ChangeMessageVisibility",
    "ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
    "GetQueueAttributes": "GetQueueAttributes",
    "PurgeQueue": "PurgeQueue",
}


def _sqs(call: ApiCall, site: CallSite) -> list[IamRequest] | None:
    if call.operation == "GetQueueUrl":
        queue = str(call.params["QueueName"])
        account = str(call.params.get("QueueOwnerAWSAccountId", site.account))
        return [IamRequest("sqs:GetQueueUrl", f"arn:aws:sqs:{site.region}:{account}:{queue}")]
    action = _SQS_ACTIONS.get(call.operation)
    if action is None:
        return None
    return [IamRequest(f"sqs:{action}", queue_arn(str(call.params["QueueUrl"]), site.region))]


def queue_arn(queue_url: str, region: str) -> str:
    """A queue's ARN from its URL (https://sqs.region.amazonaws.com/account/name, or moto's)."""
    account, name = urlsplit(queue_url).path.strip("/").split("/")[-2:]
    return f"arn:aws:sqs:{region}:{account}:{name}"


# ---------------------------------------------------------------- SSM, Secrets Manager
def _ssm(call: ApiCall, site: CallSite) -> list[IamRequest] | None:
    if call.operation == "GetParameter":
        names: Sequence[str] = [str(call.params["Name"])]
    elif call.operation == "GetParameters":
        names = [str(name) for name in call.params["Names"]]
    else:
        return None
    return [IamRequest(f"ssm:{call.operation}", _parameter_arn(name, site)) for name in names]


def _parameter_arn(name: str, site: CallSite) -> str:
    """https://docs.aws.amazon.com/systems-manager/latest/userguide/sysman-paramstore-access.html
    (a name with a leading slash: parameter/a/b; without: parameter/a)."""
    if name.startswith("arn:"):
        return name
    return f"arn:aws:ssm:{site.region}:{site.account}:parameter/{name.lstrip('/')}"


def _secretsmanager(call: ApiCall, site: CallSite) -> list[IamRequest] | None:
    if call.operation not in ("GetSecretValue", "DescribeSecret"):
        return None
    secret = str(call.params["SecretId"])
    if not secret.startswith("arn:"):
        # AWS resolves a name to the secret's ARN (with its random suffix) before it authorizes;
        # the twin knows only ARNs. The stack passes ARNs (Ref of a secret is its ARN).
        raise UnmappedCall(f"secretsmanager:{call.operation} by name ({secret!r}): pass its ARN")
    return [IamRequest(f"secretsmanager:{call.operation}", secret)]


# ---------------------------------------------------------------- EventBridge, CloudWatch
def _events(call: ApiCall, site: CallSite) -> list[IamRequest] | None:
    if call.operation != "PutEvents":
        return None
    buses = {str(entry.get("EventBusName", "default")) for entry in call.params["Entries"]}
    return [IamRequest("events:PutEvents", _bus_arn(bus, site)) for bus in sorted(buses)]


def _bus_arn(bus: str, site: CallSite) -> str:
    if bus.startswith("arn:"):
        return bus
    return f"arn:aws:events:{site.region}:{site.account}:event-bus/{bus}"


def _cloudwatch(call: ApiCall, _site: CallSite) -> list[IamRequest] | None:
    # PutMetricData has no resource type: it is granted on "*" only.
    if call.operation != "PutMetricData":
        return None
    return [IamRequest("cloudwatch:PutMetricData", "*")]


def _sns(call: ApiCall, _site: CallSite) -> list[IamRequest] | None:
    if call.operation != "Publish" or "TopicArn" not in call.params:
        return None  # a Publish to a phone number or target ARN is no topic's
    return [IamRequest("sns:Publish", str(call.params["TopicArn"]))]


# ---------------------------------------------------------------- API Gateway Management API
_MANAGEMENT_METHODS = {
    "PostToConnection": "POST",
    "GetConnection": "GET",
    "DeleteConnection": "DELETE",
}


def _management_api(call: ApiCall, site: CallSite) -> list[IamRequest] | None:
    method = _MANAGEMENT_METHODS.get(call.operation)
    if method is None:
        return None
    url = urlsplit(call.url)
    api_id = site.management_apis.get(f"{url.scheme}://{url.netloc}") or _aws_api_id(url.netloc)
    stage, _, connection = unquote(url.path).strip("/").partition("/@connections/")
    resource = f"arn:aws:execute-api:{site.region}:{site.account}:{api_id}/{stage}/{method}"
    return [IamRequest("execute-api:ManageConnections", f"{resource}/@connections/{connection}")]


def _aws_api_id(host: str) -> str:
    """The API id of an endpoint on AWS (api-id.execute-api.region.amazonaws.com)."""
    api_id, _, rest = host.partition(".")
    if not rest.startswith("execute-api."):
        raise UnmappedCall(f"apigatewaymanagementapi endpoint {host!r} is no known WebSocket API")
    return api_id


# ---------------------------------------------------------------- Lambda
def _lambda(call: ApiCall, site: CallSite) -> list[IamRequest] | None:
    if call.operation != "Invoke":
        return None
    named = parse_function_name(str(call.params["FunctionName"]))
    region, account = named.region or site.region, named.account or site.account
    arn = f"arn:aws:lambda:{region}:{account}:function:{named.name}"
    qualifier = named.qualifier or call.params.get("Qualifier")
    if qualifier:
        arn = f"{arn}:{qualifier}"
    return [IamRequest("lambda:InvokeFunction", arn)]


# ---------------------------------------------------------------- DynamoDB Streams
def _dynamodbstreams(call: ApiCall, _site: CallSite) -> list[IamRequest] | None:
    if call.operation in ("DescribeStream", "GetShardIterator"):
        stream = str(call.params["StreamArn"])
    elif call.operation == "GetRecords":
        stream = str(call.params["ShardIterator"]).split("|", 1)[0]
        if not stream.startswith("arn:"):
            raise UnmappedCall("dynamodbstreams:GetRecords with an iterator naming no stream ARN")
    else:
        return None
    return [IamRequest(f"dynamodb:{call.operation}", stream)]


# ---------------------------------------------------------------- STS
def _sts(call: ApiCall, _site: CallSite) -> list[IamRequest] | None:
    # https://docs.aws.amazon.com/STS/latest/APIReference/API_GetCallerIdentity.html:
    # no permission is required, an explicit Deny cannot refuse it.
    return [] if call.operation == "GetCallerIdentity" else None


_MAPPERS: dict[str, Callable[[ApiCall, CallSite], list[IamRequest] | None]] = {
    "dynamodb": _dynamodb,
    "sqs": _sqs,
    "ssm": _ssm,
    "secretsmanager": _secretsmanager,
    "events": _events,
    "cloudwatch": _cloudwatch,
    "sns": _sns,
    "apigatewaymanagementapi": _management_api,
    "lambda": _lambda,
    "dynamodbstreams": _dynamodbstreams,
    "sts": _sts,
}
