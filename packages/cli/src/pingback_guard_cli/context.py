"""What every command gets: the AWS session and the stack it operates, found on first use."""

from __future__ import annotations

from dataclasses import dataclass

from pingback_guard_cli.stack import Aws, Stack, find_stack


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
