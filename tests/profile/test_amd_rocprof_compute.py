"""rocprof-compute workload folders: real vcopy / LDS workloads of rocprofiler-compute's test suite."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from kloop.device.arch import facts_for
from kloop.errors import BadInput
from kloop.profile.rocprof_compute import is_rocprof_compute_folder, read_rocprof_compute

GPUS = ["MI100", "MI200", "MI300A_A1", "MI300X_A1"]
VCOPY_BYTES = 1048576 * 8  # vcopy -n 1048576 copies doubles: 8 MiB read, 8 MiB written


def _root(shared_fixtures: Path) -> Path:
    return shared_fixtures / "amd" / "rocprof-compute"


def _rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.open()))


@pytest.mark.parametrize("gpu", GPUS)
def test_vcopy_reads_as_a_memory_kernel(shared_fixtures: Path, gpu: str) -> None:
    folder = _root(shared_fixtures) / "vcopy" / gpu
    sysinfo = _rows(folder / "sysinfo.csv")[0]
    profiles = read_rocprof_compute(folder)
    assert len(profiles) == len(_rows(folder / "pmc_perf.csv")) == 3
    for p in profiles:
        m = p.metrics
        assert (p.vendor, p.arch, p.normalized_name) == ("amd", sysinfo["gpu_arch"], "vecCopy")
        assert p.launch.block == (256, 1, 1) and p.launch.grid == (4096, 1, 1)
        # the reads are the algorithm's 8 MiB to within the L2's few stray lines
        assert m.dram_bytes_read == pytest.approx(VCOPY_BYTES, rel=0.02)
        assert 0.5 * VCOPY_BYTES < m.dram_bytes_write <= 1.02 * VCOPY_BYTES
        assert m.peak_dram_gbs == float(sysinfo["hbm_bw"])
        assert m.achieved_dram_gbs == pytest.approx((m.dram_bytes_read + m.dram_bytes_write) / p.duration_ns)
        assert m.dram_throughput_pct == pytest.approx(100 * m.achieved_dram_gbs / m.peak_dram_gbs)
        # plausible for a copy kernel: a sizeable share of HBM peak, never above it
        assert 25 < m.dram_throughput_pct < 100
        assert m.memory_throughput_pct >= m.dram_throughput_pct
        assert m.compute_throughput_pct < 10 < m.memory_throughput_pct
        assert m.theoretical_occupancy_pct == 100.0  # 8 VGPRs, no LDS, 4-wave workgroups
        assert 0 < m.achieved_occupancy_pct <= 100
        assert m.active_threads_per_warp == pytest.approx(64)
        assert m.compute_units == int(sysinfo["cu_per_gpu"])


def test_mi100_numbers_follow_from_the_counters(shared_fixtures: Path) -> None:
    """HBM bytes from TCC_EA request counts (64 B, 32 B for the _32B ones) over End - Start."""
    folder = _root(shared_fixtures) / "vcopy" / "MI100"
    row = _rows(folder / "pmc_perf.csv")[0]
    reads = 64 * (float(row["TCC_EA_RDREQ_sum"]) - float(row["TCC_EA_RDREQ_32B_sum"])) + 32 * float(
        row["TCC_EA_RDREQ_32B_sum"]
    )
    writes = 64 * float(row["TCC_EA_WRREQ_64B_sum"]) + 32 * (
        float(row["TCC_EA_WRREQ_sum"]) - float(row["TCC_EA_WRREQ_64B_sum"])
    )
    duration = int(row["End_Timestamp"]) - int(row["Start_Timestamp"])
    first = read_rocprof_compute(folder)[0]
    assert first.duration_ns == duration and first.raw["duration_source"] == "timestamps"
    assert first.metrics.achieved_dram_gbs == pytest.approx((reads + writes) / duration)
    hits, misses = float(row["TCC_HIT_sum"]), float(row["TCC_MISS_sum"])
    assert first.metrics.l2_hit_rate_pct == pytest.approx(100 * hits / (hits + misses))


def test_mi300_normalises_per_xcd_and_uses_128_byte_reads(shared_fixtures: Path) -> None:
    for gpu, xcds in (("MI300X_A1", 8), ("MI300A_A1", 6)):
        folder = _root(shared_fixtures) / "vcopy" / gpu
        row = _rows(folder / "pmc_perf.csv")[0]
        p = read_rocprof_compute(folder)[0]
        assert p.raw["device.xcds"] == xcds
        assert p.raw["derived.gpu_busy_cycles"] == pytest.approx(float(row["GRBM_GUI_ACTIVE"]) / xcds)
        bubble, rdreq = float(row["TCC_BUBBLE_sum"]), float(row["TCC_EA0_RDREQ_sum"])
        assert p.metrics.dram_bytes_read == pytest.approx(128 * bubble + 64 * (rdreq - bubble))


def test_lossy_timestamps_fall_back_to_sq_busy_cycles(shared_fixtures: Path) -> None:
    """MI300 workloads store timestamps as 8.1097E+14: the duration comes from SQ busy cycles per SE."""
    folder = _root(shared_fixtures) / "vcopy" / "MI300X_A1"
    row = _rows(folder / "pmc_perf.csv")[0]
    sysinfo = _rows(folder / "sysinfo.csv")[0]
    assert "E+" in row["Start_Timestamp"]
    p = read_rocprof_compute(folder)[0]
    expected = 1000 * float(row["SQ_BUSY_CYCLES"]) / int(sysinfo["se_per_gpu"]) / float(sysinfo["max_sclk"])
    assert p.duration_ns == pytest.approx(expected)
    assert p.raw["duration_source"] == "SQ_BUSY_CYCLES"


def test_sq_busy_fallback_tracks_real_timestamps(shared_fixtures: Path, tmp_path: Path) -> None:
    """Where timestamps are exact (MI100, MI200) the fallback lands within 25% on warm dispatches."""
    for gpu in ("MI100", "MI200"):
        src = _root(shared_fixtures) / "vcopy" / gpu
        exact = read_rocprof_compute(src)
        copy = tmp_path / gpu
        shutil.copytree(src, copy, ignore=shutil.ignore_patterns("perfmon", "*.pdf", "timestamps.csv"))
        rows = _rows(copy / "pmc_perf.csv")
        for row in rows:
            row["Start_Timestamp"] = row["End_Timestamp"] = "1.41155E+15"
        with (copy / "pmc_perf.csv").open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        fallback = read_rocprof_compute(copy)
        for real, estimate in zip(exact[1:], fallback[1:], strict=True):
            assert estimate.raw["duration_source"] == "SQ_BUSY_CYCLES"
            assert estimate.duration_ns == pytest.approx(real.duration_ns, rel=0.25)


def test_per_channel_columns_are_summed_when_sum_columns_are_absent(
    shared_fixtures: Path, tmp_path: Path
) -> None:
    src = _root(shared_fixtures) / "vcopy" / "MI200"
    copy = tmp_path / "MI200"
    shutil.copytree(src, copy, ignore=shutil.ignore_patterns("perfmon", "*.pdf"))
    rows = _rows(copy / "pmc_perf.csv")
    keep = [c for c in rows[0] if not c.startswith("TCC_") or "[" in c]
    with (copy / "pmc_perf.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=keep, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    hits = sum(float(rows[0][f"TCC_HIT[{i}]"]) for i in range(32))
    misses = sum(float(rows[0][f"TCC_MISS[{i}]"]) for i in range(32))
    p = read_rocprof_compute(copy)[0]
    assert p.metrics.l2_hit_rate_pct == pytest.approx(100 * hits / (hits + misses))
    assert p.metrics.dram_bytes_read == pytest.approx(
        64 * sum(float(rows[0][f"TCC_EA_RDREQ[{i}]"]) for i in range(32))
    )


def test_lds_bank_conflicts(shared_fixtures: Path, tmp_path: Path) -> None:
    src = _root(shared_fixtures) / "mem_levels_LDS" / "MI200"
    assert all(
        p.metrics.shared_bank_conflict_pct is None for p in read_rocprof_compute(src)
    )  # no LDS traffic
    copy = tmp_path / "lds"
    shutil.copytree(src, copy, ignore=shutil.ignore_patterns("perfmon", "*.pdf"))
    rows = _rows(copy / "pmc_perf.csv")
    rows[0]["SQ_LDS_IDX_ACTIVE"], rows[0]["SQ_LDS_BANK_CONFLICT"] = "4000", "1000"
    with (copy / "pmc_perf.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    m = read_rocprof_compute(copy)[0].metrics
    assert m.shared_bank_conflict_pct == pytest.approx(25.0)
    assert m.shared_wavefronts_per_request == pytest.approx(4000 / 3000)
    assert m.shared_bank_conflicts == 1000


def test_parent_folder_reads_every_gpu(shared_fixtures: Path) -> None:
    root = _root(shared_fixtures) / "vcopy"
    assert is_rocprof_compute_folder(root)
    profiles = read_rocprof_compute(root)
    assert {p.arch for p in profiles} == {"gfx908", "gfx90a", "gfx942"}
    assert len(profiles) == 12


def test_peaks_match_arch_facts_when_sysinfo_agrees(shared_fixtures: Path) -> None:
    p = read_rocprof_compute(_root(shared_fixtures) / "vcopy" / "MI100")[0]
    assert p.metrics.peak_dram_gbs == facts_for("gfx908").peak_dram_gbs


def test_missing_sysinfo_is_bad_input(shared_fixtures: Path, tmp_path: Path) -> None:
    folder = tmp_path / "w"
    folder.mkdir()
    shutil.copy(_root(shared_fixtures) / "vcopy" / "MI100" / "pmc_perf.csv", folder)
    with pytest.raises(BadInput, match="sysinfo.csv"):
        read_rocprof_compute(folder)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(BadInput, match="no pmc_perf.csv"):
        read_rocprof_compute(empty)


@pytest.mark.parametrize("gpu", GPUS)
def test_playbook_calls_vcopy_memory_bound(shared_fixtures: Path, gpu: str) -> None:
    """The accuracy target: the vendor-neutral playbook reads AMD vcopy as memory-bound."""
    from kloop.profile import analyze

    reports = analyze(read_rocprof_compute(_root(shared_fixtures) / "vcopy" / gpu))
    for report in reports:
        ids = [f.id for f in report.findings]
        assert "memory_bound" in ids, (gpu, ids)
        assert "compute_bound" not in ids


def test_vcopy_waves_wait_on_memory(shared_fixtures: Path) -> None:
    """SQ_WAIT_ANY (dependency wait) dominates the wave cycles of a copy: ncu's long scoreboard."""
    for gpu in GPUS:
        for p in read_rocprof_compute(_root(shared_fixtures) / "vcopy" / gpu):
            stalls = p.metrics.stall_breakdown
            assert sum(stalls.values()) <= 1.0 + 1e-9
            assert max(stalls, key=stalls.__getitem__) == "long_scoreboard", (gpu, stalls)
            assert p.metrics.warp_cycles_per_issue > 50
