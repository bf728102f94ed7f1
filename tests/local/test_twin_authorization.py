"""The twin authorizes every AWS call a function makes as AWS would (issue 31): each function as
its own template role, against the target's resource policy too, with the conditions the
template uses; a refused call is the error botocore raises on AWS. And what the services do
(issue 39): the replay's SQS mapping polls with the replay role, the pipe acts with its role,
the schedule with its role, a rule invokes its targets by their resource policies.

The template is deployed into moto twice: as it is, and as a broken copy (a sender missing from
the dead-letter queue policy, a function without the grant its path uses, an operator-tagged
role, the replay role without its queue grant, the pipe role without PutEvents). Decisions come
from the real evaluator sidecar (infra/local/iam/evaluator).
"""

from __future__ import annotations

import copy
import functools
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import pytest

from infra.local import LocalOptions, LocalStack
from infra.local.cloudformation.deploy import DeployedStack, deploy_stack
from infra.local.cloudformation.template import SamTemplate, TemplateError
from infra.local.events.event_sources import pipe_specs
from infra.local.iam.authorizer import AuthorizationProfile, Authorizer
from infra.local.iam.calls import ApiCall, UnmappedCall
from infra.local.iam.evaluator import EvaluatorSidecar, SidecarEvaluator
from infra.local.iam.profiles import StackPolicies, authorization_profiles
from infra.local.iam.service_roles import ServiceAuthorization, authorized_client
from infra.local.lambda_.functions import FunctionSpec, function_specs
from infra.local.lambda_.pool import Invocation
from infra.local.lambda_.triggers import FunctionIndex, QueueSource, queue_sources
from infra.local.pipes.stream_pipe import StreamPipe
from infra.local.runtime.aws import AwsEndpoint
from infra.local.runtime.moto_process import MotoServer
from infra.local.sqs.queue_poller import QueuePoller, refuse_unauthorized_mapping
from infra.project_template import TEMPLATE_PATH
from infra.simulator import Simulator, SimulatorConfig
from tests.local.support import QUICK_SOLVES
from tests.waiting import wait_until

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(300)]

REGION = "us-east-1"
MANAGEMENT_URL = "http://127.0.0.1:1"
OPERATOR_TAG = {"Key": "pingback-guard-operator", "Value": "true"}


def _statements(template: dict[str, Any], role: str) -> list[dict[str, Any]]:
    statements: list[dict[str, Any]] = template["Resources"][role]["Properties"]["Policies"][0][
        "PolicyDocument"
    ]["Statement"]
    return statements


def broken_copy(document: dict[str, Any]) -> dict[str, Any]:
    """CompatSubmitFunctionRole missing from the queue policy's senders; GetTaskFunctionRole
    without its ReadTask grant; ReplayFunctionRole granted a send, tagged as an operator and
    without its ConsumeDeadLetterQueue grant; CallbackFunctionRole granted sns:Publish on the
    alarm topic; SubmitFunctionRole without its WakePoller grant; PollerFunctionRole without the
    policy attached to it that starts helpers; ResultEventsPipeRole without PublishResults."""
    broken = copy.deepcopy(document)
    resources = broken["Resources"]
    statements = resources["DeadLetterQueuePolicy"]["Properties"]["PolicyDocument"]["Statement"]
    (only_producers,) = [s for s in statements if s["Sid"] == "OnlyProducersSend"]
    senders = only_producers["Condition"]["ArnNotEquals"]["aws:PrincipalArn"]
    senders[:] = [arn for arn in senders if "CompatSubmitFunctionRole" not in str(arn)]
    get_task = _statements(broken, "GetTaskFunctionRole")
    get_task[:] = [s for s in get_task if s["Sid"] != "ReadTask"]
    submit = _statements(broken, "SubmitFunctionRole")
    submit[:] = [s for s in submit if s["Sid"] != "WakePoller"]
    _statements(broken, "ReplayFunctionRole").append(
        {
            "Sid": "OperatorRedrive",
            "Effect": "Allow",
            "Action": "sqs:SendMessage",
            "Resource": {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]},
        }
    )
    resources["ReplayFunctionRole"]["Properties"]["Tags"] = [OPERATOR_TAG]
    del resources["PollerStartsHelpersPolicy"]
    _statements(broken, "CallbackFunctionRole").append(
        {"Effect": "Allow", "Action": "sns:Publish", "Resource": {"Ref": "AlarmTopic"}}
    )
    replay = _statements(broken, "ReplayFunctionRole")
    replay[:] = [s for s in replay if s.get("Sid") != "ConsumeDeadLetterQueue"]
    pipe = _statements(broken, "ResultEventsPipeRole")
    pipe[:] = [s for s in pipe if s.get("Sid") != "PublishResults"]
    return broken


@pytest.fixture(scope="module")
def evaluator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SidecarEvaluator]:
    log = tmp_path_factory.mktemp("iam") / "iam-evaluator.log"
    with EvaluatorSidecar(log) as sidecar:
        yield SidecarEvaluator(sidecar.url)


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, DeployedStack]]:
    """The template as it is ("real") and its broken copy ("broken"), in one moto."""
    moto = MotoServer(0, tmp_path_factory.mktemp("moto") / "moto.log")
    started = moto.start()
    endpoint = AwsEndpoint(started.url, REGION)
    try:
        real = SamTemplate.load(TEMPLATE_PATH)
        stacks = {}
        for name, template in (
            ("real", real),
            ("broken", SamTemplate(real.path, broken_copy(real.document))),
        ):
            stacks[name] = deploy_stack(
                template,
                template.parameter_values({}),
                endpoint,
                started.cloudformation_types,
                f"authz-{name}",
            )
        yield stacks
    finally:
        moto.stop()


def profile(stack: DeployedStack, function: str) -> AuthorizationProfile:
    specs = function_specs(stack, SamTemplate.load(TEMPLATE_PATH).function_code_dirs())
    endpoint = stack.resources.endpoint
    api_id = stack.resources.physical_id("PushApi")
    profiles = authorization_profiles(stack, specs, endpoint, {MANAGEMENT_URL: api_id})
    return profiles[function]


def authorizer(stack: DeployedStack, function: str, evaluator: SidecarEvaluator) -> Authorizer:
    return Authorizer(profile(stack, function), evaluator)


def send_to_dead_letter_queue(stack: DeployedStack) -> ApiCall:
    queue_url = stack.resources.physical_id("DeadLetterQueue")
    return ApiCall("sqs", "SendMessage", {"QueueUrl": queue_url, "MessageBody": "{}"})


def tasks_item_call(stack: DeployedStack, operation: str, task_id: str) -> ApiCall:
    table = stack.resources.physical_id("TasksTable")
    return ApiCall("dynamodb", operation, {"TableName": table, "Key": {"task_id": {"S": task_id}}})


def test_compat_submit_may_fall_back_to_the_dead_letter_queue(
    deployed: dict[str, DeployedStack], evaluator: SidecarEvaluator
) -> None:
    stack = deployed["real"]
    for function in ("CompatSubmitFunction", "SubmitFunction", "CallbackFunction"):
        call = send_to_dead_letter_queue(stack)
        assert authorizer(stack, function, evaluator).refusal(call) is None, function


def test_a_sender_missing_from_the_queue_policy_is_refused_despite_its_roles_allow(
    deployed: dict[str, DeployedStack], evaluator: SidecarEvaluator
) -> None:
    stack = deployed["broken"]
    compat = authorizer(stack, "CompatSubmitFunction", evaluator)
    refusal = compat.refusal(send_to_dead_letter_queue(stack))
    assert refusal is not None
    assert refusal.decision.explicit_deny and refusal.decision.denied_by == "resource"
    response, parsed = compat.denied_response("sqs", refusal)
    assert response.status_code == 403
    assert parsed["Error"] == {
        "Code": "AccessDenied",
        "Message": f"Access to the resource https://sqs.{REGION}.amazonaws.com/ is denied.",
    }


def test_a_role_tagged_as_operator_may_send_where_the_policy_admits_operators(
    deployed: dict[str, DeployedStack], evaluator: SidecarEvaluator
) -> None:
    """aws:PrincipalTag/pingback-guard-operator, read from the role resource's Tags."""
    tagged = authorizer(deployed["broken"], "ReplayFunction", evaluator)
    assert tagged.refusal(send_to_dead_letter_queue(deployed["broken"])) is None
    untagged = authorizer(deployed["real"], "ReplayFunction", evaluator)
    refusal = untagged.refusal(send_to_dead_letter_queue(deployed["real"]))
    assert refusal is not None and refusal.decision.explicit_deny


def test_no_function_publishes_to_the_alarm_topic_even_when_its_role_allows_it(
    deployed: dict[str, DeployedStack], evaluator: SidecarEvaluator
) -> None:
    """NobodyButCloudWatchPublishes: a role session carries no aws:PrincipalServiceName."""
    stack = deployed["broken"]
    callback = authorizer(stack, "CallbackFunction", evaluator)
    topic = stack.resources.physical_id("AlarmTopic")
    refusal = callback.refusal(ApiCall("sns", "Publish", {"TopicArn": topic, "Message": "ok"}))
    assert refusal is not None
    assert refusal.decision.explicit_deny and refusal.decision.denied_by == "resource"
    response, parsed = callback.denied_response("sns", refusal)
    assert (response.status_code, parsed["Error"]["Code"]) == (403, "AuthorizationError")


def test_a_function_without_the_grant_its_path_uses_gets_dynamodbs_access_denied(
    deployed: dict[str, DeployedStack], evaluator: SidecarEvaluator
) -> None:
    stack = deployed["broken"]
    get_task = authorizer(stack, "GetTaskFunction", evaluator)
    refusal = get_task.refusal(tasks_item_call(stack, "GetItem", "task-1"))
    assert refusal is not None
    response, parsed = get_task.denied_response("dynamodb", refusal)
    session = profile(stack, "GetTaskFunction").session_arn
    table_arn = f"arn:aws:dynamodb:{REGION}:123456789012:table/" + str(
        stack.resources.physical_id("TasksTable")
    )
    assert response.status_code == 400
    assert parsed["Error"] == {
        "Code": "AccessDeniedException",
        "Message": f"User: {session} is not authorized to perform: dynamodb:GetItem on resource: "
        f"{table_arn} because no identity-based policy allows the dynamodb:GetItem action",
    }
    real = authorizer(deployed["real"], "GetTaskFunction", evaluator)
    assert real.refusal(tasks_item_call(deployed["real"], "GetItem", "task-1")) is None


def test_push_writes_only_connection_records_dynamodb_leading_keys(
    deployed: dict[str, DeployedStack], evaluator: SidecarEvaluator
) -> None:
    stack = deployed["real"]
    push = authorizer(stack, "PushFunction", evaluator)
    assert push.refusal(tasks_item_call(stack, "PutItem", "#push-conn-1")) is None
    assert push.refusal(tasks_item_call(stack, "DeleteItem", "#push-conn-1")) is None
    assert push.refusal(tasks_item_call(stack, "UpdateItem", "task-1")) is not None


def test_the_poller_queries_the_due_index_never_the_table(
    deployed: dict[str, DeployedStack], evaluator: SidecarEvaluator
) -> None:
    stack = deployed["real"]
    poller = authorizer(stack, "PollerFunction", evaluator)
    table = stack.resources.physical_id("TasksTable")
    query = {"TableName": table, "KeyConditionExpression": "due_shard = :s"}
    index_query = ApiCall("dynamodb", "Query", {**query, "IndexName": "DueIndex"})
    assert poller.refusal(index_query) is None
    assert poller.refusal(ApiCall("dynamodb", "Query", query)) is not None


def test_push_manages_connections_of_its_own_api_stage_only(
    deployed: dict[str, DeployedStack], evaluator: SidecarEvaluator
) -> None:
    stack = deployed["real"]
    push = authorizer(stack, "PushFunction", evaluator)
    own = ApiCall(
        "apigatewaymanagementapi",
        "PostToConnection",
        {},
        f"{MANAGEMENT_URL}/v1/@connections/abc%3D",
    )
    other_stage = ApiCall(
        "apigatewaymanagementapi", "PostToConnection", {}, f"{MANAGEMENT_URL}/v2/@connections/abc"
    )
    assert push.refusal(own) is None
    refusal = push.refusal(other_stage)
    assert refusal is not None
    response, parsed = push.denied_response("apigatewaymanagementapi", refusal)
    assert (response.status_code, parsed["Error"]["Code"]) == (403, "ForbiddenException")


def invoke(stack: DeployedStack, function: str) -> ApiCall:
    name = stack.resources.physical_id(function)
    return ApiCall("lambda", "Invoke", {"FunctionName": name, "InvocationType": "Event"})


def test_a_submit_may_start_the_poller_and_no_other_function(
    deployed: dict[str, DeployedStack], evaluator: SidecarEvaluator
) -> None:
    stack = deployed["real"]
    for function in ("SubmitFunction", "CompatSubmitFunction"):
        submit = authorizer(stack, function, evaluator)
        assert submit.refusal(invoke(stack, "PollerFunction")) is None, function
        assert submit.refusal(invoke(stack, "CallbackFunction")) is not None, function
        # and reads the poller's lease item, no task
        assert submit.refusal(tasks_item_call(stack, "GetItem", "#poller-lease")) is None
        assert submit.refusal(tasks_item_call(stack, "GetItem", "task-1")) is not None
    get_task = authorizer(stack, "GetTaskFunction", evaluator)
    assert get_task.refusal(invoke(stack, "PollerFunction")) is not None


def batch_get_call(stack: DeployedStack, *task_ids: str) -> ApiCall:
    table = stack.resources.physical_id("TasksTable")
    keys = [{"task_id": {"S": task_id}} for task_id in task_ids]
    return ApiCall("dynamodb", "BatchGetItem", {"RequestItems": {table: {"Keys": keys}}})


def test_the_poller_may_start_its_own_helpers_by_the_policy_attached_to_its_role(
    deployed: dict[str, DeployedStack], evaluator: SidecarEvaluator
) -> None:
    """The grant is an AWS::IAM::Policy of its own (in the role it would be a circular
    dependency): the twin reads the attachment, and without it the start is refused."""
    real = deployed["real"]
    poller = authorizer(real, "PollerFunction", evaluator)
    assert poller.refusal(invoke(real, "PollerFunction")) is None
    assert poller.refusal(invoke(real, "CallbackFunction")) is not None
    assert poller.refusal(batch_get_call(real, "#poller-lease#1", "#poller-lease#7")) is None
    assert poller.refusal(batch_get_call(real, "#poller-lease#1", "task-1")) is not None
    broken = deployed["broken"]
    unattached = authorizer(broken, "PollerFunction", evaluator)
    refusal = unattached.refusal(invoke(broken, "PollerFunction"))
    assert refusal is not None and not refusal.decision.explicit_deny


def test_a_submit_without_the_wake_grant_gets_lambdas_access_denied(
    deployed: dict[str, DeployedStack], evaluator: SidecarEvaluator
) -> None:
    stack = deployed["broken"]
    submit = authorizer(stack, "SubmitFunction", evaluator)
    refusal = submit.refusal(invoke(stack, "PollerFunction"))
    assert refusal is not None and not refusal.decision.explicit_deny
    response, parsed = submit.denied_response("lambda", refusal)
    session = profile(stack, "SubmitFunction").session_arn
    poller_arn = f"arn:aws:lambda:{REGION}:123456789012:function:" + str(
        stack.resources.physical_id("PollerFunction")
    )
    assert response.status_code == 403
    assert parsed["Error"] == {
        "Code": "AccessDeniedException",
        "Message": f"User: {session} is not authorized to perform: lambda:InvokeFunction on"
        f" resource: {poller_arn} because no identity-based policy allows the"
        " lambda:InvokeFunction action",
    }


def test_secrets_and_parameters_are_granted_per_function(
    deployed: dict[str, DeployedStack], evaluator: SidecarEvaluator
) -> None:
    stack = deployed["real"]
    secret = ApiCall(
        "secretsmanager",
        "GetSecretValue",
        {"SecretId": stack.resources.physical_id("CallbackSecret")},
    )
    api_key = ApiCall(
        "ssm", "GetParameter", {"Name": "/pingback-guard/provider-api-key", "WithDecryption": True}
    )
    assert authorizer(stack, "CallbackFunction", evaluator).refusal(secret) is None
    assert authorizer(stack, "PollerFunction", evaluator).refusal(api_key) is None
    assert authorizer(stack, "ReplayFunction", evaluator).refusal(secret) is not None
    assert authorizer(stack, "CallbackFunction", evaluator).refusal(api_key) is not None


def test_an_unmapped_call_fails_loudly(
    deployed: dict[str, DeployedStack], evaluator: SidecarEvaluator
) -> None:
    submit = authorizer(deployed["real"], "SubmitFunction", evaluator)
    with pytest.raises(UnmappedCall):
        submit.refusal(ApiCall("dynamodb", "DeleteTable", {"TableName": "x"}))
    with pytest.raises(UnmappedCall):
        submit.refusal(ApiCall("s3", "GetObject", {"Bucket": "b", "Key": "k"}))


def test_decisions_are_cached_per_call_shape(
    deployed: dict[str, DeployedStack], evaluator: SidecarEvaluator
) -> None:
    """Prints the per-call overhead (not asserted): a decision made by the sidecar, a cached one."""
    stack = deployed["real"]
    callback = authorizer(stack, "CallbackFunction", evaluator)
    calls = [tasks_item_call(stack, "UpdateItem", f"task-{n}") for n in range(200)]
    started = time.perf_counter()
    callback.refusal(calls[0])
    first = time.perf_counter() - started
    started = time.perf_counter()
    for call in calls[1:]:
        assert callback.refusal(call) is None
    cached = (time.perf_counter() - started) / (len(calls) - 1)
    assert (callback.stats.decisions, callback.stats.evaluated) == (200, 1)
    print(
        f"\ntwin authorization: first decision {first * 1000:.2f} ms (sidecar), "
        f"then {cached * 1e6:.1f} us per call (cached)"
    )


# ---------------------------------------------------------------- what the services do
def services(stack: DeployedStack, evaluator: SidecarEvaluator) -> ServiceAuthorization:
    return ServiceAuthorization(StackPolicies.read(stack, stack.resources.endpoint), evaluator)


def replay_mapping(stack: DeployedStack) -> tuple[QueueSource, FunctionSpec]:
    specs = function_specs(stack, SamTemplate.load(TEMPLATE_PATH).function_code_dirs())
    (source,) = queue_sources(stack, FunctionIndex(specs), stack.resources.endpoint)
    return source, specs[source.function]


def test_the_replay_mapping_is_created_only_when_the_replay_role_may_poll_its_queue(
    deployed: dict[str, DeployedStack], evaluator: SidecarEvaluator
) -> None:
    """CreateEventSourceMapping checks the function's role, as CloudFormation reports."""
    for name in ("real", "broken"):
        stack = deployed[name]
        source, replay = replay_mapping(stack)
        role = services(stack, evaluator).role(replay.role_arn, replay.function_name)
        if name == "real":
            refuse_unauthorized_mapping(source, role)
            continue
        with pytest.raises(TemplateError) as refused:
            refuse_unauthorized_mapping(source, role)
        assert "ReplayFunctionDeadLetters: Resource handler returned message" in str(refused.value)
        assert "permissions to call ReceiveMessage on SQS (Service: Lambda" in str(refused.value)


def test_a_mapping_refused_at_run_time_invokes_nothing_and_leaves_the_messages(
    deployed: dict[str, DeployedStack], evaluator: SidecarEvaluator
) -> None:
    stack = deployed["broken"]
    source, replay = replay_mapping(stack)
    endpoint = stack.resources.endpoint
    endpoint.client("sqs").send_message(QueueUrl=source.queue_url, MessageBody="{}")
    role = services(stack, evaluator).role(replay.role_arn, replay.function_name)
    invoked: list[Any] = []

    def invoke(function: str, event: Any) -> Invocation:
        invoked.append(event)
        return Invocation("request")

    poller = QueuePoller(
        source=source,
        new_sqs_client=lambda: authorized_client(endpoint.client("sqs"), "replay", role),
        runtime_sqs=endpoint.client("sqs"),
        invoke=invoke,
        time_scale=60,
        region=REGION,
        pollers=1,
    )
    poller.start()
    try:
        wait_until(lambda: poller.stats.to_json()["failed_polls"] >= 2, timeout=30)
    finally:
        poller.stop(3.0)
    attributes = endpoint.client("sqs").get_queue_attributes(
        QueueUrl=source.queue_url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    assert invoked == []
    assert attributes["ApproximateNumberOfMessages"] == "1"


def write_final_result(stack: DeployedStack, task_id: str) -> None:
    stack.resources.endpoint.client("dynamodb").put_item(
        TableName=stack.resources.physical_id("TasksTable"),
        Item={
            "task_id": {"S": task_id},
            "status": {"S": "SOLVED"},
            "submitted_at": {"N": "1764532790.5"},
            "solution": {"S": "token"},
        },
    )


def collect(put: list[Any], entries: Sequence[Any]) -> list[str]:
    put.extend(entries)
    return [str(index) for index, _ in enumerate(entries)]


def test_the_pipe_publishes_with_its_role_and_dead_letters_what_it_may_not_put(
    deployed: dict[str, DeployedStack], evaluator: SidecarEvaluator
) -> None:
    """The real role reads the stream (DescribeStream, GetShardIterator, GetRecords) and puts;
    without PublishResults every execution fails, then the batch goes to the pipe's DLQ."""
    published: dict[str, list[Any]] = {}
    pipes = []
    for name in ("real", "broken"):
        stack = deployed[name]
        write_final_result(stack, f"task-{name}")
        spec = replace(pipe_specs(stack)[0], maximum_retry_attempts=1)
        pipe = StreamPipe(
            spec,
            new_client=stack.resources.endpoint.client,
            put_events=functools.partial(collect, published.setdefault(name, [])),
            authorizer=services(stack, evaluator).role(spec.role_arn, spec.name),
        )
        pipe.start()
        pipes.append(pipe)
    broken = pipes[1]
    try:
        wait_until(lambda: published["real"], timeout=30)
        wait_until(lambda: broken.stats.to_json()["dead_lettered_batches"] >= 1, timeout=30)
    finally:
        for pipe in pipes:
            pipe.stop(3.0)
    assert [entry.detail["task_id"] for entry in published["real"]] == ["task-real"]
    assert published["broken"] == []
    assert broken.stats.to_json()["failed_executions"] == 2
    dlq = deployed["broken"].resources.physical_id("ResultEventsDeadLetterQueue")
    (message,) = (
        deployed["broken"]
        .resources.endpoint.client("sqs")
        .receive_message(QueueUrl=dlq, WaitTimeSeconds=1)["Messages"]
    )
    assert json.loads(message["Body"])["requestContext"]["condition"] == "RetryAttemptsExhausted"


def test_a_rule_invokes_its_target_by_the_function_policy_for_that_rule_only(
    deployed: dict[str, DeployedStack], evaluator: SidecarEvaluator
) -> None:
    stack = deployed["real"]
    attribute = stack.resources.attribute
    push = str(attribute("PushFunction", "Arn"))
    as_eventbridge = services(stack, evaluator)
    for rule, refused in (
        ("PushFunctionFinalResults", False),
        ("PingbackForwardFunctionFinalResults", True),
    ):
        refusal = as_eventbridge.invoke_refusal(
            push, role_arn=None, session_name="", source_arn=str(attribute(rule, "Arn"))
        )
        assert (refusal is not None) == refused, rule


def test_the_poll_schedule_invokes_with_its_role_the_poller_only(
    deployed: dict[str, DeployedStack], evaluator: SidecarEvaluator
) -> None:
    stack = deployed["real"]
    attribute = stack.resources.attribute
    schedule = str(attribute("PollerFunctionPollSchedule", "Arn"))
    role = str(attribute("PollerFunctionPollScheduleRole", "Arn"))
    scheduler = services(stack, evaluator)
    for function, refused in (("PollerFunction", False), ("CallbackFunction", True)):
        refusal = scheduler.invoke_refusal(
            str(attribute(function, "Arn")), role_arn=role, session_name="s", source_arn=schedule
        )
        assert (refusal is not None) == refused, function


# ---------------------------------------------------------------- through a function's worker
SIMULATOR = QUICK_SOLVES


@pytest.fixture(scope="module")
def broken_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    """The broken copy running: GetTaskFunction lacks dynamodb:GetItem on the tasks table."""
    run_dir = tmp_path_factory.mktemp("broken-stack")
    text = TEMPLATE_PATH.read_text(encoding="utf-8")
    root = TEMPLATE_PATH.parent
    text = text.replace("CodeUri: functions/", f"CodeUri: {root / 'functions'}/")
    text = text.replace("CodeUri: examples/", f"CodeUri: {root / 'examples'}/")
    read_task = (  # GetTaskFunctionRole's (the comment after it is its next statement's)
        "- {Sid: ReadTask, Effect: Allow, Action: dynamodb:GetItem, "
        "Resource: !GetAtt TasksTable.Arn}"
        "\n              # Conditional writes of read_through_at"
    )
    assert text.count(read_task) == 1
    text = text.replace(read_task, "# Conditional writes of read_through_at")
    broken = run_dir / "template.yaml"
    broken.write_text(text, encoding="utf-8")
    with Simulator(SimulatorConfig.from_mapping(SIMULATOR)) as simulator:
        options = LocalOptions(
            template=broken,
            provider_url=simulator.base_url,
            provider_api_key=simulator.api_key,
            run_dir=run_dir,
            workers_per_function=1,
        )
        with LocalStack(options) as stack:
            yield stack


def test_a_refused_call_raises_in_the_function_as_on_aws(broken_stack: LocalStack) -> None:
    ready = broken_stack.ready
    broken_stack.reset_calls()
    answer = ready.signed_session().get(f"{ready.api_url}/tasks/1234567890", timeout=30)
    # The store's ClientError becomes the domain's "table unavailable": a 503, as on AWS.
    assert answer.status_code == 503
    calls = broken_stack.calls_report()["calls"]
    outcomes = {(c["function"], c["operation"], c["outcome"]) for c in calls}
    assert ("GetTaskFunction", "GetItem", "AccessDeniedException") in outcomes
