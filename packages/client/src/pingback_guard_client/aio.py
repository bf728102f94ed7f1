"""The asyncio worker client: HTTP exchanges run in worker threads, waits are asyncio sleeps.

No extra dependency: each HTTP exchange is `asyncio.to_thread` around the signed requests session,
and wait() sleeps on the event loop between polls, so a thousand waiting tasks hold no threads.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Coroutine, Mapping
from types import TracebackType
from typing import Any, Concatenate

from botocore.credentials import Credentials

from pingback_guard_client.client import Client, RetryPolicy, task_document
from pingback_guard_client.kinds import KindCalls
from pingback_guard_client.models import Solution
from pingback_guard_client.waiting import Pacing, Waiting


def _in_thread[**P, R](
    method: Callable[Concatenate[Client, P], R],
) -> Callable[Concatenate[AsyncClient, P], Coroutine[Any, Any, R]]:
    """The Client method as an AsyncClient method, its HTTP exchange run in a worker thread."""

    async def in_thread(self: AsyncClient, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(method, self._client, *args, **kwargs)

    functools.update_wrapper(in_thread, method)
    return in_thread


class AsyncClient(KindCalls):
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
        push_url: str | None = None,
        pacing: Pacing | None = None,
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
                push_url=push_url,
                pacing=pacing,
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

    close = _in_thread(Client.close)
    submit = _in_thread(Client.submit)
    submit_paced = _in_thread(Client.submit_paced)
    submit_document = _in_thread(Client.submit_document)
    task = _in_thread(Client.task)
    report = _in_thread(Client.report)
    pingback_url = _in_thread(Client.pingback_url)
    register = _in_thread(Client.register)

    async def wait(
        self, task_id: str, timeout: float = 120.0, first_look_after: float | None = None
    ) -> Solution:
        """Client.wait() on the event loop: pushed results wake it, GETs run in a thread."""
        client = self._client
        waiting = Waiting(
            task_id,
            timeout,
            client.pacing,
            time.monotonic,
            now=time.time,
            first_look_after=first_look_after,
        )
        push = client.push
        if push is not None:
            await asyncio.to_thread(push.start)
            await asyncio.to_thread(push.watch, task_id)
        try:
            while True:
                connected = push is not None and push.connected
                pause = waiting.pause(connected)
                if push is not None and connected and pause > 0:
                    pushed = await push.wait_async(task_id, pause)
                    if pushed is not None and (solution := waiting.accept(pushed)) is not None:
                        return solution
                    if waiting.pause(push.connected) > 0:
                        continue
                elif pause > 0:
                    await asyncio.sleep(pause)
                if (solution := await asyncio.to_thread(waiting.look, client.task)) is not None:
                    return solution
        finally:
            if push is not None:
                push.unwatch(task_id)

    async def solve(
        self, method: str, sitekey: str, page_url: str, timeout: float = 180.0, **extras: Any
    ) -> Solution:
        return await self.solve_document(task_document(method, sitekey, page_url, extras), timeout)

    async def solve_document(self, document: Mapping[str, Any], timeout: float = 180.0) -> Solution:
        """Client.solve_document() awaited: what the per-kind calls (normal, geetest ...) use."""
        task_id, first_look_after = await self.submit_document(document)
        return await self.wait(task_id, timeout, first_look_after)
