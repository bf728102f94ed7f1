"""Figure 3: res.php requests per recovered task, `ids=` batching vs one request per id.

The real PollerService and CaptchaAiClient recover tasks whose pingback never came from the
CaptchaAI simulator; requests are counted by the simulator (the server side).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace

import boto3
from moto import mock_aws

from bench.outcome import Headline, SectionOutcome, markdown_table, number
from bench.provider import instant_simulator, res_requests
from bench.template_facts import deployed_poller_settings, new_task_store
from infra.moto_atomic import make_dynamodb_writes_atomic
from infra.simulator import Simulator
from pingback_guard.domain.task import CaptchaRequest, NewTask
from pingback_guard.logic.poll_schedule import PollPolicy, SolveTimes
from pingback_guard.logic.poller import PollerService
from pingback_guard.provider.captchaai import CaptchaAiClient
from pingback_guard.settings.poller import MAX_IDS_PER_RES_REQUEST

REGION = "us-east-1"
DUE_TASKS = 100
MAX_SWEEPS = 10
LAMBDA_TIME_LEFT_SECONDS = 60.0
REQUEST = CaptchaRequest(
    "userrecaptcha",
    {
        "googlekey": "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-",
        "pageurl": "https://www.google.com/recaptcha/api2/demo",
    },
)


@dataclass(frozen=True)
class Recovery:
    mode: str
    sweeps: int
    recovered: int
    res_requests: int
    tasks_per_sweep_bound: int

    @property
    def requests_per_task(self) -> float:
        return self.res_requests / self.recovered if self.recovered else float("inf")


def measure_res_requests() -> SectionOutcome:
    make_dynamodb_writes_atomic()
    with instant_simulator() as simulator, mock_aws():
        batched = _recover_all(simulator, batch_ids=True)
        one_by_one = _recover_all(simulator, batch_ids=False)
    return _outcome(batched, one_by_one)


def _recover_all(simulator: Simulator, batch_ids: bool) -> Recovery:
    """Submit DUE_TASKS, record them PENDING and already due, sweep until all are recovered."""
    client = boto3.session.Session(region_name=REGION).client("dynamodb")
    store = new_task_store(client, f"pingback-guard-bench-res-{'ids' if batch_ids else 'single'}")
    provider = CaptchaAiClient(simulator.base_url, lambda: simulator.api_key)
    now = time.time()
    for _ in range(DUE_TASKS):
        task_id = provider.submit(REQUEST, pingback_url="")
        store.record_submission(NewTask(task_id, REQUEST, now - 130, first_poll_at=now - 10))
    policy = _policy(ids_per_request=MAX_IDS_PER_RES_REQUEST if batch_ids else 1)
    service = PollerService(store, provider, policy, SolveTimes(default_seconds=20))
    before = res_requests(simulator)
    recovered = sweeps = 0
    while recovered < DUE_TASKS and sweeps < MAX_SWEEPS:
        report = service.sweep(time.time(), remaining_seconds=lambda: LAMBDA_TIME_LEFT_SECONDS)
        recovered += report.recovered
        sweeps += 1
    return Recovery(
        mode="ids= batching (deployed default)" if batch_ids else "one request per id (seed)",
        sweeps=sweeps,
        recovered=recovered,
        res_requests=res_requests(simulator) - before,
        tasks_per_sweep_bound=policy.max_tasks_per_sweep,
    )


def _policy(ids_per_request: int) -> PollPolicy:
    """The deployed poller's policy, one sweep per invocation."""
    deployed = deployed_poller_settings().policy
    return replace(deployed, ids_per_request=ids_per_request, run_seconds=0.0)


def _outcome(batched: Recovery, one_by_one: Recovery) -> SectionOutcome:
    rows = [
        [
            recovery.mode,
            str(recovery.recovered),
            str(recovery.res_requests),
            number(recovery.requests_per_task),
            str(recovery.sweeps),
            str(recovery.tasks_per_sweep_bound),
        ]
        for recovery in (batched, one_by_one)
    ]
    return SectionOutcome(
        key="res_requests",
        title=f"3. res.php requests per recovered task ({DUE_TASKS} lost pingbacks, simulator)",
        data={
            "batched": {**asdict(batched), "requests_per_task": batched.requests_per_task},
            "one_by_one": {
                **asdict(one_by_one),
                "requests_per_task": one_by_one.requests_per_task,
            },
        },
        headlines=[
            Headline(
                "res.php requests / recovered task: ids= batching vs one per id",
                f"{number(batched.requests_per_task)} vs {number(one_by_one.requests_per_task)}"
                f" ({batched.sweeps} vs {one_by_one.sweeps} sweeps)",
            )
        ],
        details=markdown_table(
            [
                "poller",
                "recovered",
                "res.php requests",
                "requests / recovered task",
                "sweeps needed",
                "tasks per sweep (bound)",
            ],
            rows,
        ),
    )
