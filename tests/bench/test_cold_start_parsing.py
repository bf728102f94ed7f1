"""Reading `python -X importtime` output (the cold-start timings themselves are never tested)."""

from __future__ import annotations

from bench.cold_start import (
    ImportRecord,
    init_label,
    offenders_beyond_baseline,
    parse_importtime,
    self_time_by_package,
)

IMPORTTIME = """\
import time: self [us] | cumulative | imported package
import time:       120 |        120 |   botocore.compat
import time:       300 |        420 | botocore
import time:        50 |         50 |     aws_xray_sdk.core.utils
import time:       900 |        950 |   aws_xray_sdk.core
some other line on stderr
import time:      5000 |       6370 | pingback_guard.handlers.callback
"""


def test_parse_reads_every_import_line_and_skips_the_rest() -> None:
    records = parse_importtime(IMPORTTIME)
    assert records[0] == ImportRecord("botocore.compat", 120, 120)
    assert [record.name for record in records] == [
        "botocore.compat",
        "botocore",
        "aws_xray_sdk.core.utils",
        "aws_xray_sdk.core",
        "pingback_guard.handlers.callback",
    ]


def test_self_time_is_summed_per_top_level_package_and_the_module_body_stands_alone() -> None:
    module = "pingback_guard.handlers.callback"
    totals = self_time_by_package(parse_importtime(IMPORTTIME), module)
    assert totals == {"botocore": 420, "aws_xray_sdk": 950, init_label(module): 5000}


def test_offenders_are_what_the_handler_adds_beyond_the_baseline() -> None:
    handler = {"botocore": 500, "aws_xray_sdk": 950, "body": 5000, "json": 10}
    baseline = {"botocore": 480, "json": 40}
    assert offenders_beyond_baseline(handler, baseline, top=3) == [
        ("body", 5000),
        ("aws_xray_sdk", 950),
        ("botocore", 20),
    ]
    assert offenders_beyond_baseline({"json": 10}, baseline) == []
