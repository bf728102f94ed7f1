"""The scale section's rows: what a row deploys, what it measured, and its verdict (what gives
out first, computed from the limits, never typed)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from bench.outcome import Headline, SectionOutcome, markdown_table, number
from bench.scale_model import RES_LATENCY_SECONDS, RETENTION_SECONDS, PartitionLoad

TARGET_RATE = 300
TOKEN_AGE_TARGET_SECONDS = 10.0
# Lambda: a function's requests in flight (Little's law: arrivals x duration). Submit waits on
# in.php (as long as res.php here); a pingback is one conditional write.
SUBMIT_SECONDS_EACH = sum(RES_LATENCY_SECONDS) / 2 + 0.05
LAMBDA_ACCOUNT_CONCURRENCY = 1000
POLLER_CPU_SATURATED = 0.8
WAYS_OF_WAITING = ("push", "paced", "every_second")
WAITING_NAMES = {"push": "push", "paced": "paced GET", "every_second": "1 s GET"}
# Each route of the HTTP API has its own token bucket (DefaultRouteSettings apply to every route
# alike): the submit route, GET /tasks/{id}, and the callback routes.
# https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-throttling.html
ROUTE_THROTTLES = {
    "submit": "ApiThrottlingRateLimit",
    "GET": "ApiThrottlingRateLimit",
    "callback": "CallbackThrottlingRateLimit",
}


@dataclass(frozen=True)
class Scenario:
    name: str
    lost: str
    submit_seconds: float
    lost_fraction: float
    outage_seconds: float
    """Every pingback of a task submitted in the first ``outage_seconds`` is lost."""

    def pingback_lost(self, offset: float, draw: float) -> bool:
        return offset < self.outage_seconds or draw < self.lost_fraction


@dataclass(frozen=True)
class Sizing:
    """What a row deploys: the poller's memory (its CPU), helpers and shards, and the API
    routes' throttles."""

    name: str
    poller_memory_mb: int
    task_route_rate: float
    callback_route_rate: float
    callback_route_burst: float
    poller_helpers: int
    due_shards: int
    provider_threads: tuple[int, ...] = ()
    """Each provider account's thread cap (at most that many tasks solving at once: CaptchaAI's
    `threadsinfo` reports it, and its SDK refuses a submit past it: captchaai 1.0.1,
    client.py); empty: no cap modelled."""

    def route_rate(self, route: str) -> float:
        return self.callback_route_rate if route == "callback" else self.task_route_rate


class TokenBucket:
    """A route's throttle as API Gateway applies it: a bucket of ``burst`` requests refilled at
    ``rate`` a second; a request with no token left gets 429."""

    def __init__(self, rate: float, burst: float, start: float) -> None:
        self._rate, self._burst = rate, max(1.0, burst)
        self._tokens, self._at = self._burst, start

    def take(self, now: float) -> bool:
        self._tokens = min(self._burst, self._tokens + max(0.0, now - self._at) * self._rate)
        self._at = max(self._at, now)
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True


@dataclass
class Row:
    rate: int
    scenario: str
    sizing: Sizing
    waiting: str
    sample: int
    tasks: int
    lost: int
    age_by_kind: dict[str, tuple[float | None, float | None]]
    token_age_p95: float | None
    res_requests_per_second: float
    res_limit_share: float
    table_requests_per_task: float
    hottest: PartitionLoad
    concurrency: dict[str, float]
    usd_per_million: float
    route_rates: dict[str, float]
    """Requests a second on each route: submits, the workers' GETs, pingbacks offered."""
    pingbacks_refused: int
    poller_cpu_busy: float
    """The share of the poller invocations' running time their CPU was busy (each its memory's
    share of a vCPU), while pingbacks were lost (the outage, or the 1%-lost run)."""
    pollers: int
    """The most poller invocations sweeping at once (the main holder and its helpers)."""
    poller_invocations: int = 0
    gets_per_task: float = 0.0
    provider_threads_needed: int = 0
    """The most tasks solving at once at the provider (submitted, not yet solved)."""

    @property
    def route_shares(self) -> dict[str, float]:
        return {
            route: rate / self.sizing.route_rate(route) for route, rate in self.route_rates.items()
        }

    @property
    def gives_out(self) -> list[str]:
        """What passed its limit, the worst first; a row that misses always names one."""
        shares = {
            f"res.php requests ({self.res_limit_share:.0%} of the key's limit)": (
                self.res_limit_share
            ),
            f"DynamoDB {self.hottest.partition} ({self.hottest.share:.0%} of its"
            f" {self.hottest.limit:.0f} units/s)": self.hottest.share,
            f"Lambda concurrency ({self.concurrency['submit']:.0f} submits in flight of the"
            f" account's default {LAMBDA_ACCOUNT_CONCURRENCY})": self.concurrency["submit"]
            / LAMBDA_ACCOUNT_CONCURRENCY,
        }
        shares |= {
            f"route throttle {ROUTE_THROTTLES[route]} ({route}: {share:.0%} of it)": share
            for route, share in self.route_shares.items()
        }
        threads = self.sizing.provider_threads
        if threads:
            shares[
                f"provider threads ({self.provider_threads_needed} solving at once,"
                f" {len(threads)} account(s) with {sum(threads)})"
            ] = self.provider_threads_needed / sum(threads)
        passed = [name for name, share in sorted(shares.items(), key=lambda s: -s[1]) if share > 1]
        if self.pingbacks_refused:
            passed.append(f"{self.pingbacks_refused} pingbacks refused (429), left to the nets")
        if self.poller_cpu_busy > POLLER_CPU_SATURATED:
            passed.append(
                f"the poller's CPU at {self.sizing.poller_memory_mb} MB"
                f" ({self.poller_cpu_busy:.0%} busy, {self.pollers} invocations)"
            )
        if self.lost:
            passed.append(
                f"the pollers ({self.pollers} at most, DueShards {self.sizing.due_shards}) fell"
                f" behind: the backlog outgrew the provider's {RETENTION_SECONDS:.0f} s retention"
            )
        if not passed and not self.token_fresh:
            passed.append(
                f"the pollers' pace ({self.pollers} at most, DueShards {self.sizing.due_shards}):"
                f" token p95 {_seconds(self.token_age_p95)}"
            )
        return passed

    @property
    def token_fresh(self) -> bool:
        p95 = self.token_age_p95
        return p95 is not None and p95 < TOKEN_AGE_TARGET_SECONDS

    @property
    def met(self) -> bool:
        return not self.gives_out and self.token_fresh


def scale_outcome(rows: Sequence[Row]) -> SectionOutcome:
    targets = [
        row
        for row in rows
        if row.rate == TARGET_RATE and row.scenario == "b" and row.waiting == "push"
    ]
    headlines = [
        Headline(
            f"{TARGET_RATE} tasks/s, every pingback lost 10 min, {row.sizing.name}",
            _judged(row),
            f"0 lost, token p95 < {TOKEN_AGE_TARGET_SECONDS:.0f} s (push workers)",
            row.lost == 0 and row.token_fresh,
        )
        for row in targets
    ]
    table = markdown_table(
        [
            "tasks/s",
            "pingbacks",
            "deployed",
            "workers wait by",
            "sampled",
            "tasks",
            "lost",
            "token age p95",
            "pollers at once (CPU busy)",
            "res.php/s (share of limit)",
            "routes/s: submit, GET, callback",
            "hottest partition",
            "USD / M tasks",
            "verdict",
            "gives out first",
        ],
        [
            [
                row.rate,
                row.scenario,
                row.sizing.name,
                WAITING_NAMES[row.waiting],
                f"1/{row.sample}" if row.sample > 1 else "no",
                row.tasks,
                row.lost,
                _seconds(row.token_age_p95),
                f"{row.pollers} ({row.poller_cpu_busy:.0%})",
                f"{row.res_requests_per_second:.1f} ({row.res_limit_share:.0%})",
                ", ".join(f"{value:.0f}" for value in row.route_rates.values()),
                f"{row.hottest.partition} {row.hottest.units_per_second:.0f}"
                f"/{row.hottest.limit:.0f}",
                number(row.usd_per_million, 1),
                "met" if row.met else "MISSED",
                "; ".join(row.gives_out) or "-",
            ]
            for row in rows
        ],
    )
    return SectionOutcome(
        key="scale",
        title="9. Scale: the nets at 10, 100, 300 and 1,000 tasks a second",
        headlines=headlines,
        details=[
            "Scenarios: (a) 1% of pingbacks lost for 300 s; (b) every pingback lost for 10 min,"
            " then restored for 2 min.",
            "",
            *table,
            "",
            "Answer age at the table (stored minus solved), p50/p95 per kind:",
            "",
            *_ages(rows),
        ],
        data={"rows": [_data(row) for row in rows]},
    )


def _ages(rows: Sequence[Row]) -> list[str]:
    simulated = [row for row in rows if row.waiting == WAYS_OF_WAITING[0]]
    kinds = sorted({kind for row in simulated for kind in row.age_by_kind})
    return markdown_table(
        ["tasks/s", "pingbacks", "deployed", *kinds],
        [
            [
                row.rate,
                row.scenario,
                row.sizing.name,
                *(
                    "/".join(_seconds(v) for v in row.age_by_kind.get(kind, (None, None)))
                    for kind in kinds
                ),
            ]
            for row in simulated
        ],
    )


def _data(row: Row) -> dict[str, object]:
    return {
        **dataclasses.asdict(row),
        "hottest": dataclasses.asdict(row.hottest),
        "sizing": dataclasses.asdict(row.sizing),
        "route_shares": row.route_shares,
        "met": row.met,
        "gives_out": row.gives_out,
    }


def _judged(row: Row) -> str:
    figures = f"{row.lost} lost, p95 {_seconds(row.token_age_p95)}"
    return f"{figures}; gives out: {row.gives_out[0]}" if row.gives_out else figures


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"
