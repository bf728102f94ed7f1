"""The `sam local invoke` sequence of docs/operations.md, in-process: `make sam-local-events`
against a moto server, then each handler invoked with exactly the event files it wrote and the
environment `--env-vars env.json` gives it. The events cannot rot again unnoticed."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_lambda_powertools.utilities import parameters

from infra.lambda_context import FakeLambdaContext
from infra.local.runtime.moto_process import MotoServer
from infra.sam import make_events
from infra.sam.local_events import sam_local_environment, write_local_events
from tests.support import template

Invoke = Callable[[str, str], Any]


@pytest.fixture(scope="module")
def moto_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = MotoServer(0, tmp_path_factory.mktemp("moto") / "moto.log")
    try:
        yield server.start().url
    finally:
        server.stop()


@pytest.fixture
def written(moto_endpoint: str, tmp_path: Path) -> Path:
    write_local_events(moto_endpoint, tmp_path)
    return tmp_path


@pytest.fixture
def invoke(moto_endpoint: str, written: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Invoke]:
    """Invokes a function as `sam local invoke FUNCTION -e events/NAME --env-vars env.json`:
    a cold start with the function's environment, then one event."""
    loaded: list[str] = []

    def run(function: str, event_file: str) -> Any:
        for name, value in sam_local_environment(function, moto_endpoint).items():
            monkeypatch.setenv(name, value)
        parameters.clear_caches()
        handler = template()["Resources"][function]["Properties"]["Handler"]
        module_name, function_name = handler.rsplit(".", 1)
        sys.modules.pop(module_name, None)
        loaded.append(module_name)
        module = importlib.import_module(module_name)
        event = json.loads((written / event_file).read_text(encoding="utf-8"))
        return getattr(module, function_name)(event, FakeLambdaContext())

    yield run
    for module_name in loaded:
        sys.modules.pop(module_name, None)


def test_the_documented_sequence_stores_and_serves_a_result(invoke: Invoke) -> None:
    # The pingbacks: the capability in each URL is valid for the task the target recorded.
    assert invoke("CallbackFunction", "callback_get.json")["statusCode"] == 200
    assert invoke("CallbackFunction", "callback_post_form.json")["statusCode"] == 200
    assert invoke("CallbackFunction", "callback_post_json.json")["statusCode"] == 200
    assert invoke("CallbackFunction", "callback_get_unsolvable.json")["statusCode"] == 200

    # The worker's GET (as the task's owner) serves the stored token.
    answer = invoke("GetTaskFunction", "get_task.json")
    view = json.loads(answer["body"])
    assert answer["statusCode"] == 200, view
    assert (view["status"], view["solution"]) == ("SOLVED", make_events.sample_token())
    assert view["delivered_via"] == "callback"

    # The replay batch carries the same results: duplicates, nothing fails, nothing changes.
    replayed = invoke("ReplayFunction", "replay_dead_letters.json")
    assert replayed == {"batchItemFailures": []}

    # The scheduled poller finds nothing due: both tasks are decided.
    invoke("PollerFunction", "poller_schedule.json")
    verification = invoke("CallbackFunction", "verification_2captcha_txt.json")
    assert verification["statusCode"] == 200


def test_each_run_records_new_tasks(moto_endpoint: str, tmp_path: Path) -> None:
    write_local_events(moto_endpoint, tmp_path / "first", now=1_800_000_000.0)
    write_local_events(moto_endpoint, tmp_path / "second", now=1_800_000_001.0)
    first = make_events.sample_in(tmp_path / "first")
    second = make_events.sample_in(tmp_path / "second")
    assert first.solved_id != second.solved_id
    assert first.solved_capability != second.solved_capability
