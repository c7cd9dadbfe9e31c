"""rocprofv3 CSV readers on the rocprofiler-sdk documentation samples and header variants derived from them."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from kloop.errors import BadInput
from kloop.profile.rocprofv3 import is_rocprofv3_csv, read_rocprofv3_csv

AGENT_INFO_HEADER = [
    "Node_Id", "Logical_Node_Id", "Agent_Type", "Simd_Count", "Max_Waves_Per_Simd", "Lds_Size_In_Kb",
    "Wave_Front_Size", "Num_Xcc", "Cu_Count", "Max_Engine_Clk_Fcompute", "Name", "Product_Name",
]  # fmt: skip


def _fixture(shared_fixtures: Path, name: str) -> Path:
    return shared_fixtures / "amd" / "rocprofv3" / name


def _rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def _write(path: Path, header: list[str], rows: list[dict[str, object]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header, quoting=csv.QUOTE_NONNUMERIC)
        writer.writeheader()
        writer.writerows(rows)
    return path


def _renamed(src: Path, dst: Path, renames: dict[str, str]) -> Path:
    header, rows = _rows(src)
    new_header = [renames.get(c, c) for c in header]
    return _write(dst, new_header, [{renames.get(k, k): v for k, v in row.items()} for row in rows])


def test_counter_collection_long_format(shared_fixtures: Path) -> None:
    path = _fixture(shared_fixtures, "counter_collection.csv")
    _, rows = _rows(path)
    profiles = read_rocprofv3_csv(path)
    assert [p.launch_id for p in profiles] == [int(r["Dispatch_Id"]) for r in rows]
    assert [p.normalized_name for p in profiles] == [
        "addition_kernel",
        "subtract_kernel",
        "multiply_kernel",
        "divide_kernel",
    ]
    for p, row in zip(profiles, rows, strict=True):
        assert p.raw["SQ_WAVES"] == float(row["Counter_Value"])
        assert p.duration_ns == int(row["End_Timestamp"]) - int(row["Start_Timestamp"])
        assert p.launch.grid == (int(row["Grid_Size"]) // int(row["Workgroup_Size"]), 1, 1)
        assert p.launch.registers_per_thread == int(row["VGPR_Count"])
        assert p.source_format == "rocprofv3-csv" and p.vendor == "amd"


def test_kernel_trace_legacy_and_current_headers_agree(shared_fixtures: Path, tmp_path: Path) -> None:
    """rocprofiler-sdk < 1.1 wrote Group/Private_Segment_Size; later LDS_Block_Size/Scratch_Size."""
    legacy = _fixture(shared_fixtures, "kernel_trace.csv")
    current = _renamed(legacy, tmp_path / "kernel_trace.csv",
                       {"Group_Segment_Size": "LDS_Block_Size", "Private_Segment_Size": "Scratch_Size"})  # fmt: skip
    old, new = read_rocprofv3_csv(legacy), read_rocprofv3_csv(current)
    assert len(old) == len(new) == 8
    for a, b in zip(old, new, strict=True):
        assert a.launch == b.launch and a.duration_ns == b.duration_ns
    assert old[0].launch.grid == (1024 // 64, 1024, 1)  # grid sizes are work-items per dimension
    assert old[0].launch.shared_mem_static_bytes == 0


@pytest.mark.parametrize(
    "renames",
    [
        {"Kernel_Name": "Kernel-Name", "Dispatch_Id": "Dispatch-Id"},
        {
            "Kernel_Name": "KernelName",
            "Dispatch_Id": "Index",
            "Start_Timestamp": "BeginNs",
            "End_Timestamp": "EndNs",
        },
        {
            "Kernel_Name": "kernel_name",
            "Dispatch_Id": "Dispatch_ID",
            "Grid_Size": "grd",
            "Workgroup_Size": "wgr",
        },
    ],
)
def test_header_spellings(shared_fixtures: Path, tmp_path: Path, renames: dict[str, str]) -> None:
    src = _fixture(shared_fixtures, "counter_collection.csv")
    variant = _renamed(src, tmp_path / "variant.csv", renames)
    assert is_rocprofv3_csv(variant.read_text())
    expected = read_rocprofv3_csv(src)
    got = read_rocprofv3_csv(variant)
    assert [(p.normalized_name, p.launch_id, p.duration_ns, p.launch, p.raw["SQ_WAVES"]) for p in got] == [
        (p.normalized_name, p.launch_id, p.duration_ns, p.launch, p.raw["SQ_WAVES"]) for p in expected
    ]


def test_wide_counter_columns(shared_fixtures: Path, tmp_path: Path) -> None:
    """rocprofv2 / rocprof-compute style: one column per counter instead of Counter_Name rows."""
    _, rows = _rows(_fixture(shared_fixtures, "counter_collection.csv"))
    header = ["Dispatch_ID", "GPU_ID", "Grid_Size", "Workgroup_Size", "LDS_Per_Workgroup", "Scratch_Per_Workitem",
              "Arch_VGPR", "Accum_VGPR", "SGPR", "Wave_Size", "Kernel_Name", "Start_Timestamp", "End_Timestamp",
              "Correlation_ID", "SQ_WAVES"]  # fmt: skip
    wide = [
        {"Dispatch_ID": r["Dispatch_Id"], "GPU_ID": 2, "Grid_Size": r["Grid_Size"], "Workgroup_Size": r["Workgroup_Size"],
         "LDS_Per_Workgroup": r["LDS_Block_Size"], "Scratch_Per_Workitem": r["Scratch_Size"], "Arch_VGPR": r["VGPR_Count"],
         "Accum_VGPR": r["Accum_VGPR_Count"], "SGPR": r["SGPR_Count"], "Wave_Size": 64, "Kernel_Name": r["Kernel_Name"],
         "Start_Timestamp": r["Start_Timestamp"], "End_Timestamp": r["End_Timestamp"],
         "Correlation_ID": r["Correlation_Id"], "SQ_WAVES": r["Counter_Value"]}
        for r in rows
    ]  # fmt: skip
    profiles = read_rocprofv3_csv(_write(tmp_path / "wide.csv", header, wide))
    assert [p.raw["SQ_WAVES"] for p in profiles] == [float(r["Counter_Value"]) for r in rows]
    assert "GPU_ID" not in profiles[0].raw and "Correlation_ID" not in profiles[0].raw
    assert profiles[3].launch.registers_per_thread == 12


def test_fetch_and_write_size_are_kilobytes_and_agent_info_gives_the_gpu(
    shared_fixtures: Path, tmp_path: Path
) -> None:
    """addition_kernel<float> over 1024x1024: two float inputs read (8 MiB), one written (4 MiB)."""
    header, rows = _rows(_fixture(shared_fixtures, "counter_collection.csv"))
    first = rows[0]
    extra = [dict(first, Counter_Name="FETCH_SIZE", Counter_Value="8192.0"),
             dict(first, Counter_Name="WRITE_SIZE", Counter_Value="4096.0")]  # fmt: skip
    path = _write(tmp_path / "run_counter_collection.csv", header, [first, *extra])
    _write(tmp_path / "run_agent_info.csv", AGENT_INFO_HEADER, [
        dict(zip(AGENT_INFO_HEADER, [0, 0, "CPU", 0, 0, 0, 0, 0, 0, 0, "AMD EPYC 9654", "AMD EPYC 9654"], strict=True)),
        dict(zip(AGENT_INFO_HEADER, [1, 1, "GPU", 1216, 8, 64, 64, 8, 304, 2100, "gfx942", "AMD Instinct MI300X"], strict=True)),
    ])  # fmt: skip
    (p,) = read_rocprofv3_csv(path)
    duration = int(first["End_Timestamp"]) - int(first["Start_Timestamp"])
    assert (p.arch, p.device) == ("gfx942", "AMD Instinct MI300X")
    assert p.metrics.dram_bytes_read == 8192 * 1024 and p.metrics.dram_bytes_write == 4096 * 1024
    assert p.metrics.achieved_dram_gbs == pytest.approx(12 * 1024 * 1024 / duration)
    assert p.metrics.dram_throughput_pct == pytest.approx(100 * p.metrics.achieved_dram_gbs / 5300)
    assert p.metrics.compute_units == 304


def test_explicit_arch_without_agent_info(shared_fixtures: Path) -> None:
    p = read_rocprofv3_csv(_fixture(shared_fixtures, "kernel_trace.csv"), arch="gfx90a", device_name="MI210")[
        0
    ]
    assert (p.arch, p.device, p.metrics.compute_units) == ("gfx90a", "MI210", 104)
    assert (
        p.metrics.theoretical_occupancy_pct is None
    )  # no VGPR count in the legacy trace: only wave slots known
    assert p.metrics.occupancy_limit_warps == 32


def test_sniffing(shared_fixtures: Path) -> None:
    assert is_rocprofv3_csv(_fixture(shared_fixtures, "counter_collection.csv").read_text())
    assert is_rocprofv3_csv(_fixture(shared_fixtures, "kernel_trace.csv").read_text())
    ncu = shared_fixtures / "ncu" / "h200" / "copy_vec4" / "raw.csv"
    assert not is_rocprofv3_csv(ncu.read_text(errors="replace"))
    assert not is_rocprofv3_csv("")


def test_bad_rows_name_the_line(shared_fixtures: Path, tmp_path: Path) -> None:
    header, rows = _rows(_fixture(shared_fixtures, "counter_collection.csv"))
    rows[2]["Counter_Value"] = "lots"
    with pytest.raises(BadInput, match=r"bad\.csv:4: column 'Counter_Value'"):
        read_rocprofv3_csv(_write(tmp_path / "bad.csv", header, rows))
    no_name = [c for c in header if c != "Kernel_Name"]
    with pytest.raises(BadInput, match="no kernel_name column"):
        read_rocprofv3_csv(
            _write(tmp_path / "noname.csv", no_name, [{k: r[k] for k in no_name} for r in rows])
        )
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(BadInput, match="empty CSV"):
        read_rocprofv3_csv(tmp_path / "empty.csv")


def test_profile_read_dispatches_to_this_reader(shared_fixtures: Path) -> None:
    from kloop.profile import read

    profiles = read(_fixture(shared_fixtures, "counter_collection.csv"))
    assert [p.source_format for p in profiles] == ["rocprofv3-csv"] * 4
