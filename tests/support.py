"""template.yaml as the test suites read it."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from samtranslator.yaml_helper import yaml_parse

TEMPLATE_PATH = Path(__file__).resolve().parent.parent / "template.yaml"


@cache
def template() -> dict[str, Any]:
    document: dict[str, Any] = yaml_parse(TEMPLATE_PATH.read_text())
    return document
