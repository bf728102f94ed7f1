"""`python -m infra.local serve ...`: runs the local stack in the foreground until SIGINT/SIGTERM.
`python -m infra.local up` (`make up`): the simulator and the stack for a local try (see up.py).

`serve` prints one JSON line on stdout when ready (URLs, names, every resolved template output);
its own log goes to stderr, the functions' logs to files under the run directory.
"""

import argparse
import json
import logging
import signal
import sys
import threading
from pathlib import Path

from infra.local.cloudformation.template import TemplateError
from infra.local.options import LocalOptions
from infra.local.runtime.processes import ChildStartError
from infra.local.stack import LocalStack
from infra.local.up import MissingProviderKeyError, UpOptions, run_up

_WAIT_SLICE_SECONDS = 0.5


def _parameter_overrides(items: list[str]) -> dict[str, str]:
    overrides: dict[str, str] = {}
    for item in items:
        name, separator, value = item.partition("=")
        if not separator or not name:
            raise argparse.ArgumentTypeError(f"parameter override {item!r} is not NAME=VALUE")
        overrides[name] = value
    return overrides


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m infra.local")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the stack locally against moto")
    serve.add_argument("--template", type=Path, default=Path("template.yaml"))
    serve.add_argument("--api-port", type=int, default=0, help="gateway port (0: any free)")
    serve.add_argument(
        "--api-tls-port", type=int, default=0, help="gateway HTTPS port (test CA; 0: any free)"
    )
    serve.add_argument("--aws-port", type=int, default=0, help="moto port (0: any free)")
    serve.add_argument("--control-port", type=int, default=0, help="control API port (0: any free)")
    serve.add_argument("--provider-url", help="2captcha-compatible base URL (PROVIDER_BASE_URL)")
    serve.add_argument(
        "--provider-api-key", help="provider API key (default: $CAPTCHAAI_API_KEY); never printed"
    )
    serve.add_argument("--time-scale", type=float, default=1.0, help="run schedules X times faster")
    serve.add_argument("--parameter-overrides", nargs="*", default=[], metavar="NAME=VALUE")
    serve.add_argument("--workers-per-function", type=int, default=2)
    serve.add_argument(
        "--warm-start",
        action="store_true",
        help="start every function's workers with the stack (default: at their first invocation)",
    )
    serve.add_argument("--run-dir", type=Path, help="logs go here (default: a new temp dir)")
    serve.add_argument("--region", default="us-east-1")
    serve.add_argument("--stack-name", default="pingback-guard-local")
    serve.add_argument(
        "--event-duplicate-rate",
        type=float,
        default=0.0,
        help="probability that a pipe publishes a batch of result events twice",
    )
    up = commands.add_parser(
        "up", help="the simulator (or --provider-url, key in $CAPTCHAAI_API_KEY) and the stack"
    )
    up.add_argument("--provider-url", help="a real 2captcha-compatible provider instead")
    up.add_argument("--template", type=Path, default=Path("template.yaml"))
    up.add_argument("--time-scale", type=float, default=1.0)
    up.add_argument("--run-dir", type=Path, help="logs go here (default: a new temp dir)")
    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    stop_requested = threading.Event()
    for signal_number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signal_number, lambda _number, _frame: stop_requested.set())
    try:
        if arguments.command == "up":
            up_options = UpOptions(
                arguments.provider_url, arguments.template, arguments.time_scale, arguments.run_dir
            )
            run_up(up_options, stop_requested)
        else:
            _serve(arguments, stop_requested)
    except (TemplateError, ChildStartError, MissingProviderKeyError) as cannot_start:
        print(f"infra.local: {cannot_start}", file=sys.stderr)
        return 2
    return 0


def _serve(arguments: argparse.Namespace, stop_requested: threading.Event) -> None:
    options = LocalOptions(
        template=arguments.template,
        api_port=arguments.api_port,
        api_tls_port=arguments.api_tls_port,
        aws_port=arguments.aws_port,
        control_port=arguments.control_port,
        provider_url=arguments.provider_url,
        provider_api_key=arguments.provider_api_key,
        time_scale=arguments.time_scale,
        parameter_overrides=_parameter_overrides(arguments.parameter_overrides),
        workers_per_function=arguments.workers_per_function,
        warm_start=arguments.warm_start,
        run_dir=arguments.run_dir,
        region=arguments.region,
        stack_name=arguments.stack_name,
        event_duplicate_rate=arguments.event_duplicate_rate,
    )
    with LocalStack(options) as stack:
        print(json.dumps(stack.ready.to_json()), flush=True)
        while not stop_requested.wait(_WAIT_SLICE_SECONDS):
            pass


if __name__ == "__main__":
    sys.exit(main())
