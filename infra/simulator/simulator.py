"""The simulator as one object: start it, drive it over HTTP, read its truth, stop it."""

from __future__ import annotations

import logging
import secrets
import ssl
import threading
import time
from collections.abc import Mapping
from typing import Any, Final

from infra.service import Service
from infra.simulator.config import Faults, SimulatorConfig
from infra.simulator.dialects import dialect_named
from infra.simulator.faults import FaultControl
from infra.simulator.pingback import PingbackDispatcher
from infra.simulator.plan import RequestRate
from infra.simulator.provider import Provider
from infra.simulator.randomness import SharedRandom
from infra.simulator.server import SimulatorApp, SimulatorServer
from infra.simulator.stats import Counters
from infra.simulator.tasks import TaskRegistry

logger = logging.getLogger(__name__)

FIRST_TASK_ID_RANGE: Final = (70_000_000_000, 79_999_999_999)
SERVE_POLL_SECONDS: Final = 0.02
THREAD_STOP_SECONDS: Final = 2.0


class Simulator(Service):
    """A provider on 127.0.0.1 speaking CaptchaAI's dialect (or 2captcha's, by config), run on
    background threads.

    `start()` returns the base URL (in.php and res.php live under it); `stop()` ends the HTTP
    server and the pingback threads, waits a bounded time, and may be called any number of times.
    A simulator runs once: create a new one to run again. With `tls` it serves HTTPS.
    """

    def __init__(
        self, config: SimulatorConfig | None = None, *, tls: ssl.SSLContext | None = None
    ) -> None:
        self.config = config or SimulatorConfig()
        self._tls = tls
        self.seed = self.config.seed if self.config.seed is not None else secrets.randbits(32)
        self._random = SharedRandom(self.seed)
        self.api_key = self.config.api_key or self._random.hex_key()
        # Every account's key: the first is `api_key`, then `extra_accounts`' in their order.
        self.api_keys = [
            self.api_key,
            *(account.api_key or self._random.hex_key() for account in self.config.extra_accounts),
        ]
        self._faults = FaultControl(self.config.faults)
        self._counters = Counters()
        self._registry = TaskRegistry(first_id=self._random.integer(*FIRST_TASK_ID_RANGE))
        self._dispatcher = PingbackDispatcher(
            self.config, self._random, self._faults, self._registry, self._counters
        )
        provider = Provider(
            self.config,
            dialect=dialect_named(self.config.dialect),
            seed=self.seed,
            api_keys=self.api_keys,
            random=self._random,
            faults=self._faults,
            registry=self._registry,
            counters=self._counters,
            on_task_created=self._dispatcher.task_created,
        )
        self._stopping = threading.Event()
        # The rate is nominal: the stack's own pace is scaled by the same factor.
        rate = RequestRate(
            None
            if self.config.requests_per_second is None
            else self.config.requests_per_second * self.config.time_scale
        )
        self._provider = provider
        self._app = SimulatorApp(
            provider, self._faults, self._registry, self._counters, rate, pause=self._stopping.wait
        )
        self._lifecycle_lock = threading.Lock()
        self._started = False
        self._server: SimulatorServer | None = None
        self._serve_thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the simulator is not running")
        scheme = "http" if self._tls is None else "https"
        return f"{scheme}://{self.config.host}:{self._server.server_port}"

    @property
    def faults(self) -> Faults:
        return self._faults.current

    def start(self) -> str:
        with self._lifecycle_lock:
            if self._started or self._stopping.is_set():
                raise RuntimeError("a Simulator runs once; create a new one")
            self._started = True
            server = SimulatorServer((self.config.host, self.config.port), self._app, self._tls)
            self._dispatcher.start()
            self._serve_thread = threading.Thread(
                target=server.serve_forever,
                args=(SERVE_POLL_SECONDS,),
                name="simulator-http",
                daemon=True,
            )
            self._serve_thread.start()
            self._server = server
        logger.info("simulator listening on port %d, seed %d", server.server_port, self.seed)
        return self.base_url

    def stop(self) -> None:
        with self._lifecycle_lock:
            if self._stopping.is_set():
                return
            self._stopping.set()
            server, serve_thread = self._server, self._serve_thread
        if server is not None:
            server.shutdown()
            server.server_close()
        if serve_thread is not None:
            serve_thread.join(THREAD_STOP_SECONDS)
        self._dispatcher.stop()
        logger.info("simulator stopped")

    def update_faults(
        self, changes: Mapping[str, object] | None = None, **named_changes: object
    ) -> Faults:
        """Changes faults while running, e.g. `update_faults(pingback_drop_rate=0.2)`.

        Values are as in the JSON config; an invalid change raises ConfigError and changes nothing.
        """
        return self._faults.update({**(changes or {}), **named_changes})

    def tasks(self) -> list[dict[str, Any]]:
        """Every task with its fate and pingback attempts (the body of GET /_sim/tasks)."""
        return self._registry.to_json(time.time())

    def task_ids(self) -> list[str]:
        """The id of every task accepted so far (cheap: for callers that need no more)."""
        return self._registry.task_ids()

    def threads_info(self, account: int = 0) -> dict[str, object]:
        """An account's threads and those solving now, as res.php's threadsinfo answers them."""
        return dict(self._provider.thread_counts(account).body)

    def stats(self) -> dict[str, dict[str, int]]:
        """Request and pingback counters (the body of GET /_sim/stats)."""
        return self._counters.snapshot()
