"""Device detection on this machine: real measurement, the per-device cache, bad requests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from kloop.device import SAFETY_FACTORS, DeviceInfo, DeviceKind, DtypeClass, resolve_kind
from kloop.device.detect import detect
from kloop.errors import BadInput


@pytest.fixture(scope="module")
def cache_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kloop-home") / "device-cache.json"


@pytest.fixture(scope="module")
def cpu_info(cache_file: Path) -> DeviceInfo:
    return detect("cpu", cache_path=cache_file)


def test_cpu_is_measured_and_bounded(cpu_info: DeviceInfo) -> None:
    assert cpu_info.kind is DeviceKind.CPU and cpu_info.measured and cpu_info.peak_source == "measured"
    m = cpu_info.measurement
    assert m is not None and m.copy_gbs > 0.1 and m.matmul_flops[DtypeClass.FP32] > 1e8
    assert m.threads == torch.get_num_threads() == cpu_info.compute_units
    bw_factor, flops_factor = SAFETY_FACTORS[DeviceKind.CPU]
    assert cpu_info.peak_bandwidth_gbs == pytest.approx(m.copy_gbs * bw_factor)
    assert cpu_info.peak_flops[DtypeClass.FP32] == pytest.approx(m.matmul_flops[DtypeClass.FP32] * flops_factor)
    assert cpu_info.memory_bytes > 2**28 and cpu_info.name and cpu_info.arch


def test_measurement_is_cached_per_device_and_reused(cpu_info: DeviceInfo, cache_file: Path) -> None:
    data = json.loads(cache_file.read_text())
    assert list(data["entries"]) == [cpu_info.cache_key] and f"threads-{cpu_info.compute_units}" in cpu_info.cache_key
    again = detect("cpu", cache_path=cache_file)
    assert again == cpu_info  # same timestamp and rates: read back, not measured again


def test_remeasure_replaces_the_entry(cpu_info: DeviceInfo, cache_file: Path) -> None:
    fresh = detect("cpu", cache_path=cache_file, remeasure=True)
    assert fresh.measurement != cpu_info.measurement
    stored = json.loads(cache_file.read_text())["entries"][fresh.cache_key]
    assert DeviceInfo.model_validate(stored) == fresh


def test_corrupt_cache_counts_as_empty(tmp_path: Path) -> None:
    cache_file = tmp_path / "device-cache.json"
    cache_file.write_text("{not json")
    info = detect("cpu", cache_path=cache_file)
    assert info.measured and json.loads(cache_file.read_text())["entries"][info.cache_key]


def test_peak_flops_falls_back_to_the_largest_known(cpu_info: DeviceInfo) -> None:
    fp32 = cpu_info.peak_flops[DtypeClass.FP32]
    assert cpu_info.peak_flops_for("float32") == fp32 == cpu_info.peak_flops_for("torch.float32")
    assert cpu_info.peak_flops_for("bfloat16") == max(cpu_info.peak_flops.values())


@pytest.mark.parametrize(("requested", "expected"), [
    ("tpu", "unknown device 'tpu'"),
    ("cuda", "cuda requested but torch sees no GPU"),
])
def test_bad_requests_are_bad_input(requested: str, expected: str) -> None:
    if requested == "cuda" and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(BadInput, match=expected) as caught:
        resolve_kind(requested)
    assert caught.value.where == "--device"


def test_auto_picks_what_torch_sees() -> None:
    expected = DeviceKind.CPU if not torch.cuda.is_available() else (
        DeviceKind.ROCM if torch.version.hip else DeviceKind.CUDA)
    assert resolve_kind("auto") is expected


@pytest.mark.gpu
def test_gpu_detection_has_published_and_measured_peaks(tmp_path: Path) -> None:
    info = detect("cuda", cache_path=tmp_path / "device-cache.json")
    assert info.kind in (DeviceKind.CUDA, DeviceKind.ROCM) and info.measured
    assert info.arch.startswith(("sm_", "gfx")) and info.compute_units and info.compute_units > 1
    assert info.measurement is not None and DtypeClass.BF16 in info.measurement.matmul_flops
    assert info.peak_bandwidth_gbs >= info.measurement.copy_gbs


def test_published_peaks_come_from_the_arch_facts() -> None:
    from kloop.device.arch import facts_for
    from kloop.device.detect import published_peaks

    facts = facts_for("sm_90", device_name="NVIDIA H200")
    bandwidth, flops = published_peaks("sm_90", "NVIDIA H200")
    assert bandwidth == facts.peak_dram_gbs
    assert flops[DtypeClass.BF16] == facts.peak_tflops.bf16_tensor * 1e12
    # float32 may run on TF32 tensor cores: its bound must cover that path
    assert flops[DtypeClass.FP32] == max(facts.peak_tflops.fp32, facts.peak_tflops.tf32_tensor) * 1e12
    assert published_peaks("x86_64", "AMD EPYC") == (None, {})


def test_bounds_take_the_larger_of_published_and_measured() -> None:
    from kloop.device import PeakMeasurement
    from kloop.device.detect import combine_peaks

    published = {DtypeClass.BF16: 900e12}
    only_published = combine_peaks(DeviceKind.CUDA, 4800.0, published, None)
    bw_factor, flops_factor = SAFETY_FACTORS[DeviceKind.CUDA]
    assert only_published["peak_bandwidth_gbs"] == 4800.0 * bw_factor and not only_published["measured"]
    assert only_published["peak_source"] == "published"
    faster = PeakMeasurement(copy_gbs=5000.0, copy_bytes=2 << 30, matmul_flops={DtypeClass.BF16: 700e12,
                             DtypeClass.FP32: 50e12}, matmul_n=8192, threads=1, seconds=0.5, measured_at="now")
    both = combine_peaks(DeviceKind.CUDA, 4800.0, published, faster)
    assert both["peak_bandwidth_gbs"] == 5000.0 * bw_factor and both["peak_source"] == "published+measured"
    assert both["peak_flops"][DtypeClass.BF16] == 900e12 * flops_factor
    assert both["peak_flops"][DtypeClass.FP32] == 50e12 * flops_factor
    with pytest.raises(ValueError, match="no published or measured peaks"):
        combine_peaks(DeviceKind.CPU, None, {}, None)


def test_one_list_of_device_names_for_every_command(tmp_path: Path) -> None:
    """verify, run and the profiler choice take the same names; a misspelt one is one line, exit 2."""
    import subprocess
    import sys

    from kloop.device.detect import REQUESTS, check_request
    from kloop.loop.services import VendorProfiler
    from kloop.verify.result import VerifyOptions

    assert {"auto", "cpu", "cuda", "rocm"} <= set(REQUESTS)
    assert all(VerifyOptions(device=name).device == name for name in REQUESTS)
    with pytest.raises(BadInput, match="unknown device 'tpu'"):
        check_request("tpu")
    examples = Path(__file__).resolve().parents[2] / "examples" / "rmsnorm"
    for name, message in (("tpu", "unknown device 'tpu'"), ("rocm", "rocm requested but")):
        if name == "rocm" and resolve_kind("auto") is DeviceKind.ROCM:
            continue  # a ROCm machine accepts it: the GPU suite verifies there
        proc = subprocess.run([sys.executable, "-m", "kloop.cli", "verify", str(examples), str(examples / "baseline"),
                               "--device", name, "--no-timing"], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    if resolve_kind("auto") is not DeviceKind.ROCM:
        assert VendorProfiler("rocm")._tool() is None  # no ROCm device: nothing to profile with
