"""rocpd SQLite reader on a real SQLite database built with rocprofiler-sdk's table layout.

The DDL is the subset of rocprofiler-sdk's `rocpd_tables.sql` / `rocpd_views.sql` the reader
touches, with the per-session uuid suffix rocprofv3 gives its tables; the rows are the
documentation samples (kernel_trace.csv dispatches, counter_collection.csv SQ_WAVES values).
"""

from __future__ import annotations

import csv
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from kloop.errors import BadInput
from kloop.profile.rocpd import is_rocpd, read_rocpd

UUID = "_0195c6a0_7a11_7c2b_9d0e_123456789abc"
DDL = f"""
CREATE TABLE "rocpd_info_agent{UUID}" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL DEFAULT 'g', "nid" INTEGER NOT NULL,
    "pid" INTEGER NOT NULL, "type" TEXT CHECK ("type" IN ('CPU', 'GPU')), "absolute_index" INTEGER,
    "logical_index" INTEGER, "type_index" INTEGER, "uuid" INTEGER, "name" TEXT, "model_name" TEXT,
    "vendor_name" TEXT, "product_name" TEXT, "user_name" TEXT, "extdata" JSONB DEFAULT "{{}}" NOT NULL);
CREATE TABLE "rocpd_info_kernel_symbol{UUID}" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL DEFAULT 'g', "nid" INTEGER NOT NULL,
    "pid" INTEGER NOT NULL, "code_object_id" INTEGER NOT NULL, "kernel_name" TEXT, "display_name" TEXT,
    "kernel_object" INTEGER, "kernarg_segment_size" INTEGER, "kernarg_segment_alignment" INTEGER,
    "group_segment_size" INTEGER, "private_segment_size" INTEGER, "sgpr_count" INTEGER,
    "arch_vgpr_count" INTEGER, "accum_vgpr_count" INTEGER, "extdata" JSONB DEFAULT "{{}}" NOT NULL);
CREATE TABLE "rocpd_info_pmc{UUID}" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL DEFAULT 'g', "nid" INTEGER NOT NULL,
    "pid" INTEGER NOT NULL, "agent_id" INTEGER, "target_arch" TEXT, "event_code" INT, "instance_id" INTEGER,
    "name" TEXT NOT NULL, "symbol" TEXT NOT NULL, "description" TEXT, "long_description" TEXT DEFAULT "",
    "component" TEXT, "units" TEXT DEFAULT "", "value_type" TEXT, "block" TEXT, "expression" TEXT,
    "is_constant" INTEGER, "is_derived" INTEGER, "extdata" JSONB DEFAULT "{{}}" NOT NULL);
CREATE TABLE "rocpd_event{UUID}" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL DEFAULT 'g', "category_id" INTEGER,
    "stack_id" INTEGER, "parent_stack_id" INTEGER, "correlation_id" INTEGER,
    "call_stack" JSONB DEFAULT "{{}}" NOT NULL, "line_info" JSONB DEFAULT "{{}}" NOT NULL,
    "extdata" JSONB DEFAULT "{{}}" NOT NULL);
CREATE TABLE "rocpd_pmc_event{UUID}" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL DEFAULT 'g', "event_id" INTEGER,
    "pmc_id" INTEGER NOT NULL, "value" REAL DEFAULT 0.0, "extdata" JSONB DEFAULT "{{}}");
CREATE TABLE "rocpd_kernel_dispatch{UUID}" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL DEFAULT 'g', "nid" INTEGER NOT NULL,
    "pid" INTEGER NOT NULL, "tid" INTEGER, "agent_id" INTEGER NOT NULL, "kernel_id" INTEGER NOT NULL,
    "dispatch_id" INTEGER NOT NULL, "queue_id" INTEGER NOT NULL, "stream_id" INTEGER NOT NULL,
    "start" BIGINT NOT NULL, "end" BIGINT NOT NULL, "private_segment_size" INTEGER, "group_segment_size" INTEGER,
    "workgroup_size_x" INTEGER NOT NULL, "workgroup_size_y" INTEGER NOT NULL, "workgroup_size_z" INTEGER NOT NULL,
    "grid_size_x" INTEGER NOT NULL, "grid_size_y" INTEGER NOT NULL, "grid_size_z" INTEGER NOT NULL,
    "region_name_id" INTEGER, "event_id" INTEGER, "extdata" JSONB DEFAULT "{{}}" NOT NULL);
CREATE VIEW "rocpd_kernel_dispatch" AS SELECT "id", "dispatch_id", "start", "end",
    CAST(lz4_decompress("extdata") AS TEXT) AS "extdata" FROM "rocpd_kernel_dispatch{UUID}";
"""


def _csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.open()))


@pytest.fixture()
def rocpd_db(shared_fixtures: Path, tmp_path: Path) -> Path:
    trace = _csv(shared_fixtures / "amd" / "rocprofv3" / "kernel_trace.csv")
    counters = {
        r["Kernel_Name"]: float(r["Counter_Value"])
        for r in _csv(shared_fixtures / "amd" / "rocprofv3" / "counter_collection.csv")
    }
    path = tmp_path / "results.db"
    with closing(sqlite3.connect(path)) as db:
        db.executescript(DDL)
        db.execute(
            f"INSERT INTO \"rocpd_info_agent{UUID}\" (id, nid, pid, type, name, product_name) VALUES (1, 1, 1, 'CPU', 'AMD EPYC', 'AMD EPYC')"
        )
        db.execute(
            f"INSERT INTO \"rocpd_info_agent{UUID}\" (id, nid, pid, type, name, product_name) VALUES (2, 1, 1, 'GPU', 'gfx942', 'AMD Instinct MI300X')"
        )
        db.execute(
            f"INSERT INTO \"rocpd_info_pmc{UUID}\" (id, nid, pid, agent_id, name, symbol) VALUES (1, 1, 1, 2, 'SQ_WAVES', 'SQ_WAVES')"
        )
        symbols: dict[str, int] = {}
        for row in trace:
            kernel_id = symbols.setdefault(row["Kernel_Name"], len(symbols) + 1)
            if kernel_id == len(symbols):
                db.execute(
                    f'INSERT OR IGNORE INTO "rocpd_info_kernel_symbol{UUID}" (id, nid, pid, code_object_id, kernel_name, '
                    "display_name, arch_vgpr_count, accum_vgpr_count, sgpr_count) VALUES (?, 1, 1, 1, ?, ?, 8, 0, 16)",
                    (kernel_id, row["Kernel_Name"] + ".kd", row["Kernel_Name"]),
                )
            dispatch = int(row["Dispatch_Id"])
            db.execute(
                f'INSERT INTO "rocpd_event{UUID}" (id, correlation_id) VALUES (?, ?)',
                (dispatch, row["Correlation_Id"]),
            )
            db.execute(
                f'INSERT INTO "rocpd_kernel_dispatch{UUID}" (nid, pid, agent_id, kernel_id, dispatch_id, queue_id, stream_id, '
                "start, end, private_segment_size, group_segment_size, workgroup_size_x, workgroup_size_y, workgroup_size_z, "
                "grid_size_x, grid_size_y, grid_size_z, event_id) VALUES (1, 1, 2, ?, ?, 1, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (kernel_id, dispatch, int(row["Start_Timestamp"]), int(row["End_Timestamp"]), int(row["Private_Segment_Size"]),
                 int(row["Group_Segment_Size"]), int(row["Workgroup_Size_X"]), int(row["Workgroup_Size_Y"]),
                 int(row["Workgroup_Size_Z"]), int(row["Grid_Size_X"]), int(row["Grid_Size_Y"]), int(row["Grid_Size_Z"]),
                 dispatch),
            )  # fmt: skip
            if row["Kernel_Name"] in counters:  # two SE instances, summed by the reader
                half = counters[row["Kernel_Name"]] / 2
                for _ in range(2):
                    db.execute(
                        f'INSERT INTO "rocpd_pmc_event{UUID}" (event_id, pmc_id, value) VALUES (?, 1, ?)',
                        (dispatch, half),
                    )
        db.commit()
    return path


def test_reads_dispatches_counters_and_agent(rocpd_db: Path, shared_fixtures: Path) -> None:
    trace = _csv(shared_fixtures / "amd" / "rocprofv3" / "kernel_trace.csv")
    assert is_rocpd(rocpd_db)
    profiles = read_rocpd(rocpd_db)
    assert len(profiles) == len(trace) == 8
    by_id = {p.launch_id: p for p in profiles}
    for row in trace:
        p = by_id[int(row["Dispatch_Id"])]
        assert p.duration_ns == int(row["End_Timestamp"]) - int(row["Start_Timestamp"])
        assert p.launch.grid == (
            int(row["Grid_Size_X"]) // int(row["Workgroup_Size_X"]),
            int(row["Grid_Size_Y"]),
            1,
        )
        assert (p.arch, p.device, p.vendor) == ("gfx942", "AMD Instinct MI300X", "amd")
        assert p.source_format == "rocpd"
    assert {p.normalized_name for p in profiles} == {
        "addition_kernel",
        "subtract_kernel",
        "multiply_kernel",
        "divide_kernel",
    }
    assert by_id[1].raw["SQ_WAVES"] == 16384.0  # the two instances summed back
    assert by_id[1].launch.registers_per_thread == 8
    assert by_id[1].metrics.theoretical_occupancy_pct == 100.0


def test_profile_read_sniffs_sqlite(rocpd_db: Path) -> None:
    from kloop.profile import read

    assert [p.source_format for p in read(rocpd_db)] == ["rocpd"] * 8


def test_non_rocpd_sqlite_and_garbage_are_bad_input(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with closing(sqlite3.connect(other)) as db:
        db.execute("CREATE TABLE t (x INTEGER)")
        db.commit()
    assert not is_rocpd(other)
    with pytest.raises(BadInput, match="not rocpd output"):
        read_rocpd(other)
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"SQLite format 3\x00" + b"\x00" * 50)
    with pytest.raises(BadInput):
        read_rocpd(garbage)
    with pytest.raises(BadInput, match="no such file"):
        read_rocpd(tmp_path / "missing.db")
