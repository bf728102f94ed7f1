"""The result events path of template.yaml: stream, pipe, bus, least privilege, the example
consumer (its filters and input templates are exercised on records in tests/local)."""

from __future__ import annotations

from typing import Any

from tests.template.conftest import of_type


def statements(role: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        statement
        for policy in role["Properties"]["Policies"]
        for statement in policy["PolicyDocument"]["Statement"]
    ]


def test_the_pipe_reads_the_table_stream_and_puts_on_the_stack_s_bus(
    resources: dict[str, Any],
) -> None:
    pipe = resources["ResultEventsPipe"]["Properties"]
    assert pipe["Source"] == {"Fn::GetAtt": ["TasksTable", "StreamArn"]}
    assert pipe["Target"] == {"Fn::GetAtt": ["ResultEventBus", "Arn"]}
    stream = pipe["SourceParameters"]["DynamoDBStreamParameters"]
    assert stream["StartingPosition"] == "TRIM_HORIZON"
    assert stream["DeadLetterConfig"] == {
        "Arn": {"Fn::GetAtt": ["ResultEventsDeadLetterQueue", "Arn"]}
    }
    assert stream["MaximumRetryAttempts"] > 0
    assert pipe["TargetParameters"]["EventBridgeEventBusParameters"] == {
        "Source": "pingback-guard",
        "DetailType": "Task Result",
    }
    assert "Enrichment" not in pipe


def test_tokens_are_published_only_when_the_parameter_says_so(
    template: dict[str, Any], resources: dict[str, Any]
) -> None:
    # Off by default: any rule on the bus would read every owner's tokens.
    assert template["Parameters"]["PublishTokens"]["Default"] == "false"
    assert template["Conditions"]["EventsCarryTokens"] == {
        "Fn::Equals": [{"Ref": "PublishTokens"}, "true"]
    }
    input_template = resources["ResultEventsPipe"]["Properties"]["TargetParameters"][
        "InputTemplate"
    ]
    condition, with_tokens, without_tokens = input_template["Fn::If"]
    assert condition == "EventsCarryTokens"
    assert "NewImage.solution.S" in with_tokens
    assert "solution" not in without_tokens


def test_the_pipe_role_may_only_read_the_stream_publish_and_dead_letter(
    resources: dict[str, Any],
) -> None:
    role = resources["ResultEventsPipeRole"]["Properties"]
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "pipes.amazonaws.com"}
    assert trust["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}
    granted = {
        str(action): statement["Resource"]
        for statement in statements(resources["ResultEventsPipeRole"])
        for action in (
            statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        )
    }
    stream = {"Fn::GetAtt": ["TasksTable", "StreamArn"]}
    assert granted == {
        "dynamodb:DescribeStream": stream,
        "dynamodb:GetRecords": stream,
        "dynamodb:GetShardIterator": stream,
        "dynamodb:ListStreams": stream,
        "events:PutEvents": {"Fn::GetAtt": ["ResultEventBus", "Arn"]},
        "sqs:SendMessage": {"Fn::GetAtt": ["ResultEventsDeadLetterQueue", "Arn"]},
    }


def test_unpublished_batches_and_pipe_failures_are_alarmed(resources: dict[str, Any]) -> None:
    alarms = of_type(resources, "AWS::CloudWatch::Alarm")
    dead_letter = alarms["ResultEventsDeadLetterAlarm"]["Properties"]
    assert dead_letter["Dimensions"] == [
        {"Name": "QueueName", "Value": {"Fn::GetAtt": ["ResultEventsDeadLetterQueue", "QueueName"]}}
    ]
    failed = alarms["ResultEventsPipeFailedAlarm"]["Properties"]
    assert (failed["Namespace"], failed["MetricName"]) == (
        "AWS/EventBridge/Pipes",
        "ExecutionFailed",
    )
    assert failed["Dimensions"] == [{"Name": "PipeName", "Value": {"Ref": "ResultEventsPipe"}}]


def test_the_example_consumer_exists_only_on_request_with_its_own_tables(
    template: dict[str, Any], resources: dict[str, Any]
) -> None:
    assert template["Parameters"]["DeployExampleConsumer"]["Default"] == "false"
    example = {name for name in resources if name.startswith("ResultConsumer")}
    assert example == {
        "ResultConsumerFunction",
        "ResultConsumerFunctionRole",
        "ResultConsumerFunctionLogGroup",
        "ResultConsumerIdempotencyTable",
        "ResultConsumerAppliedTable",
        "ResultConsumerFailedQueue",
        "ResultConsumerFailedQueuePolicy",
        "ResultConsumerFailedAlarm",
    }
    for name in example:
        assert resources[name]["Condition"] == "HasExampleConsumer", name
    function = resources["ResultConsumerFunction"]["Properties"]
    rule = function["Events"]["FinalResults"]
    assert rule["Type"] == "EventBridgeRule"
    assert rule["Properties"]["EventBusName"] == {"Ref": "ResultEventBus"}
    assert rule["Properties"]["Pattern"] == {
        "source": ["pingback-guard"],
        "detail-type": ["Task Result"],
        "detail": {"origin": [{"anything-but": "smoke"}]},
    }
    resources_granted = {
        str(statement["Sid"]): statement["Resource"]
        for statement in statements(resources["ResultConsumerFunctionRole"])
    }
    assert resources_granted["IdempotencyRecords"] == {
        "Fn::GetAtt": ["ResultConsumerIdempotencyTable", "Arn"]
    }
    assert resources_granted["ApplyResult"] == {"Fn::GetAtt": ["ResultConsumerAppliedTable", "Arn"]}
    assert not any("TasksTable" in str(value) for value in resources_granted.values())


def test_the_bus_name_is_an_output(template: dict[str, Any]) -> None:
    assert template["Outputs"]["EventBusName"]["Value"] == {"Ref": "ResultEventBus"}


def test_the_example_consumer_keeps_what_it_failed_on_and_alarms(
    resources: dict[str, Any],
) -> None:
    config = resources["ResultConsumerFunction"]["Properties"]["EventInvokeConfig"]
    destination = {"Fn::GetAtt": ["ResultConsumerFailedQueue", "Arn"]}
    assert config["DestinationConfig"]["OnFailure"] == {"Type": "SQS", "Destination": destination}
    grants = resources["ResultConsumerFunctionRole"]["Properties"]["Policies"][0]
    assert {"Sid": "KeepFailedEvents", "Effect": "Allow", "Action": "sqs:SendMessage"}.items() <= (
        next(s for s in grants["PolicyDocument"]["Statement"] if s["Sid"] == "KeepFailedEvents")
    ).items()
    alarm = resources["ResultConsumerFailedAlarm"]["Properties"]
    assert alarm["Dimensions"] == [
        {"Name": "QueueName", "Value": {"Fn::GetAtt": ["ResultConsumerFailedQueue", "QueueName"]}}
    ]
    assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (0, "GreaterThanThreshold")
    assert alarm["AlarmActions"] == [{"Ref": "AlarmTopic"}]


def test_only_the_pipe_and_the_optional_operator_role_put_events_on_the_bus(
    resources: dict[str, Any],
) -> None:
    policy = resources["ResultEventBusPolicy"]["Properties"]
    assert policy["EventBusName"] == {"Ref": "ResultEventBus"}
    statement = policy["Statement"]
    assert (statement["Effect"], statement["Principal"], statement["Action"]) == (
        "Deny",
        "*",
        "events:PutEvents",
    )
    allowed = statement["Condition"]["ArnNotEquals"]["aws:PrincipalArn"]["Fn::If"]
    pipe = {"Fn::GetAtt": ["ResultEventsPipeRole", "Arn"]}
    assert allowed == [
        "HasResultEventsOperator",
        [pipe, {"Ref": "ResultEventsOperatorRoleArn"}],
        [pipe],
    ]


def test_the_bus_takes_an_optional_customer_managed_key(
    template: dict[str, Any], resources: dict[str, Any]
) -> None:
    assert template["Parameters"]["ResultEventBusEncryption"]["Default"] == ""
    key = resources["ResultEventBus"]["Properties"]["KmsKeyIdentifier"]
    assert key == {
        "Fn::If": [
            "EncryptsResultEventBus",
            {"Ref": "ResultEventBusEncryption"},
            {"Ref": "AWS::NoValue"},
        ]
    }


def test_a_stopped_pipe_is_alarmed_by_what_should_flow_through_it(
    resources: dict[str, Any],
) -> None:
    """Pipes turns a pipe off after persistent errors and its metrics go silent: the alarm
    compares the tokens the functions stored with the pipe's completed executions."""
    from pingback_guard.domain.task import DeliveryPath

    properties = of_type(resources, "AWS::CloudWatch::Alarm")["ResultEventsPipeStoppedAlarm"][
        "Properties"
    ]
    queries = {query["Id"]: query for query in properties["Metrics"]}
    (returned,) = [query for query in properties["Metrics"] if query.get("ReturnData", True)]
    assert returned["Expression"] == "IF(stored > 0 AND published <= 0, 1, 0)"
    assert (properties["Threshold"], properties["ComparisonOperator"]) == (
        1,
        "GreaterThanOrEqualToThreshold",
    )
    # Silence is never health; one stray period (a result stored as a period ends) is no alarm.
    assert properties["TreatMissingData"] == "breaching"
    assert (properties["EvaluationPeriods"], properties["DatapointsToAlarm"]) == (3, 2)
    # Stored: a new token on every delivery path, each FILLed (a quiet path reads 0).
    stored_paths = {
        dimension["Value"]
        for query in queries.values()
        if "MetricStat" in query
        and query["MetricStat"]["Metric"]["MetricName"] == "TokenAgeAtDelivery"
        for dimension in query["MetricStat"]["Metric"]["Dimensions"]
        if dimension["Name"] == "delivery_path"
    }
    assert stored_paths == {path.value for path in DeliveryPath}
    stored_ids = [
        name
        for name, query in queries.items()
        if "MetricStat" in query
        and query["MetricStat"]["Metric"]["MetricName"] == "TokenAgeAtDelivery"
    ]
    assert all(f"FILL({name}, 0)" in queries["stored"]["Expression"] for name in stored_ids)
    assert {queries[name]["MetricStat"]["Stat"] for name in stored_ids} == {"SampleCount"}
    # Published: the pipe's executions less its failed ones, the dead pipe's silence read as 0.
    assert queries["published"]["Expression"] == "FILL(executions, 0) - FILL(failed, 0)"
    pipe = {"Name": "PipeName", "Value": {"Ref": "ResultEventsPipe"}}
    # Only metrics AWS documents with the dimension PipeName alone (Invocations also needs
    # AwsAccountId): https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-monitoring.html
    for name, metric, statistic in (
        ("executions", "Duration", "SampleCount"),
        ("failed", "ExecutionFailed", "Sum"),
    ):
        stat = queries[name]["MetricStat"]
        assert stat["Metric"] == {
            "Namespace": "AWS/EventBridge/Pipes",
            "MetricName": metric,
            "Dimensions": [pipe],
        }
        assert stat["Stat"] == statistic
    assert {
        query["MetricStat"]["Period"] for query in queries.values() if "MetricStat" in query
    } == {300}


def test_the_dashboard_charts_the_pipe_s_executions_next_to_the_results_stored(
    resources: dict[str, Any],
) -> None:
    body = resources["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"][0]
    for metric in ("Duration", "ExecutionFailed"):
        assert f'["AWS/EventBridge/Pipes", "{metric}", "PipeName", "${{ResultEventsPipe}}"' in body
    assert '"Invocations", "PipeName"' not in body
    for stored in ("CallbackAccepted", "ReplayStored", "PollRecovered", "ReadThroughRecovered"):
        assert f'["${{Ns}}", "{stored}", "service", "${{Svc}}", {{"label": "stored by' in body
