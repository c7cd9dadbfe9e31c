"""rocpd SQLite databases (ROCm 7 `rocprofv3 --output-format rocpd`) -> one KernelProfile per dispatch.

rocprofv3 writes its tables with a per-session suffix (`rocpd_kernel_dispatch_<uuid>`, ...)
and views without it whose columns decompress `extdata` through an lz4 function only the
`rocpd` Python package registers. So the reader goes to the suffixed tables (or plain ones)
directly, never selects `extdata`, and pairs tables that share a suffix:

- `rocpd_kernel_dispatch`: dispatch_id, agent_id, kernel_id, start/end (ns), workgroup and grid
  sizes (work-items per dimension), private/group segment sizes, event_id;
- `rocpd_info_kernel_symbol`: kernel_name, display_name, arch/accum VGPR and SGPR counts;
- `rocpd_info_agent`: name (`gfx942`), product_name (`AMD Instinct MI300X`);
- `rocpd_pmc_event` (event_id, pmc_id, value) joined to `rocpd_info_pmc` (id, name): the
  counters of a dispatch are the pmc events sharing its event_id, summed per counter name.

Schema: rocprofiler-sdk source/lib/output/sql/rocpd_tables.sql and rocpd_views.sql.
Public names: `is_rocpd(path)`, `read_rocpd(path)`.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from contextlib import closing
from pathlib import Path

from kloop.errors import BadInput
from kloop.profile.amd_metrics import AmdDevice, AmdDispatch, build_profile, device_from_facts
from kloop.profile.schema import KernelProfile

SQLITE_MAGIC = b"SQLite format 3\x00"
_KINDS = ("kernel_dispatch", "info_kernel_symbol", "info_agent", "pmc_event", "info_pmc")


def is_rocpd(path: Path) -> bool:
    """A SQLite file that holds rocpd kernel-dispatch tables."""
    try:
        with path.open("rb") as handle:
            if handle.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
                return False
        with closing(_connect(path)) as connection:
            return bool(_tables(connection)["kernel_dispatch"])
    except (OSError, sqlite3.Error):
        return False


def _connect(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    # rocpd's views call lz4_decompress on extdata; an identity stand-in keeps them preparable
    connection.create_function("lz4_decompress", 1, lambda blob: blob, deterministic=True)
    return connection


def _tables(connection: sqlite3.Connection) -> dict[str, dict[str, str]]:
    """kind -> {session suffix ('' when none): table name}, base tables only."""
    names = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    found: dict[str, dict[str, str]] = {kind: {} for kind in _KINDS}
    for name in names:
        for kind in _KINDS:
            base = f"rocpd_{kind}"
            if name == base or name.startswith(base + "_"):
                found[kind][name[len(base) :]] = name
    return found


def _agents(connection: sqlite3.Connection, table: str | None) -> dict[int, AmdDevice]:
    if table is None:
        return {}
    devices: dict[int, AmdDevice] = {}
    query = f'SELECT id, name, product_name, type FROM "{table}"'
    for agent_id, name, product, kind in connection.execute(query):
        if kind not in (None, "GPU"):
            continue
        arch = (name or "").split(":")[0] or None
        devices[agent_id] = device_from_facts(arch, product or None)
    return devices


def _counters(
    connection: sqlite3.Connection, events: str | None, pmc: str | None
) -> dict[int, dict[str, float]]:
    if events is None or pmc is None:
        return {}
    query = (
        f'SELECT e.event_id, p.name, SUM(e.value) FROM "{events}" e JOIN "{pmc}" p ON p.id = e.pmc_id '
        "WHERE e.event_id IS NOT NULL GROUP BY e.event_id, p.name"
    )
    out: dict[int, dict[str, float]] = defaultdict(dict)
    for event_id, name, value in connection.execute(query):
        if value is not None:
            out[event_id][name] = float(value)
    return out


_DISPATCH_QUERY = """
SELECT d.dispatch_id, d.agent_id, d.start, d."end", d.private_segment_size, d.group_segment_size,
       d.workgroup_size_x, d.workgroup_size_y, d.workgroup_size_z,
       d.grid_size_x, d.grid_size_y, d.grid_size_z, d.event_id,
       {symbol_columns}
FROM "{dispatch}" d {symbol_join}
ORDER BY d.start, d.dispatch_id
"""


def _dispatches(
    connection: sqlite3.Connection, tables: dict[str, dict[str, str]], suffix: str
) -> list[tuple]:
    def pick(kind: str) -> str | None:
        options = tables[kind]
        return options.get(suffix) or options.get("") or next(iter(options.values()), None)

    symbols = pick("info_kernel_symbol")
    query = _DISPATCH_QUERY.format(
        dispatch=tables["kernel_dispatch"][suffix],
        symbol_columns="k.kernel_name, k.display_name, k.arch_vgpr_count, k.accum_vgpr_count, k.sgpr_count"
        if symbols
        else "NULL, NULL, NULL, NULL, NULL",
        symbol_join=f'LEFT JOIN "{symbols}" k ON k.id = d.kernel_id' if symbols else "",
    )
    return connection.execute(query).fetchall()


def _to_dispatch(row: tuple, counters: dict[int, dict[str, float]], where: str) -> AmdDispatch:
    (dispatch_id, _agent, start, end, private, group, wx, wy, wz, gx, gy, gz, event_id,
     kernel_name, display_name, vgpr, agpr, sgpr) = row  # fmt: skip
    name = display_name or kernel_name
    if not name:
        raise BadInput(where, f"dispatch {dispatch_id} has no kernel symbol name")
    duration = float(end) - float(start) if start is not None and end is not None and end > start else None
    return AmdDispatch(
        name=name,
        dispatch_id=dispatch_id,
        duration_ns=duration,
        grid_items=(gx, gy, gz),
        workgroup=(wx, wy, wz),
        lds_bytes=group,
        scratch_bytes_per_item=private,
        arch_vgpr=vgpr,
        accum_vgpr=agpr,
        sgpr=sgpr,
        counters=dict(counters.get(event_id, {})) if event_id is not None else {},
    )


def read_rocpd(path: str | Path) -> list[KernelProfile]:
    """Every kernel dispatch in a rocpd database, with its counters when they were collected."""
    path = Path(path)
    if not path.is_file():
        raise BadInput(path, "no such file")
    try:
        with closing(_connect(path)) as connection:
            tables = _tables(connection)
            if not tables["kernel_dispatch"]:
                raise BadInput(
                    path, "SQLite database without rocpd_kernel_dispatch tables (not rocpd output)"
                )
            profiles: list[KernelProfile] = []
            for suffix in sorted(tables["kernel_dispatch"]):
                pick = {
                    k: tables[k].get(suffix) or tables[k].get("")
                    for k in ("info_agent", "pmc_event", "info_pmc")
                }
                devices = _agents(connection, pick["info_agent"])
                counters = _counters(connection, pick["pmc_event"], pick["info_pmc"])
                for row in _dispatches(connection, tables, suffix):
                    device = devices.get(row[1]) or AmdDevice()
                    dispatch = _to_dispatch(row, counters, str(path))
                    profiles.append(build_profile(dispatch, device, source_format="rocpd", source_path=path))
    except sqlite3.DatabaseError as exc:
        raise BadInput(path, f"cannot read rocpd database: {exc}") from exc
    return profiles
