"""The stacks the local suites run on, each started once per test module that asks for it: the
fixture template's (`local_stack`), or the project's template against the CaptchaAI simulator
(`simulator` and `stack`, configured by the module's SIMULATOR and STACK_OPTIONS)."""

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.local import LocalOptions, LocalStack
from infra.local.runtime.moto_process import MotoEndpoint, MotoServer
from infra.project_template import TEMPLATE_PATH
from infra.simulator import Simulator, SimulatorConfig
from tests.local.support import FIXTURE_TEMPLATE, LEAK_SENTINEL, PROVIDER_API_KEY, child_pids
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def local_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    os.environ[LEAK_SENTINEL] = "must-not-reach-workers"
    stack = LocalStack(
        LocalOptions(
            template=FIXTURE_TEMPLATE,
            time_scale=60,
            provider_api_key=PROVIDER_API_KEY,
            parameter_overrides={"Flavour": "chocolate"},
            run_dir=tmp_path_factory.mktemp("local-stack"),
            stack_name="fixture",
        )
    )
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()
        os.environ.pop(LEAK_SENTINEL, None)
        wait_until(lambda: not child_pids(), timeout=10)


@pytest.fixture
def aws(local_stack: LocalStack) -> Callable[[str], Any]:
    return local_stack.ready.aws_client


@pytest.fixture(scope="module")
def simulator(request: pytest.FixtureRequest) -> Iterator[Simulator]:
    """A simulator with the settings of the module's SIMULATOR mapping."""
    with Simulator(SimulatorConfig.from_mapping(request.module.SIMULATOR)) as sim:
        yield sim


@pytest.fixture(scope="module")
def stack(
    request: pytest.FixtureRequest,
    simulator: Simulator,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[LocalStack]:
    """template.yaml against `simulator`, with the module's STACK_OPTIONS (LocalOptions fields)."""
    options = LocalOptions(
        template=TEMPLATE_PATH,
        provider_url=simulator.base_url,
        provider_api_key=simulator.api_key,
        # The simulator's other accounts: the stack's accounts "2", "3"... (ProviderExtraAccounts)
        provider_account_keys={
            str(number): key for number, key in enumerate(simulator.api_keys[1:], start=2)
        },
        run_dir=tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1]),
        **request.module.STACK_OPTIONS,
    )
    with LocalStack(options) as running:
        yield running


@pytest.fixture
def moto(tmp_path: Path) -> Iterator[MotoEndpoint]:
    """A moto server of its own, for a test that deploys without a whole local stack."""
    server = MotoServer(0, tmp_path / "moto.log")
    try:
        yield server.start()
    finally:
        server.stop()
