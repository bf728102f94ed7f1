"""docs/scale.md cannot drift from the benchmark it reports (bench section 9) or from the
template whose ceiling it states: the model's figures, the defaults it names and the poller's
request ceiling are read here from the code, and every AWS quota it tables cites AWS's page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench import scale, scale_fleet, scale_model
from infra.project_template import function_memory_mb, parameter_default, project_template
from pingback_guard.logic import poller_fan_out as fan_out

ROOT = Path(__file__).resolve().parents[2]
SCALE_DOC = (ROOT / "docs" / "scale.md").read_text()
README = (ROOT / "README.md").read_text()


def thousands(value: float) -> str:
    return f"{value:,.0f}"


def test_the_models_figures_are_the_benchmarks() -> None:
    low, high = scale_model.RES_LATENCY_SECONDS
    assert f"`res.php` answers in {low:g}-{high:g} s" in SCALE_DOC
    assert f"kept {scale_model.RETENTION_SECONDS:.0f} s after they are solved" in SCALE_DOC
    rule = f"{scale_model.RES_PER_UPLOAD} x uploads + {scale_model.RES_ALLOWANCE}"
    assert rule in SCALE_DOC
    partition = (
        f"{thousands(scale_model.PARTITION_WRITE_UNITS)} write /"
        f" {thousands(scale_model.PARTITION_READ_UNITS)}\n  read units"
    )
    assert partition in SCALE_DOC
    new_table = (
        f"{thousands(scale_model.NEW_TABLE_WRITE_UNITS)} write /\n  "
        f"{thousands(scale_model.NEW_TABLE_READ_UNITS)} read units"
    )
    assert new_table in SCALE_DOC
    assert f"rows above {scale.SIMULATED_RATE} tasks a second run a slice" in SCALE_DOC


@pytest.mark.parametrize(
    "parameter",
    [
        "PollerRequestWorkers",
        "PollerMaxRequestsPerSweep",
        "DueShards",
        "PollerMemorySize",
        "PollerHelpers",
    ],
)
def test_the_defaults_it_states_are_the_templates(parameter: str) -> None:
    default = parameter_default(project_template(), parameter)
    assert f"`{parameter}` {default}" in SCALE_DOC


def test_the_ceiling_it_states_is_what_one_poller_may_ask() -> None:
    """At most PollerMaxRequestsPerSweep a sweep, one sweep every PollSweepIntervalSeconds."""
    template = project_template()
    per_sweep = int(parameter_default(template, "PollerMaxRequestsPerSweep"))
    interval = float(parameter_default(template, "PollSweepIntervalSeconds"))
    stated = re.search(r"checks about (\d+)-(\d+) requests a\s+second", SCALE_DOC)
    assert stated is not None and int(stated.group(2)) == per_sweep / interval


def test_the_route_throttles_it_names_are_the_templates() -> None:
    template = project_template()
    api = parameter_default(template, "ApiThrottlingRateLimit")
    callback = parameter_default(template, "CallbackThrottlingRateLimit")
    assert f"| {api} and {callback} a second |" in SCALE_DOC
    assert f"the route throttles at {api} and {callback} a second" in " ".join(SCALE_DOC.split())


def test_every_aws_quota_cites_its_aws_page() -> None:
    table = SCALE_DOC.split("## AWS quotas on the path")[1]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    quota_rows = [row for row in rows[1:] if "(this stack)" not in row]
    assert len(quota_rows) >= 10
    for row in quota_rows:
        assert re.search(r"\| https://docs\.aws\.amazon\.com/\S+ \|$", row), row


def test_the_readme_states_the_ceiling_at_the_defaults_and_how_to_raise_it() -> None:
    (paragraph,) = [p for p in README.split("\n\n") if "(docs/scale.md)" in p]
    text = " ".join(paragraph.split())
    template = project_template()
    api = parameter_default(template, "ApiThrottlingRateLimit")
    assert f"`ApiThrottlingRateLimit` ({api}) admits {api} submits a second" in text
    callback = parameter_default(template, "CallbackThrottlingRateLimit")
    assert f"`CallbackThrottlingRateLimit` ({callback})" in text
    memory = function_memory_mb(template, "PollerFunction")
    assert f"({memory} MB, `PollerMemorySize`)" in text
    helpers = parameter_default(template, "PollerHelpers")
    assert f"`PollerHelpers` ({helpers})" in text
    shards = parameter_default(template, "DueShards")
    assert f"`DueShards` {shards}, so at most {shards} invocations" in text
    for setting in ("PollerRequestWorkers", "PollerMaxRequestsPerSweep"):
        assert f"`{setting}`" in text


def test_the_fan_out_it_describes_is_the_products() -> None:
    text = " ".join(SCALE_DOC.split())
    assert fan_out.FAN_OUT_LOAD_SHARE == 0.5 and "more than half a sweep interval" in text
    assert f"at most once per group per {fan_out.HELPER_START_QUIET_SECONDS:.0f} s" in text
    assert f"its handler runs {scale_fleet.HELPER_START_SECONDS:g} s after the Invoke" in text
    assert f"more than {fan_out.BEHIND_AFTER_INTERVALS:g} sweep intervals" in text


def test_the_cpu_it_states_is_the_models() -> None:
    text = " ".join(SCALE_DOC.split())
    assert f"about {scale_model.REQUEST_CPU_SECONDS * 1000:.1f} ms of CPU" in text
    assert f"{scale_model.WRITE_CPU_SECONDS * 1000:.1f} ms on a result write" in text
    assert f"one vCPU at {fan_out.MB_PER_VCPU:,} MB" in text


def _table_rows(text: str, header_start: str) -> list[list[str]]:
    lines = text.split(header_start, 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def _reference_rows() -> dict[tuple[str, str, str], list[str]]:
    """bench/RESULTS.md's section 9 (the reference run), its push-worker rows keyed by rate,
    scenario and deployment."""
    results = (ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8")
    section = results.split("## 9. Scale", 1)[1]
    rows = _table_rows(section, "| tasks/s | pingbacks | deployed |")
    return {(row[0], row[1], row[2]): row for row in rows if row[3] == "push"}


def _key(rate: str, pingbacks: str, deployed: str) -> tuple[str, str, str]:
    """scale.md's wording of a row ("all lost 10 min", "`PollerHelpers` 0") as RESULTS.md's."""
    scenario = "a" if pingbacks.startswith("1%") else "b"
    if deployed.startswith("`"):
        deployed = "defaults, " + deployed.replace("`", "")
    return rate.replace(",", ""), scenario, deployed


def test_the_results_table_is_the_reference_run_s() -> None:
    """Every figure of docs/scale.md's results table is the reference run's (bench/RESULTS.md,
    written by the bench from its results): pollers, lost tasks, token age p95, res.php/s and
    what gives out first."""
    reference = _reference_rows()
    rows = _table_rows(SCALE_DOC, "| tasks/s | pingbacks | deployed | pollers at once")
    assert len(rows) == len(reference) >= 7
    for rate, pingbacks, deployed, pollers, lost, p95, res_per_s, gives in rows:
        ran = reference[_key(rate, pingbacks, deployed)]
        ran_tasks, ran_lost, ran_p95, ran_pollers = ran[5], ran[6], ran[7], ran[8]
        ran_lost = "0" if ran_lost == "0" else f"{int(ran_lost):,} of {int(ran_tasks):,}"
        ran_res = ran[9].split(" ", 1)[0]
        assert (pollers, lost, p95, res_per_s, gives) == (
            ran_pollers,
            ran_lost,
            ran_p95,
            ran_res,
            ran[14],
        ), (rate, pingbacks, deployed)
