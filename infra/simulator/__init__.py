"""A CaptchaAI (2captcha-compatible) provider simulator that only talks to this machine."""

import logging

from infra.simulator.config import ConfigError, Faults, SimulatorConfig, SolveTimeDistribution
from infra.simulator.simulator import Simulator

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = ["ConfigError", "Faults", "Simulator", "SimulatorConfig", "SolveTimeDistribution"]
