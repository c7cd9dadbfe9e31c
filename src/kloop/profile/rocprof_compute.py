"""rocprof-compute (Omniperf) workload folders -> one KernelProfile per dispatch.

A workload folder holds `pmc_perf.csv` (one row per dispatch: launch columns, counters as
`X`, `X_sum` and per-channel `X[i]`, Start/End timestamps), `sysinfo.csv` (GPU model, gfx arch,
CUs, shader engines, clocks, HBM bandwidth, XCD count), and optionally `timestamps.csv` and the
`SQ_LEVEL_WAVES.csv` pass (wavefront occupancy). Passing the parent of several GPU folders
(`workloads/vcopy/` holding `MI200/`, `MI300X_A1/`, ...) reads each of them.

Public names: `is_rocprof_compute_folder(path)`, `read_rocprof_compute(folder)`,
`read_sysinfo(path) -> AmdDevice`.
"""

from __future__ import annotations

import re
from pathlib import Path

from kloop.errors import BadInput
from kloop.profile.amd_metrics import (
    AmdDevice,
    AmdDispatch,
    build_profile,
    device_from_facts,
    duration_from_timestamps,
)
from kloop.profile.rocprofv3 import read_csv_rows
from kloop.profile.schema import KernelProfile

PMC_PERF = "pmc_perf.csv"
SYSINFO = "sysinfo.csv"

# launch columns of pmc_perf.csv (rocprofv1 and rocprofv2 spellings) -> AmdDispatch field
_LAUNCH = {
    "Grid_Size": "grid",
    "Workgroup_Size": "workgroup",
    "LDS_Per_Workgroup": "lds_bytes",
    "Scratch_Per_Workitem": "scratch_bytes_per_item",
    "Arch_VGPR": "arch_vgpr",
    "Accum_VGPR": "accum_vgpr",
    "SGPR": "sgpr",
}
_NOT_COUNTERS = re.compile(
    r"^(Dispatch_ID|Kernel_Name|GPU_ID|Queue_ID|PID|TID|queue-id|queue-index|pid|tid|sig|obj(_\d+)?"
    r"|[Ww]ave_[Ss]ize(_\d+)?|Correlation_ID(_\d+)?|XCC_Index(_\d+)?|DispatchNs|CompleteNs"
    r"|Start_Timestamp|End_Timestamp)$"
)
# sysinfo.csv column -> AmdDevice field (the tool's own numbers override kloop's arch facts)
_SYSINFO = {
    "cu_per_gpu": ("cu", int),
    "se_per_gpu": ("se", int),
    "simd_per_cu": ("simds_per_cu", int),
    "num_xcd": ("xcds", int),
    "max_sclk": ("sclk_mhz", float),
    "hbm_bw": ("peak_dram_gbs", float),
    "total_l2_chan": ("l2_channels", int),
    "wave_size": ("wave_size", int),
    "max_waves_per_cu": ("max_waves_per_cu", int),
}
# Omniperf 1.x (2022) wrote another sysinfo.csv layout: its column -> today's column
_SYSINFO_V1 = {
    "gpu_soc": "gpu_arch", "name": "gpu_model", "numCU": "cu_per_gpu", "numSE": "se_per_gpu",
    "numSIMD": "simd_per_cu", "sclk": "max_sclk", "hbmBW": "hbm_bw", "L2Banks": "total_l2_chan",
    "waveSize": "wave_size", "maxWavesPerCU": "max_waves_per_cu",
}  # fmt: skip


def is_rocprof_compute_folder(path: Path) -> bool:
    """A folder with pmc_perf.csv, or whose sub-folders have one."""
    return path.is_dir() and (path.joinpath(PMC_PERF).is_file() or any(path.glob(f"*/{PMC_PERF}")))


def read_sysinfo(path: Path) -> AmdDevice:
    """The GPU of a workload from its sysinfo.csv, completed from kloop's arch facts."""
    _, rows = read_csv_rows(path)
    if not rows:
        raise BadInput(path, "sysinfo.csv has a header but no data row")
    row = rows[0]
    row = {**{new: row[old] for old, new in _SYSINFO_V1.items() if old in row and new not in row}, **row}
    overrides: dict[str, float | int] = {}
    for column, (attr, kind) in _SYSINFO.items():
        text = (row.get(column) or "").strip()
        try:
            value = kind(float(text))
        except ValueError:
            continue
        if value > 0:
            overrides[attr] = value
    device = device_from_facts(
        (row.get("gpu_arch") or "").strip() or None, (row.get("gpu_model") or "").strip() or None, **overrides
    )
    if device.arch is None:
        raise BadInput(path, "no gpu_arch (e.g. gfx942) and an unrecognised gpu_model")
    return device


def _int(row: dict[str, str], column: str, where: str) -> int | None:
    text = (row.get(column) or "").strip()
    if not text:
        return None
    try:
        return int(float(text))
    except ValueError as exc:
        raise BadInput(where, f"column {column!r}: {text!r} is not a number") from exc


def _counters(row: dict[str, str]) -> dict[str, float]:
    counters: dict[str, float] = {}
    for column, text in row.items():
        if column is None or column in _LAUNCH or _NOT_COUNTERS.match(column):
            continue
        try:
            counters[column] = float(text)
        except (TypeError, ValueError):
            continue
    return counters


def _by_dispatch(path: Path) -> dict[int, dict[str, str]]:
    if not path.is_file():
        return {}
    _, rows = read_csv_rows(path)
    out: dict[int, dict[str, str]] = {}
    for line, row in enumerate(rows, start=2):
        dispatch_id = _int(row, "Dispatch_ID", f"{path}:{line}")
        if dispatch_id is not None:
            out.setdefault(dispatch_id, row)
    return out


def _dispatch(
    row: dict[str, str], where: str, timestamps: dict[str, str] | None, level: dict[str, str] | None
) -> AmdDispatch:
    name = (row.get("Kernel_Name") or "").strip()
    if not name:
        raise BadInput(where, "no Kernel_Name")
    launch = {field: _int(row, column, where) for column, field in _LAUNCH.items()}
    grid, workgroup = launch.pop("grid"), launch.pop("workgroup")
    duration = duration_from_timestamps(row.get("Start_Timestamp"), row.get("End_Timestamp"))
    if duration is None and timestamps is not None:
        duration = duration_from_timestamps(
            timestamps.get("Start_Timestamp"), timestamps.get("End_Timestamp")
        )
    counters = _counters(row)
    if level is not None:
        for column, alias in (
            ("SQ_ACCUM_PREV_HIRES", "SQ_ACCUM_PREV_HIRES"),
            ("GRBM_GUI_ACTIVE", "GRBM_GUI_ACTIVE_LEVEL_WAVES"),
        ):
            try:
                counters[alias] = float(level[column])
            except (KeyError, TypeError, ValueError):
                continue
    return AmdDispatch(
        name=name,
        dispatch_id=_int(row, "Dispatch_ID", where),
        duration_ns=duration,
        grid_items=None if grid is None else (grid, 1, 1),
        workgroup=None if workgroup is None else (workgroup, 1, 1),
        counters=counters,
        **launch,
    )


def _read_workload(folder: Path) -> list[KernelProfile]:
    sysinfo = folder / SYSINFO
    if not sysinfo.is_file():
        raise BadInput(sysinfo, "missing: rocprof-compute writes sysinfo.csv next to pmc_perf.csv")
    device = read_sysinfo(sysinfo)
    pmc = folder / PMC_PERF
    _, rows = read_csv_rows(pmc)
    timestamps = _by_dispatch(folder / "timestamps.csv")
    levels = _by_dispatch(folder / "SQ_LEVEL_WAVES.csv")
    profiles = []
    for line, row in enumerate(rows, start=2):
        where = f"{pmc}:{line}"
        dispatch_id = _int(row, "Dispatch_ID", where)
        dispatch = _dispatch(row, where, timestamps.get(dispatch_id), levels.get(dispatch_id))
        dispatch.extra.update({"gpu_model": device.name or "", "workload": folder.name})
        profiles.append(build_profile(dispatch, device, source_format="rocprof-compute", source_path=folder))
    return profiles


def read_rocprof_compute(folder: str | Path) -> list[KernelProfile]:
    """Every dispatch of a rocprof-compute workload folder (or of each GPU folder under it)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise BadInput(folder, "not a directory (expected a rocprof-compute workload folder)")
    if (folder / PMC_PERF).is_file():
        return _read_workload(folder)
    workloads = sorted(p.parent for p in folder.glob(f"*/{PMC_PERF}"))
    if not workloads:
        raise BadInput(folder, f"no {PMC_PERF} here or in its sub-folders")
    return [profile for workload in workloads for profile in _read_workload(workload)]
