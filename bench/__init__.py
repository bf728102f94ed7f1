"""Benchmarks of pingback-guard: `python -m bench` (or `make bench`).

Every figure is a count or a ratio measured in one run, so a noisy machine moves it little.
"""

import sys
from pathlib import Path

# The Lambda code lives in functions/ (its CodeUri), importable as `pingback_guard` as on Lambda.
FUNCTIONS_DIR = Path(__file__).resolve().parent.parent / "functions"
if str(FUNCTIONS_DIR) not in sys.path:
    sys.path.insert(0, str(FUNCTIONS_DIR))
