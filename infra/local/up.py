"""`python -m infra.local up` (`make up`): the simulator and the stack for a local try.

Without ``--provider-url`` a CaptchaAI simulator is started with a key of its own; with one, the
provider key comes from ``$CAPTCHAAI_API_KEY`` (never argv: it would show in the process list).
Prints what a worker needs: credentials, region, API_URL, the test CA, and a per-worker key with
its ``server`` for 2captcha clients. Runs until SIGINT/SIGTERM, then stops everything it started.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from infra.local.options import LocalOptions, ReadyInfo
from infra.local.runtime.aws import FAKE_CREDENTIALS, OTHER_WORKER, WORKER, fake_session
from infra.local.stack import LocalStack
from infra.simulator import Simulator, SimulatorConfig
from pingback_guard_cli import keys
from pingback_guard_cli.stack import Aws, find_stack

PROVIDER_KEY_VARIABLE = "CAPTCHAAI_API_KEY"


class MissingProviderKeyError(Exception):
    """A real provider URL was given without its key in the environment."""


@dataclass(frozen=True)
class UpOptions:
    provider_url: str | None
    template: Path
    time_scale: float
    run_dir: Path | None


@contextmanager
def provider(options: UpOptions) -> Iterator[tuple[str, str]]:
    """(base URL, API key): the given provider's, or a simulator's started for the run."""
    if options.provider_url:
        api_key = os.environ.get(PROVIDER_KEY_VARIABLE, "")
        if not api_key:
            raise MissingProviderKeyError(
                f"--provider-url needs the provider's key in ${PROVIDER_KEY_VARIABLE}"
            )
        yield options.provider_url, api_key
        return
    with Simulator(SimulatorConfig()) as simulator:
        yield simulator.base_url, simulator.api_key


def worker_lines(ready: ReadyInfo, compat_key: str, simulator_url: str | None) -> list[str]:
    credentials = (
        f"AWS_ACCESS_KEY_ID={FAKE_CREDENTIALS['AWS_ACCESS_KEY_ID']} "
        f"AWS_SECRET_ACCESS_KEY={FAKE_CREDENTIALS['AWS_SECRET_ACCESS_KEY']}"
    )
    lines = [
        "pingback-guard local stack is up (Ctrl-C stops it). For a worker:",
        f"  export {credentials} AWS_REGION={ready.region}",
        f"  export API_URL={ready.api_url}",
        f"  export REQUESTS_CA_BUNDLE={ready.ca_bundle}   # trusts the HTTPS listener's test CA",
        f"  export PINGBACK_GUARD_API_URL={ready.tls_api_url}   # the host `keys issue` prints",
        f"2captcha clients (in.php/res.php), one per-worker key (of {OTHER_WORKER.user_arn}):",
        f"  key={compat_key} server={urlsplit(ready.tls_api_url).netloc}",
        f"  e.g. TwoCaptcha('{compat_key}', server='{urlsplit(ready.tls_api_url).netloc}')",
        "Operator CLI:",
        f"  pingback-guard --endpoint-url {ready.aws_endpoint_url} -s {ready.stack_name} status",
        f"  pingback-guard --endpoint-url {ready.aws_endpoint_url} -s {ready.stack_name} keys issue"
        f" --owner {OTHER_WORKER.user_arn}",
        f"  pingback-guard --endpoint-url {ready.aws_endpoint_url} -s {ready.stack_name} smoke"
        f" --api-url {ready.api_url} --rule-settle-seconds 0",
    ]
    if simulator_url:
        lines.append(f"Simulator (faults: POST {simulator_url}/_sim/faults): {simulator_url}")
    return lines


def issue_compat_key(
    ready: ReadyInfo,
    owner: str,
    label: str,
    *,
    threads: int = keys.DEFAULT_THREADS,
    dialect: str = keys.DIALECTS[0],
) -> str:
    """A per-worker key of the local stack, as `pingback-guard keys issue` makes one."""
    aws = Aws(fake_session(ready.region), ready.aws_endpoint_url)
    stack = find_stack(aws, ready.stack_name)
    issued = keys.issue(
        aws, stack, owner, label, ready.tls_api_url, threads=threads, dialect=dialect
    )
    return issued.key


def run_up(options: UpOptions, stop: threading.Event) -> None:
    with provider(options) as (base_url, api_key):
        local = LocalOptions(
            template=options.template,
            provider_url=base_url,
            provider_api_key=api_key,
            time_scale=options.time_scale,
            run_dir=options.run_dir,
            warm_start=True,  # a function that cannot import is reported before the first try
            # A worker's own pingback receiver on this machine gets the results forwarded; the
            # one local user is also the operator (`pingback-guard smoke` runs as the admin).
            parameter_overrides={
                "AllowLoopbackPingbacks": "true",
                "AdminPrincipalArn": WORKER.user_arn,
            },
        )
        with LocalStack(local) as stack:
            simulator_url = None if options.provider_url else base_url
            # For the other local user: a key for the admin (WORKER) would read every task.
            compat_key = issue_compat_key(stack.ready, OTHER_WORKER.user_arn, "make up")
            lines = worker_lines(stack.ready, compat_key, simulator_url)
            print("\n".join(lines), flush=True)
            while not stop.wait(0.5):
                pass
