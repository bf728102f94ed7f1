"""`python -m infra.chaos [--profile demo|ci|full] [--tasks N] [--seed S] [--out DIR]`."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from infra.chaos.report import write_report
from infra.chaos.runner import ChaosRun
from infra.chaos.scenario import PROFILES


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.chaos", description=__doc__)
    parser.add_argument("--profile", choices=sorted(PROFILES), default="demo")
    parser.add_argument("--tasks", type=int, help="number of tasks (default: the profile's)")
    parser.add_argument("--seed", type=int, help="random seed (default: the profile's)")
    parser.add_argument("--out", type=Path, default=Path("out/chaos"), help="report folder")
    parser.add_argument("--no-baseline", action="store_true", help="skip the seed's design")
    arguments = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    scenario = PROFILES[arguments.profile].with_size(arguments.tasks, arguments.seed)
    out_dir = arguments.out / scenario.name
    print(f"chaos run '{scenario.name}': {scenario.tasks} tasks; report in {out_dir}/", flush=True)
    result = ChaosRun(scenario, out_dir, with_baseline=not arguments.no_baseline).run()
    print("\n" + write_report(result, out_dir), flush=True)
    print(f"report: {out_dir}/report.json, {out_dir}/summary.txt, {out_dir}/timeline.png")
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
