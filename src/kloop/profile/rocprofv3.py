"""rocprofv3 CSV output (counter_collection.csv, kernel_trace.csv) -> one KernelProfile per dispatch.

Header spellings differ across rocprofiler versions, so columns are found by a normalized key
(case and `_`/`-`/space ignored) through an alias table: `Kernel_Name` / `Kernel-Name` /
`KernelName`, `Dispatch_Id` / `Dispatch_ID` / `Index`, `Start_Timestamp` / `BeginNs`,
`Grid_Size` (work-items, 1-D) or `Grid_Size_X/Y/Z`, `LDS_Block_Size` / `Group_Segment_Size`,
`Scratch_Size` / `Private_Segment_Size`, ... Counters come long (`Counter_Name`, `Counter_Value`
rows, summed per dispatch) or wide (one upper-case column per counter, rocprof v1/v2 style).
The GPU comes from a sibling `*agent_info.csv` when rocprofv3 wrote one, else from arguments.

Public names: `is_rocprofv3_csv(head)`, `read_rocprofv3_csv(path, arch=None, device_name=None)`
(also exported as `read_counter_collection`, `read_kernel_trace`), `read_csv_rows(path)`.
"""

from __future__ import annotations

import csv
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
from kloop.profile.schema import KernelProfile

# normalized header key -> role; every spelling seen across rocprof v1, v2 and rocprofv3
COLUMN_ALIASES: dict[str, tuple[str, ...]] = {
    "dispatch_id": ("dispatchid", "index"),
    "kernel_name": ("kernelname",),
    "start": ("starttimestamp", "beginns", "startns"),
    "end": ("endtimestamp", "endns"),
    "grid": ("gridsize", "grd"),
    "grid_x": ("gridsizex",),
    "grid_y": ("gridsizey",),
    "grid_z": ("gridsizez",),
    "workgroup": ("workgroupsize", "wgr"),
    "workgroup_x": ("workgroupsizex",),
    "workgroup_y": ("workgroupsizey",),
    "workgroup_z": ("workgroupsizez",),
    "lds": ("ldsblocksize", "groupsegmentsize", "ldsperworkgroup", "lds"),
    "scratch": ("scratchsize", "privatesegmentsize", "scratchperworkitem", "scr"),
    "arch_vgpr": ("vgprcount", "archvgpr", "archvgprcount"),
    "accum_vgpr": ("accumvgprcount", "accumvgpr"),
    "sgpr": ("sgprcount", "sgpr"),
    "agent": ("agentid", "gpuid"),
    "counter_name": ("countername",),
    "counter_value": ("countervalue",),
}
# bookkeeping columns that are neither launch facts nor counters
_IGNORED = re.compile(
    r"^(kind|queueid|streamid|threadid|processid|pid|tid|correlationid\d*|kernelid|sig|obj\d*|dispatchns"
    r"|completens|queueindex|xccindex\d*|wavesize\d*|gpuid)$"
)
_COUNTER_COLUMN = re.compile(r"^[A-Z][A-Z0-9_]*(\[\d+\])?$")


def _key(column: str) -> str:
    return re.sub(r"[^a-z0-9]", "", column.lower())


_ROLE_OF = {alias: role for role, aliases in COLUMN_ALIASES.items() for alias in aliases}


def read_csv_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """Header and rows of a CSV file; BadInput naming the file when it is not one."""
    try:
        with path.open(newline="", encoding="utf-8", errors="strict") as handle:
            reader = csv.DictReader(handle)
            rows = list(reader)
            header = list(reader.fieldnames or [])
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise BadInput(path, f"cannot read CSV: {exc}") from exc
    if not header:
        raise BadInput(path, "empty CSV (no header line)")
    return header, rows


def is_rocprofv3_csv(head: str) -> bool:
    """Whether the first line is a rocprof kernel table (dispatch id + kernel name + timing or counters)."""
    first = head.splitlines()[0] if head else ""
    roles = {_ROLE_OF.get(_key(c.strip().strip('"'))) for c in first.split(",")}
    return {"dispatch_id", "kernel_name"} <= roles and bool(
        roles & {"start", "counter_name", "grid", "grid_x"}
    )


def _columns(header: list[str]) -> tuple[dict[str, str], list[str]]:
    """role -> actual column, and the wide counter columns."""
    roles: dict[str, str] = {}
    counters: list[str] = []
    for column in header:
        key = _key(column)
        role = _ROLE_OF.get(key)
        if role and role not in roles:
            roles[role] = column
        elif not role and not _IGNORED.match(key) and _COUNTER_COLUMN.match(column.strip()):
            counters.append(column)
    return roles, counters


def _number(value: str | None, path: Path, line: int, column: str) -> float | None:
    if value is None or value.strip() in ("", "N/A", "nan"):
        return None
    try:
        return float(value)
    except ValueError as exc:
        raise BadInput(f"{path}:{line}", f"column {column!r}: {value!r} is not a number") from exc


def _int(row: dict[str, str], roles: dict[str, str], role: str, path: Path, line: int) -> int | None:
    column = roles.get(role)
    value = _number(row.get(column), path, line, column) if column else None
    return None if value is None else int(value)


def _shape(
    row: dict[str, str], roles: dict[str, str], prefix: str, path: Path, line: int
) -> tuple[int, int, int] | None:
    dims = [_int(row, roles, f"{prefix}_{axis}", path, line) for axis in "xyz"]
    if dims[0] is not None:
        return (dims[0], dims[1] or 1, dims[2] or 1)
    total = _int(row, roles, prefix, path, line)
    return None if total is None else (total, 1, 1)


def _agent_number(value: str | None) -> int | None:
    match = re.search(r"\d+", value or "")
    return int(match.group()) if match else None


def _dispatch(row: dict[str, str], roles: dict[str, str], path: Path, line: int) -> AmdDispatch:
    name = row.get(roles["kernel_name"], "").strip()
    if not name:
        raise BadInput(f"{path}:{line}", "empty kernel name")
    start, end = (row.get(roles[r]) if r in roles else None for r in ("start", "end"))
    return AmdDispatch(
        name=name,
        dispatch_id=_int(row, roles, "dispatch_id", path, line),
        duration_ns=duration_from_timestamps(start, end),
        grid_items=_shape(row, roles, "grid", path, line),
        workgroup=_shape(row, roles, "workgroup", path, line),
        lds_bytes=_int(row, roles, "lds", path, line),
        scratch_bytes_per_item=_int(row, roles, "scratch", path, line),
        arch_vgpr=_int(row, roles, "arch_vgpr", path, line),
        accum_vgpr=_int(row, roles, "accum_vgpr", path, line),
        sgpr=_int(row, roles, "sgpr", path, line),
        extra={"agent": a} if (a := _agent_number(row.get(roles.get("agent", "")))) is not None else {},
    )


def parse_dispatches(path: Path) -> list[AmdDispatch]:
    """Dispatches of a rocprof CSV, counters merged per dispatch, in first-seen order."""
    header, rows = read_csv_rows(path)
    roles, wide = _columns(header)
    missing = [r for r in ("dispatch_id", "kernel_name") if r not in roles]
    if missing:
        raise BadInput(path, f"not a rocprof kernel table: no {' or '.join(missing)} column")
    by_id: dict[tuple[int | None, int], AmdDispatch] = {}
    for line, row in enumerate(rows, start=2):
        current = _dispatch(row, roles, path, line)
        key = (current.dispatch_id, line if current.dispatch_id is None else 0)
        dispatch = by_id.setdefault(key, current)
        if "counter_name" in roles and (counter := row.get(roles["counter_name"], "").strip()):
            value = _number(row.get(roles.get("counter_value", "")), path, line, "Counter_Value")
            if value is not None:
                dispatch.counters[counter] = dispatch.counters.get(counter, 0.0) + value
        for column in wide:
            value = _number(row.get(column), path, line, column)
            if value is not None:
                dispatch.counters[column.strip()] = value
    return list(by_id.values())


def _gpu_agents(directory: Path) -> list[dict[str, str]]:
    """GPU rows of rocprofv3's agent_info.csv files beside the output."""
    gpus: list[dict[str, str]] = []
    for info in sorted(directory.glob("*agent_info.csv")):
        _, rows = read_csv_rows(info)
        gpus.extend(row for row in rows if row.get("Agent_Type", "GPU").upper() == "GPU")
    return gpus


def _agent_row(gpus: list[dict[str, str]], agent_id: int | None) -> dict[str, str] | None:
    """The agent a dispatch ran on: by Node_Id, then Logical_Node_Id; the only GPU when just one."""
    for id_column in ("Node_Id", "Logical_Node_Id"):
        for row in gpus:
            if agent_id is not None and _agent_number(row.get(id_column)) == agent_id:
                return row
    return gpus[0] if len(gpus) == 1 else None


def _device_for(agent_row: dict[str, str] | None, arch: str | None, device_name: str | None) -> AmdDevice:
    if agent_row is None:
        return device_from_facts(arch, device_name)

    def num(column: str) -> float | None:
        value = agent_row.get(column, "")
        return float(value) if re.fullmatch(r"\s*\d+(\.\d+)?\s*", value or "") else None

    gfx = (agent_row.get("Name") or "").split(":")[0] or None
    cu, xcc, clock = num("Cu_Count"), num("Num_Xcc"), num("Max_Engine_Clk_Fcompute")
    return device_from_facts(
        arch or gfx,
        device_name or agent_row.get("Product_Name") or None,
        cu=int(cu) if cu else None,
        xcds=int(xcc) if xcc else None,
        sclk_mhz=clock or None,
    )


def read_rocprofv3_csv(
    path: str | Path, *, arch: str | None = None, device_name: str | None = None
) -> list[KernelProfile]:
    """Every dispatch of a rocprofv3 counter_collection or kernel_trace CSV (any header variant)."""
    path = Path(path)
    dispatches = parse_dispatches(path)
    gpus = _gpu_agents(path.parent)
    devices: dict[int | None, AmdDevice] = {}
    profiles = []
    for dispatch in dispatches:
        agent_id = dispatch.extra.get("agent")
        key = agent_id if isinstance(agent_id, int) else None
        if key not in devices:
            devices[key] = _device_for(_agent_row(gpus, key), arch, device_name)
        profiles.append(
            build_profile(dispatch, devices[key], source_format="rocprofv3-csv", source_path=path)
        )
    return profiles


read_counter_collection = read_rocprofv3_csv
read_kernel_trace = read_rocprofv3_csv
