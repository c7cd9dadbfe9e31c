"""Reading real .ncu-rep files through the ncu_report package."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kloop.errors import BadInput
from kloop.profile.ncu_rep import read_ncu_rep
from kloop.profile.schema import StallReason, Vendor

from .conftest import CASES


@pytest.mark.parametrize("case", CASES)
def test_every_fixture_report_reads_into_one_complete_profile(read_case, case: str) -> None:
    profiles = read_case(case, "report.ncu-rep")
    assert len(profiles) == 1
    p = profiles[0]
    assert p.vendor is Vendor.nvidia and p.arch == "sm_90" and p.device == "NVIDIA H200"
    assert p.source_format == "ncu-rep"
    assert p.duration_ns and p.duration_ns > 1000
    assert p.launch.grid and p.launch.block and p.launch.registers_per_thread
    m = p.metrics
    for field in ("dram_throughput_pct", "compute_throughput_pct", "achieved_occupancy_pct", "theoretical_occupancy_pct", "compute_units"):
        assert getattr(m, field) is not None, field
    assert m.compute_units == 132
    assert abs(sum(m.stall_breakdown.values()) - 1.0) < 1e-6
    assert p.vendor_rules and all(r.message for r in p.vendor_rules)
    assert len(p.raw) > 1000


def test_copy_vec4_values_match_the_human_details_page(read_case) -> None:
    p = read_case("copy_vec4", "report.ncu-rep")[0]
    # details.txt: Duration 64.51 us, DRAM Throughput 79.41 %, Registers Per Thread 16, Waves Per SM 2
    assert p.duration_ns == pytest.approx(64512)
    assert p.metrics.dram_throughput_pct == pytest.approx(79.41, abs=0.01)
    assert p.launch.registers_per_thread == 16 and p.launch.waves_per_unit == pytest.approx(2.0)
    assert p.launch.grid == (2112, 1, 1) and p.launch.block == (256, 1, 1)
    assert p.metrics.global_load_efficiency_pct == pytest.approx(100.0)
    assert p.metrics.stall_breakdown[StallReason.long_scoreboard] > 0.9


def test_planted_problems_show_up_in_the_normalized_metrics(read_case) -> None:
    strided = read_case("copy_strided", "report.ncu-rep")[0].metrics
    assert strided.global_load_bytes_per_sector == pytest.approx(4.0)
    conflict = read_case("transpose_conflict", "report.ncu-rep")[0].metrics
    assert conflict.shared_bank_conflict_pct > 90
    regs = read_case("heavy_regs", "report.ncu-rep")[0]
    assert regs.launch.registers_per_thread == 242 and regs.metrics.occupancy_limit_registers == 1
    gemm = read_case("torch_mm_bf16", "report.ncu-rep")[0].metrics
    assert gemm.tensor_pipe_utilization_pct > 90 and gemm.top_pipe == "tensor"
    assert gemm.global_load_efficiency_pct is None  # wgmma/TMA kernel: no LSU global loads to judge


def test_rule_results_keep_ncu_estimated_speedups(read_case) -> None:
    rules = {r.name: r for r in read_case("transpose_conflict", "report.ncu-rep")[0].vendor_rules}
    assert rules["SharedMemoryConflicts"].type == "OPT"
    assert rules["SharedMemoryConflicts"].est_speedup_pct == pytest.approx(84.72, abs=0.01)


def test_hotspots_point_at_source_lines(read_case) -> None:
    hot = read_case("transpose_conflict", "report.ncu-rep")[0].hotspots
    assert hot and hot[0].location.endswith(".cu:32") and hot[0].instruction
    assert hot[0].top_stall is StallReason.mio_throttle
    assert 0 < hot[0].share <= 1 and sum(h.share for h in hot) <= 1.0 + 1e-9


def test_a_truncated_report_is_bad_input(h200: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.ncu-rep"
    broken.write_bytes((h200 / "copy_vec4" / "report.ncu-rep").read_bytes()[:4000])
    with pytest.raises(BadInput, match="broken.ncu-rep"):
        read_ncu_rep(broken)


def test_a_copied_report_reads_the_same(h200: Path, tmp_path: Path, read_case) -> None:
    copy = tmp_path / "renamed.bin"
    shutil.copy(h200 / "fma_bound" / "report.ncu-rep", copy)
    assert read_ncu_rep(copy)[0].metrics == read_case("fma_bound", "report.ncu-rep")[0].metrics
