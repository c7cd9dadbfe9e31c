"""Read Nsight Compute `--csv` exports: the details page and the raw page, auto-detected.

Handles what real exports contain: `==PROF==` lines and program output before the header, NVTX
columns, with or without rule columns, `--print-units base` or auto units (ns/us/ms, byte..Tbyte,
hz..Ghz), thousands separators ("1,234"), "n/a", and several kernels/launches (one profile per ID).
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from kloop.errors import BadInput
from kloop.profile.names import normalize_kernel_name
from kloop.profile.ncu_metrics import (
    DETAILS_METRICS,
    FIELD_SCALE,
    assign,
    build_launch,
    build_metrics,
    fill_from_rules,
    normalize_raw,
)
from kloop.profile.schema import KernelProfile, Vendor, VendorRule

ID_COLUMN, NAME_COLUMN = "ID", "Kernel Name"
DETAILS_COLUMNS = {"Section Name", "Metric Name"}
#: details page: "Metric Value"; --print-summary pages: "Average" over the kernel's launches
VALUE_COLUMNS = ("Metric Value", "Average")
_TIME_TO_NS = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6, "s": 1e9, "second": 1e9}
_PREFIX = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_PREFIXED = re.compile(r"^([KMGTP])(byte|hz|inst|cycle|sector|warp|thread|request|block|register)(/.*)?$")
_DIMS = re.compile(r"\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)")
_MISSING = {"", "n/a", "N/A", "nan", "-nan", "inf", "-inf"}


def unit_factor(unit: str) -> float:
    """Multiplier from `unit` to kloop's base (time in ns, bytes, hz; SI prefixes are 1000-based)."""
    unit = unit.strip()
    if unit in _TIME_TO_NS:
        return _TIME_TO_NS[unit]
    match = _PREFIXED.match(unit)
    return _PREFIX[match.group(1)] if match else 1.0


def parse_number(text: str) -> float | None:
    """A CSV cell as a float: thousands separators removed; n/a and empty -> None."""
    text = text.strip()
    if text in _MISSING:
        return None
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def _dims(text: str | None) -> tuple[int, int, int] | None:
    match = _DIMS.search(text or "")
    return (int(match.group(1)), int(match.group(2)), int(match.group(3))) if match else None


def split_header(text: str, path: Path) -> tuple[list[str], list[list[str]]]:
    """Skip anything before the CSV header (==PROF== lines, program output) and parse the rest."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.startswith('"ID"') and f'"{NAME_COLUMN}"' in line:
            rows = list(csv.reader(io.StringIO("\n".join(lines[index:]))))
            return rows[0], [r for r in rows[1:] if r and not r[0].startswith("==")]
    raise BadInput(path, "no Nsight Compute CSV header (a line starting with \"ID\" and naming \"Kernel Name\")")


def is_ncu_csv(text: str) -> bool:
    """Cheap content check used by `read` for auto-detection."""
    return any(line.startswith('"ID"') and f'"{NAME_COLUMN}"' in line for line in text.splitlines()[:200])


def read_ncu_csv(path: Path, text: str | None = None) -> list[KernelProfile]:
    """Details or raw page, decided by the header's columns."""
    if text is None:
        text = path.read_text(errors="replace")
    header, rows = split_header(text, path)
    if set(header) >= DETAILS_COLUMNS and any(c in header for c in VALUE_COLUMNS):
        return _read_details(header, rows, path)
    return _read_raw(header, rows, path)


def _common(row: dict[str, str]) -> dict[str, object]:
    cc = (row.get("CC") or "").strip()
    arch = "sm_" + cc.replace(".", "") if re.fullmatch(r"\d+\.\d+", cc) else None
    name = row.get(NAME_COLUMN, "").strip()
    return {"name": name, "normalized_name": normalize_kernel_name(name), "vendor": Vendor.nvidia, "arch": arch}


def _launch_id(row: dict[str, str], path: Path) -> int:
    value = parse_number(row.get(ID_COLUMN, ""))
    if value is None:
        raise BadInput(path, f"row without a numeric ID: {row.get(ID_COLUMN)!r}")
    return int(value)


def _read_details(header: list[str], rows: list[list[str]], path: Path) -> list[KernelProfile]:
    groups: dict[int, list[dict[str, str]]] = {}
    for cells in rows:
        row = dict(zip(header, cells, strict=False))
        groups.setdefault(_launch_id(row, path), []).append(row)
    if not groups:
        raise BadInput(path, "the CSV has a header but no kernel rows")
    return [_details_profile(launch_id, group, path) for launch_id, group in groups.items()]


def _details_profile(launch_id: int, group: list[dict[str, str]], path: Path) -> KernelProfile:
    fields: dict[str, float] = {}
    launch: dict[str, float] = {}
    raw: dict[str, float | str] = {}
    rules: list[VendorRule] = []
    for row in group:
        section, label = row.get("Section Name", ""), row.get("Metric Name", "")
        if row.get("Rule Name"):
            rules.append(_rule(row))
        if not label:
            continue
        cell = next((row[c] for c in VALUE_COLUMNS if c in row), "")
        value = parse_number(cell)
        if value is None:
            raw[f"{section}/{label}"] = cell
            continue
        value *= unit_factor(row.get("Metric Unit", ""))
        raw[f"{section}/{label}"] = value
        field = DETAILS_METRICS.get((section, label))
        if field is not None:
            complement = field.startswith("!")
            field = field.lstrip("!")
            value = 100.0 - value if complement else value * FIELD_SCALE.get(field, 1.0)
            assign(fields, launch, field, value)
    duration = fields.pop("duration_ns", None)
    metrics = fill_from_rules(build_metrics(fields), [(r.name, r.message) for r in rules])
    first = group[0]
    return KernelProfile(
        **_common(first),
        launch_id=launch_id,
        duration_ns=duration,
        launch=build_launch(_dims(first.get("Grid Size")), _dims(first.get("Block Size")), launch),
        metrics=metrics,
        vendor_rules=rules,
        raw=raw,
        source_format="ncu-csv-details",
        source_path=str(path),
    )


def _rule(row: dict[str, str]) -> VendorRule:
    return VendorRule(
        name=row.get("Rule Name", "").strip(),
        section=row.get("Section Name") or None,
        type=(row.get("Rule Type") or "").strip() or "NONE",
        message=(row.get("Rule Description") or "").strip(),
        est_speedup_pct=parse_number(row.get("Estimated Speedup") or ""),
        speedup_type=(row.get("Estimated Speedup Type") or "").strip() or None,
    )


def _read_raw(header: list[str], rows: list[list[str]], path: Path) -> list[KernelProfile]:
    if not rows:
        raise BadInput(path, "the CSV has a header but no kernel rows")
    units: list[str] = [""] * len(header)
    if rows[0] and rows[0][0] == "":
        units, rows = rows[0] + [""] * (len(header) - len(rows[0])), rows[1:]
    first_metric = header.index("CC") + 1 if "CC" in header else header.index(NAME_COLUMN) + 1
    profiles = []
    for cells in rows:
        row = dict(zip(header, cells, strict=False))
        raw: dict[str, float | str] = {}
        for column, unit, cell in zip(header[first_metric:], units[first_metric:], cells[first_metric:], strict=False):
            value = parse_number(cell)
            if value is not None:
                raw[column] = value * unit_factor(unit)
            elif cell.strip() not in _MISSING:
                raw[column] = cell.strip()
        duration, launch, metrics = normalize_raw(raw)
        device = raw.get("device__attribute_display_name")
        profiles.append(
            KernelProfile(
                **_common(row),
                device=device if isinstance(device, str) else None,
                launch_id=_launch_id(row, path),
                duration_ns=duration,
                launch=build_launch(_dims(row.get("Grid Size")), _dims(row.get("Block Size")), launch),
                metrics=metrics,
                raw=raw,
                source_format="ncu-csv-raw",
                source_path=str(path),
            )
        )
    return profiles
