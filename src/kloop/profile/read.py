"""`read(path)`: any supported profiler output -> one `KernelProfile` per launch, format by content.

Formats form a registry: each has a content sniffer and a reader named by module and function, so
the AMD readers (rocprofv3, rocpd, rocprof-compute) plug in without this file knowing their code.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kloop.errors import BadInput
from kloop.profile.schema import KernelProfile

SQLITE_MAGIC = b"SQLite format 3\x00"
NCU_REP_MAGIC = b"NVR\x00"
SNIFF_BYTES = 8192


@dataclass(frozen=True)
class ReportFormat:
    """A profiler output format: how to recognise it and which function reads it."""

    name: str
    sniff: Callable[[Path, bytes], bool]
    module: str
    functions: tuple[str, ...]


def _rocprofv3_csv(path: Path, head: bytes) -> bool:
    from kloop.profile.rocprofv3 import is_rocprofv3_csv

    return path.is_file() and is_rocprofv3_csv(head.decode("utf-8", errors="replace"))


def _rocpd(path: Path, head: bytes) -> bool:
    from kloop.profile.rocpd import is_rocpd

    return head.startswith(SQLITE_MAGIC) and is_rocpd(path)


def _rocprof_compute(path: Path, head: bytes) -> bool:
    from kloop.profile.rocprof_compute import is_rocprof_compute_folder

    return path.is_dir() and is_rocprof_compute_folder(path)


def _ncu_csv(path: Path, head: bytes) -> bool:
    from kloop.profile.ncu_csv import is_ncu_csv

    return is_ncu_csv(head.decode("utf-8", errors="replace"))


FORMATS: tuple[ReportFormat, ...] = (
    ReportFormat("ncu-rep", lambda p, h: h.startswith(NCU_REP_MAGIC), "kloop.profile.ncu_rep", ("read_ncu_rep",)),
    ReportFormat("rocpd", _rocpd, "kloop.profile.rocpd", ("read_rocpd",)),
    ReportFormat("rocprof-compute", _rocprof_compute, "kloop.profile.rocprof_compute", ("read_rocprof_compute",)),
    ReportFormat("ncu-csv", _ncu_csv, "kloop.profile.ncu_csv", ("read_ncu_csv",)),
    ReportFormat("rocprofv3-csv", _rocprofv3_csv, "kloop.profile.rocprofv3", ("read_rocprofv3_csv",)),
)


def detect_format(path: Path) -> ReportFormat:
    """The format of `path` by its content; BadInput when nothing matches."""
    if not path.exists():
        raise BadInput(path, "no such file or directory")
    head = b""
    if path.is_file():
        with path.open("rb") as handle:
            head = handle.read(SNIFF_BYTES)
        if not head:
            raise BadInput(path, "empty file")
    for fmt in FORMATS:
        if fmt.sniff(path, head):
            return fmt
    raise BadInput(
        path,
        "unrecognised profiler output (expected .ncu-rep, ncu --csv, rocprofv3 CSV, rocpd SQLite "
        "or a rocprof-compute workload folder)",
    )


def _reader(fmt: ReportFormat, path: Path) -> Callable[[Path], list[KernelProfile]]:
    try:
        module = importlib.import_module(fmt.module)
    except ModuleNotFoundError as exc:
        if exc.name != fmt.module:
            raise
        raise BadInput(path, f"{fmt.name} output recognised but its reader ({fmt.module}) is not installed") from exc
    for name in fmt.functions:
        function = getattr(module, name, None)
        if callable(function):
            return function
    raise BadInput(path, f"{fmt.name} reader {fmt.module} has none of {', '.join(fmt.functions)}")


def _single_report_in(folder: Path) -> Path:
    """A `collect` output folder holding exactly one .ncu-rep means that report."""
    if folder.is_dir():
        reports = sorted(folder.glob("*.ncu-rep"))
        if len(reports) == 1:
            return reports[0]
    return folder


def read(path: str | Path) -> list[KernelProfile]:
    """Every kernel launch in `path` as a normalized profile (at least one, else BadInput)."""
    path = _single_report_in(Path(path))
    fmt = detect_format(path)
    profiles = _reader(fmt, path)(path)
    if not profiles:
        raise BadInput(path, f"{fmt.name} output contains no kernel launches")
    return profiles
