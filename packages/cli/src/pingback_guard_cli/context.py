"""What every command gets: the AWS session and the stack it operates, found on first use."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from pingback_guard_cli.stack import Aws, Stack, find_stack


def api_url_option[F: Callable[..., Any]](command: F) -> F:
    return click.option(
        "--api-url",
        envvar="PINGBACK_GUARD_API_URL",
        help="The stack's HTTP API (default: its ApiUrl output; env PINGBACK_GUARD_API_URL)."
        " On the local stack, the HTTPS URL `make up` exports.",
    )(command)


@dataclass
class Context:
    aws: Aws
    stack_name: str
    _stack: Stack | None = None

    @property
    def stack(self) -> Stack:
        if self._stack is None:
            self._stack = find_stack(self.aws, self.stack_name)
        return self._stack
