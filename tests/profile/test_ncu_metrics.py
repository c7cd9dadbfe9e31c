"""The ncu metric tables name metrics that exist (no typos silently reading nothing)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from kloop.profile.ncu_metrics import (
    DETAILS_METRICS,
    PIPE_METRICS,
    RAW_METRICS,
    STALL_RATIO_TEMPLATE,
    STALL_REASONS,
    STALL_SAMPLE_PREFIX,
    fill_from_rules,
)
from kloop.profile.schema import LaunchConfig, NormalizedMetrics

from .conftest import CASES


@pytest.fixture(scope="module")
def known_metrics(h200: Path, read_case) -> set[str]:
    with (h200 / "query-metrics-gh100.csv").open() as handle:
        chip = {row["Metric name"] for row in csv.DictReader(handle)}
    in_reports = set().union(*(read_case(case, "report.ncu-rep")[0].raw.keys() for case in CASES))
    return chip | in_reports


def test_every_raw_metric_name_exists_on_the_chip_or_in_a_report(known_metrics: set[str]) -> None:
    names = {n for spec in RAW_METRICS for n in spec.names} | set(PIPE_METRICS.values())
    names |= {STALL_SAMPLE_PREFIX + s for s in STALL_REASONS} | {STALL_RATIO_TEMPLATE.format(s) for s in STALL_REASONS}
    # a name matches when it was in a report, or its base metric (before the rollup suffix) is listed
    unknown = sorted(n for n in names if n not in known_metrics and n.split(".")[0] not in known_metrics)
    # ncu spells this stall reason two ways across versions; the report has one of them
    allowed = {STALL_SAMPLE_PREFIX + "no_instruction", STALL_RATIO_TEMPLATE.format("no_instructions"),
               STALL_SAMPLE_PREFIX + "gmma", STALL_RATIO_TEMPLATE.format("warpgroup_arrive")}  # fmt: skip
    assert set(unknown) <= allowed, unknown


def test_every_table_target_is_a_schema_field() -> None:
    metric_fields, launch_fields = set(NormalizedMetrics.model_fields), set(LaunchConfig.model_fields)
    targets = {spec.field for spec in RAW_METRICS} | {f.lstrip("!") for f in DETAILS_METRICS.values()}
    for target in targets:
        if target.startswith("launch."):
            assert target.removeprefix("launch.") in launch_fields, target
        else:
            assert target in metric_fields or target == "duration_ns", target


def test_details_labels_exist_in_the_real_details_page(h200: Path) -> None:
    with (h200 / "copy_strided" / "details.csv").open() as handle:
        seen = {(row["Section Name"], row["Metric Name"]) for row in csv.DictReader(handle)}
    assert set(DETAILS_METRICS) <= seen, set(DETAILS_METRICS) - seen


def test_rule_extracts_never_override_measured_values() -> None:
    measured = NormalizedMetrics(global_load_efficiency_pct=50.0)
    rules = [("UncoalescedGlobalAccess", "resulting in a total of 5 excessive sectors (88% of the total 6 sectors)")]
    assert fill_from_rules(measured, rules).global_load_efficiency_pct == 50.0
    assert fill_from_rules(NormalizedMetrics(), rules).global_load_efficiency_pct == pytest.approx(12.0)
