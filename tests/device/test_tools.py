"""Tool discovery against the real binaries on this machine."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from kloop.device import describe_tools
from kloop.device.tools import EXECUTABLES, PYTHON_PACKAGES, _parse_version, tools


def test_tools_lists_every_known_tool() -> None:
    table = tools()
    assert set(EXECUTABLES) | set(PYTHON_PACKAGES) == set(table) and "triton" in table
    for name in EXECUTABLES:
        assert table[name] == shutil.which(name) or (table[name] and not shutil.which(name))


def test_gcc_version_matches_gcc_itself() -> None:
    if shutil.which("gcc") is None:
        pytest.skip("no gcc")
    dumped = subprocess.run(["gcc", "-dumpfullversion"], capture_output=True, text=True, check=True).stdout.strip()
    gcc = next(tool for tool in describe_tools() if tool.name == "gcc")
    assert gcc.version == dumped and gcc.role == "compiler"


def test_missing_tools_have_no_version() -> None:
    for tool in describe_tools():
        if tool.role != "python" and tool.path is None:
            assert tool.version is None


@pytest.mark.parametrize(("text", "expected"), [
    ("nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025\nCuda compilation tools, release 13.0, V13.0.88",
     "13.0.88"),
    ("NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c) 2018-2025\nVersion 2025.3.1.0 (build 36398880)",
     "2025.3.1.0"),
    ("gcc (Debian 12.2.0-14+deb12u1) 12.2.0\nCopyright (C) 2022", "12.2.0"),
    ("HIP version: 6.4.43482-0f2d60242\nAMD clang version 19.0.0git", "6.4.43482"),
    ("", None),
])
def test_version_parsing(text: str, expected: str | None) -> None:
    assert _parse_version(text) == expected
