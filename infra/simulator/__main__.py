"""`python -m infra.simulator`: run the simulator in the foreground until SIGINT or SIGTERM.

When it is ready it prints one JSON line on stdout: {"base_url": ..., "api_key": ..., "api_keys":
[...]} (every account's key; the first is api_key).
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
from collections.abc import Sequence

from infra.simulator.config import ConfigError, SimulatorConfig, load_config_mapping
from infra.simulator.simulator import Simulator

STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m infra.simulator", description="A CaptchaAI (or 2captcha) simulator."
    )
    parser.add_argument("--host", help="IPv4 loopback address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to bind (default 0: any free port)")
    parser.add_argument("--time-scale", type=float, help="divide provider durations by this")
    parser.add_argument("--seed", type=int, help="seed of all randomness (default: random)")
    parser.add_argument("--config", help="config as inline JSON or the path of a JSON file")
    parser.add_argument(
        "--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"]
    )
    return parser.parse_args(argv)


def build_config(arguments: argparse.Namespace) -> SimulatorConfig:
    """The config file or JSON first, then the command-line options given explicitly."""
    values = load_config_mapping(arguments.config) if arguments.config else {}
    overrides = {
        "host": arguments.host,
        "port": arguments.port,
        "time_scale": arguments.time_scale,
        "seed": arguments.seed,
    }
    values.update({name: value for name, value in overrides.items() if value is not None})
    return SimulatorConfig.from_mapping(values)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("infra.simulator").setLevel(arguments.log_level)
    try:
        config = build_config(arguments)
    except ConfigError as error:
        print(f"infra.simulator: {error}", file=sys.stderr)
        return 2
    # Blocked before any thread starts, so every thread inherits the mask and only sigwait sees
    # the signal: no handler runs in the middle of the main thread's work.
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    simulator = Simulator(config)
    try:
        base_url = simulator.start()
        ready = {"base_url": base_url, "api_key": simulator.api_key, "api_keys": simulator.api_keys}
        print(json.dumps(ready), flush=True)
        signal.sigwait(STOP_SIGNALS)
    finally:
        simulator.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
