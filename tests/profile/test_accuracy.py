"""Accuracy: on every H200 case the first finding is a labelled one, from every export format.

The labels (fixtures/ncu/h200/labels.json) say what each kernel was built to show. The rules know
nothing of kernel names; the same rules must also call AMD's vcopy memory-bound with its HBM
bandwidth and fraction of peak.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kloop.profile import analyze, read
from kloop.profile.schema import Bound, FindingId

from .conftest import CASES, FORMATS


@pytest.mark.parametrize("with_min_bytes", [False, True], ids=["plain", "min-bytes"])
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", CASES)
def test_first_finding_is_labelled(read_case, labels, case: str, fmt: str, with_min_bytes: bool) -> None:
    label = labels[case]
    min_bytes = label.get("min_bytes") if with_min_bytes else None
    report = analyze(read_case(case, fmt), min_bytes=min_bytes)[0]
    ids = [f.id.value for f in report.findings]
    assert ids and ids[0] in label["expect"], f"{case}/{fmt}: {ids}"
    assert report.next_edit.startswith(f"[{ids[0]}]")


@pytest.mark.parametrize("case", ["copy_vec4", "triton_softmax", "fma_bound", "torch_mm_bf16"])
def test_healthy_kernels_are_not_given_invented_problems(read_case, case: str) -> None:
    report = analyze(read_case(case, "report.ncu-rep"))[0]
    ids = [f.id for f in report.findings]
    assert FindingId.near_speed_of_light in ids[:2]
    assert all(f.severity.value in ("low", "info") or f.id.value.endswith("_bound") for f in report.findings[:2])


def test_min_bytes_exposes_redundant_traffic_only_where_it_exists(read_case, labels) -> None:
    strided = analyze(read_case("copy_strided", "report.ncu-rep"), min_bytes=labels["copy_strided"]["min_bytes"])[0]
    redundant = next(f for f in strided.findings if f.id is FindingId.redundant_dram_traffic)
    ratio = next(e for e in redundant.evidence if e.metric == "dram_traffic_ratio")
    assert ratio.value > 10  # 4 useful bytes per 32-byte sector, loads and stores
    vec = analyze(read_case("copy_vec4", "report.ncu-rep"), min_bytes=labels["copy_vec4"]["min_bytes"])[0]
    assert FindingId.redundant_dram_traffic not in [f.id for f in vec.findings]
    assert 0.8 < vec.sol_fractions["sol_bytes"] < 0.95  # 256 MiB in 64.5 us on a 4.8 TB/s part


def test_vendor_order_is_not_kloops_order(read_case) -> None:
    """ncu's biggest estimated speedup on the healthy copy is the generic 'pipes under-utilized'."""
    profile = read_case("copy_vec4", "report.ncu-rep")[0]
    top_vendor = max((r for r in profile.vendor_rules if r.est_speedup_pct), key=lambda r: r.est_speedup_pct)
    assert top_vendor.name == "HighPipeUtilization"
    assert analyze([profile])[0].findings[0].id is FindingId.memory_bound


@pytest.mark.parametrize("gpu", ["MI100", "MI200", "MI300A_A1", "MI300X_A1"])
def test_amd_vcopy_is_memory_bound_with_hbm_bandwidth(shared_fixtures: Path, gpu: str) -> None:
    pytest.importorskip("kloop.profile.rocprof_compute")
    reports = analyze(read(shared_fixtures / "amd" / "rocprof-compute" / "vcopy" / gpu))
    assert reports
    for report in reports:
        assert report.profile.vendor.value == "amd"
        assert report.bound is Bound.memory
        top = report.findings[0]
        assert top.id is FindingId.memory_bound
        cited = {e.metric: e.value for e in top.evidence}
        assert cited["achieved_dram_gbs"] > 100 and 0 < cited["dram_sol_pct"] <= 100
        assert cited["peak_dram_gbs_effective"] > cited["achieved_dram_gbs"]
        assert "GB/s" in report.diagnosis and "% of the" in report.diagnosis
