"""Every parameter at the edges CloudFormation allows deploys into the local stack and runs.

Low: every parameter at its minimum (and the poll backoff base above its maximum: a combination
CloudFormation cannot refuse, clamped at cold start). High: every parameter at its maximum.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import requests

from infra.local import LocalOptions, LocalStack
from infra.local.cloudformation.cfn_yaml import load_cfn_yaml

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(300)]

PROJECT_TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"
_RANGE = re.compile(r"from (\d+) to (\d+)")


def edges(parameters: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """(lowest, highest) value CloudFormation accepts, for every constrained parameter."""
    found: dict[str, tuple[str, str]] = {}
    for name, spec in parameters.items():
        if "AllowedValues" in spec:
            values = spec["AllowedValues"]
            ordered = sorted(values) if all(isinstance(v, int) for v in values) else values
            found[name] = (str(ordered[0]), str(ordered[-1]))
        elif "MinValue" in spec and "MaxValue" in spec:
            found[name] = (str(spec["MinValue"]), str(spec["MaxValue"]))
        elif (match := _RANGE.search(str(spec.get("ConstraintDescription", "")))) is not None:
            found[name] = (match.group(1), match.group(2))
    return found


def _template_parameters() -> dict[str, Any]:
    parameters: dict[str, Any] = load_cfn_yaml(PROJECT_TEMPLATE)["Parameters"]
    return parameters


def test_every_number_parameter_has_edges() -> None:
    parameters = _template_parameters()
    found = edges(parameters)
    numbers = {name for name, spec in parameters.items() if spec.get("Type") == "Number"}
    assert numbers <= set(found)
    for name, (low, high) in found.items():
        assert re.fullmatch(parameters[name].get("AllowedPattern", ".*"), low), name
        assert re.fullmatch(parameters[name].get("AllowedPattern", ".*"), high), name


@pytest.mark.parametrize("edge", ["low", "high"])
def test_parameter_edges_deploy_and_run(tmp_path: Path, edge: str) -> None:
    found = edges(_template_parameters())
    overrides = {name: pair[0] if edge == "low" else pair[1] for name, pair in found.items()}
    if edge == "low":
        overrides["PollBackoffBaseSeconds"] = found["PollBackoffBaseSeconds"][1]
    options = LocalOptions(
        template=PROJECT_TEMPLATE,
        provider_api_key="edge-test-key",
        parameter_overrides=overrides,
        run_dir=tmp_path,
        time_scale=60,
        workers_per_function=1,
        warm_start=True,  # every function imports at start: an init error is reported here
        stack_name=f"edges-{edge}",
        # PushApiAccessLogs=true (an edge) makes the push stage log: the account needs the role.
        apigateway_cloudwatch_role_arn="arn:aws:iam::123456789012:role/apigateway-cloudwatch",
    )
    with LocalStack(options) as stack:
        failed = {n: f["init_error"] for n, f in stack.ready.functions.items() if f["init_error"]}
        assert failed == {}
        sweep = stack.invoke("PollerFunction", {})
        assert sweep.ok, sweep.error
        api = stack.ready.api_url
        assert requests.get(f"{api}/tasks/12345", timeout=10).status_code < 500
        assert requests.get(f"{api}/2captcha.txt", timeout=10).status_code < 500
        assert requests.post(f"{api}/callback/not-a-secret", timeout=10).status_code < 500
    poller_log = (tmp_path / "logs" / "PollerFunction.log").read_text()
    assert ("poller setting clamped" in poller_log) is (edge == "low")
