"""Two kinds of kernel the first playbook misdiagnosed (issue #14), on pages derived from real reports.

No real report of either kind exists yet (bench/profile_probes/ has the kernels, ready for a GPU),
so each case starts from a real H200 raw page and sets only the counters that kernel kind moves,
to the values such a kernel shows. The unmodified real pages are the false-positive control.

- A per-thread array indexed at run time lives in local memory with no ptxas spill: it used to read
  as generic memory_bound + long_scoreboard_stall, with no local-memory finding.
- A matrix product without on-chip reuse (L1/LSU saturated, DRAM idle, FP32 busy, tensor pipe idle):
  it used to read as uncoalesced_global_access (its broadcast loads) + memory_bound.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from kloop.profile import analyze, read
from kloop.profile.schema import FindingId

from .conftest import CASES, FORMATS


def _derived_page(source: Path, dest: Path, values: dict[str, float]) -> Path:
    """Copy a real ncu raw page, setting the named metrics (all must exist in the page)."""
    rows = list(csv.reader(source.open(newline="")))
    header = rows[0]
    missing = [name for name in values if name not in header]
    assert not missing, f"{source}: no column {missing}"
    for row in rows[2:]:  # row 1 holds the units
        for name, value in values.items():
            row[header.index(name)] = f"{value:.6f}"
    with dest.open("w", newline="") as out:
        csv.writer(out, quoting=csv.QUOTE_ALL).writerows(rows)
    return dest


def _instructions(page: Path) -> float:
    rows = list(csv.reader(page.open(newline="")))
    return float(rows[2][rows[0].index("smsp__inst_executed.sum")].replace(",", ""))


def _local_array(h200: Path, tmp_path: Path, *, spill_share: float) -> list:
    source = h200 / "copy_vec4" / "raw.csv"
    inst = _instructions(source)
    local = 0.08 * inst  # 8 % of instructions are LDL/STL, as a 32-entry array indexed by a loaded value gives
    page = _derived_page(source, tmp_path / "raw.csv", {
        "sass__inst_executed_local_loads": 0.6 * local,
        "sass__inst_executed_local_stores": 0.4 * local,
        "sass__inst_executed_register_spilling": spill_share * local,
        "derived__local_spilling_requests": spill_share * local,
        "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum": 0.6 * local * 4,
        "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum": 0.4 * local * 4,
    })
    return read(page)


def _naive_gemm(h200: Path, tmp_path: Path, *, shared_pct: float) -> list:
    page = _derived_page(h200 / "fma_bound" / "raw.csv", tmp_path / "raw.csv", {
        "l1tex__throughput.avg.pct_of_peak_sustained_elapsed": 93.0,
        "l1tex__t_sector_hit_rate.pct": 96.0,
        "lts__t_sector_hit_rate.pct": 88.0,
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": 6.0,
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": 93.0,
        "sm__throughput.avg.pct_of_peak_sustained_elapsed": 55.0,
        "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed": 44.0,
        "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_elapsed": 44.0,
        "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active": 46.0,
        "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active": 12.0,
        "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active": 91.0,
        "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed": shared_pct,
        # A[row, k] is the same word for every lane of a warp: 4 useful bytes of a 32-byte sector
        "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio": 4.0,
    })
    return read(page)


def _ids(profiles: list) -> list[FindingId]:
    return [f.id for f in analyze(profiles)[0].findings]


def test_run_time_indexed_local_array_is_named_first(h200: Path, tmp_path: Path) -> None:
    report = analyze(_local_array(h200, tmp_path, spill_share=0.0))[0]
    first = report.findings[0]
    assert first.id is FindingId.register_spill, [f.id.value for f in report.findings]
    assert "run-time" in first.mechanism and "local memory" in first.mechanism
    cited = {e.metric: e.value for e in first.evidence}
    assert cited["local_per_instruction"] == pytest.approx(0.08, rel=1e-3)
    assert report.next_edit.startswith("[register_spill]")


def test_genuine_spills_keep_the_spill_explanation(h200: Path, tmp_path: Path) -> None:
    first = analyze(_local_array(h200, tmp_path, spill_share=0.9))[0].findings[0]
    assert first.id is FindingId.register_spill
    assert "spilled" in first.mechanism  # the ptxas-spill rule, not the local-array one


def test_matrix_product_without_reuse_is_named_ahead_of_its_symptoms(h200: Path, tmp_path: Path) -> None:
    ids = _ids(_naive_gemm(h200, tmp_path, shared_pct=0.0))
    assert ids[:2] == [FindingId.poor_data_reuse, FindingId.tensor_cores_unused], ids
    assert FindingId.uncoalesced_global_access in ids  # still reported, as the symptom it is
    assert ids.index(FindingId.uncoalesced_global_access) > 1


def test_a_tiled_product_is_not_called_reuse_free(h200: Path, tmp_path: Path) -> None:
    ids = _ids(_naive_gemm(h200, tmp_path, shared_pct=45.0))
    assert FindingId.poor_data_reuse not in ids[:2], ids


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", CASES)
def test_real_reports_get_neither_new_diagnosis(read_case, case: str, fmt: str) -> None:
    findings = analyze(read_case(case, fmt))[0].findings
    mechanisms = " ".join(f.mechanism for f in findings)
    assert "run-time" not in mechanisms, f"{case}/{fmt}: local-array finding on a kernel without one"
    assert "reloaded by every thread" not in mechanisms, f"{case}/{fmt}: reuse-free product finding"
