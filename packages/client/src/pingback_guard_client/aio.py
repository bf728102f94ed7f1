"""The asyncio worker client: HTTP exchanges run in worker threads, waits are asyncio sleeps.

No extra dependency: each HTTP exchange is `asyncio.to_thread` around the signed requests session,
and wait() sleeps on the event loop between polls, so a thousand waiting tasks hold no threads.
"""

from __future__ import annotations

import asyncio
import time
from types import TracebackType
from typing import Any

from botocore.credentials import Credentials

from pingback_guard_client.client import Client, RetryPolicy, Waiting
from pingback_guard_client.models import PingbackUrl, Solution, TaskView


class AsyncClient:
    """AsyncClient(api_url) like Client(api_url), or AsyncClient(client=an_existing_client)."""

    def __init__(
        self,
        api_url: str | None = None,
        region: str | None = None,
        *,
        credentials: Credentials | None = None,
        retry: RetryPolicy | None = None,
        poll_interval: float = 1.0,
        timeout: float = 30.0,
        client: Client | None = None,
    ) -> None:
        if client is None:
            if api_url is None:
                raise TypeError("AsyncClient needs api_url or client")
            client = Client(
                api_url,
                region,
                credentials=credentials,
                retry=retry,
                poll_interval=poll_interval,
                timeout=timeout,
            )
        self._client = client

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await asyncio.to_thread(self._client.close)

    async def submit(self, method: str, sitekey: str, page_url: str, **extras: Any) -> str:
        return await asyncio.to_thread(self._client.submit, method, sitekey, page_url, **extras)

    async def task(self, task_id: str) -> TaskView:
        return await asyncio.to_thread(self._client.task, task_id)

    async def wait(self, task_id: str, timeout: float = 120.0) -> Solution:
        waiting = Waiting(
            task_id, timeout, self._client.poll_interval, time.monotonic, now=time.time
        )
        while (solution := await asyncio.to_thread(waiting.look, self._client.task)) is None:
            await asyncio.sleep(waiting.pause())
        return solution

    async def solve(
        self, method: str, sitekey: str, page_url: str, timeout: float = 180.0, **extras: Any
    ) -> Solution:
        return await self.wait(await self.submit(method, sitekey, page_url, **extras), timeout)

    async def report(self, task_id: str, correct: bool) -> str:
        return await asyncio.to_thread(self._client.report, task_id, correct)

    async def pingback_url(self) -> PingbackUrl:
        return await asyncio.to_thread(self._client.pingback_url)

    async def register(
        self,
        task_id: str,
        pingback_url: str | PingbackUrl,
        method: str,
        sitekey: str,
        page_url: str,
        **extras: Any,
    ) -> str:
        return await asyncio.to_thread(
            self._client.register, task_id, pingback_url, method, sitekey, page_url, **extras
        )
