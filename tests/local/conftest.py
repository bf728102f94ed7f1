"""The fixture template's stack, started once per test module that asks for it."""

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from infra.local import LocalOptions, LocalStack
from tests.local.support import (
    FIXTURE_TEMPLATE,
    LEAK_SENTINEL,
    PROVIDER_API_KEY,
    child_pids,
    wait_until,
)


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
