"""Structure of template.yaml: the contract of docs/architecture.md, least privilege, alerting."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from pingback_guard.data.poller_lease import POLLER_LEASE_KEY
from tests.template.conftest import (
    EXAMPLE_FUNCTIONS,
    FUNCTIONS,
    ROOT,
    STACK_NAMESPACE,
    as_list,
    of_type,
    referenced_names,
    sub_text,
    walk,
)

SERVICE_DIMENSION = [{"Name": "service", "Value": "pingback-guard"}]

# docs/architecture.md, "Environment variables": what each function must be given.
COMMON_ENV = {
    "POWERTOOLS_SERVICE_NAME",
    "POWERTOOLS_METRICS_NAMESPACE",
    "POWERTOOLS_LOG_LEVEL",
    "TASKS_TABLE_NAME",
    "DUE_INDEX_NAME",
    "DUE_SHARDS",
    "RESULT_TTL_DAYS",
    "RECAPTCHA_TOKEN_LIFETIME_SECONDS",
    "HCAPTCHA_TOKEN_LIFETIME_SECONDS",
    "TURNSTILE_TOKEN_LIFETIME_SECONDS",
    # Bounds pingback capabilities and provisional results too, so every function has it.
    "RETENTION_SECONDS",
    "GEETEST_TOKEN_LIFETIME_SECONDS",
    "CLOUDFLARE_CLEARANCE_LIFETIME_SECONDS",
}
FUNCTION_ENV = {
    "SubmitFunction": {
        "CALLBACK_SECRET_ID",
        "DEAD_LETTER_QUEUE_URL",
        "PROVIDER_BASE_URL",
        "PROVIDER_API_KEY_PARAMETER",
        "PUBLIC_BASE_URL",
        "CALLBACK_TIMEOUT_SECONDS",
        "POLLER_FUNCTION_NAME",
        "POLLER_WAKE_ON_SUBMIT",
    },
    "PushFunction": {"PUSH_MANAGEMENT_ENDPOINT"},
    "GetTaskFunction": {
        "ADMIN_PRINCIPAL_ARN",
        "PROVIDER_BASE_URL",
        "PROVIDER_API_KEY_PARAMETER",
        "READ_THROUGH_INTERVAL_SECONDS",
        "POLL_SWEEP_INTERVAL_SECONDS",
    },
    "RegisterFunction": {
        "CALLBACK_SECRET_ID",
        "PUBLIC_BASE_URL",
        "CALLBACK_TIMEOUT_SECONDS",
        "EXPECTED_SOLVE_SECONDS",
        "PROVIDER_BASE_URL",
        "PROVIDER_API_KEY_PARAMETER",
        "ADMIN_PRINCIPAL_ARN",
    },
    "ReportFunction": {
        "PROVIDER_BASE_URL",
        "PROVIDER_API_KEY_PARAMETER",
        "REPORT_WINDOW_SECONDS",
        "ADMIN_PRINCIPAL_ARN",
    },
    "CallbackFunction": {
        "DEAD_LETTER_QUEUE_URL",
        "CALLBACK_SECRET_ID",
        "PINGBACK_VERIFICATION_TOKEN",
    },
    "ReplayFunction": set(),
    "CompatSubmitFunction": {
        "WORKER_KEYS_TABLE_NAME",
        "POLLER_FUNCTION_NAME",
        "POLLER_WAKE_ON_SUBMIT",
        "CALLBACK_SECRET_ID",
        "DEAD_LETTER_QUEUE_URL",
        "PROVIDER_BASE_URL",
        "PROVIDER_API_KEY_PARAMETER",
        "PUBLIC_BASE_URL",
        "CALLBACK_TIMEOUT_SECONDS",
    },
    "PingbackForwardFunction": set(),
    "CompatResultFunction": {
        "WORKER_KEYS_TABLE_NAME",
        "ADMIN_PRINCIPAL_ARN",
        "PROVIDER_BASE_URL",
        "PROVIDER_API_KEY_PARAMETER",
        "READ_THROUGH_INTERVAL_SECONDS",
        "POLL_SWEEP_INTERVAL_SECONDS",
        "REPORT_WINDOW_SECONDS",
    },
    "PollerFunction": {
        "PROVIDER_BASE_URL",
        "PROVIDER_API_KEY_PARAMETER",
        "PROVIDER_BATCH_IDS",
        "POLL_BACKOFF_BASE_SECONDS",
        "POLL_BACKOFF_MAX_SECONDS",
        "POLLER_MAX_REQUESTS_PER_SWEEP",
        "POLLER_REQUEST_WORKERS",
    },
}

# Least privilege: exactly these actions on exactly these resources, beyond own logs and X-Ray.
TABLE = "TasksTable"
EXPECTED_GRANTS: dict[str, dict[str, set[str]]] = {
    # The lease item's read and the poller's start: test_submit_may_wake_the_poller_only.
    "SubmitFunction": {
        "dynamodb:UpdateItem": {TABLE},
        "dynamodb:GetItem": {TABLE},
        "lambda:InvokeFunction": {"PollerFunction"},
        "sqs:SendMessage": {"DeadLetterQueue"},
        "secretsmanager:GetSecretValue": {"CallbackSecret"},
        "ssm:GetParameter": {"ProviderApiKeyParameterName"},
    },
    "GetTaskFunction": {
        "dynamodb:GetItem": {TABLE},
        "dynamodb:UpdateItem": {TABLE},
        "ssm:GetParameter": {"ProviderApiKeyParameterName"},
    },
    # Writes only under the "#push-" keys (a LeadingKeys condition: test_push_writes_no_task).
    "PushFunction": {
        "dynamodb:GetItem": {TABLE},
        "dynamodb:BatchGetItem": {TABLE},
        "dynamodb:PutItem": {TABLE},
        "dynamodb:UpdateItem": {TABLE},
        "dynamodb:DeleteItem": {TABLE},
        "execute-api:ManageConnections": {"PushApi", "PushApiStage"},
    },
    # No queue: a worker whose registration gets a 503 retries it (registration is idempotent).
    "RegisterFunction": {
        "dynamodb:UpdateItem": {TABLE},
        "dynamodb:DeleteItem": {TABLE},
        "secretsmanager:GetSecretValue": {"CallbackSecret"},
        "ssm:GetParameter": {"ProviderApiKeyParameterName"},
    },
    "ReportFunction": {
        "dynamodb:UpdateItem": {TABLE},
        "dynamodb:GetItem": {TABLE},
        "ssm:GetParameter": {"ProviderApiKeyParameterName"},
    },
    "CallbackFunction": {
        "dynamodb:UpdateItem": {TABLE},
        "sqs:SendMessage": {"DeadLetterQueue"},
        "secretsmanager:GetSecretValue": {"CallbackSecret"},
    },
    "ReplayFunction": {
        "dynamodb:UpdateItem": {TABLE},
        "sqs:ReceiveMessage": {"DeadLetterQueue"},
        "sqs:DeleteMessage": {"DeadLetterQueue"},
        "sqs:ChangeMessageVisibility": {"DeadLetterQueue"},
        "sqs:GetQueueAttributes": {"DeadLetterQueue"},
    },
    # in.php / res.php: the submit's and the reads' grants, plus reading a worker key's record.
    # And each key's request budget and threads in flight (RequestBudgetsTable); res.php also
    # the cached balance.
    "CompatSubmitFunction": {
        "dynamodb:GetItem": {"WorkerKeysTable", TABLE, "RequestBudgetsTable"},
        "lambda:InvokeFunction": {"PollerFunction"},
        "dynamodb:UpdateItem": {TABLE, "RequestBudgetsTable"},
        "sqs:SendMessage": {"DeadLetterQueue"},
        "secretsmanager:GetSecretValue": {"CallbackSecret"},
        "ssm:GetParameter": {"ProviderApiKeyParameterName"},
    },
    "PingbackForwardFunction": {
        "dynamodb:GetItem": {TABLE},
        "sqs:SendMessage": {"PingbackForwardFailedQueue"},
    },
    "CompatResultFunction": {
        "dynamodb:GetItem": {TABLE, "WorkerKeysTable", "RequestBudgetsTable"},
        "dynamodb:UpdateItem": {TABLE, "RequestBudgetsTable"},
        "ssm:GetParameter": {"ProviderApiKeyParameterName"},
    },
    "PollerFunction": {
        "dynamodb:Query": {TABLE},
        "dynamodb:UpdateItem": {TABLE},
        "dynamodb:BatchGetItem": {TABLE},
        "lambda:InvokeFunction": {"PollerFunction"},
        "ssm:GetParameter": {"ProviderApiKeyParameterName"},
        "sqs:SendMessage": {"PollerFailedEventsQueue"},
    },
}
LOG_ACTIONS = {"logs:CreateLogStream", "logs:PutLogEvents"}
# X-Ray supports no resource-level permissions: "*" is the only resource these accept.
XRAY_ACTIONS = {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}

CUSTOM_METRIC_ALARMS = {
    "TaskExpiredAlarm": "TaskExpired",
    "ProviderAccountErrorAlarm": "ProviderAccountError",
    "CallbackUnavailableAlarm": "CallbackUnavailable",
    "CallbackConflictAlarm": "CallbackConflict",
    "PollRecoveredAlarm": "PollRecovered",
    "SubmitNotRecordedAlarm": "SubmitNotRecorded",
    "ProvisionalResultDiscardedAlarm": "ProvisionalResultDiscarded",
    "CallbackUnregisteredAlarm": "CallbackUnregistered",
    "RegistrationReplacedAlarm": "RegistrationReplaced",
    "RegistrationClashAlarm": "RegistrationClash",
    "TokenDeliveredUnusableAlarm": "TokenDeliveredUnusable",
    "AnswerShapeMisfitAlarm": "AnswerShapeMisfit",
}
QUEUE_ALARMS = {
    "PollerFailedEventsAlarm": ("PollerFailedEventsQueue", "ApproximateNumberOfMessagesVisible"),
    "DeadLetterQueueAgeAlarm": ("DeadLetterQueue", "ApproximateAgeOfOldestMessage"),
    "ParkingQueueDepthAlarm": ("ParkingQueue", "ApproximateNumberOfMessagesVisible"),
}
DASHBOARD_METRICS = {
    "CompatAnswered",
    "CompatKeyRefused",
    "CompatStoreUnavailable",
    "PingbackForwarded",
    "PingbackForwardFailed",
    "CallbackAccepted",
    "CallbackDuplicate",
    "CallbackConflict",
    "CallbackRejected",
    "CallbackToDeadLetter",
    "CallbackUnavailable",
    "ReplayStored",
    "ReplayFailed",
    "PollRecovered",
    "PollNotReady",
    "PollTaskFailed",
    "TaskExpired",
    "ProviderAccountError",
    "ProviderRetryableError",
    "TaskSubmitted",
    "SubmitRejected",
    "CallbackProofMismatch",
    "CallbackUnregistered",
    "ProvisionalResultDiscarded",
    "TaskRegistered",
    "ReplayRejected",
    "TokenAgeAtDelivery",
    "TokenDeliveredUnusable",
    "ReadThroughRecovered",
    "ReadThroughError",
    "ReportedGood",
    "ReportedBad",
    "ReportFailed",
}
OUTPUTS = {
    "ApiUrl",
    "CallbackUrl",
    "TasksTableName",
    "DeadLetterQueueUrl",
    "ParkingQueueUrl",
    "AlarmTopicArn",
    "DashboardUrl",
    "CallbackSecretArn",
    "EventBusName",
    "ResultEventsDeadLetterQueueUrl",
    "WebSocketUrl",
    "WorkerKeysTableName",
}


def functions(resources: dict[str, Any]) -> dict[str, Any]:
    """The product's functions (the example consumer has its own tests)."""
    found = of_type(resources, "AWS::Serverless::Function")
    return {name: body for name, body in found.items() if name not in EXAMPLE_FUNCTIONS}


def role_statements(resources: dict[str, Any], function: str) -> list[dict[str, Any]]:
    role_ref = functions(resources)[function]["Properties"]["Role"]
    role = resources[role_ref["Fn::GetAtt"][0]]
    assert role["Type"] == "AWS::IAM::Role"
    statements: list[dict[str, Any]] = []
    for policy in role["Properties"]["Policies"]:
        statements.extend(policy["PolicyDocument"]["Statement"])
    for resource in resources.values():
        attached_to = [role_ref["Fn::GetAtt"][0]]
        if resource["Type"] == "AWS::IAM::Policy" and resource["Properties"]["Roles"] == [
            {"Ref": name} for name in attached_to
        ]:
            statements.extend(resource["Properties"]["PolicyDocument"]["Statement"])
    return statements


# ------------------------------------------------------------------ globals and functions


def test_is_a_sam_template(template: dict[str, Any]) -> None:
    assert template["Transform"] == "AWS::Serverless-2016-10-31"


def test_globals_set_runtime_architecture_tracing_and_code(template: dict[str, Any]) -> None:
    function_globals = template["Globals"]["Function"]
    assert function_globals["Runtime"] == "python3.12"
    assert function_globals["Architectures"] == ["arm64"]
    assert function_globals["Tracing"] == {"Ref": "Tracing"}
    assert function_globals["MemorySize"] == 256
    assert function_globals["CodeUri"] == "functions/"
    assert isinstance(function_globals["Timeout"], int)


def test_the_tracing_parameter_drives_every_functions_mode_and_its_code(
    template: dict[str, Any], translated: dict[str, Any]
) -> None:
    """One parameter: Lambda's TracingConfig Mode of every function (SAM's `Tracing`, AWS's two
    modes: https://docs.aws.amazon.com/lambda/latest/dg/API_TracingConfig.html) and the
    TRACING_MODE the code reads at cold start to import the X-Ray SDK or not."""
    parameter = template["Parameters"]["Tracing"]
    assert parameter["AllowedValues"] == ["Active", "PassThrough"]
    assert parameter["Default"] == "PassThrough"
    assert template["Globals"]["Function"]["Environment"]["Variables"]["TRACING_MODE"] == {
        "Ref": "Tracing"
    }
    lambdas = of_type(translated["Resources"], "AWS::Lambda::Function")
    assert set(lambdas) >= set(FUNCTIONS)
    for name, body in lambdas.items():
        properties = body["Properties"]
        assert properties["TracingConfig"] == {"Mode": {"Ref": "Tracing"}}, name
        assert properties["Environment"]["Variables"]["TRACING_MODE"] == {"Ref": "Tracing"}, name


def test_globals_environment(template: dict[str, Any]) -> None:
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    assert set(variables) >= COMMON_ENV
    assert variables["POWERTOOLS_SERVICE_NAME"] == "pingback-guard"
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == STACK_NAMESPACE
    assert variables["POWERTOOLS_LOG_LEVEL"] == {"Ref": "LogLevel"}
    assert variables["TASKS_TABLE_NAME"] == {"Ref": "TasksTable"}
    assert variables["DUE_INDEX_NAME"] == "DueIndex"
    assert variables["DUE_SHARDS"] == {"Ref": "DueShards"}
    assert variables["RESULT_TTL_DAYS"] == {"Ref": "ResultTtlDays"}
    # Events carry tokens and the callback secret: never logged, never in traces.
    assert variables["POWERTOOLS_LOGGER_LOG_EVENT"] == "false"
    assert variables["POWERTOOLS_TRACER_CAPTURE_RESPONSE"] == "false"


def test_exactly_the_listed_functions_with_their_handlers(resources: dict[str, Any]) -> None:
    found = {name: body["Properties"]["Handler"] for name, body in functions(resources).items()}
    assert found == FUNCTIONS


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_functions_inherit_code_runtime_and_architecture(
    resources: dict[str, Any], function: str
) -> None:
    properties = functions(resources)[function]["Properties"]
    # The poller mostly waits between sweeps: the smallest memory halves what waiting costs.
    # Push is I/O only and an accelerator: the smallest memory (issue 24).
    own = {
        "PollerFunction": {"MemorySize"},
        "PushFunction": {"MemorySize"},
    }.get(function, set())
    for key in ("Runtime", "Architectures", "CodeUri", "Tracing", "MemorySize"):
        if key not in own:
            assert key not in properties, f"{function} overrides {key} of Globals"


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_handler_module_exists(function: str) -> None:
    module = FUNCTIONS[function].rsplit(".", 1)[0]
    assert (ROOT / "functions" / (module.replace(".", "/") + ".py")).is_file()


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_function_environment(
    template: dict[str, Any], resources: dict[str, Any], function: str
) -> None:
    own = functions(resources)[function]["Properties"].get("Environment", {}).get("Variables", {})
    merged = set(template["Globals"]["Function"]["Environment"]["Variables"]) | set(own)
    assert COMMON_ENV | FUNCTION_ENV[function] <= merged
    secret_users = {
        "CallbackFunction",
        "SubmitFunction",
        "RegisterFunction",
        "CompatSubmitFunction",
    }
    if function in secret_users:
        assert own["CALLBACK_SECRET_ID"] == {"Ref": "CallbackSecret"}
    else:
        assert "CALLBACK_SECRET_ID" not in own


def test_timeouts_leave_the_poller_room_and_fit_the_api(resources: dict[str, Any]) -> None:
    timeouts = {
        name: body["Properties"].get("Timeout", 10) for name, body in functions(resources).items()
    }
    # HTTP API integrations time out at 30 s.
    for name in (
        "SubmitFunction",
        "GetTaskFunction",
        "CallbackFunction",
        "RegisterFunction",
        "ReportFunction",
        "CompatSubmitFunction",
        "CompatResultFunction",
    ):
        assert timeouts[name] <= 29
    assert timeouts["PollerFunction"] >= 30


# ------------------------------------------------------------------ events


def http_events(resources: dict[str, Any], function: str) -> list[dict[str, Any]]:
    events = functions(resources)[function]["Properties"]["Events"].values()
    return [event["Properties"] for event in events if event["Type"] == "HttpApi"]


def test_http_api_enables_iam_and_throttles(resources: dict[str, Any]) -> None:
    api = resources["HttpApi"]
    assert api["Type"] == "AWS::Serverless::HttpApi"
    properties = api["Properties"]
    assert properties["Auth"]["EnableIamAuthorizer"] is True
    assert "DefaultAuthorizer" not in properties["Auth"]
    throttling = properties["DefaultRouteSettings"]
    assert throttling["ThrottlingRateLimit"] == {"Ref": "ApiThrottlingRateLimit"}
    assert throttling["ThrottlingBurstLimit"] == {"Ref": "ApiThrottlingBurstLimit"}


def test_access_log_never_records_the_path(resources: dict[str, Any]) -> None:
    settings = resources["HttpApi"]["Properties"]["AccessLogSettings"]
    assert settings["DestinationArn"] == {"Fn::GetAtt": ["HttpApiAccessLogGroup", "Arn"]}
    log_format = settings["Format"]
    json.loads(log_format)
    for forbidden in ("$context.path", "rawPath", "$context.http.path", "querystring"):
        assert forbidden not in log_format
    for wanted in ("$context.routeKey", "$context.status", "$context.requestId"):
        assert wanted in log_format
    assert "$context.identity.sourceIp" in log_format
    assert "Latency" in log_format or "latency" in log_format


@pytest.mark.parametrize(
    ("function", "routes"),
    [
        ("SubmitFunction", {("POST", "/tasks")}),
        ("GetTaskFunction", {("GET", "/tasks/{task_id}")}),
        (
            "RegisterFunction",
            {
                ("POST", "/pingback-urls"),
                ("PUT", "/tasks/{task_id}"),
                ("POST", "/smoke-tasks"),
                ("DELETE", "/smoke-tasks/{task_id}"),
            },
        ),
        ("ReportFunction", {("POST", "/tasks/{task_id}/report")}),
    ],
)
def test_task_routes_use_iam_auth(
    resources: dict[str, Any], function: str, routes: set[tuple[str, str]]
) -> None:
    events = http_events(resources, function)
    assert {(event["Method"], event["Path"]) for event in events} == routes
    for event in events:
        assert event["ApiId"] == {"Ref": "HttpApi"}
        assert event["Auth"] == {"Authorizer": "AWS_IAM"}


def test_callback_routes_are_public(resources: dict[str, Any]) -> None:
    events = http_events(resources, "CallbackFunction")
    assert {(event["Method"], event["Path"]) for event in events} == {
        ("GET", "/callback/{secret}"),
        ("POST", "/callback/{secret}"),
        ("GET", "/2captcha.txt"),
    }
    for event in events:
        assert event["ApiId"] == {"Ref": "HttpApi"}
        assert "Auth" not in event


def test_the_2captcha_routes_are_at_the_api_root_with_key_auth(resources: dict[str, Any]) -> None:
    """An SDK's server= reaches https://{server}/in.php and /res.php; its key= is the auth."""
    for function, path in (
        ("CompatSubmitFunction", "/in.php"),
        ("CompatResultFunction", "/res.php"),
    ):
        events = http_events(resources, function)
        assert {(event["Method"], event["Path"]) for event in events} == {
            ("GET", path),
            ("POST", path),
        }
        for event in events:
            assert event["ApiId"] == {"Ref": "HttpApi"}
            assert "Auth" not in event


def test_worker_keys_table_keeps_hashes_by_key_id(resources: dict[str, Any]) -> None:
    table = resources["WorkerKeysTable"]["Properties"]
    assert table["KeySchema"] == [{"AttributeName": "key_id", "KeyType": "HASH"}]
    assert table["SSESpecification"] == {"SSEEnabled": True}
    assert table["BillingMode"] == "PAY_PER_REQUEST"


def test_translated_api_secures_only_the_task_routes(translated: dict[str, Any]) -> None:
    body = translated["Resources"]["HttpApi"]["Properties"]["Body"]
    security = {
        (method.upper(), path): operation.get("security")
        for path, operations in body["paths"].items()
        for method, operation in operations.items()
    }
    assert security[("POST", "/tasks")] == [{"AWS_IAM": []}]
    assert security[("GET", "/tasks/{task_id}")] == [{"AWS_IAM": []}]
    assert security[("PUT", "/tasks/{task_id}")] == [{"AWS_IAM": []}]
    assert security[("POST", "/pingback-urls")] == [{"AWS_IAM": []}]
    assert security[("POST", "/smoke-tasks")] == [{"AWS_IAM": []}]
    assert security[("DELETE", "/smoke-tasks/{task_id}")] == [{"AWS_IAM": []}]
    assert security[("POST", "/tasks/{task_id}/report")] == [{"AWS_IAM": []}]
    for route in (("GET", "/callback/{secret}"), ("POST", "/callback/{secret}")):
        assert security[route] is None
    assert security[("GET", "/2captcha.txt")] is None


def test_replay_reads_the_dead_letter_queue_with_partial_failures(
    resources: dict[str, Any],
) -> None:
    (event,) = functions(resources)["ReplayFunction"]["Properties"]["Events"].values()
    assert event["Type"] == "SQS"
    properties = event["Properties"]
    assert properties["Queue"] == {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]}
    assert properties["BatchSize"] == 10
    assert properties["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_poller_schedule_rate_is_grammatical(
    template: dict[str, Any], resources: dict[str, Any]
) -> None:
    (event,) = functions(resources)["PollerFunction"]["Properties"]["Events"].values()
    assert event["Type"] == "ScheduleV2"
    expression = event["Properties"]["ScheduleExpression"]
    condition, one, many = expression["Fn::If"]
    assert template["Conditions"][condition] == {"Fn::Equals": [{"Ref": "PollRateMinutes"}, 1]}
    assert one == "rate(1 minute)"
    assert many == {"Fn::Sub": "rate(${PollRateMinutes} minutes)"}
    assert event["Properties"]["OmitName"] is True
    payload = json.loads(event["Properties"]["Input"])
    assert payload["source"] == "pingback-guard.scheduler"


# ------------------------------------------------------------------ least privilege


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_each_function_has_its_own_role(resources: dict[str, Any], function: str) -> None:
    role_ref = functions(resources)[function]["Properties"]["Role"]
    role_name = role_ref["Fn::GetAtt"][0]
    assert role_ref == {"Fn::GetAtt": [role_name, "Arn"]}
    role = resources[role_name]["Properties"]
    assert "ManagedPolicyArns" not in role, "managed policies grant on Resource '*'"
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "lambda.amazonaws.com"}
    assert trust["Action"] == "sts:AssumeRole"
    users = [
        name
        for name, body in functions(resources).items()
        if body["Properties"]["Role"]["Fn::GetAtt"][0] == role_name
    ]
    assert users == [function]
    assert "Policies" not in functions(resources)[function]["Properties"]


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_policies_are_least_privilege(resources: dict[str, Any], function: str) -> None:
    granted: dict[str, set[str]] = {}
    for statement in role_statements(resources, function):
        assert statement["Effect"] == "Allow"
        assert "NotAction" not in statement
        assert "NotResource" not in statement
        actions = set(as_list(statement["Action"]))
        for action in actions:
            assert "*" not in action, f"{function}: wildcard action {action}"
        resource_list = as_list(statement["Resource"])
        if "*" in resource_list:
            assert actions <= XRAY_ACTIONS, f"{function}: Resource '*' for {actions}"
            continue
        targets = set().union(*(referenced_names(resource) for resource in resource_list))
        targets -= {"AWS::Partition", "AWS::Region", "AWS::AccountId"}
        for action in actions:
            granted.setdefault(action, set()).update(targets)
    log_group = f"{function}LogGroup"
    for action in LOG_ACTIONS:
        assert granted.pop(action) == {log_group}
    assert granted == EXPECTED_GRANTS[function]


def test_the_poller_starts_its_helpers_through_a_policy_of_its_own(
    template: dict[str, Any], resources: dict[str, Any]
) -> None:
    """In the role's own Policies, a reference to PollerFunction is a circular dependency that
    CloudFormation refuses; as an AWS::IAM::Policy attached to the role it is not. The helpers'
    leases, and tasks' accounts, are the only items the poller may batch-read."""
    policy = resources["PollerStartsHelpersPolicy"]
    assert policy["Type"] == "AWS::IAM::Policy"
    assert policy["Condition"] == "PollerHasHelpers"
    assert template["Conditions"]["PollerHasHelpers"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "PollerHelpers"}, "0"]}]
    }
    assert policy["Properties"]["Roles"] == [{"Ref": "PollerFunctionRole"}]
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Resource"] == {"Fn::GetAtt": ["PollerFunction", "Arn"]}
    role_policies = json.dumps(resources["PollerFunctionRole"]["Properties"]["Policies"])
    assert "PollerFunction.Arn" not in role_policies and '"PollerFunction"' not in role_policies
    leases, accounts = [
        statement
        for statement in role_statements(resources, "PollerFunction")
        if statement["Action"] == "dynamodb:BatchGetItem"
    ]
    assert leases["Condition"] == {
        "ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["#poller-lease#*"]}
    }
    # The due tasks' provider accounts (several accounts): task items only, never a "#" item.
    assert accounts["Condition"] == {"ForAllValues:StringNotLike": {"dynamodb:LeadingKeys": ["#*"]}}
    environment = functions(resources)["PollerFunction"]["Properties"]["Environment"]["Variables"]
    assert environment["POLLER_HELPERS"] == {"Ref": "PollerHelpers"}


def test_poller_queries_only_the_due_index(resources: dict[str, Any]) -> None:
    (query,) = [
        statement
        for statement in role_statements(resources, "PollerFunction")
        if "dynamodb:Query" in as_list(statement["Action"])
    ]
    assert query["Resource"] == {"Fn::Sub": "${TasksTable.Arn}/index/DueIndex"}
    for function in FUNCTIONS:
        for statement in role_statements(resources, function):
            assert "dynamodb:Scan" not in as_list(statement["Action"])


@pytest.mark.parametrize(
    "function", ["SubmitFunction", "PollerFunction", "GetTaskFunction", "ReportFunction"]
)
def test_api_key_parameter_arn_is_built_from_its_name(
    template: dict[str, Any], resources: dict[str, Any], function: str
) -> None:
    (statement,) = [
        statement
        for statement in role_statements(resources, function)
        if statement["Action"] == "ssm:GetParameter"
    ]
    expected = (
        "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}"
        ":parameter${ProviderApiKeyParameterName}"
    )
    # Account 1's key, and the extra accounts' keys beside it (ProviderExtraAccounts).
    assert statement["Resource"] == [{"Fn::Sub": expected}, {"Fn::Sub": f"{expected}-*"}]
    # The ARN above is only right for names with a leading slash.
    assert template["Parameters"]["ProviderApiKeyParameterName"]["AllowedPattern"].startswith("^/")


def test_generated_roles_are_scoped(translated: dict[str, Any]) -> None:
    """Roles SAM adds itself (the scheduler's) must not widen anything either."""
    roles = of_type(translated["Resources"], "AWS::IAM::Role")
    assert set(roles) == {f"{name}Role" for name in FUNCTIONS | EXAMPLE_FUNCTIONS} | {
        "PollerFunctionPollScheduleRole",
        "ResultEventsPipeRole",
    }
    scheduler = roles["PollerFunctionPollScheduleRole"]["Properties"]
    assert "ManagedPolicyArns" not in scheduler
    (statement,) = scheduler["Policies"][0]["PolicyDocument"]["Statement"]
    assert statement["Action"] == "lambda:InvokeFunction"
    assert statement["Resource"] == {"Fn::GetAtt": ["PollerFunction", "Arn"]}


# ------------------------------------------------------------------ logs


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_every_function_logs_to_its_own_retained_group(
    resources: dict[str, Any], function: str
) -> None:
    properties = functions(resources)[function]["Properties"]
    group_name = f"{function}LogGroup"
    assert properties["LoggingConfig"]["LogGroup"] == {"Ref": group_name}
    group = resources[group_name]
    assert group["Type"] == "AWS::Logs::LogGroup"
    assert group["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    assert group["Properties"]["LogGroupName"] == {
        "Fn::Sub": f"/aws/lambda/${{AWS::StackName}}-{function}"
    }


def test_translated_functions_really_get_globals(translated: dict[str, Any]) -> None:
    lambdas = of_type(translated["Resources"], "AWS::Lambda::Function")
    for example in EXAMPLE_FUNCTIONS:
        del lambdas[example]
    assert set(lambdas) == set(FUNCTIONS)
    for name, body in lambdas.items():
        properties = body["Properties"]
        assert properties["Runtime"] == "python3.12"
        assert properties["Architectures"] == ["arm64"]
        assert properties["TracingConfig"] == {"Mode": {"Ref": "Tracing"}}
        memory = {"PollerFunction": {"Ref": "PollerMemorySize"}, "PushFunction": 128}
        assert properties["MemorySize"] == memory.get(name, 256)
        assert properties["LoggingConfig"]["LogGroup"] == {"Ref": f"{name}LogGroup"}
        assert properties["Handler"] == FUNCTIONS[name]


def test_every_log_group_has_retention(resources: dict[str, Any]) -> None:
    groups = of_type(resources, "AWS::Logs::LogGroup")
    assert "HttpApiAccessLogGroup" in groups
    for body in groups.values():
        assert body["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}


# ------------------------------------------------------------------ storage


def test_tasks_table(resources: dict[str, Any]) -> None:
    table = resources["TasksTable"]
    assert table["Type"] == "AWS::DynamoDB::Table"
    properties = table["Properties"]
    assert properties["BillingMode"] == "PAY_PER_REQUEST"
    assert properties["KeySchema"] == [{"AttributeName": "task_id", "KeyType": "HASH"}]
    attributes = {
        a["AttributeName"]: a["AttributeType"] for a in properties["AttributeDefinitions"]
    }
    assert attributes == {"task_id": "S", "due_shard": "S", "due_at": "N"}
    (index,) = properties["GlobalSecondaryIndexes"]
    assert index["IndexName"] == "DueIndex"
    assert index["KeySchema"] == [
        {"AttributeName": "due_shard", "KeyType": "HASH"},
        {"AttributeName": "due_at", "KeyType": "RANGE"},
    ]
    assert index["Projection"] == {
        "ProjectionType": "INCLUDE",
        "NonKeyAttributes": ["submitted_at", "poll_attempts", "last_checked_at", "method"],
    }
    assert properties["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert properties["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert properties["SSESpecification"] == {"SSEEnabled": True}
    # Read by the result events pipe only (tests/template/test_result_events.py).
    assert properties["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}
    # Kept when the stack goes, and after a failed first deploy too: AWS::LanguageExtensions
    # refuses RetainExceptOnCreate (docs/operations.md: what to delete then).
    assert table["DeletionPolicy"] == "Retain"
    assert table["UpdateReplacePolicy"] == "Retain"


def test_queues(resources: dict[str, Any]) -> None:
    dead_letter = resources["DeadLetterQueue"]["Properties"]
    parking = resources["ParkingQueue"]["Properties"]
    assert dead_letter["SqsManagedSseEnabled"] is True
    assert parking["SqsManagedSseEnabled"] is True
    assert dead_letter["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": ["ParkingQueue", "Arn"]},
        "maxReceiveCount": {"Ref": "MaxReceiveCount"},
    }
    assert parking["MessageRetentionPeriod"] == 14 * 24 * 3600
    assert "RedrivePolicy" not in parking
    replay_timeout = functions(resources)["ReplayFunction"]["Properties"]["Timeout"]
    assert dead_letter["VisibilityTimeout"] >= 6 * replay_timeout


def test_callback_secret_is_generated_with_current_and_previous(
    resources: dict[str, Any],
) -> None:
    secret = resources["CallbackSecret"]
    assert secret["Type"] == "AWS::SecretsManager::Secret"
    generate = secret["Properties"]["GenerateSecretString"]
    assert "SecretString" not in secret["Properties"]
    assert json.loads(generate["SecretStringTemplate"]) == {"previous": ""}
    assert generate["GenerateStringKey"] == "current"
    assert generate["PasswordLength"] == 40
    assert generate["ExcludePunctuation"] is True
    assert generate.get("IncludeSpace", False) is False


# ------------------------------------------------------------------ alerting


SILENCE_IS_FAILURE = {"PollerNotRunningAlarm", "ResultEventsPipeStoppedAlarm"}


def alarms(resources: dict[str, Any]) -> dict[str, Any]:
    return of_type(resources, "AWS::CloudWatch::Alarm")


def alarm_metric_names(alarm: dict[str, Any]) -> set[str]:
    properties = alarm["Properties"]
    if "MetricName" in properties:
        return {properties["MetricName"]}
    return {
        query["MetricStat"]["Metric"]["MetricName"]
        for query in properties["Metrics"]
        if "MetricStat" in query
    }


def test_every_alarm_notifies_the_topic_both_ways(resources: dict[str, Any]) -> None:
    found = alarms(resources)
    assert found
    for name, alarm in found.items():
        properties = alarm["Properties"]
        assert properties["AlarmActions"] == [{"Ref": "AlarmTopic"}], name
        assert properties["OKActions"] == [{"Ref": "AlarmTopic"}], name
        # Only an alarm whose metrics go silent in its failure treats missing as breaching.
        expected = "breaching" if name in SILENCE_IS_FAILURE else "notBreaching"
        assert properties["TreatMissingData"] == expected, name
        assert sub_text(properties["AlarmName"]).startswith("${AWS::StackName}-"), name


@pytest.mark.parametrize(("alarm", "metric"), sorted(CUSTOM_METRIC_ALARMS.items()))
def test_product_metric_alarms(resources: dict[str, Any], alarm: str, metric: str) -> None:
    body = alarms(resources)[alarm]
    assert metric in alarm_metric_names(body)
    properties = body["Properties"]
    if "MetricName" in properties:
        assert properties["Namespace"] == STACK_NAMESPACE
        assert properties["Dimensions"] == SERVICE_DIMENSION
        assert properties["Statistic"] == "Sum"
    else:
        for query in properties["Metrics"]:
            if "MetricStat" in query:
                assert query["MetricStat"]["Metric"]["Namespace"] == STACK_NAMESPACE
                assert query["MetricStat"]["Metric"]["Dimensions"] == SERVICE_DIMENSION
        returned = "recovered" if alarm == "PollRecoveredAlarm" else "conflicts"
        assert [q["Id"] for q in properties["Metrics"] if q["ReturnData"]] == [returned]
    if alarm == "PollRecoveredAlarm":
        assert properties["Threshold"] == {"Ref": "PollRecoveriesAlarmThreshold"}
        assert properties["ComparisonOperator"] == "GreaterThanThreshold"
    else:
        assert properties["Threshold"] == 1
        assert properties["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"


@pytest.mark.parametrize(("alarm", "queue_and_metric"), sorted(QUEUE_ALARMS.items()))
def test_queue_alarms(
    resources: dict[str, Any], alarm: str, queue_and_metric: tuple[str, str]
) -> None:
    queue, metric = queue_and_metric
    properties = alarms(resources)[alarm]["Properties"]
    assert properties["Namespace"] == "AWS/SQS"
    assert properties["MetricName"] == metric
    assert properties["Dimensions"] == [
        {"Name": "QueueName", "Value": {"Fn::GetAtt": [queue, "QueueName"]}}
    ]
    assert properties["ComparisonOperator"] == "GreaterThanThreshold"
    if metric == "ApproximateNumberOfMessagesVisible":
        assert properties["Threshold"] == 0


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
@pytest.mark.parametrize("metric", ["Errors", "Throttles"])
def test_lambda_errors_and_throttles_alarms(
    resources: dict[str, Any], function: str, metric: str
) -> None:
    matching = [
        alarm["Properties"]
        for alarm in alarms(resources).values()
        if alarm["Properties"].get("Namespace") == "AWS/Lambda"
        and alarm["Properties"]["MetricName"] == metric
        and alarm["Properties"]["Dimensions"]
        == [{"Name": "FunctionName", "Value": {"Ref": function}}]
    ]
    assert len(matching) == 1
    assert matching[0]["Threshold"] == 1
    assert matching[0]["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"


def test_alarm_topic_is_encrypted_with_a_key_cloudwatch_may_use(
    resources: dict[str, Any],
) -> None:
    topic = resources["AlarmTopic"]["Properties"]
    # alias/aws/sns would silently stop alarm notifications: CloudWatch cannot use that key.
    assert topic["KmsMasterKeyId"] == {"Ref": "AlarmTopicKey"}
    key = resources["AlarmTopicKey"]["Properties"]
    assert key["EnableKeyRotation"] is True
    grants = [
        statement
        for statement in key["KeyPolicy"]["Statement"]
        if statement["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    ]
    assert len(grants) == 1
    assert set(grants[0]["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey*"}


def test_alarm_email_subscription_is_optional(
    template: dict[str, Any], resources: dict[str, Any]
) -> None:
    subscription = resources["AlarmEmailSubscription"]
    assert subscription["Condition"] == "HasAlarmEmail"
    assert subscription["Properties"]["Protocol"] == "email"
    assert subscription["Properties"]["Endpoint"] == {"Ref": "AlarmEmail"}
    assert template["Parameters"]["AlarmEmail"]["Default"] == ""
    assert template["Conditions"]["HasAlarmEmail"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "AlarmEmail"}, ""]}]
    }


def test_dashboard_shows_every_product_metric_and_is_valid_json(
    resources: dict[str, Any],
) -> None:
    body = resources["Dashboard"]["Properties"]["DashboardBody"]
    assert body["Fn::Sub"][1]["Ns"] == STACK_NAMESPACE
    variables = body["Fn::Sub"][1]
    rendered = sub_text(body).replace("${Ns}", "PingbackGuard/stack")
    rendered = rendered.replace("${Svc}", variables["Svc"])
    rendered = re.sub(r"\$\{[^}]+\}", "x", rendered)
    document = json.loads(rendered)
    metric_names = {
        row[1]
        for widget in document["widgets"]
        if widget["type"] == "metric"
        for row in widget["properties"]["metrics"]
    }
    assert metric_names >= DASHBOARD_METRICS
    assert metric_names >= {"ApproximateNumberOfMessagesVisible", "Errors", "Duration"}
    own_rows = [
        row
        for widget in document["widgets"]
        for row in widget.get("properties", {}).get("metrics", [])
        if row[0] == "PingbackGuard/stack"
    ]
    assert own_rows
    assert all(row[2:4] == ["service", "pingback-guard"] for row in own_rows)


# ------------------------------------------------------------------ parameters and outputs


def test_outputs_have_the_stable_names(template: dict[str, Any]) -> None:
    assert set(template["Outputs"]) == OUTPUTS


def test_no_output_reveals_the_callback_secret(template: dict[str, Any]) -> None:
    for name, output in template["Outputs"].items():
        if name == "CallbackSecretArn":
            assert output["Value"] == {"Ref": "CallbackSecret"}
            continue
        assert "CallbackSecret" not in referenced_names(output["Value"]), name
        assert "resolve:secretsmanager" not in json.dumps(output), name
    callback_url = template["Outputs"]["CallbackUrl"]["Value"]["Fn::Sub"]
    assert callback_url.endswith("/callback/{secret}")


SECRET_WORDS = re.compile(r"key|secret|password|token|credential", re.IGNORECASE)
# Named parameters that mention a secret word but hold no secret value:
PUBLIC_ON_PURPOSE = {
    # A switch ("true"/"false"): whether result events carry tokens, not a token.
    "PublishTokens",
    # The NAME of the SSM SecureString, not the key.
    "ProviderApiKeyParameterName",
    # Served publicly at GET /2captcha.txt for the provider's domain check.
    "PingbackVerificationToken",
    # How many seconds a CAPTCHA token stays usable: a number, not a token.
    "RecaptchaTokenLifetimeSeconds",
    "HcaptchaTokenLifetimeSeconds",
    "TurnstileTokenLifetimeSeconds",
    "GeetestTokenLifetimeSeconds",
    "CaptchafoxTokenLifetimeSeconds",
    "FriendlyCaptchaTokenLifetimeSeconds",
    "LeminTokenLifetimeSeconds",
}


def test_no_secret_value_is_a_plain_parameter(template: dict[str, Any]) -> None:
    for name, parameter in template["Parameters"].items():
        if SECRET_WORDS.search(name):
            assert name in PUBLIC_ON_PURPOSE, f"{name} looks like a secret value"
        # An SSM-typed parameter holds a public parameter's NAME (Powertools layer), not a value.
        assert parameter["Type"] in {"String", "Number", "AWS::SSM::Parameter::Value<String>"}
        if parameter["Type"].startswith("AWS::SSM"):
            assert parameter["Default"].startswith("/aws/service/")
    assert not template["Parameters"]["ProviderApiKeyParameterName"].get("NoEcho")


def test_no_secret_value_anywhere_in_the_template(template: dict[str, Any]) -> None:
    text = (ROOT / "template.yaml").read_text(encoding="utf-8")
    assert "resolve:ssm-secure" not in text
    for node in walk(template):
        if not isinstance(node, dict):
            continue
        assert "SecretString" not in node, "a literal secret value in the template"
        if node.get("Type") == "AWS::SSM::Parameter":
            pytest.fail("the API key parameter is created by the operator, never by the stack")


def test_every_parameter_is_used(template: dict[str, Any]) -> None:
    used = referenced_names({k: v for k, v in template.items() if k != "Parameters"})
    assert set(template["Parameters"]) <= used


def test_required_parameters_and_defaults(template: dict[str, Any]) -> None:
    parameters = template["Parameters"]
    expected_defaults = {
        "Stage": "dev",
        "LogLevel": "INFO",
        "CallbackTimeoutSeconds": 120,
        "PollRateMinutes": 1,
        "RetentionSeconds": 600,
        "PollBackoffBaseSeconds": 5,
        "PollBackoffMaxSeconds": 60,
        "PollerMaxRequestsPerSweep": "500",
        "PollerRequestWorkers": "64",
        "ProviderBaseUrl": "https://ocr.captchaai.com",
        "ProviderApiKeyParameterName": "/pingback-guard/provider-api-key",
        "ProviderBatchIds": "true",
        "PublicBaseUrl": "",
        "PingbackVerificationToken": "",
        "MaxReceiveCount": "5",
        "LogRetentionDays": 30,
        "DueShards": "32",
        "ResultTtlDays": "7",
        "AlarmEmail": "",
        "AwsEndpointUrl": "",
        "AdminPrincipalArn": "",
        "ReadThroughIntervalSeconds": 5,
        "RecaptchaTokenLifetimeSeconds": 120,
        "HcaptchaTokenLifetimeSeconds": 120,
        "TurnstileTokenLifetimeSeconds": 300,
        "GeetestTokenLifetimeSeconds": 120,
        "CloudflareClearanceLifetimeSeconds": 1800,
        "ReportWindowSeconds": 900,
    }
    for name, default in expected_defaults.items():
        assert parameters[name]["Default"] == default, name
    assert parameters["PollRecoveriesAlarmThreshold"]["Type"] == "Number"


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        ("", True),
        ("arn:aws:iam::123456789012:role/ops-admin", True),
        ("arn:aws:sts::123456789012:assumed-role/ops/alice", True),
        ("arn:aws-us-gov:iam::123456789012:user/ops", True),
        ("*", False),
        ("arn:aws:iam::*:role/x", False),
        ("arn:aws:s3:::bucket", False),
    ],
)
def test_admin_principal_is_one_exact_arn_or_nothing(
    template: dict[str, Any], value: str, allowed: bool
) -> None:
    pattern = template["Parameters"]["AdminPrincipalArn"]["AllowedPattern"]
    assert bool(re.fullmatch(pattern, value)) is allowed


def test_endpoint_override_is_absent_unless_set(template: dict[str, Any]) -> None:
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["AWS_ENDPOINT_URL"] == {
        "Fn::If": ["HasAwsEndpointUrl", {"Ref": "AwsEndpointUrl"}, {"Ref": "AWS::NoValue"}]
    }


# ------------------------------------------------------------------ freshness (issue 10)


def test_token_age_is_charted_per_delivery_path_and_nothing_else(
    resources: dict[str, Any],
) -> None:
    """The delivery_path dimension stays as small as DeliveryPath: one chart row per value."""
    from pingback_guard.domain.task import DeliveryPath

    body = resources["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"][0]
    rows = re.findall(
        r'"TokenAgeAtDelivery", "service", "\$\{Svc\}", "([a-z_]+)", "([a-z_]+)"', body
    )
    assert {dimension for dimension, _ in rows} == {"delivery_path"}
    assert sorted(path for _, path in rows) == sorted(path.value for path in DeliveryPath)


def test_read_through_respects_the_providers_rate_rule(template: dict[str, Any]) -> None:
    interval = template["Parameters"]["ReadThroughIntervalSeconds"]
    assert interval["MinValue"] >= 5  # 2captcha: no more often than every 5 s per task
    own = template["Resources"]["GetTaskFunction"]["Properties"]["Environment"]["Variables"]
    assert own["READ_THROUGH_INTERVAL_SECONDS"] == {"Ref": "ReadThroughIntervalSeconds"}


# ------------------------------------------------------------------ issue 13: alarms and parameters


def test_dead_letter_depth_alarm_counts_messages_in_flight(resources: dict[str, Any]) -> None:
    properties = alarms(resources)["DeadLetterQueueDepthAlarm"]["Properties"]
    names = alarm_metric_names(alarms(resources)["DeadLetterQueueDepthAlarm"])
    assert names == {"ApproximateNumberOfMessagesVisible", "ApproximateNumberOfMessagesNotVisible"}
    (returned,) = [query for query in properties["Metrics"] if query["ReturnData"]]
    assert returned["Expression"] == "FILL(visible, 0) + FILL(inflight, 0)"
    assert (properties["EvaluationPeriods"], properties["DatapointsToAlarm"]) == (3, 3)


def test_poller_not_running_alarm_breaches_on_silence_over_two_sweeps(
    template: dict[str, Any], resources: dict[str, Any]
) -> None:
    properties = alarms(resources)["PollerNotRunningAlarm"]["Properties"]
    # The scheduled runs this stack's poller completed, not every invocation (submits wake it)
    # nor every stack's (the service dimension alone is shared by stacks in one account).
    assert properties["Namespace"] == STACK_NAMESPACE
    assert properties["MetricName"] == "PollerScheduledRuns"
    assert properties["Dimensions"] == [
        {"Name": "function_name", "Value": {"Ref": "PollerFunction"}},
        *SERVICE_DIMENSION,
    ]
    assert properties["Statistic"] == "Sum"
    assert properties["ComparisonOperator"] == "LessThanThreshold"
    assert properties["Threshold"] == 1
    assert (properties["EvaluationPeriods"], properties["DatapointsToAlarm"]) == (2, 2)
    assert properties["Period"] == {
        "Fn::FindInMap": ["PollRate", {"Fn::Sub": "${PollRateMinutes}"}, "TwoSweepsSeconds"]
    }
    rates = template["Parameters"]["PollRateMinutes"]["AllowedValues"]
    table = template["Mappings"]["PollRate"]
    assert sorted(int(rate) for rate in table) == sorted(rates)
    for rate in rates:
        assert table[str(rate)]["TwoSweepsSeconds"] == 2 * 60 * rate


def test_poller_schedule_and_invocations_keep_what_they_cannot_run(
    resources: dict[str, Any],
) -> None:
    properties = functions(resources)["PollerFunction"]["Properties"]
    failed_queue = {"Fn::GetAtt": ["PollerFailedEventsQueue", "Arn"]}
    on_failure = properties["EventInvokeConfig"]["DestinationConfig"]["OnFailure"]
    assert on_failure == {"Type": "SQS", "Destination": failed_queue}
    (event,) = properties["Events"].values()
    assert event["Properties"]["DeadLetterConfig"] == {"Arn": failed_queue}
    assert event["Properties"]["RetryPolicy"]["MaximumRetryAttempts"] >= 1


def test_replay_failures_alarm_at_the_first_one(resources: dict[str, Any]) -> None:
    properties = alarms(resources)["ReplayFailedAlarm"]["Properties"]
    assert (properties["Namespace"], properties["MetricName"]) == (STACK_NAMESPACE, "ReplayFailed")
    assert properties["Threshold"] == 1
    assert properties["Period"] == 60


ACCESS_LOG_METRICS = {
    "ApiCallbackThrottledFilter": ("ApiCallbackThrottled", '"* /callback/*"', '"429"'),
    "ApiCallback5xxFilter": ("ApiCallback5xx", '"* /callback/*"', '"5*"'),
    "ApiTasksThrottledFilter": ("ApiTasksThrottled", '"* /tasks*"', '"429"'),
    "ApiTasks4xxFilter": ("ApiTasks4xx", '"* /tasks*"', '"4*"'),
    "ApiTasks4xxPingbackUrlsFilter": ("ApiTasks4xx", '"POST /pingback-urls"', '"4*"'),
    "ApiTasks5xxPingbackUrlsFilter": ("ApiTasks5xx", '"POST /pingback-urls"', '"5*"'),
    "ApiTasksThrottledPingbackUrlsFilter": ("ApiTasksThrottled", '"POST /pingback-urls"', '"429"'),
    "ApiTasks5xxFilter": ("ApiTasks5xx", '"* /tasks*"', '"5*"'),
}


@pytest.mark.parametrize(("name", "expected"), sorted(ACCESS_LOG_METRICS.items()))
def test_api_answers_are_counted_by_route_from_the_access_log(
    resources: dict[str, Any], name: str, expected: tuple[str, str, str]
) -> None:
    metric, route, status = expected
    properties = resources[name]["Properties"]
    assert properties["LogGroupName"] == {"Ref": "HttpApiAccessLogGroup"}
    assert f"$.routeKey = {route}" in properties["FilterPattern"]
    assert f"$.status = {status}" in properties["FilterPattern"]
    (transformation,) = properties["MetricTransformations"]
    assert transformation["MetricName"] == metric
    assert any(
        metric in alarm_metric_names(alarm) or alarm["Properties"].get("MetricName") == metric
        for alarm in alarms(resources).values()
    ), f"no alarm on {metric}"


def test_callback_routes_are_throttled_apart_from_the_task_routes(
    resources: dict[str, Any],
) -> None:
    settings = resources["HttpApi"]["Properties"]["RouteSettings"]
    for route in ("GET /callback/{secret}", "POST /callback/{secret}"):
        assert settings[route] == {
            "ThrottlingRateLimit": {"Ref": "CallbackThrottlingRateLimit"},
            "ThrottlingBurstLimit": {"Ref": "CallbackThrottlingBurstLimit"},
        }
    assert "FailOnWarnings" not in resources["HttpApi"]["Properties"]


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_every_function_has_parameterised_reserved_concurrency(
    template: dict[str, Any], function: str
) -> None:
    value = functions(template["Resources"])[function]["Properties"]["ReservedConcurrentExecutions"]
    condition, reserved, unreserved = value["Fn::If"]
    parameter = reserved["Ref"]
    assert unreserved == {"Ref": "AWS::NoValue"}
    assert template["Conditions"][condition] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": parameter}, ""]}]
    }
    assert re.fullmatch(template["Parameters"][parameter]["AllowedPattern"], "")
    assert not re.fullmatch(template["Parameters"][parameter]["AllowedPattern"], "0")
    # Nothing reserved unless asked: a 10-concurrency account can deploy the defaults.
    assert template["Parameters"][parameter]["Default"] == ""


INTEGER_PARAMETERS = {
    "PollerMaxRequestsPerSweep": (1, 1000),
    "PollerRequestWorkers": (1, 128),
    "MaxReceiveCount": (1, 1000),
    "DueShards": (1, 64),
    "ResultTtlDays": (1, 365),
    "ApiThrottlingRateLimit": (1, 10000),
    "ApiThrottlingBurstLimit": (1, 5000),
    "CallbackThrottlingRateLimit": (1, 10000),
    "CallbackThrottlingBurstLimit": (1, 5000),
    "InPhpBudgetPerSecond": (1, 10000),
    "InPhpBudgetPerMinute": (1, 10000),
    "ResPhpBudgetPerSecond": (1, 10000),
    "ResPhpBudgetPerMinute": (1, 10000),
}


@pytest.mark.parametrize(("name", "bounds"), sorted(INTEGER_PARAMETERS.items()))
def test_integer_parameters_refuse_fractions_and_out_of_range_values(
    template: dict[str, Any], name: str, bounds: tuple[int, int]
) -> None:
    pattern = template["Parameters"][name]["AllowedPattern"]
    low, high = bounds
    for accepted in range(low, high + 1):
        assert re.fullmatch(pattern, str(accepted)), (name, accepted)
    for refused in ("0", str(high + 1), "2.5", "1e3", "-1", "", "01"):
        assert not re.fullmatch(pattern, refused), (name, refused)


def test_poll_rate_is_a_whole_number_of_minutes(template: dict[str, Any]) -> None:
    rates = template["Parameters"]["PollRateMinutes"]["AllowedValues"]
    assert all(isinstance(rate, int) and 1 <= rate <= 60 for rate in rates)


def test_queues_refuse_plain_http(resources: dict[str, Any]) -> None:
    policies = of_type(resources, "AWS::SQS::QueuePolicy")
    covered = {policy["Properties"]["Queues"][0]["Ref"] for policy in policies.values()}
    assert covered == set(of_type(resources, "AWS::SQS::Queue"))
    for policy in policies.values():
        statements = policy["Properties"]["PolicyDocument"]["Statement"]
        assert {
            "Effect": "Deny",
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        }.items() <= statements[0].items()
    # Who may send: tests/template/test_resource_policies.py (every role granted a send).


def test_only_cloudwatch_of_this_account_publishes_to_the_alarm_topic(
    resources: dict[str, Any],
) -> None:
    statements = resources["AlarmTopicPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    publishers = [
        statement
        for statement in statements
        if statement["Effect"] == "Allow" and "sns:Publish" in as_list(statement["Action"])
    ]
    assert [statement["Principal"] for statement in publishers] == [
        {"Service": "cloudwatch.amazonaws.com"}
    ]
    assert publishers[0]["Condition"]["StringEquals"] == {
        "aws:SourceAccount": {"Ref": "AWS::AccountId"}
    }
    denies = [statement for statement in statements if statement["Effect"] == "Deny"]
    assert denies[0]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_kms_grant_to_cloudwatch_is_scoped_to_this_stacks_alarms(
    resources: dict[str, Any],
) -> None:
    statements = resources["AlarmTopicKey"]["Properties"]["KeyPolicy"]["Statement"]
    (grant,) = [
        s for s in statements if s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}
    ]
    assert grant["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    assert grant["Condition"]["ArnLike"]["aws:SourceArn"]["Fn::Sub"].endswith(
        ":alarm:${AWS::StackName}-*"
    )


def test_powertools_layer_is_pinned(template: dict[str, Any]) -> None:
    default = template["Parameters"]["PowertoolsLayerArn"]["Default"]
    assert re.fullmatch(r"/aws/service/powertools/python/arm64/python3\.12/3\.\d+\.\d+", default)


PUSH_READS = frozenset({"dynamodb:GetItem", "dynamodb:BatchGetItem"})


def test_push_writes_no_task(resources: dict[str, Any]) -> None:
    """PushFunction reads tasks but writes only its connection records ("#push-" keys)."""
    writes = [
        statement
        for statement in role_statements(resources, "PushFunction")
        if any(action not in PUSH_READS for action in as_list(statement["Action"]))
        and any(action.startswith("dynamodb:") for action in as_list(statement["Action"]))
    ]
    assert [w["Condition"] for w in writes] == [
        {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["#push-*"]}}
    ]


SUBMITTERS = ("SubmitFunction", "CompatSubmitFunction")


@pytest.mark.parametrize("function", SUBMITTERS)
def test_submit_may_wake_the_poller_only(
    template: dict[str, Any], resources: dict[str, Any], function: str
) -> None:
    """A submit reads the poller's lease item and nothing else of the table, and may invoke
    the poller function only, whose name its environment carries."""
    statements = {s["Sid"]: s for s in role_statements(resources, function)}
    assert statements["ReadPollerLease"]["Action"] == "dynamodb:GetItem"
    assert statements["ReadPollerLease"]["Condition"] == {
        "ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [POLLER_LEASE_KEY]}
    }
    assert statements["WakePoller"]["Action"] == "lambda:InvokeFunction"
    assert statements["WakePoller"]["Resource"] == {"Fn::GetAtt": ["PollerFunction", "Arn"]}
    variables = resources[function]["Properties"]["Environment"]["Variables"]
    assert variables["POLLER_FUNCTION_NAME"] == {"Ref": "PollerFunction"}
    assert variables["POLLER_WAKE_ON_SUBMIT"] == {"Ref": "PollerWakeOnSubmit"}
    # and no other function may start a function (the poller starts only itself: its helpers)
    for other in set(FUNCTIONS) - set(SUBMITTERS) - {"PollerFunction"}:
        for statement in role_statements(resources, other):
            assert not any(a.startswith("lambda:") for a in as_list(statement["Action"])), other


def test_push_connect_needs_iam_and_the_push_rule_reads_the_result_bus(
    resources: dict[str, Any],
) -> None:
    routes = of_type(resources, "AWS::ApiGatewayV2::Route")
    auth = {
        body["Properties"]["RouteKey"]: body["Properties"].get("AuthorizationType")
        for body in routes.values()
    }
    assert auth == {"$connect": "AWS_IAM", "$disconnect": None, "subscribe": None}
    rule = resources["PushFunction"]["Properties"]["Events"]["FinalResults"]["Properties"]
    assert rule["EventBusName"] == {"Ref": "ResultEventBus"}
    assert rule["Pattern"] == {"source": ["pingback-guard"], "detail-type": ["Task Result"]}


def test_throttled_task_requests_are_not_counted_as_misconfigured_workers(
    resources: dict[str, Any],
) -> None:
    for name in ("ApiTasks4xxFilter", "ApiTasks4xxPingbackUrlsFilter"):
        assert '($.status != "429")' in resources[name]["Properties"]["FilterPattern"], name


def test_the_alarm_topic_denies_every_publisher_but_cloudwatch(resources: dict[str, Any]) -> None:
    statements = resources["AlarmTopicPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    (deny,) = [s for s in statements if s.get("Sid") == "NobodyButCloudWatchPublishes"]
    assert (deny["Effect"], deny["Principal"], deny["Action"]) == ("Deny", "*", "sns:Publish")
    assert deny["Condition"] == {
        "StringNotEquals": {"aws:PrincipalServiceName": "cloudwatch.amazonaws.com"}
    }
