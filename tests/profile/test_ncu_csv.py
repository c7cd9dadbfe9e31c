"""ncu --csv exports: details and raw pages, every header and value variant real exports have."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from kloop.errors import BadInput
from kloop.profile.ncu_csv import parse_number, read_ncu_csv, unit_factor

from .conftest import CASES

PROGRAM_OUTPUT = (
    "==PROF== Connected to process 512 (/usr/bin/planted)\n"
    "copying 134217728 bytes\n"
    "==PROF== Profiling \"copy_vec4\" - 0: 0%....50%....100% - 40 passes\n"
    "done, checksum=0x1f2e\n"
    "==PROF== Disconnected from process 512\n"
)


def _rows(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text())))


def _write(rows: list[list[str]], path: Path, prefix: str = "") -> Path:
    buffer = io.StringIO()
    csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    path.write_text(prefix + buffer.getvalue())
    return path


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("fmt", ["details.csv", "details.base.csv", "raw.csv"])
def test_csv_exports_agree_with_the_report(read_case, case: str, fmt: str) -> None:
    rep = read_case(case, "report.ncu-rep")[0]
    got = read_case(case, fmt)
    assert len(got) == 1
    p = got[0]
    assert p.normalized_name == rep.normalized_name and p.arch == rep.arch
    assert p.duration_ns == pytest.approx(rep.duration_ns, rel=0.01)  # auto units round to 3-4 digits
    for field in ("dram_throughput_pct", "compute_throughput_pct", "achieved_occupancy_pct", "theoretical_occupancy_pct"):
        assert getattr(p.metrics, field) == pytest.approx(getattr(rep.metrics, field), abs=0.01), field
    assert p.metrics.achieved_dram_gbs == pytest.approx(rep.metrics.achieved_dram_gbs, rel=0.02)
    assert p.launch.grid == rep.launch.grid and p.launch.block == rep.launch.block
    assert p.launch.registers_per_thread == rep.launch.registers_per_thread


def test_details_page_fills_coalescing_and_conflicts_from_rule_messages(read_case) -> None:
    strided = read_case("copy_strided", "details.csv")[0].metrics
    assert strided.global_load_efficiency_pct == pytest.approx(12.0)  # "88% of the total ... sectors"
    assert strided.global_load_bytes_per_sector == pytest.approx(4.0)
    conflict = read_case("transpose_conflict", "details.csv")[0].metrics
    assert conflict.shared_bank_conflict_pct == pytest.approx(96.9)
    assert conflict.shared_wavefronts_per_request == pytest.approx(32.2)


def test_nvtx_columns_do_not_shift_fields(read_case) -> None:
    p = read_case("torch_mm_bf16", "details.csv")[0]
    assert p.name == "nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NNT"
    assert p.launch.grid == (2, 66, 1) and p.launch.block == (384, 1, 1)


def test_program_output_and_prof_lines_before_the_header_are_skipped(h200: Path, tmp_path: Path, read_case) -> None:
    for fmt in ("details.csv", "raw.csv"):
        noisy = tmp_path / f"noisy-{fmt}"
        noisy.write_text(PROGRAM_OUTPUT + (h200 / "copy_vec4" / fmt).read_text())
        assert read_ncu_csv(noisy)[0].metrics == read_case("copy_vec4", fmt)[0].metrics


def test_details_without_rule_columns(h200: Path, tmp_path: Path, read_case) -> None:
    rows = _rows(h200 / "copy_strided" / "details.csv")
    keep = rows[0].index("Metric Value") + 1
    plain = _write([r[:keep] for r in rows if r[rows[0].index("Metric Name")] or r is rows[0]], tmp_path / "norules.csv")
    p = read_ncu_csv(plain)[0]
    assert p.vendor_rules == []
    assert p.metrics.dram_throughput_pct == read_case("copy_strided", "details.csv")[0].metrics.dram_throughput_pct
    assert p.metrics.global_load_efficiency_pct is None  # only the rules stated it


def test_several_kernels_and_launches_give_one_profile_per_id(h200: Path, tmp_path: Path) -> None:
    first = _rows(h200 / "copy_vec4" / "details.csv")
    second = _rows(h200 / "copy_strided" / "details.csv")[1:]
    third = _rows(h200 / "copy_vec4" / "details.csv")[1:]
    for row in second:
        row[0] = "1"
    for row in third:
        row[0] = "2"
    path = _write(first + second + third, tmp_path / "three.csv")
    profiles = read_ncu_csv(path)
    assert [p.launch_id for p in profiles] == [0, 1, 2]
    assert [p.normalized_name for p in profiles] == ["copy_vec4", "copy_strided", "copy_vec4"]
    assert profiles[0].metrics == profiles[2].metrics != profiles[1].metrics


def test_raw_page_with_two_launches(h200: Path, tmp_path: Path) -> None:
    rows = _rows(h200 / "fma_bound" / "raw.csv")
    again = list(rows[2])
    again[0] = "1"
    profiles = read_ncu_csv(_write([*rows, again], tmp_path / "raw2.csv"))
    assert [p.launch_id for p in profiles] == [0, 1] and profiles[0].metrics == profiles[1].metrics


def test_na_values_leave_fields_empty_instead_of_zero(h200: Path, tmp_path: Path) -> None:
    rows = _rows(h200 / "copy_vec4" / "details.csv")
    name, value = rows[0].index("Metric Name"), rows[0].index("Metric Value")
    for row in rows[1:]:
        if row[name] == "DRAM Throughput":
            row[value] = "n/a"
    p = read_ncu_csv(_write(rows, tmp_path / "na.csv"))[0]
    assert p.metrics.dram_throughput_pct is None and p.metrics.compute_throughput_pct is not None


@pytest.mark.parametrize(
    ("unit", "factor"),
    [("ns", 1.0), ("us", 1e3), ("ms", 1e6), ("usecond", 1e3), ("byte", 1.0), ("Kbyte", 1e3), ("Mbyte", 1e6),
     ("Gbyte", 1e9), ("Tbyte/s", 1e12), ("Ghz", 1e9), ("Kbyte/block", 1e3), ("%", 1.0), ("cycle", 1.0), ("inst/cycle", 1.0)],
)  # fmt: skip
def test_unit_factors(unit: str, factor: float) -> None:
    assert unit_factor(unit) == factor


@pytest.mark.parametrize(("text", "value"), [("1,234", 1234.0), ("2,242,105", 2242105.0), ("0.13", 0.13), ("n/a", None), ("", None), ("(1, 2, 3)", None)])
def test_parse_number(text: str, value: float | None) -> None:
    assert parse_number(text) == value


def test_header_without_rows_and_garbage_are_bad_input(tmp_path: Path, h200: Path) -> None:
    header_only = tmp_path / "empty.csv"
    header_only.write_text((h200 / "copy_vec4" / "details.csv").read_text().splitlines()[0] + "\n")
    with pytest.raises(BadInput, match="no kernel rows"):
        read_ncu_csv(header_only)
    garbage = tmp_path / "garbage.csv"
    garbage.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(BadInput, match="no Nsight Compute CSV header"):
        read_ncu_csv(garbage)


def test_extra_columns_such_as_kernel_time_are_ignored(h200: Path, tmp_path: Path, read_case) -> None:
    rows = _rows(h200 / "heavy_regs" / "details.csv")
    at = rows[0].index("Host Name") + 1
    rows = [r[:at] + (["Kernel Time"] if i == 0 else ["2025-11-30 10:00:00.123"]) + r[at:] for i, r in enumerate(rows)]
    p = read_ncu_csv(_write(rows, tmp_path / "kernel-time.csv"))[0]
    assert p.metrics == read_case("heavy_regs", "details.csv")[0].metrics


def test_summary_page_reads_the_average_column(h200: Path, tmp_path: Path, read_case) -> None:
    """--print-summary per-kernel: Minimum/Maximum/Average instead of Metric Value."""
    rows = _rows(h200 / "copy_strided" / "details.csv")
    at = rows[0].index("Metric Value")
    summary = [r[:at] + (["Minimum", "Maximum", "Average"] if i == 0 else [r[at]] * 3) + r[at + 1:] for i, r in enumerate(rows)]
    p = read_ncu_csv(_write(summary, tmp_path / "summary.csv"))[0]
    assert p.metrics == read_case("copy_strided", "details.csv")[0].metrics


@pytest.mark.parametrize("case", ["copy_strided", "transpose_conflict", "heavy_regs", "torch_mm_bf16"])
def test_details_page_stalls_come_from_the_cpistall_rule(read_case, case: str) -> None:
    details = read_case(case, "details.csv")[0].metrics.stall_breakdown
    sampled = read_case(case, "report.ncu-rep")[0].metrics.stall_breakdown
    top = max(details, key=details.__getitem__)
    assert top == max(sampled, key=sampled.__getitem__)
    assert details[top] == pytest.approx(sampled[top], abs=0.06)
