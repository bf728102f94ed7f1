"""Two stacks deployed in one twin (one moto, one account and region) keep their alarms apart,
and the six in.php / res.php access-log alarms fire on their own route's answers.

CloudWatch is the account's: both stacks' metrics go to one store here, as there. Each stack
counts under its own namespace (PingbackGuard/<stack name>), so one stack's datapoints are
another metric to the other's alarms. The gateway's answers reach the stack's access-log metric
filters through the observer the local gateway calls for every answer (LocalCloudWatch.
record_request); the local gateway has no route throttle, so a 429 is given to it the same way.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit

from infra.local.cloudformation.deploy import DeployedStack, deploy_stack
from infra.local.cloudformation.template import SamTemplate
from infra.local.cloudwatch.alarm_runtime import LocalCloudWatch
from infra.local.cloudwatch.alarms import ALARM, OK, MetricStore
from infra.local.lambda_.functions import function_specs
from infra.local.runtime.aws import AwsEndpoint
from infra.local.runtime.moto_process import MotoServer
from infra.project_template import TEMPLATE_PATH
from tests.waiting import wait_until

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(300)]

# A nominal 300 s period lasts 1 s here.
TIME_SCALE = 300
STACKS = ("dev", "prod")
COMPAT_ALARMS = {
    route: {f"{route}Php{answer}Alarm" for answer in ("Throttled", "4xx", "5xx")}
    for route in ("in", "res")
}
# Each alarm's threshold in its period, met: 10 throttled, 10 refused (413), one 5xx.
ANSWERS = [429] * 10 + [413] * 10 + [503]


@dataclass
class Twin:
    stack: DeployedStack
    cloudwatch: LocalCloudWatch
    log_dir: Path
    function_environment: Mapping[str, str]
    """SubmitFunction's variables, as the stack gives them (Globals merged)."""

    def fired_since(self, since: float) -> set[str]:
        """The alarms (logical ids) that went to ALARM after `since`, evaluated now."""
        self.cloudwatch.tick(time.time())
        return {
            change.logical_id
            for change in self.cloudwatch.history()
            if change.new_state == ALARM and change.at > since
        }

    def states(self) -> dict[str, str]:
        self.cloudwatch.tick(time.time())
        report = self.cloudwatch.report()
        by_name = report["alarms"]
        return {by_name[name]["logical_id"]: state for name, state in report["states"].items()}


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Twin]]:
    run_dir = tmp_path_factory.mktemp("stacks-apart")
    moto = MotoServer(0, run_dir / "moto.log")
    started = moto.start()
    try:
        endpoint = AwsEndpoint(started.url, "us-east-1")
        template = SamTemplate.load(TEMPLATE_PATH)
        store = MetricStore()
        twins: dict[str, Twin] = {}
        for name in STACKS:
            stack = deploy_stack(
                template,
                template.parameter_values({}),
                endpoint,
                started.cloudformation_types,
                name,
            )
            log_dir = run_dir / name
            log_dir.mkdir()
            cloudwatch = LocalCloudWatch(stack, endpoint, log_dir, TIME_SCALE, {}, store=store)
            specs = function_specs(stack, template.function_code_dirs())
            twins[name] = Twin(stack, cloudwatch, log_dir, specs["SubmitFunction"].environment)
        yield twins
    finally:
        moto.stop()


def _answer(twin: Twin, route_key: str, statuses: list[int]) -> None:
    for status in statuses:
        twin.cloudwatch.record_request(route_key, status)


def _emit(twin: Twin, metric: str) -> None:
    """One datapoint as the stack's functions write it: Powertools' EMF line under the namespace
    and service the template gives them, in the stack's function log."""
    environment = twin.function_environment
    metrics = Metrics(
        namespace=environment["POWERTOOLS_METRICS_NAMESPACE"],
        service=environment["POWERTOOLS_SERVICE_NAME"],
    )
    metrics.add_metric(name=metric, unit=MetricUnit.Count, value=1)
    line = json.dumps(metrics.serialize_metric_set())
    with (twin.log_dir / "SubmitFunction.log").open("a", encoding="utf-8") as log:
        log.write(line + "\n")


def _quiet(twins: dict[str, Twin], alarms: set[str]) -> bool:
    return all(
        {alarm: twin.states().get(alarm) for alarm in alarms} == dict.fromkeys(alarms, OK)
        for twin in twins.values()
    )


def _fired(twins: dict[str, Twin], since: float) -> dict[str, set[str]]:
    return {name: twin.fired_since(since) for name, twin in twins.items()}


def test_each_route_s_answers_fire_its_own_three_alarms_in_its_own_stack_only(
    twins: dict[str, Twin],
) -> None:
    dev = twins["dev"]
    every_compat_alarm = COMPAT_ALARMS["in"] | COMPAT_ALARMS["res"]
    assert every_compat_alarm <= set(dev.states())
    # Given both stacks quiet.
    wait_until(lambda: _quiet(twins, every_compat_alarm), timeout=30)
    for route, route_key in (("in", "POST /in.php"), ("res", "GET /res.php")):
        since = time.time()
        # When dev's route answers a flood (429), refusals (413) and a 503,
        _answer(dev, route_key, ANSWERS)
        # then dev's three alarms of that route fire, and no other alarm of either stack.
        wait_until(lambda: _fired(twins, since)["dev"] >= COMPAT_ALARMS[route], timeout=30)  # noqa: B023
        assert _fired(twins, since) == {"dev": COMPAT_ALARMS[route], "prod": set()}
        wait_until(lambda: _quiet(twins, every_compat_alarm), timeout=30)


def test_one_stack_s_custom_metric_fires_its_alarm_and_not_the_other_stack_s(
    twins: dict[str, Twin],
) -> None:
    wait_until(lambda: _quiet(twins, {"TaskExpiredAlarm"}), timeout=30)
    since = time.time()
    # When prod's functions count an expired task, prod's alarm fires and dev's stays quiet,
    # though both stacks' functions run with one service name in one account and region.
    _emit(twins["prod"], "TaskExpired")
    wait_until(lambda: "TaskExpiredAlarm" in twins["prod"].fired_since(since), timeout=30)
    assert _fired(twins, since) == {"prod": {"TaskExpiredAlarm"}, "dev": set()}
