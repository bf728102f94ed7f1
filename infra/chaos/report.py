"""report.json, a readable summary, and a timeline picture of outages vs arrivals by path."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from infra.chaos.alarm_check import expected_alarms
from infra.chaos.result_events import summary_line as result_events_line
from infra.chaos.runner import ChaosResult

PATH_COLOURS = {"callback": "tab:green", "replay": "tab:orange", "poll": "tab:blue"}
TABLE_CALLS_SHOWN = 10


def write_report(result: ChaosResult, out_dir: Path) -> str:
    document = report_document(result)
    (out_dir / "report.json").write_text(json.dumps(document, indent=2) + "\n")
    summary = summary_text(document)
    (out_dir / "summary.txt").write_text(summary + "\n")
    draw_timeline(result, out_dir / "timeline.png")
    return summary


def report_document(result: ChaosResult) -> dict[str, Any]:
    scenario = result.scenario
    return {
        "scenario": {
            "name": scenario.name,
            "tasks": scenario.tasks,
            "seed": scenario.seed,
            "gateway_down": scenario.gateway_down.to_json(),
            "table_down": scenario.table_down.to_json(),
            "dead_letter_down": scenario.dead_letter_down.to_json(),
            "crash_rate": scenario.crash_rate,
            "slow_store_rate": scenario.slow_store_rate,
            "late_pending_rate": scenario.late_pending_rate,
            "callback_timeout_seconds": scenario.callback_timeout_seconds,
            "retention_seconds": scenario.retention_seconds,
            "poll_every_seconds": scenario.poll_every_seconds,
            "simulator": scenario.simulator,
        },
        "duration_seconds": result.duration_seconds,
        "workload": result.workload,
        "verdict": result.verdict.to_json(),
        "figures": result.figures,
        "submits": result.submits,
        "forged_callbacks": result.forged,
        "baseline": result.baseline,
        "timeline": result.timeline.events,
        "result_events": result.result_events,
        "alarms": result.alarms.to_json() if result.alarms else None,
        "async_invocations": result.async_invocations,
        "provider_accounts": result.provider_accounts,
    }


def summary_text(document: dict[str, Any]) -> str:
    scenario, verdict, figures = document["scenario"], document["verdict"], document["figures"]
    paths = figures["stored_by_path"]
    delay = figures["recovery_delay_seconds"]
    token_age = figures["token_age_at_poll_recovery_seconds"]
    forged_sent = sum(document["forged_callbacks"]["answers"].values())
    lines = [
        f"pingback-guard chaos run '{scenario['name']}': {scenario['tasks']} tasks, seed"
        f" {scenario['seed']}, {document['duration_seconds']} s",
        f"  faults: gateway down {_window(scenario['gateway_down'])}, table unavailable"
        f" {_window(scenario['table_down'])}, DLQ unavailable"
        f" {_window(scenario['dead_letter_down'])}, {scenario['crash_rate']:.0%} handler crashes,"
        f" {scenario['slow_store_rate']:.0%} slow stores (provider times out),"
        " duplicated/reordered/dropped/delayed pingbacks, res.php 5xx",
        f"  provider: {verdict['solved_at_provider']} solved,"
        f" {verdict['failed_at_provider']} unsolvable",
        f"  stored by path: callback {paths.get('callback', 0)}, replay {paths.get('replay', 0)},"
        f" poll {paths.get('poll', 0)}  (failed tasks recorded: {verdict['stored_failed']})",
        f"  duplicates absorbed {figures['duplicates_absorbed']}, conflicts {figures['conflicts']},"
        f" 503 answers {figures['answered_503']}, to DLQ {figures['sent_to_dead_letter_queue']},"
        f" expired {len(verdict['expired'])}",
        f"  LOST {len(verdict['lost'])}, wrong code {len(verdict['wrong_code'])}, written more"
        f" than once {len(verdict['written_more_than_once'])}, still pending"
        f" {len(verdict['still_pending'])},"
        f" unknown ids stored {len(verdict['unknown_in_table'])}, DLQ left"
        f" {verdict['dead_letter_left']}, parked {verdict['parked']}",
        f"  forged callbacks: {forged_sent} answered ({_by_kind(document['forged_callbacks'])}),"
        f" {verdict['forged_accepted']} decided a task; attacker codes kept provisionally on"
        f" never-registered ids: {document['forged_callbacks'].get('kept_provisionally', 0)}",
        f"  recovery delay p50 {delay.get('p50', '-')} s, p95 {delay.get('p95', '-')} s;"
        f" token age at poll recovery p50 {token_age.get('p50', '-')} s,"
        f" p95 {token_age.get('p95', '-')} s (a reCAPTCHA token lives 120 s)",
        f"  res.php requests per task {figures['res_php_requests_per_task']}, table requests per"
        f" task {figures['table_requests_per_task']}, table writes per task"
        f" {figures['table_writes_per_task']}",
        "  table requests per task by call: "
        + ", ".join(
            f"{call} {per_task}"
            for call, per_task in list(figures.get("table_requests_per_task_by_call", {}).items())[
                :TABLE_CALLS_SHOWN
            ]
        ),
    ]
    lines.extend(_failure_lines(verdict.get("failures_explained", {})))
    lines.extend(_kind_lines(figures.get("by_kind", {})))
    lines.extend(_workload_lines(document))
    lines.extend(_account_lines(document))
    lines.append(
        "  token age when a waiting worker (the client) had it: "
        + worker_ages_text(figures.get("token_age_at_worker"))
    )
    lines.append(
        "  token age when a pushed worker (the client, WebSocket API) had it: "
        + pushed_ages_text(figures.get("token_age_at_pushed_worker"))
    )
    baseline = document.get("baseline")
    if baseline:
        share = baseline["lost"] / max(baseline["solved_at_provider"], 1)
        lines.append(
            f"  the seed's in-memory design, same scenario: LOST {baseline['lost']} of"
            f" {baseline['solved_at_provider']} solved ({share:.0%}), res.php requests per task"
            f" {baseline['res_php_requests_per_task']}; token age when its worker had it: "
            + worker_ages_text(baseline.get("token_age_at_worker"))
        )
    events = document.get("result_events")
    lines.append(result_events_line(events))
    lines.extend(_async_lines(document.get("async_invocations")))
    lines.extend(_alarm_lines(document.get("alarms")))
    alarms_passed = document.get("alarms") is None or document["alarms"]["passed"]
    passed = verdict["passed"] and bool(events and events["passed"]) and alarms_passed
    lines.append(f"  verdict: {'PASS' if passed else 'FAIL'}")
    return "\n".join(lines)


def _async_lines(report: dict[str, Any] | None) -> list[str]:
    """Lambda's asynchronous queue per function (attempts, retries, records kept) and what the
    operator did with each failure queue (infra.chaos.async_faults)."""
    if report is None:
        return []
    lines = ["  asynchronous invocations (Lambda's retries and on-failure destinations):"]
    for function, stats in report["functions"].items():
        lines.append(
            f"    {function}: {stats['accepted']} events, {stats['attempts']} attempts,"
            f" {stats['retried']} retried, {stats['throttled']} throttled,"
            f" {stats['retries_exhausted']} retries exhausted,"
            f" {stats['event_age_exceeded']} too old, {stats['sent_to_destination']} records"
            f" sent, {stats['destination_delivery_failures']} not delivered"
        )
    for queue, kept in report["failure_queues"].items():
        records = ", ".join(f"{n} {condition}" for condition, n in kept["records"].items())
        lines.append(
            f"    {queue}: {records or 'no record'}; redriven {kept['redriven']},"
            f" read and deleted {kept['deleted']}"
        )
    forwarded = report["forwarded"]
    lines.append(
        f"    forwarded tasks: {forwarded['submitted']} submitted with pingback=,"
        f" {forwarded['received_by_target']} reached the worker's receiver,"
        f" {forwarded['refused_while_down']} forwards refused while it was down"
    )
    return lines


def _alarm_lines(alarms: dict[str, Any] | None) -> list[str]:
    """Per injected fault the alarm that reported it, and when every alarm fired and cleared."""
    if alarms is None:
        return []
    lines = ["  alarms (seconds since start; fired-cleared):"]
    for raised in alarms["raised"]:
        fired = raised["fired_at"]
        when = f"fired at {fired:.0f} s" if fired is not None else "NOT RAISED"
        lines.append(
            f"    {raised['fault']} (from {raised['start']:.0f} s) -> {raised['alarm']}: {when}"
        )
    for alarm, spans in sorted(alarms["intervals"].items()):
        shown = ", ".join(
            f"{fired:.0f}-{'never' if cleared is None else f'{cleared:.0f}'}"
            for fired, cleared in spans
        )
        lines.append(f"    {alarm}: {shown}")
    if alarms["fired_in_clean_run"]:
        lines.append(f"    clean run, yet fired: {', '.join(alarms['fired_in_clean_run'])}")
    if alarms["still_in_alarm"]:
        lines.append(f"    still in ALARM at the end: {', '.join(alarms['still_in_alarm'])}")
    lines.append(f"    notifications received from the alarm topic: {alarms['notifications']}")
    return lines


def _workload_lines(document: dict[str, Any]) -> list[str]:
    """How long the workload took against its plan, the rates it sustained, and the tasks whose
    submit no worker heard back from."""
    workload = document.get("workload") or {}
    if not workload:
        return []
    rates = document["figures"].get("throughput", {})
    unanswered = document["figures"].get("unanswered_submits", {})
    in_table = ", ".join(f"{s} {n}" for s, n in unanswered.get("status_in_table", {}).items())
    return [
        f"  workload: submits planned over {workload['planned_submit_seconds']:.0f} s, took"
        f" {workload['submit_seconds']:.0f} s; verdict read {workload['drain_seconds']:.0f} s"
        f" after the last submit ended ({workload['drain_ended']})",
        f"  sustained: {rates.get('submits_per_second', '-')} submits/s,"
        f" {rates.get('callbacks_per_second', '-')} callbacks answered/s",
        f"  submits with no answer in time {workload['submits_unanswered']}; provider tasks no"
        f" worker learned the id of {unanswered.get('tasks', 0)}"
        + (f" (in the table: {in_table})" if in_table else ""),
    ]


def _account_lines(document: dict[str, Any]) -> list[str]:
    """Each provider account against its thread plan, and where submits went while the first
    refused them (infra.chaos.accounts)."""
    report = document.get("provider_accounts") or {}
    if not report:
        return []
    accounts = ", ".join(
        f"{name}: {a['tasks']} tasks, at most {a['peak_solving']} of {a['threads']} threads"
        for name, a in report["accounts"].items()
    )
    plan = report["plan"]
    lines = [
        f"  provider accounts: {accounts}; refused for busy threads {plan.get('busy_refused', 0)},"
        f" queued {plan.get('queued', 0)}; submits the stack refused busy (503, nothing sent)"
        f" and the worker sent again {document['submits'].get('sent_again', 0)}"
    ]
    during = report.get("while_first_down")
    if during:
        lines.append(
            "  while the first account refused submits, tasks by account: "
            + ", ".join(f"{name} {count}" for name, count in during.items())
        )
    return lines


def _window(window: dict[str, float]) -> str:
    return f"{window['start']:.0f}-{window['end']:.0f} s"


def draw_timeline(result: ChaosResult, picture: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (arrivals_axis, totals_axis, alarms_axis) = plt.subplots(
        3, 1, figsize=(11, 9), sharex=True, gridspec_kw={"height_ratios": [2, 2, 3]}
    )
    scenario = result.scenario
    for window, label, colour in (
        (scenario.gateway_down, "gateway down", "tab:red"),
        (scenario.table_down, "table unavailable", "tab:purple"),
        (scenario.dead_letter_down, "DLQ unavailable", "tab:brown"),
    ):
        for axis in (arrivals_axis, totals_axis):
            axis.axvspan(window.start, window.end, alpha=0.15, color=colour, label=label)
    rows = {via: index for index, via in enumerate(PATH_COLOURS)}
    for via, colour in PATH_COLOURS.items():
        times = [at for at, path in result.arrivals if path == via]
        arrivals_axis.scatter(times, [rows[via]] * len(times), s=8, color=colour, label=via)
        totals_axis.plot(times, range(1, len(times) + 1), color=colour, label=via)
    arrivals_axis.set_yticks(list(rows.values()), list(rows))
    arrivals_axis.set_title("when each result first reached the stack, by the path that stored it")
    totals_axis.set_ylabel("results stored (cumulative)")
    _draw_alarms(alarms_axis, result)
    alarms_axis.set_xlabel("seconds since the run started")
    handles, labels = totals_axis.get_legend_handles_labels()
    totals_axis.legend(handles, labels, loc="upper left", fontsize="small")
    figure.tight_layout()
    figure.savefig(picture, dpi=110)
    plt.close(figure)


def _by_kind(forged: dict[str, Any]) -> str:
    """Per kind of forgery, the HTTP answers it got, e.g. "other_tasks_url 403x12"."""
    return "; ".join(
        f"{kind} " + " ".join(f"{status}x{count}" for status, count in sorted(answers.items()))
        for kind, answers in forged.get("by_kind", {}).items()
        if answers
    )


def _draw_alarms(axis: Any, result: ChaosResult) -> None:
    """One row per alarm that fired, red from when it fired to when it cleared; the injected
    faults as grey bands."""
    for fault in expected_alarms(result.scenario):
        if fault.end is None:
            axis.axvline(fault.start, color="black", alpha=0.3, linewidth=1)
        else:
            axis.axvspan(fault.start, fault.end, alpha=0.08, color="black")
        axis.annotate(
            fault.fault,
            (fault.start, 1.0),
            xycoords=("data", "axes fraction"),
            fontsize="xx-small",
            rotation=90,
            va="top",
        )
    intervals = result.alarms.intervals if result.alarms else {}
    names = sorted(intervals)
    for row, alarm in enumerate(names):
        bars = [
            (fired, (result.duration_seconds if cleared is None else cleared) - fired)
            for fired, cleared in intervals[alarm]
            if fired is not None
        ]
        axis.broken_barh(bars, (row - 0.35, 0.7), color="tab:red")
    axis.set_yticks(range(len(names)), names, fontsize="x-small")
    axis.set_title("alarms in ALARM (local CloudWatch, evaluated on the run's time scale)")


def worker_ages_text(ages: dict[str, Any] | None) -> str:
    """The token's age from the provider's finishing time to the worker's hand, and how many of
    the waited tasks were unusable then (older than 120 s, or never in hand)."""
    if not ages or not ages["waited_solved"]:
        return "no task waited for"
    age = ages["age_seconds"]
    return (
        f"p50 {age.get('p50', '-')} s, p95 {age.get('p95', '-')} s over {ages['waited_solved']}"
        f" solved tasks; unusable {ages['unusable']}"
    )


def pushed_ages_text(ages: dict[str, Any] | None) -> str:
    """worker_ages_text, and how many tokens came pushed and how many by a fallback GET."""
    text = worker_ages_text(ages)
    if not ages or not ages["waited_solved"]:
        return text
    text += f"; by push {ages['by_push']}, by GET fallback {ages['by_get_fallback']}"
    after = ages.get("pushed_after_written_seconds") or {}
    if after.get("count"):
        pipe = ages["pipe_delay_seconds"]
        text += (
            f"; pushed after the result's write to the table p50 {after['p50']} s,"
            f" p95 {after['p95']} s (of which the local pipe, write to bus:"
            f" p50 {pipe['p50']} s, p95 {pipe['p95']} s)"
        )
    return text


def _failure_lines(explained: dict[str, dict[str, Any]]) -> list[str]:
    """Lost and wrong-code tasks grouped by what their items say (report.json lists each)."""
    groups = Counter(
        (
            detail["status"],
            detail["delivered_via"],
            "registered" if detail["registered"] else "never registered",
            detail["error"] or "",
            "holds " + str(detail["code_is"]).split(" ")[0] + " code",
        )
        for detail in explained.values()
    )
    return [
        f"    {count} x {', '.join(str(part) for part in group if part)}"
        for group, count in groups.most_common(6)
    ]


def _kind_lines(by_kind: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per kind of the mix (infra/chaos/kind_mix.py): lost, wrong, age in hand."""
    lines = ["  per kind (tasks: lost / wrong; answer age when a waiting worker had it p50/p95):"]
    for kind, row in by_kind.items():
        age = row.get("token_age_at_worker_seconds", {})
        lines.append(
            f"    {kind}: {row['tasks']}: {row['lost']} / {row['wrong']};"
            f" age {age.get('p50', '-')} / {age.get('p95', '-')} s (n={age.get('count', 0)})"
        )
    return lines if by_kind else []
