"""The CI-sized chaos run: a few hundred tasks through every injected failure, then the verdict
from the table, the queues and the simulator's truth: nothing lost, nothing stored twice, nothing
forged. The seed's in-memory design runs beside it and its losses are printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.chaos.report import write_report
from infra.chaos.runner import ChaosRun
from infra.chaos.scenario import CI

pytestmark = [pytest.mark.chaos, pytest.mark.local_stack, pytest.mark.timeout(600)]


def test_ci_chaos_run_loses_nothing_and_stores_every_result_once(tmp_path: Path) -> None:
    result = ChaosRun(CI, tmp_path, progress=lambda line: None).run()
    print("\n" + write_report(result, tmp_path))
    verdict = result.verdict
    asynchronous = result.async_invocations
    assert asynchronous is not None
    forwarded = asynchronous["forwarded"]["submitted"]
    # Every planned submit was answered. A provider task exists for each answer with a task id
    # (a 202, or a 503 when the provider took it and the table could not record it) and for each
    # one no worker learned the id of (a 5xx after the provider took it, the forwarded in.php
    # submits); a refused one (502 during the injected account error, a 503 whose provider check
    # failed) never became a task.
    answers, with_task_id = result.submits["answers"], result.submits["with_task_id"]
    assert sum(answers.values()) + sum(result.submits["errors"].values()) == CI.tasks
    assert with_task_id.get(202, 0) == answers.get(202, 0)
    assert set(with_task_id) <= {202, 503}
    unlearned = result.figures["unanswered_submits"]["tasks"]
    assert verdict.tasks == sum(with_task_id.values()) + unlearned
    assert unlearned >= forwarded
    assert verdict.lost == []
    assert verdict.wrong_code == []
    assert verdict.written_more_than_once == []
    assert verdict.still_pending == []
    assert verdict.unknown_in_table == []
    assert (verdict.dead_letter_left, verdict.parked) == (0, 0)
    assert verdict.forged_accepted == 0
    assert sum(result.forged["answers"].values()) > 0
    # Every kind was tried. A forged MAC or path never gets past the edge; another task's real
    # URL can get a 200 only while the table cannot judge it (kept in the DLQ, or provisionally
    # for an id whose registration is still queued), and then decides nothing (forged_accepted).
    for kind in ("other_tasks_url", "future_id", "forged_capability", "wrong_secret"):
        assert sum(result.forged["by_kind"][kind].values()) > 0, kind
    for kind in ("forged_capability", "wrong_secret"):
        assert result.forged["by_kind"][kind].get(200, 0) == 0, kind
    assert verdict.stored_solved == verdict.solved_at_provider
    paths = result.figures["stored_by_path"]
    assert paths.get("callback", 0) and paths.get("replay", 0) and paths.get("poll", 0)
    assert result.baseline is not None and result.baseline["lost"] > 0
    assert (tmp_path / "timeline.png").stat().st_size > 10_000
    at_worker = result.figures["token_age_at_worker"]
    assert at_worker["waited_solved"] >= 10 and at_worker["age_seconds"]["count"] > 0
    assert result.baseline["token_age_at_worker"]["waited_solved"] > 0
    pushed = result.figures["token_age_at_pushed_worker"]
    assert pushed["waited_solved"] >= 10 and pushed["by_push"] > 0
    events = result.result_events
    assert events is not None and events["passed"], events
    assert events["events_published"] > events["published_results"] >= events["final_results"]
    # Lambda retried the crashing consumer and the forwarder whose target was down, kept what
    # it gave up on in their failure queues (the poller's too), and the operator fed the
    # consumer's back to it: every result applied once (events["passed"] above).
    functions = asynchronous["functions"]
    for function in ("ResultConsumerFunction", "PingbackForwardFunction"):
        assert functions[function]["retried"] > 0, function
    kept = asynchronous["failure_queues"]
    for queue in (
        "ResultConsumerFailedQueue",
        "PingbackForwardFailedQueue",
        "PollerFailedEventsQueue",
    ):
        assert sum(kept[queue]["records"].values()) > 0, queue
    assert kept["ResultConsumerFailedQueue"]["redriven"] == sum(
        kept["ResultConsumerFailedQueue"]["records"].values()
    )
    alarms = result.alarms
    assert alarms is not None
    assert alarms.not_raised == [], alarms.raised
    assert alarms.still_in_alarm == []
    assert alarms.notifications >= 2 * len(alarms.raised)
    # The two provider accounts' thread plans: never more solving than a plan holds; while the
    # first refused every submit, the run went on through the second alone (too small for the
    # workload: ProviderThreadsBusyAlarm is among those raised above).
    accounts = result.provider_accounts
    for account in accounts["accounts"].values():
        assert 0 < account["peak_solving"] <= account["threads"], accounts
    assert accounts["while_first_down"]["1"] == 0 < accounts["while_first_down"]["2"], accounts
    assert "ProviderThreadsBusyAlarm" in [raised["alarm"] for raised in alarms.raised]
