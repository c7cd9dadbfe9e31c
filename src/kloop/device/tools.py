"""Which compilers, profilers and checkers exist here, and their versions.

Found on PATH first, then in the usual CUDA and ROCm install folders. Versions come from each
tool's own `--version` (cached per process: build cache keys ask for them on every build).
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import re
import shutil
import subprocess
from pathlib import Path

from kloop.device.schema import ToolInfo

# command -> role; the order is the order `kloop doctor` shows them in
EXECUTABLES: dict[str, str] = {
    "gcc": "compiler",
    "nvcc": "compiler",
    "hipcc": "compiler",
    "ninja": "build",
    "ncu": "profiler",
    "nsys": "profiler",
    "rocprofv3": "profiler",
    "rocprof-compute": "profiler",
    "compute-sanitizer": "checker",
}

# Python packages kloop uses as toolchains (distribution names tried in order)
PYTHON_PACKAGES: dict[str, tuple[str, ...]] = {
    "triton": ("triton", "pytorch-triton", "pytorch-triton-rocm"),
    "tvm-ffi": ("apache-tvm-ffi",),
}

_VERSION = re.compile(r"\b[vV]?(\d+\.\d+(?:\.\d+)*)")
_VERSION_TIMEOUT_S = 20


def _extra_dirs() -> list[Path]:
    """Install folders searched after PATH (CUDA_HOME, ROCM_PATH, their defaults)."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda",
             os.environ.get("ROCM_PATH"), "/opt/rocm"]
    return [Path(root) / "bin" for root in roots if root]


@functools.cache
def which(name: str) -> str | None:
    """Absolute path of an executable, or None."""
    found = shutil.which(name)
    if found:
        return found
    for folder in _extra_dirs():
        candidate = folder / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


@functools.cache
def version_text(name: str) -> str | None:
    """The full `--version` output of an executable (stable text for cache keys), or None."""
    path = which(name)
    if path is None:
        return None
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True,
                              timeout=_VERSION_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (done.stdout or "") + (done.stderr or "")
    return text.strip() or None


def _parse_version(text: str | None) -> str | None:
    """The first dotted version number in a tool's output."""
    if not text:
        return None
    # prefer a line that names a release or version; else the first dotted number anywhere
    for line in text.splitlines():
        if re.search(r"release|version|\)\s", line, re.IGNORECASE):
            numbers = _VERSION.findall(line)
            if numbers:  # `release 13.0, V13.0.88`: the most specific number wins
                return max(numbers, key=len)
    match = _VERSION.search(text)
    return match.group(1) if match else None


def python_package_version(name: str) -> str | None:
    """Installed version of a Python toolchain package, without importing it."""
    for dist in PYTHON_PACKAGES.get(name, (name,)):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def describe_tools(*, with_versions: bool = True) -> list[ToolInfo]:
    """Every tool kloop knows of, found or not."""
    found: list[ToolInfo] = []
    for name, role in EXECUTABLES.items():
        path = which(name)
        version = _parse_version(version_text(name)) if (path and with_versions) else None
        found.append(ToolInfo(name=name, role=role, path=path, version=version))
    for name in PYTHON_PACKAGES:
        version = python_package_version(name)
        found.append(ToolInfo(name=name, role="python", path=None, version=version))
    return found


def tools() -> dict[str, str | None]:
    """Tool name -> where it is (executables) or its version (Python packages); None if absent."""
    table: dict[str, str | None] = {name: which(name) for name in EXECUTABLES}
    for name in PYTHON_PACKAGES:
        table[name] = python_package_version(name)
    return table
