"""The functions' Tracer: Powertools' with the X-Ray SDK when the function is traced, else one
that records nothing and never imports the SDK.

Powertools' Tracer imports `aws_xray_sdk.core` to build its provider even when disabled
(`Tracer(disabled=True)` or POWERTOOLS_TRACE_DISABLED): it disables the SDK after importing it.
Given a provider, it imports none: so an untraced function gets a provider that records nothing,
and its cold start skips the SDK (bench section 4). Traced or not is the template's `Tracing`
parameter, read at cold start as TRACING_MODE (settings/env.py `traced`): the functions'
TracingConfig Mode, where Active samples requests itself and PassThrough only follows a caller's
sampled header, which an HTTP API never sends:
https://docs.aws.amazon.com/lambda/latest/dg/API_TracingConfig.html,
https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-vs-rest.html).
"""

from __future__ import annotations

import contextlib
import numbers
from collections.abc import AsyncGenerator, Generator, Sequence
from typing import Any

from aws_lambda_powertools import Tracer
from aws_lambda_powertools.tracing.base import BaseProvider, BaseSegment


class UnrecordedSegment(BaseSegment):
    """A subsegment nobody records."""

    def close(self, end_time: int | None = None) -> None:
        return None

    def add_subsegment(self, subsegment: Any) -> None:
        return None

    def remove_subsegment(self, subsegment: Any) -> None:
        return None

    def put_annotation(self, key: str, value: str | numbers.Number | bool) -> None:
        return None

    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None:
        return None

    def add_exception(self, exception: BaseException, stack: Any, remote: bool = False) -> None:
        return None


class UnrecordedProvider(BaseProvider):
    """A tracing provider that records nothing (an untraced function's)."""

    @contextlib.contextmanager
    def in_subsegment(self, name: Any = None, **kwargs: Any) -> Generator[BaseSegment, None, None]:
        yield UnrecordedSegment()

    @contextlib.asynccontextmanager
    async def in_subsegment_async(
        self, name: Any = None, **kwargs: Any
    ) -> AsyncGenerator[BaseSegment, None]:
        yield UnrecordedSegment()

    def put_annotation(self, key: str, value: str | numbers.Number | bool) -> None:
        return None

    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None:
        return None

    def patch(self, modules: Sequence[str]) -> None:
        return None

    def patch_all(self) -> None:
        return None


def function_tracer(traced: bool, patch_modules: Sequence[str]) -> Tracer:
    """Powertools' X-Ray Tracer patching ``patch_modules`` when the function is traced, else a
    Tracer that records nothing."""
    if traced:
        return Tracer(patch_modules=patch_modules)
    return Tracer(disabled=True, provider=UnrecordedProvider(), auto_patch=False)
