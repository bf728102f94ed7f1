"""Sections 1, 2, 3 and 5 run every handler in one process against moto: each handler's
environment, as the template writes it, must resolve there (a submit's names the poller
function since the wake; the bench's sections 1 and 5 failed on it unnoticed)."""

from __future__ import annotations

from bench.in_process import in_process_stack
from bench.template_facts import HANDLER_FUNCTIONS


def test_every_handler_the_template_deploys_imports_in_the_in_process_stack() -> None:
    with in_process_stack("http://127.0.0.1:9", "bench-key-0123456789abcdef") as stack:
        assert set(stack.handlers) == set(HANDLER_FUNCTIONS)
