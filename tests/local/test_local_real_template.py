"""The project's own template.yaml and handlers start on the local runtime."""

from pathlib import Path

import pytest

from infra.local import LocalOptions, LocalStack

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(180)]

PROJECT_TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"


def test_project_template_starts_and_every_function_loads(tmp_path: Path) -> None:
    options = LocalOptions(
        template=PROJECT_TEMPLATE,
        provider_api_key="local-test-key",
        run_dir=tmp_path,
        warm_start=True,  # every function imports at start: an init error is reported here
    )
    with LocalStack(options) as stack:
        ready = stack.ready
        assert ready.tasks_table
        assert ready.dlq_url
        assert ready.parking_queue_url
        assert ready.outputs["ApiUrl"] == ready.api_url
        assert ready.functions
        failed = {name: info["init_error"] for name, info in ready.functions.items()}
        assert not {name: error for name, error in failed.items() if error}, failed
