"""Resources moto's CloudFormation skips, made to exist locally.

Each kind gives a resource its identity before the stack is created (so the resources moto does
create can reference it) and, if it can, creates it by API once the stack exists.
"""

import json
import random
import string
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from infra.local.cloudformation.api_limits import length_limit, refusing_out_of_limits
from infra.local.cloudformation.intrinsics import Resolver, UnresolvableError
from infra.local.runtime.aws import ACCOUNT_ID, AwsEndpoint

ORIGIN_CLOUDFORMATION = "cloudformation"
ORIGIN_API = "api"
ORIGIN_RUNTIME = "runtime"
ORIGIN_ABSENT = "absent"
# The parameter that names the resource, where it is not "Name".
_NAME_MEMBERS = {"PutMetricAlarm": "AlarmName"}


@dataclass(frozen=True)
class LocalIdentity:
    physical_id: str
    origin: str
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LocalResourceContext:
    endpoint: AwsEndpoint
    stack_name: str
    resolver: Resolver

    def optional(self, value: Any) -> Any:
        """`value` resolved, or None when it refers to something that does not exist yet."""
        try:
            return self.resolver.resolve(value)
        except UnresolvableError:
            return None

    def client(self, service: str) -> Any:
        """A client whose requests are refused (TemplateError) where AWS's model refuses them."""
        return refusing_out_of_limits(self.endpoint.client(service))

    def generated_name(self, logical_id: str, service: str, operation: str) -> str:
        """stack-LogicalId-SUFFIX, as CloudFormation names a resource: shortened (the stack's
        and the logical id's parts) to the Name the API takes, so the name fits."""
        suffix = random_suffix()
        limit = length_limit(service, operation, _NAME_MEMBERS.get(operation, "Name"))
        name = f"{self.stack_name}-{logical_id}-{suffix}"
        if limit is None or len(name) <= limit:
            return name
        room = limit - len(suffix) - 2
        stack_part = self.stack_name[: max(room // 2, room - len(logical_id))]
        return f"{stack_part}-{logical_id[: room - len(stack_part)]}-{suffix}"


class LocalKind(Protocol):
    def identify(
        self, context: LocalResourceContext, logical_id: str, properties: Mapping[str, Any]
    ) -> LocalIdentity: ...

    def create(
        self, context: LocalResourceContext, identity: LocalIdentity, properties: Mapping[str, Any]
    ) -> None: ...


def random_suffix(length: int = 12) -> str:
    return "".join(random.choices(string.ascii_uppercase + string.digits, k=length))


class Secret:
    """Created up front: its ARN (with moto's random suffix) is what functions reference."""

    _PASSWORD_OPTIONS = (
        "PasswordLength",
        "ExcludeCharacters",
        "ExcludeNumbers",
        "ExcludePunctuation",
        "ExcludeUppercase",
        "ExcludeLowercase",
        "IncludeSpace",
        "RequireEachIncludedType",
    )

    def identify(
        self, context: LocalResourceContext, logical_id: str, properties: Mapping[str, Any]
    ) -> LocalIdentity:
        client = context.client("secretsmanager")
        name = context.optional(properties.get("Name")) or f"{logical_id}-{random_suffix()}"
        secret_string = context.resolver.resolve(properties.get("SecretString"))
        if secret_string is None:
            secret_string = self._generated_value(
                client, context.resolver.resolve(properties.get("GenerateSecretString")) or {}
            )
        description = context.optional(properties.get("Description")) or ""
        arn = client.create_secret(Name=name, SecretString=secret_string, Description=description)[
            "ARN"
        ]
        return LocalIdentity(arn, ORIGIN_API, {"Id": arn})

    def create(
        self, context: LocalResourceContext, identity: LocalIdentity, properties: Mapping[str, Any]
    ) -> None:
        """Already created by identify()."""

    def _generated_value(self, client: Any, spec: Mapping[str, Any]) -> str:
        options = {key: spec[key] for key in self._PASSWORD_OPTIONS if key in spec}
        if "PasswordLength" in options:
            options["PasswordLength"] = int(options["PasswordLength"])
        password: str = client.get_random_password(**options)["RandomPassword"]
        if "SecretStringTemplate" not in spec or "GenerateStringKey" not in spec:
            return password
        document = json.loads(spec["SecretStringTemplate"])
        document[spec["GenerateStringKey"]] = password
        return json.dumps(document)


class MetricAlarm:
    """Created with PutMetricAlarm so that it exists; moto never evaluates alarms."""

    _NUMBER_PROPERTIES = {
        "Threshold": float,
        "Period": int,
        "EvaluationPeriods": int,
        "DatapointsToAlarm": int,
    }

    def identify(
        self, context: LocalResourceContext, logical_id: str, properties: Mapping[str, Any]
    ) -> LocalIdentity:
        name = context.optional(properties.get("AlarmName")) or context.generated_name(
            logical_id, "cloudwatch", "PutMetricAlarm"
        )
        arn = f"arn:aws:cloudwatch:{context.endpoint.region}:{ACCOUNT_ID}:alarm:{name}"
        return LocalIdentity(name, ORIGIN_API, {"Arn": arn})

    def create(
        self, context: LocalResourceContext, identity: LocalIdentity, properties: Mapping[str, Any]
    ) -> None:
        request = {key: value for key, value in properties.items() if key != "AlarmName"}
        for key, convert in self._NUMBER_PROPERTIES.items():
            if key in request:
                request[key] = convert(request[key])
        context.client("cloudwatch").put_metric_alarm(AlarmName=identity.physical_id, **request)


class Schedule:
    """Created in moto's EventBridge Scheduler so that it exists; the runtime fires it."""

    def identify(
        self, context: LocalResourceContext, logical_id: str, properties: Mapping[str, Any]
    ) -> LocalIdentity:
        name = context.optional(properties.get("Name")) or context.generated_name(
            logical_id, "scheduler", "CreateSchedule"
        )
        group = context.optional(properties.get("GroupName")) or "default"
        arn = f"arn:aws:scheduler:{context.endpoint.region}:{ACCOUNT_ID}:schedule/{group}/{name}"
        return LocalIdentity(name, ORIGIN_API, {"Arn": arn})

    def create(
        self, context: LocalResourceContext, identity: LocalIdentity, properties: Mapping[str, Any]
    ) -> None:
        request = {key: value for key, value in properties.items() if key != "Name"}
        context.client("scheduler").create_schedule(Name=identity.physical_id, **request)


class HttpApi:
    """Registered in moto's API Gateway v2 for its id; the runtime's gateway serves its routes."""

    def identify(
        self, context: LocalResourceContext, logical_id: str, properties: Mapping[str, Any]
    ) -> LocalIdentity:
        name = context.optional(properties.get("Name")) or f"{context.stack_name}-{logical_id}"
        protocol = context.optional(properties.get("ProtocolType")) or "HTTP"
        api_id = context.client("apigatewayv2").create_api(Name=name, ProtocolType=protocol)[
            "ApiId"
        ]
        endpoint = f"https://{api_id}.execute-api.{context.endpoint.region}.amazonaws.com"
        return LocalIdentity(api_id, ORIGIN_API, {"ApiId": api_id, "ApiEndpoint": endpoint})

    def create(
        self, context: LocalResourceContext, identity: LocalIdentity, properties: Mapping[str, Any]
    ) -> None:
        """Already registered by identify()."""


class SnsSubscription:
    def identify(
        self, context: LocalResourceContext, logical_id: str, properties: Mapping[str, Any]
    ) -> LocalIdentity:
        return LocalIdentity(str(uuid.uuid4()), ORIGIN_API)

    def create(
        self, context: LocalResourceContext, identity: LocalIdentity, properties: Mapping[str, Any]
    ) -> None:
        context.client("sns").subscribe(
            TopicArn=properties["TopicArn"],
            Protocol=properties["Protocol"],
            Endpoint=properties.get("Endpoint", ""),
        )


class Pipe:
    """An EventBridge Pipe: named here, run by the runtime (infra.local.pipes.stream_pipe)."""

    played_by = "infra/local/pipes"

    def identify(
        self, context: LocalResourceContext, logical_id: str, properties: Mapping[str, Any]
    ) -> LocalIdentity:
        name = context.optional(properties.get("Name")) or context.generated_name(
            logical_id, "pipes", "CreatePipe"
        )
        arn = f"arn:aws:pipes:{context.endpoint.region}:{ACCOUNT_ID}:pipe/{name}"
        return LocalIdentity(name, ORIGIN_RUNTIME, {"Arn": arn})

    def create(
        self, context: LocalResourceContext, identity: LocalIdentity, properties: Mapping[str, Any]
    ) -> None:
        """Nothing to create: the runtime reads the stream and puts the events."""


class EventBus:
    """Created up front (moto's CloudFormation makes one without a physical id)."""

    def identify(
        self, context: LocalResourceContext, logical_id: str, properties: Mapping[str, Any]
    ) -> LocalIdentity:
        name = context.optional(properties.get("Name")) or context.generated_name(
            logical_id, "events", "CreateEventBus"
        )
        arn = context.client("events").create_event_bus(Name=name)["EventBusArn"]
        return LocalIdentity(name, ORIGIN_API, {"Arn": arn, "Name": name})

    def create(
        self, context: LocalResourceContext, identity: LocalIdentity, properties: Mapping[str, Any]
    ) -> None:
        """Already created by identify()."""


class EventRule:
    """Created in moto without its targets (moto would invoke Lambda targets through Docker);
    the runtime delivers to them (infra.local.events.event_bus) or fires it (schedules)."""

    def identify(
        self, context: LocalResourceContext, logical_id: str, properties: Mapping[str, Any]
    ) -> LocalIdentity:
        name = context.optional(properties.get("Name")) or context.generated_name(
            logical_id, "events", "PutRule"
        )
        bus = context.optional(properties.get("EventBusName"))
        path = f"{bus.rsplit('/', 1)[-1]}/{name}" if bus and bus != "default" else name
        arn = f"arn:aws:events:{context.endpoint.region}:{ACCOUNT_ID}:rule/{path}"
        return LocalIdentity(name, ORIGIN_API, {"Arn": arn})

    def create(
        self, context: LocalResourceContext, identity: LocalIdentity, properties: Mapping[str, Any]
    ) -> None:
        request: dict[str, Any] = {"Name": identity.physical_id}
        for key in ("ScheduleExpression", "EventBusName", "State", "Description"):
            if key in properties:
                request[key] = properties[key]
        if "EventPattern" in properties:
            pattern = properties["EventPattern"]
            request["EventPattern"] = pattern if isinstance(pattern, str) else json.dumps(pattern)
        context.client("events").put_rule(**request)


class EventInvokeConfig:
    """A function's asynchronous invocation settings, put in moto's Lambda by
    PutFunctionEventInvokeConfig (held to botocore's model: MaximumRetryAttempts 0-2,
    MaximumEventAgeInSeconds 60-21600); the runtime reads them back and runs its functions'
    asynchronous queues by them (infra.local.lambda_.async_invocations).
    https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-lambda-eventinvokeconfig.html
    """

    _NUMBER_PROPERTIES = ("MaximumRetryAttempts", "MaximumEventAgeInSeconds")

    def identify(
        self, context: LocalResourceContext, logical_id: str, properties: Mapping[str, Any]
    ) -> LocalIdentity:
        return LocalIdentity(str(uuid.uuid4()), ORIGIN_API)

    def create(
        self, context: LocalResourceContext, identity: LocalIdentity, properties: Mapping[str, Any]
    ) -> None:
        request = {key: value for key, value in properties.items() if key != "Qualifier"}
        for key in self._NUMBER_PROPERTIES:
            if key in request:
                request[key] = int(request[key])
        context.client("lambda").put_function_event_invoke_config(**request)


class PlayedByRuntime:
    """Exists only as behaviour of the runtime (event source mappings, API stages and routes), or
    as what a part of the twin reads from the template (resource policies, metric filters)."""

    def __init__(self, name_property: str | None = None, *, by: str = "the runtime") -> None:
        self._name_property = name_property
        self.played_by = by

    def identify(
        self, context: LocalResourceContext, logical_id: str, properties: Mapping[str, Any]
    ) -> LocalIdentity:
        name = (
            context.optional(properties.get(self._name_property)) if self._name_property else None
        )
        return LocalIdentity(str(name or uuid.uuid4()), ORIGIN_RUNTIME)

    def create(
        self, context: LocalResourceContext, identity: LocalIdentity, properties: Mapping[str, Any]
    ) -> None:
        """Nothing to create."""


class NotCreated:
    """A type neither moto nor this runtime implements: deploy refuses a template with one."""

    def identify(
        self, context: LocalResourceContext, logical_id: str, properties: Mapping[str, Any]
    ) -> LocalIdentity:
        return LocalIdentity(f"{logical_id}-local", ORIGIN_ABSENT)

    def create(
        self, context: LocalResourceContext, identity: LocalIdentity, properties: Mapping[str, Any]
    ) -> None:
        """Nothing to create."""


_RESOURCE_POLICIES = "infra/local/iam (resource policies)"
_GATEWAY = "infra/local/apigateway"
_KINDS: dict[str, LocalKind] = {
    "AWS::SecretsManager::Secret": Secret(),
    "AWS::CloudWatch::Alarm": MetricAlarm(),
    "AWS::Scheduler::Schedule": Schedule(),
    "AWS::ApiGatewayV2::Api": HttpApi(),
    "AWS::SNS::Subscription": SnsSubscription(),
    "AWS::Lambda::EventSourceMapping": PlayedByRuntime(by="infra/local/sqs (queue pollers)"),
    "AWS::Pipes::Pipe": Pipe(),
    "AWS::Events::Rule": EventRule(),
    "AWS::Events::EventBus": EventBus(),
    "AWS::ApiGatewayV2::Stage": PlayedByRuntime(name_property="StageName", by=_GATEWAY),
    "AWS::ApiGatewayV2::Route": PlayedByRuntime(by=_GATEWAY),
    "AWS::ApiGatewayV2::Integration": PlayedByRuntime(by=_GATEWAY),
    "AWS::ApiGatewayV2::Authorizer": PlayedByRuntime(by=_GATEWAY),
    "AWS::ApiGatewayV2::Deployment": PlayedByRuntime(by=_GATEWAY),
    "AWS::Lambda::EventInvokeConfig": EventInvokeConfig(),
    "AWS::Logs::MetricFilter": PlayedByRuntime(by="infra/local/cloudwatch (access log filters)"),
    "AWS::SQS::QueuePolicy": PlayedByRuntime(by=_RESOURCE_POLICIES),
    "AWS::SNS::TopicPolicy": PlayedByRuntime(by=_RESOURCE_POLICIES),
    "AWS::Events::EventBusPolicy": PlayedByRuntime(by=_RESOURCE_POLICIES),
}

# moto's CloudFormation knows these, but creating them in moto would start moto's own Lambda
# invoker (Docker) for every message or event (the runtime's SQS poller and event bus play them),
# or would leave them without a physical id (event buses).
MOTO_UNSAFE_TYPES = frozenset(
    {"AWS::Lambda::EventSourceMapping", "AWS::Events::Rule", "AWS::Events::EventBus"}
)


def local_kind(resource_type: str) -> LocalKind:
    return _KINDS.get(resource_type, NotCreated())


def played_by(resource_type: str) -> str:
    """Which part of the twin models a type it does not create (ORIGIN_RUNTIME)."""
    return str(getattr(_KINDS.get(resource_type), "played_by", "the runtime"))
