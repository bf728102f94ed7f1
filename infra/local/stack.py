"""The local stack: moto, the template's resources, function workers, gateway, triggers, control.

with LocalStack(LocalOptions(template=Path("template.yaml"))) as stack:
    stack.ready.signed_session().get(stack.ready.api_url + "/tasks/abc")
"""

import functools
import logging
import os
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from infra.local.apigateway.gateway import GatewayTls, HttpGateway
from infra.local.apigateway.http_api import ApiContext, RouteTable
from infra.local.apigateway.websocket_api import LocalWebSocketApi, websocket_apis
from infra.local.cloudformation.account_settings import set_cloudwatch_role_arn
from infra.local.cloudformation.deploy import DeployedStack, deploy_stack
from infra.local.cloudformation.template import SamTemplate
from infra.local.cloudwatch.alarm_runtime import LocalCloudWatch
from infra.local.events.event_bus import LocalEventBus, RunTimeRules
from infra.local.events.event_sources import pipe_specs, rule_specs
from infra.local.events.scheduler import ScheduleRunner
from infra.local.iam.evaluator import EvaluatorSidecar, SidecarEvaluator
from infra.local.iam.profiles import StackPolicies, authorization_profiles
from infra.local.iam.service_roles import ServiceAuthorization, authorized_client
from infra.local.lambda_.async_invocations import AsyncInvocations, accepted, read_async_configs
from infra.local.lambda_.destinations import DestinationSender
from infra.local.lambda_.functions import FunctionSpec, function_specs
from infra.local.lambda_.invoke_api import LambdaInvokeApi, endpoint_url, lambda_invoke_server
from infra.local.lambda_.pool import FunctionPool, Invocation, worker_environment
from infra.local.lambda_.triggers import (
    FunctionIndex,
    QueueSource,
    http_routes,
    queue_sources,
    schedules,
)
from infra.local.options import LocalOptions, ReadyInfo, execute_api_url, localised
from infra.local.pipes.stream_pipe import PublishedWrite, StreamPipe
from infra.local.runtime.aws import ACCOUNT_ID, AwsEndpoint
from infra.local.runtime.calls import CallLog
from infra.local.runtime.control import UnknownFunction, control_server
from infra.local.runtime.faults import FaultRule
from infra.local.runtime.http_server import LOCALHOST, LocalHttpServer
from infra.local.runtime.moto_process import MotoServer
from infra.local.sqs.queue_poller import (
    QueuePoller,
    refuse_unauthorized_mapping,
    refuse_visibility_below_timeout,
)
from infra.service import Service

logger = logging.getLogger(__name__)

PROVIDER_API_KEY_ENV = "CAPTCHAAI_API_KEY"
# Contract names (docs/architecture.md): the template parameter naming the SSM parameter of the
# provider API key, the outputs the ready line repeats, and the variables the runtime adapts.
API_KEY_PARAMETER_NAME_PARAMETER = "ProviderApiKeyParameterName"
EXTRA_ACCOUNTS_PARAMETER = "ProviderExtraAccounts"
TASKS_TABLE_OUTPUT = "TasksTableName"
DLQ_URL_OUTPUT = "DeadLetterQueueUrl"
PARKING_QUEUE_URL_OUTPUT = "ParkingQueueUrl"
PROVIDER_BASE_URL_VARIABLE = "PROVIDER_BASE_URL"
PUBLIC_BASE_URL_VARIABLE = "PUBLIC_BASE_URL"
# botocore's endpoint for one service: a function's Lambda calls reach the runtime, not moto.
LAMBDA_ENDPOINT_VARIABLE = "AWS_ENDPOINT_URL_LAMBDA"
_TRIGGER_STOP_SECONDS = 3.0
# Template parameters the local runtime sets unless overridden: the example result consumer runs
# so that the events path (stream, pipe, bus, rule target) is exercised end to end.
LOCAL_PARAMETER_DEFAULTS = {"DeployExampleConsumer": "true"}
# API Gateway's integration timeout: no request in flight can need longer.
DRAIN_SECONDS = 30.0


class LocalStack(Service):
    """Start with start() (or `with`); stop() ends every process and thread it started."""

    def __init__(self, options: LocalOptions) -> None:
        if options.time_scale <= 0 or options.workers_per_function < 1:
            raise ValueError("time_scale must be > 0 and workers_per_function >= 1")
        self.options = options
        self.calls = CallLog()
        self._faults: list[FaultRule] = []
        self._faults_lock = threading.Lock()
        self._moto: MotoServer | None = None
        self._pools: dict[str, FunctionPool] = {}
        self._gateway: HttpGateway | None = None
        self._websocket_apis: list[LocalWebSocketApi] = []
        self._access_log: IO[str] | None = None
        self._ca_bundle = ""
        self._schedules: ScheduleRunner | None = None
        self._pollers: list[QueuePoller] = []
        self._event_bus: LocalEventBus | None = None
        self._event_pipes: list[StreamPipe] = []
        self._control: LocalHttpServer | None = None
        self._lambda_api: LocalHttpServer | None = None
        self._async: AsyncInvocations | None = None
        self._rule_functions: frozenset[str] = frozenset()
        self._cloudwatch: LocalCloudWatch | None = None
        self._iam_evaluator: EvaluatorSidecar | None = None
        self._services: ServiceAuthorization | None = None
        """What the runtime does as AWS services do, authorized (None: authorize_calls off)."""
        self._ready: ReadyInfo | None = None

    @property
    def ready(self) -> ReadyInfo:
        if self._ready is None:
            raise RuntimeError("the local stack is not started")
        return self._ready

    def start(self) -> ReadyInfo:
        try:
            self._ready = self._start()
        except BaseException:
            self.stop()
            raise
        return self._ready

    def stop(self) -> None:
        """Stop everything started so far; each step is bounded in time.

        Sources first (control API, gateway, schedules, SQS pollers), then the requests still in
        flight are drained, then the workers and the logs they write to, moto last.
        """
        steps: list[tuple[str, Callable[[], None]]] = [
            ("control API", self._stop_control),
            ("Lambda Invoke API", self._stop_lambda_api),
            ("alarm evaluation", self._stop_cloudwatch),
            ("gateway", self._stop_accepting),
            ("WebSocket APIs", self._stop_websocket_apis),
            ("schedules", self._stop_schedules),
            ("SQS pollers", self._stop_pollers),
            ("event pipes and bus", self._stop_result_events),
            ("asynchronous invocations", self._stop_async),
            ("requests in flight", self._drain_gateway),
            ("function workers", self._stop_pools),
            ("IAM evaluator", self._stop_iam_evaluator),
            ("gateway access log", self._close_access_log),
            ("moto", self._stop_moto),
        ]
        for name, step in steps:
            try:
                step()
            except Exception:
                logger.exception("stopping the %s failed", name)
        self._ready = None

    def invoke(self, logical_id: str, event: Any) -> Invocation:
        pool = self._pools.get(logical_id)
        if pool is None:
            raise UnknownFunction(logical_id)
        invocation = pool.invoke(event)
        if self._cloudwatch is not None:
            self._cloudwatch.record_invocation(logical_id, invocation)
        return invocation

    def try_invoke(self, logical_id: str, event: Any, wait_seconds: float) -> Invocation | None:
        """An invocation if a worker of the function is free within `wait_seconds`, else None
        (throttled): what Lambda's asynchronous queue does with an event it picks up."""
        pool = self._pools.get(logical_id)
        if pool is None:
            raise UnknownFunction(logical_id)
        invocation = pool.try_invoke(event, wait_seconds)
        if invocation is not None and self._cloudwatch is not None:
            self._cloudwatch.record_invocation(logical_id, invocation)
        return invocation

    def invoke_async(self, logical_id: str, event: Any) -> str:
        """Queue an asynchronous invocation (InvocationType Event); its request id."""
        if self._async is None or logical_id not in self._pools:
            raise UnknownFunction(logical_id)
        return self._async.submit(logical_id, event)

    def asynchronous_invocations(self) -> dict[str, Any]:
        """Per function: events accepted, attempts, retries, throttles, records sent, backlog."""
        return self._async.report() if self._async is not None else {}

    def set_gateway(self, up: bool) -> None:
        assert self._gateway is not None
        self._gateway.set_up(up)

    def set_websocket_apis(self, up: bool) -> None:
        """Take the WebSocket APIs down (connections closed, new ones refused) or up again."""
        for api in self._websocket_apis:
            api.set_up(up)

    def websocket_connections(self) -> list[str]:
        """The connection ids open on the WebSocket APIs now."""
        return [cid for api in self._websocket_apis for cid in api.connection_ids()]

    def set_schedules(self, enabled: bool) -> None:
        """Disable every schedule (the poller is then never invoked) or enable them again."""
        assert self._schedules is not None
        self._schedules.set_enabled(enabled)

    def set_pipes(self, running: bool) -> None:
        """StopPipe on every pipe (the state Pipes leaves one in after persistent errors: no
        event published, no metric) or StartPipe: each resumes where it stopped."""
        for pipe in self._event_pipes:
            pipe.set_running(running)

    def alarms(self) -> dict[str, Any]:
        """Alarm states, definitions (logical id, period) and every state change so far."""
        if self._cloudwatch is None:
            return {"states": {}, "history": [], "alarms": {}}
        return self._cloudwatch.report()

    def requests_in_flight(self) -> int:
        """Gateway requests read and not answered yet (waiting for a worker, or running)."""
        return self._gateway.requests_in_flight if self._gateway is not None else 0

    def faults(self) -> list[FaultRule]:
        with self._faults_lock:
            return list(self._faults)

    def set_faults(self, rules: list[FaultRule]) -> None:
        """Replace the fault rules, in every live worker and in those started from now on."""
        with self._faults_lock:
            self._faults = list(rules)
            for pool in self._pools.values():
                pool.push_faults(self._faults)

    def calls_report(self, since: int = 0) -> dict[str, Any]:
        return self.calls.report(since)

    def reset_calls(self) -> None:
        self.calls.reset()

    def health(self) -> dict[str, Any]:
        return {
            "status": "ok",
            "gateway_up": self._gateway is not None and self._gateway.is_up,
            "gateway_requests_in_flight": self.requests_in_flight(),
            "functions": {name: pool.stats.to_json() for name, pool in self._pools.items()},
            "schedules": dict(self._schedules.fired) if self._schedules else {},
            "schedules_refused": dict(self._schedules.refused) if self._schedules else {},
            "queues": {
                poller.source.logical_id: poller.stats.to_json() for poller in self._pollers
            },
            "fault_rules": len(self.faults()),
            "event_pipes": {
                pipe.spec.logical_id: pipe.stats.to_json() for pipe in self._event_pipes
            },
            "event_bus": self._event_bus.stats.to_json() if self._event_bus else {},
            "websocket_apis": {
                api.spec.logical_id: api.stats.to_json() for api in self._websocket_apis
            },
            "async_invocations": self.asynchronous_invocations(),
            "lambda_invoke_api": self._lambda_invoke_api().stats.to_json()
            if self._lambda_api is not None
            else {},
        }

    def published_events(self) -> list[dict[str, Any]]:
        """Every event the stack's pipes put on its buses (they may carry tokens: never log)."""
        return self._event_bus.published() if self._event_bus else []

    def first_published_writes(self) -> dict[str, PublishedWrite]:
        """Per item key, when the write behind its first published event happened and when the
        event was on the bus (every pipe of the stack)."""
        found: dict[str, PublishedWrite] = {}
        for pipe in self._event_pipes:
            found.update(pipe.first_published())
        return found

    def result_events_settled(self) -> bool:
        """Each pipe has read its stream to the end and the bus has no delivery in flight."""
        pipes_caught_up = all(pipe.stats.to_json()["caught_up"] for pipe in self._event_pipes)
        return pipes_caught_up and self.result_events_backlog() == 0

    def result_events_backlog(self) -> int:
        """Bus deliveries not finished yet (queued, running, or waiting for a retry), and the
        events the rules' target functions have in their asynchronous queues."""
        bus = 0 if self._event_bus is None else self._event_bus.backlog()
        queued = 0 if self._async is None else self._async.backlog(self._rule_functions)
        return bus + queued

    def result_events_finished(self) -> int:
        """Bus deliveries and the rules' target functions' asynchronous events ended so far:
        grows while the consumers work off a backlog."""
        bus = 0 if self._event_bus is None else self._event_bus.finished()
        ended = 0 if self._async is None else self._async.finished(self._rule_functions)
        return bus + ended

    def info(self) -> dict[str, Any]:
        return self.ready.to_json()

    def _start(self) -> ReadyInfo:
        options = self.options
        run_dir = options.run_dir or Path(tempfile.mkdtemp(prefix="pingback-guard-local-"))
        log_dir = run_dir / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        template = SamTemplate.load(options.template)
        declared = template.document.get("Parameters", {})
        local_defaults = {k: v for k, v in LOCAL_PARAMETER_DEFAULTS.items() if k in declared}
        parameter_values = template.parameter_values(
            {**local_defaults, **self._extra_accounts(declared), **options.parameter_overrides}
        )
        code_dirs = template.function_code_dirs()
        self._moto = MotoServer(options.aws_port, log_dir / "moto.log")
        moto = self._moto.start()
        endpoint = AwsEndpoint(moto.url, options.region)
        if options.apigateway_cloudwatch_role_arn:
            set_cloudwatch_role_arn(endpoint, options.apigateway_cloudwatch_role_arn)
        stack = deploy_stack(
            template, parameter_values, endpoint, moto.cloudformation_types, options.stack_name
        )
        self._store_provider_api_key(endpoint, parameter_values)
        specs = function_specs(stack, code_dirs)
        functions = FunctionIndex(specs)
        self._cloudwatch = LocalCloudWatch(
            stack,
            endpoint,
            log_dir,
            options.time_scale,
            {logical_id: spec.function_name for logical_id, spec in specs.items()},
        )
        self._start_gateway(stack, functions, log_dir)
        assert self._gateway is not None
        self._start_websocket_apis(stack, functions)
        authorizations = self._authorizations(stack, specs, endpoint, log_dir)
        queues = self._event_source_mappings(stack, functions, endpoint, specs)
        self._async = self._asynchronous_queues(specs, endpoint)
        self._lambda_api = lambda_invoke_server(functions, self.invoke, self.invoke_async)
        self._lambda_api.start()
        self._start_pools(specs, authorizations, endpoint, log_dir)
        self._async.start()
        self._start_triggers(stack, functions, endpoint, queues, specs)
        self._start_result_events(stack, functions, endpoint, specs)
        self._cloudwatch.start()
        self._control = control_server(self, options.control_port)
        self._control.start()
        return self._ready_info(stack, endpoint, run_dir, log_dir, specs)

    def _extra_accounts(self, declared: Mapping[str, Any]) -> dict[str, str]:
        accounts = ",".join(self.options.provider_account_keys)
        if not accounts or EXTRA_ACCOUNTS_PARAMETER not in declared:
            return {}
        return {EXTRA_ACCOUNTS_PARAMETER: accounts}

    def _store_provider_api_key(
        self, endpoint: AwsEndpoint, parameter_values: Mapping[str, Any]
    ) -> None:
        name = parameter_values.get(API_KEY_PARAMETER_NAME_PARAMETER)
        api_key = self.options.provider_api_key or os.environ.get(PROVIDER_API_KEY_ENV)
        if name is None:
            return
        for account, account_key in self.options.provider_account_keys.items():
            endpoint.client("ssm").put_parameter(
                Name=f"{name}-{account}", Value=account_key, Type="SecureString", Overwrite=True
            )
        if not api_key:
            logger.warning(
                "SSM parameter %s not created: pass --provider-api-key or set %s",
                name,
                PROVIDER_API_KEY_ENV,
            )
            return
        endpoint.client("ssm").put_parameter(
            Name=name, Value=api_key, Type="SecureString", Overwrite=True
        )

    def _start_gateway(self, stack: DeployedStack, functions: FunctionIndex, log_dir: Path) -> None:
        routes = http_routes(stack, functions)
        self._access_log = (log_dir / "gateway.log").open("a", encoding="utf-8")
        # Imported here: function workers import this package, and never need cryptography.
        from infra.local.apigateway.tls import make_test_certificates

        certificates = make_test_certificates(log_dir.parent / "tls")
        self._ca_bundle = str(certificates.ca_bundle)
        self._gateway = HttpGateway(
            RouteTable(routes),
            self.invoke,
            ApiContext(ACCOUNT_ID, region=self.options.region),
            self.options.api_port,
            self._access_log,
            observe=self._cloudwatch.record_request if self._cloudwatch else None,
            tls=GatewayTls(certificates.server_context(), self.options.api_tls_port),
        )
        self._gateway.set_up(True)

    def _start_websocket_apis(self, stack: DeployedStack, functions: FunctionIndex) -> None:
        """Before the functions start: their Management API endpoint is this runtime's."""
        context = ApiContext(ACCOUNT_ID, region=self.options.region)
        for spec in websocket_apis(stack, functions):
            api = LocalWebSocketApi(spec, self.invoke, context)
            api.start()
            self._websocket_apis.append(api)

    def _workers(self, logical_id: str) -> int:
        return self.options.workers_by_function.get(logical_id, self.options.workers_per_function)

    def _authorizations(
        self,
        stack: DeployedStack,
        specs: Mapping[str, FunctionSpec],
        endpoint: AwsEndpoint,
        log_dir: Path,
    ) -> dict[str, dict[str, Any] | None]:
        """What each function's workers authorize their calls with (after the WebSocket APIs:
        their Management API endpoints are part of it)."""
        if not self.options.authorize_calls:
            return dict.fromkeys(specs)
        self._iam_evaluator = EvaluatorSidecar(log_dir / "iam-evaluator.log")
        evaluator_url = self._iam_evaluator.start()
        management_apis = {
            api.management_url.rsplit("/", 1)[0]: api.spec.api_id for api in self._websocket_apis
        }
        policies = StackPolicies.read(stack, endpoint)
        self._services = ServiceAuthorization(policies, SidecarEvaluator(evaluator_url))
        profiles = authorization_profiles(stack, specs, endpoint, management_apis, policies)
        return {
            logical_id: {"profile": profile.to_json(), "evaluator_url": evaluator_url}
            for logical_id, profile in profiles.items()
        }

    def _asynchronous_queues(
        self, specs: Mapping[str, FunctionSpec], endpoint: AwsEndpoint
    ) -> AsyncInvocations:
        """Each function's asynchronous queue, run by its EventInvokeConfig; records go to its
        destinations as its execution role, as Lambda sends them."""
        services = self._services
        authorizers = {
            logical_id: None if services is None else services.function_role(spec)
            for logical_id, spec in specs.items()
        }
        names = {logical_id: spec.function_name for logical_id, spec in specs.items()}
        return AsyncInvocations(
            read_async_configs(endpoint.client("lambda"), names),
            {logical_id: spec.arn for logical_id, spec in specs.items()},
            try_invoke=self.try_invoke,
            send_record=DestinationSender(endpoint, authorizers).send,
            time_scale=self.options.time_scale,
            workers_of=self._workers,
        )

    def _accept_async(self, logical_id: str, event: Any) -> Invocation:
        """How EventBridge rules and schedules invoke a function: asynchronously, done once
        Lambda queued the event (https://docs.aws.amazon.com/lambda/latest/dg/with-eventbridge.html,
        https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-targets-templated.html)."""
        return accepted(self.invoke_async(logical_id, event))

    def _start_pools(
        self,
        specs: Mapping[str, FunctionSpec],
        authorizations: Mapping[str, dict[str, Any] | None],
        endpoint: AwsEndpoint,
        log_dir: Path,
    ) -> None:
        for logical_id, spec in specs.items():
            environment = worker_environment(
                spec, endpoint.url, endpoint.region, self._local_variables(spec)
            )
            self._pools[logical_id] = FunctionPool(
                spec=spec,
                environment=environment,
                size=self._workers(logical_id),
                log_path=log_dir / f"{logical_id}.log",
                calls=self.calls,
                current_faults=self.faults,
                authorization=authorizations[logical_id],
            )
        warm = self.options.warm_start
        starters = [
            threading.Thread(target=pool.start, args=(warm,)) for pool in self._pools.values()
        ]
        for starter in starters:
            starter.start()
        for starter in starters:
            starter.join()
        for logical_id, pool in self._pools.items():
            if pool.stats.init_error is not None:
                logger.warning("%s cannot start: %s", logical_id, pool.stats.init_error)

    def _local_variables(self, spec: FunctionSpec) -> dict[str, str]:
        """What the runtime changes in a function's environment to run on this machine."""
        assert self._gateway is not None
        assert self._lambda_api is not None
        variables: dict[str, str] = {LAMBDA_ENDPOINT_VARIABLE: endpoint_url(self._lambda_api)}
        if self.options.provider_url and PROVIDER_BASE_URL_VARIABLE in spec.environment:
            variables[PROVIDER_BASE_URL_VARIABLE] = self.options.provider_url
        if spec.environment.get(PUBLIC_BASE_URL_VARIABLE) == "":
            # The handler's https://{domainName} default is wrong here: the gateway speaks http.
            variables[PUBLIC_BASE_URL_VARIABLE] = self._gateway.url
        for api in self._websocket_apis:
            # The Management API endpoint the template gives (the stage's https URL), locally.
            endpoint = execute_api_url(api.spec.api_id, self.options.region, api.spec.stage)
            variables.update(
                {
                    name: api.management_url
                    for name, value in spec.environment.items()
                    if value == endpoint
                }
            )
        return variables

    def _event_source_mappings(
        self,
        stack: DeployedStack,
        functions: FunctionIndex,
        endpoint: AwsEndpoint,
        specs: Mapping[str, FunctionSpec],
    ) -> list[QueueSource]:
        """The SQS mappings, each refused as Lambda refuses its creation when the queue's
        visibility timeout is shorter than the function's timeout or the function's role may not
        poll the queue (before any worker starts)."""
        sources = queue_sources(stack, functions, endpoint)
        sqs = endpoint.client("sqs")
        for source in sources:
            attributes = sqs.get_queue_attributes(
                QueueUrl=source.queue_url, AttributeNames=["VisibilityTimeout"]
            )["Attributes"]
            refuse_visibility_below_timeout(
                source, int(attributes["VisibilityTimeout"]), specs[source.function].timeout_seconds
            )
        services = self._services
        if services is None:
            return sources
        for source in sources:
            refuse_unauthorized_mapping(source, services.function_role(specs[source.function]))
        return sources

    def _mapping_sqs_client(self, endpoint: AwsEndpoint, spec: FunctionSpec) -> Any:
        """An SQS client polling as the function's execution role (as Lambda's mapping does)."""
        client = endpoint.client("sqs")
        if self._services is None:
            return client
        authorizer = self._services.function_role(spec)
        return authorized_client(client, f"{spec.logical_id} event source mapping", authorizer)

    def _start_triggers(
        self,
        stack: DeployedStack,
        functions: FunctionIndex,
        endpoint: AwsEndpoint,
        queues: list[QueueSource],
        specs: Mapping[str, FunctionSpec],
    ) -> None:
        options = self.options
        services = self._services
        self._schedules = ScheduleRunner(
            schedules(stack, functions),
            self._accept_async,
            options.time_scale,
            endpoint.region,
            refusal=None if services is None else services.schedule_refusals(specs),
        )
        self._schedules.start()
        runtime_sqs = endpoint.client("sqs")
        for source in queues:
            pollers = min(
                options.workers_per_function,
                source.maximum_concurrency or options.workers_per_function,
            )
            poller = QueuePoller(
                source=source,
                new_sqs_client=functools.partial(
                    self._mapping_sqs_client, endpoint, specs[source.function]
                ),
                runtime_sqs=runtime_sqs,
                invoke=self.invoke,
                time_scale=options.time_scale,
                region=endpoint.region,
                pollers=pollers,
                observer=self._cloudwatch.sqs_ages if self._cloudwatch else None,
            )
            poller.start()
            self._pollers.append(poller)

    def _start_result_events(
        self,
        stack: DeployedStack,
        functions: FunctionIndex,
        endpoint: AwsEndpoint,
        specs: Mapping[str, FunctionSpec],
    ) -> None:
        """Buses and their rule targets first, then the pipes that feed them."""
        options = self.options
        rules = rule_specs(stack, functions)
        services = self._services
        self._rule_functions = frozenset(name for rule in rules for name in rule.functions)
        self._event_bus = LocalEventBus(
            rules,
            self._accept_async,
            region=endpoint.region,
            workers_of=self._workers,
            run_time_rules=RunTimeRules(endpoint.client, (rule.name for rule in rules)),
            refusal=None if services is None else services.rule_target_refusals(specs),
        )
        self._event_bus.start()
        cloudwatch = self._cloudwatch
        for spec in pipe_specs(stack):
            pipe = StreamPipe(
                spec,
                new_client=endpoint.client,
                put_events=self._event_bus.put_events,
                duplicate_rate=options.event_duplicate_rate,
                on_execution=None
                if cloudwatch is None
                else functools.partial(cloudwatch.record_pipe_execution, spec.name),
                authorizer=None if services is None else services.role(spec.role_arn, spec.name),
            )
            pipe.start()
            self._event_pipes.append(pipe)

    def _ready_info(
        self,
        stack: DeployedStack,
        endpoint: AwsEndpoint,
        run_dir: Path,
        log_dir: Path,
        specs: Mapping[str, FunctionSpec],
    ) -> ReadyInfo:
        assert self._gateway is not None
        assert self._control is not None
        outputs = {
            name: localised(value, stack.api_endpoints(), self._gateway.url)
            for name, value in stack.outputs.items()
        }
        for api in self._websocket_apis:
            wss = "wss" + execute_api_url(api.spec.api_id, endpoint.region, api.spec.stage)[5:]
            outputs = {name: value.replace(wss, api.url) for name, value in outputs.items()}
        return ReadyInfo(
            api_url=self._gateway.url,
            tls_api_url=self._gateway.tls_url or "",
            ca_bundle=self._ca_bundle,
            aws_endpoint_url=endpoint.url,
            control_url=f"http://{LOCALHOST}:{self._control.port}",
            tasks_table=outputs.get(TASKS_TABLE_OUTPUT),
            dlq_url=outputs.get(DLQ_URL_OUTPUT),
            parking_queue_url=outputs.get(PARKING_QUEUE_URL_OUTPUT),
            region=endpoint.region,
            stack_name=stack.name,
            websocket_url=self._websocket_apis[0].url if self._websocket_apis else None,
            run_dir=str(run_dir),
            log_dir=str(log_dir),
            outputs=outputs,
            functions={
                logical_id: {
                    "function_name": spec.function_name,
                    "log_file": str(log_dir / f"{logical_id}.log"),
                    "init_error": self._pools[logical_id].stats.init_error,
                }
                for logical_id, spec in specs.items()
            },
            resources={
                resource.logical_id: {
                    "type": resource.resource_type,
                    "physical_id": resource.physical_id,
                    "origin": resource.origin,
                }
                for resource in stack.resources.resources.values()
            },
        )

    def _stop_control(self) -> None:
        if self._control is not None:
            self._control.stop()
            self._control = None

    def _stop_lambda_api(self) -> None:
        if self._lambda_api is not None:
            self._lambda_api.stop()
            self._lambda_api = None

    def _lambda_invoke_api(self) -> LambdaInvokeApi:
        assert self._lambda_api is not None
        api: LambdaInvokeApi = self._lambda_api.app
        return api

    def _stop_cloudwatch(self) -> None:
        if self._cloudwatch is not None:
            self._cloudwatch.stop(_TRIGGER_STOP_SECONDS)

    def _stop_accepting(self) -> None:
        if self._gateway is not None:
            self._gateway.set_up(False)

    def _stop_websocket_apis(self) -> None:
        for api in self._websocket_apis:
            api.stop()
        self._websocket_apis = []

    def _drain_gateway(self) -> None:
        if self._gateway is not None:
            left = self._gateway.drain(DRAIN_SECONDS)
            if left:
                logger.warning("%d requests still in flight after %.0fs", left, DRAIN_SECONDS)

    def _close_access_log(self) -> None:
        if self._gateway is not None:
            self._gateway.close_access_log()
            self._gateway = None
            self._access_log = None
        elif self._access_log is not None:
            self._access_log.close()
            self._access_log = None

    def _stop_schedules(self) -> None:
        if self._schedules is not None:
            self._schedules.stop(_TRIGGER_STOP_SECONDS)
            self._schedules = None

    def _stop_pollers(self) -> None:
        for poller in self._pollers:
            poller.stop(_TRIGGER_STOP_SECONDS)
        self._pollers = []

    def _stop_result_events(self) -> None:
        for pipe in self._event_pipes:
            pipe.stop(_TRIGGER_STOP_SECONDS)
        self._event_pipes = []
        if self._event_bus is not None:
            self._event_bus.stop(_TRIGGER_STOP_SECONDS)
            self._event_bus = None

    def _stop_async(self) -> None:
        if self._async is not None:
            self._async.stop(_TRIGGER_STOP_SECONDS)

    def _stop_pools(self) -> None:
        stoppers = [threading.Thread(target=pool.stop) for pool in self._pools.values()]
        for stopper in stoppers:
            stopper.start()
        for stopper in stoppers:
            stopper.join()
        self._pools = {}

    def _stop_iam_evaluator(self) -> None:
        if self._iam_evaluator is not None:
            self._iam_evaluator.stop()
            self._iam_evaluator = None

    def _stop_moto(self) -> None:
        if self._moto is not None:
            self._moto.stop()
            self._moto = None
