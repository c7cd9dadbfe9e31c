"""`kloop doctor` through the real command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

KLOOP = [sys.executable, "-m", "kloop.cli"]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("doctor-home")


def _doctor(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KLOOP_HOME": str(home)}
    return subprocess.run([*KLOOP, "doctor", *args], capture_output=True, text=True, env=env, timeout=300, check=False)


def test_doctor_json_has_device_tools_and_rates(home: Path) -> None:
    done = _doctor(home, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    device = report["device"]
    for field in ("kind", "name", "arch", "memory_bytes", "peak_bandwidth_gbs", "peak_flops", "measured",
                  "measurement", "cache_key"):
        assert field in device
    assert device["measurement"]["copy_gbs"] > 0 and device["peak_flops"]
    for name in ("nvcc", "hipcc", "triton", "ncu", "rocprofv3", "rocprof-compute", "compute-sanitizer", "gcc"):
        assert set(report["tools"][name]) == {"role", "path", "version"}
    assert report["environment"]["kloop_home"] == str(home)
    cache = json.loads((home / "device-cache.json").read_text())
    assert device["cache_key"] in cache["entries"]


def test_doctor_table_reuses_the_cache(home: Path) -> None:
    if not (home / "device-cache.json").exists():  # under xdist the JSON test may have run on another worker
        assert _doctor(home, "--json").returncode == 0
    before = (home / "device-cache.json").read_text()
    done = _doctor(home)
    assert done.returncode == 0, done.stderr
    for word in ("device", "peak rates", "bandwidth", "toolchains and profilers", "nvcc", "triton"):
        assert word in done.stdout
    assert (home / "device-cache.json").read_text() == before


def test_doctor_bad_device_is_one_line_exit_2(home: Path) -> None:
    done = _doctor(home, "--device", "tpu")
    assert done.returncode == 2
    assert done.stderr.strip() == "kloop: error: --device: unknown device 'tpu'; expected one of auto, cpu, cuda, rocm, gpu"
