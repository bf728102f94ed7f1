"""What one poller invocation did: each count is also a metric the handler emits."""

from __future__ import annotations

from dataclasses import dataclass, field, fields


@dataclass
class SweepReport:
    """What one invocation did; each count is also a metric the handler emits."""

    sweeps: int = 0
    due: int = 0
    requests: int = 0
    recovered: int = 0
    failed: int = 0
    not_ready: int = 0
    deferred: int = 0
    expired: int = 0
    duplicates: int = 0
    conflicts: int = 0
    retryable_errors: int = 0
    # "Solved" answers the client could not read (asked again, alarmed: ProviderAnswerUnreadable).
    unreadable_answers: int = 0
    batch_refused: int = 0
    budget_exhausted: int = 0
    store_errors: int = 0
    lease_busy: int = 0
    helpers_started: int = 0
    helper_start_failed: int = 0
    plans_left_due: int = 0
    account_error: str | None = None
    stopped_early: bool = False
    oldest_due_seconds: float = 0.0
    """How long the longest-waiting due task a sweep found had been due (the run's: the most)."""
    recovery_delays: list[float] = field(default_factory=list)

    def add(self, other: SweepReport) -> None:
        for counter in fields(self):
            value = getattr(other, counter.name)
            if isinstance(value, int) and not isinstance(value, bool):
                setattr(self, counter.name, getattr(self, counter.name) + value)
        self.account_error = self.account_error or other.account_error
        self.stopped_early = self.stopped_early or other.stopped_early
        self.oldest_due_seconds = max(self.oldest_due_seconds, other.oldest_due_seconds)
        self.recovery_delays.extend(other.recovery_delays)

    def since(self, earlier: SweepReport) -> SweepReport:
        """What this report counts beyond ``earlier`` (a snapshot of the same run)."""
        later = SweepReport()
        for counter in fields(self):
            value = getattr(self, counter.name)
            if isinstance(value, int) and not isinstance(value, bool):
                setattr(later, counter.name, value - getattr(earlier, counter.name))
        if self.account_error != earlier.account_error:
            later.account_error = self.account_error
        later.stopped_early = self.stopped_early and not earlier.stopped_early
        later.recovery_delays = self.recovery_delays[len(earlier.recovery_delays) :]
        return later

    def snapshot(self) -> SweepReport:
        copy = SweepReport()
        copy.add(self)
        return copy
