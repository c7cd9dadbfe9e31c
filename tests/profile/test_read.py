"""Format auto-detection by content, and bad input."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kloop.errors import BadInput
from kloop.profile.read import detect_format, read


@pytest.mark.parametrize(
    ("fmt", "name"),
    [("report.ncu-rep", "ncu-rep"), ("details.csv", "ncu-csv"), ("details.base.csv", "ncu-csv"), ("raw.csv", "ncu-csv")],
)
def test_ncu_formats_are_detected_by_content_not_name(h200: Path, tmp_path: Path, fmt: str, name: str) -> None:
    disguised = tmp_path / "report.dat"
    shutil.copy(h200 / "copy_vec4" / fmt, disguised)
    assert detect_format(disguised).name == name
    assert read(disguised)[0].normalized_name == "copy_vec4"


def test_amd_formats_are_detected(shared_fixtures: Path) -> None:
    amd = shared_fixtures / "amd"
    assert detect_format(amd / "rocprofv3" / "counter_collection.csv").name == "rocprofv3-csv"
    assert detect_format(amd / "rocprofv3" / "kernel_trace.csv").name == "rocprofv3-csv"
    assert detect_format(amd / "rocprof-compute" / "vcopy" / "MI200").name == "rocprof-compute"
    assert detect_format(amd / "rocprof-compute" / "vcopy").name == "rocprof-compute"


def test_rocprofv3_header_variants_are_detected(shared_fixtures: Path, tmp_path: Path) -> None:
    """Older rocprof spellings (Kernel-Name, Dispatch_ID) must still be recognised and read."""
    text = (shared_fixtures / "amd" / "rocprofv3" / "kernel_trace.csv").read_text()
    header, rest = text.split("\n", 1)
    variant = tmp_path / "trace.csv"
    variant.write_text(header.replace("Kernel_Name", "Kernel-Name").replace("Dispatch_Id", "Dispatch_ID") + "\n" + rest)
    assert detect_format(variant).name == "rocprofv3-csv"
    assert len(read(variant)) == len(read(shared_fixtures / "amd" / "rocprofv3" / "kernel_trace.csv"))


def test_unknown_inputs_are_bad_input(tmp_path: Path) -> None:
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "text").write_text("just some program output\n")
    (tmp_path / "folder").mkdir()
    for name, message in (("empty", "empty file"), ("text", "unrecognised"), ("folder", "unrecognised"), ("absent", "no such")):
        with pytest.raises(BadInput, match=message):
            read(tmp_path / name)


def test_a_collect_output_folder_reads_its_single_report(h200: Path, tmp_path: Path) -> None:
    shutil.copy(h200 / "heavy_regs" / "report.ncu-rep", tmp_path / "profile.ncu-rep")
    (tmp_path / "digest.md").write_text("## heavy_regs\n")
    assert read(tmp_path)[0].normalized_name == "heavy_regs"
    shutil.copy(h200 / "fma_bound" / "report.ncu-rep", tmp_path / "second.ncu-rep")
    with pytest.raises(BadInput, match="unrecognised"):
        read(tmp_path)
