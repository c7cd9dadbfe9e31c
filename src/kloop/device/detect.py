"""Detect the device a verification runs on and attach its peak rates.

Peaks for the physics floor: published numbers for known GPUs (`kloop.device.arch`), and a
short measurement (cached per device) wherever nothing is published, as on every CPU. The
floor must never reject an honest kernel, so each number is an upper bound: the larger of the
published and measured rates, times a safety factor per device kind (see SAFETY_FACTORS).
"""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Any

from kloop.device.paths import device_cache_path
from kloop.device.peaks import load_cached, measure_peaks, store
from kloop.device.schema import DeviceInfo, DeviceKind, DtypeClass, PeakMeasurement
from kloop.errors import BadInput

# kind -> (bandwidth factor, flops factor). CPU: a large copy measures DRAM, but small working
# sets run from L1/L2 at several times that, hence 10x. GPU: the verifier flushes L2 before
# each timed call, yet writes can still land in L2, hence 1.5x; boost clocks and noise, 1.2x.
SAFETY_FACTORS: dict[DeviceKind, tuple[float, float]] = {
    DeviceKind.CPU: (10.0, 2.0),
    DeviceKind.CUDA: (1.5, 1.2),
    DeviceKind.ROCM: (1.5, 1.2),
}

REQUESTS = ("auto", "cpu", "cuda", "rocm", "gpu")
GPU_NODES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd")


def check_request(requested: str) -> str:
    """`--device` as given, when it names a known request (no torch import: for option parsing)."""
    if requested not in REQUESTS:
        raise BadInput("--device", f"unknown device {requested!r}; expected one of {', '.join(REQUESTS)}")
    return requested


def _gpu_kind() -> DeviceKind | None:
    """cuda or rocm when torch sees a GPU (ROCm torch also answers through torch.cuda).

    Without a GPU device node there is no GPU to see, and torch is not imported (fast CPU runs).
    """
    import os

    if not any(os.path.exists(node) for node in GPU_NODES):
        return None
    import torch

    if not torch.cuda.is_available():
        return None
    return DeviceKind.ROCM if getattr(torch.version, "hip", None) else DeviceKind.CUDA


def resolve_kind(requested: str) -> DeviceKind:
    """The device kind for `--device`; asking for a GPU where there is none is bad input."""
    if check_request(requested) == "cpu":
        return DeviceKind.CPU
    gpu = _gpu_kind()
    if requested == "auto":
        return gpu or DeviceKind.CPU
    if gpu is None:
        raise BadInput("--device", f"{requested} requested but torch sees no GPU on this machine")
    if requested == "rocm" and gpu is not DeviceKind.ROCM:
        raise BadInput("--device", "rocm requested but this torch build is not a ROCm build")
    return gpu


def torch_device(requested: str) -> str:
    """The torch device a verification runs on: `cpu`, or `cuda` for both NVIDIA and ROCm torch."""
    return "cpu" if resolve_kind(requested) is DeviceKind.CPU else "cuda"


def _cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo, else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def identify(kind: DeviceKind) -> dict[str, Any]:
    """Name, arch, memory, units and runtime of the current device (no rates)."""
    import psutil
    import torch

    if kind is DeviceKind.CPU:
        return {"name": _cpu_model(), "arch": platform.machine() or "cpu",
                "memory_bytes": int(psutil.virtual_memory().total),
                "compute_units": torch.get_num_threads(), "runtime": None}
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    if kind is DeviceKind.ROCM:
        arch = str(getattr(props, "gcnArchName", "gfx")).split(":")[0]
        runtime = f"hip {torch.version.hip}"
    else:
        arch = f"sm_{props.major}{props.minor}"
        runtime = f"cuda {torch.version.cuda}"
    return {"name": props.name, "arch": arch, "memory_bytes": int(props.total_memory),
            "compute_units": int(props.multi_processor_count), "runtime": runtime}


def device_key(kind: DeviceKind, identity: dict[str, Any], torch_version: str) -> str:
    """Cache key: the same device, runtime and torch (and thread count on a CPU) reuse a measurement."""
    parts = [kind.value, identity["name"], identity["arch"], identity["runtime"] or "-", f"torch-{torch_version}"]
    if kind is DeviceKind.CPU:
        parts.append(f"threads-{identity['compute_units']}")
    return "|".join(parts)


_TFLOPS_KEY_CLASS = {cls.value: cls for cls in DtypeClass}


def published_peaks(arch: str, name: str) -> tuple[float | None, dict[DtypeClass, float]]:
    """Published DRAM GB/s and FLOP/s per class from the arch facts table, when it knows the chip."""
    try:
        from kloop.device.arch import facts_for
    except ModuleNotFoundError as exc:  # the facts table is another capability's; absent means unknown
        if exc.name != "kloop.device.arch":
            raise
        return None, {}
    try:
        facts = facts_for(arch, device_name=name)
    except (KeyError, LookupError, ValueError):
        return None, {}
    if facts is None:
        return None, {}
    flops: dict[DtypeClass, float] = {}
    for key, tflops in (getattr(facts, "peak_tflops", None) or {}).items():
        cls = _TFLOPS_KEY_CLASS.get(str(key).split("_")[0])  # `bf16_tensor` -> bf16
        if cls is not None and tflops:
            flops[cls] = max(flops.get(cls, 0.0), float(tflops) * 1e12)
    # float32 data may legally run on TF32 tensor cores, so its bound is the faster of the two
    if DtypeClass.TF32 in flops:
        flops[DtypeClass.FP32] = max(flops.get(DtypeClass.FP32, 0.0), flops[DtypeClass.TF32])
    bandwidth = getattr(facts, "peak_dram_gbs", None)
    return (float(bandwidth) if bandwidth else None), flops


def combine_peaks(kind: DeviceKind, published_gbs: float | None, published_flops: dict[DtypeClass, float],
                  measurement: PeakMeasurement | None) -> dict[str, Any]:
    """Upper-bound peaks: max(published, measured) per number, times the kind's safety factor."""
    bw_factor, flops_factor = SAFETY_FACTORS[kind]
    bandwidth = max(published_gbs or 0.0, measurement.copy_gbs if measurement else 0.0)
    flops = dict(published_flops)
    for cls, rate in (measurement.matmul_flops if measurement else {}).items():
        flops[cls] = max(flops.get(cls, 0.0), rate)
    if bandwidth <= 0 or not flops:
        raise ValueError("no published or measured peaks")
    sources = [name for name, present in (("published", published_gbs is not None),
                                          ("measured", measurement is not None)) if present]
    return {"peak_bandwidth_gbs": bandwidth * bw_factor,
            "peak_flops": {cls: rate * flops_factor for cls, rate in flops.items()},
            "measured": measurement is not None, "peak_source": "+".join(sources),
            "bandwidth_safety_factor": bw_factor, "flops_safety_factor": flops_factor,
            "measurement": measurement}


def detect(requested: str = "auto", *, remeasure: bool = False, measure: bool = True,
           cache_path: Path | None = None) -> DeviceInfo:
    """The device for `requested` (auto|cpu|cuda|rocm|gpu) with peak rates for the physics floor.

    A cached entry for this device is reused unless `remeasure`. Without one, the device is
    measured (about a second) and stored; `measure=False` skips that where published numbers
    exist (never on a CPU, which has none).
    """
    import torch

    kind = resolve_kind(requested)
    path = cache_path or device_cache_path()
    identity = identify(kind)
    key = device_key(kind, identity, torch.__version__)
    if not remeasure:
        cached = load_cached(path, key)
        if cached is not None:
            return cached
    published_gbs, published_flops = published_peaks(identity["arch"], identity["name"])
    must_measure = remeasure or measure or published_gbs is None or not published_flops
    measurement = measure_peaks(kind) if must_measure else None
    info = DeviceInfo(kind=kind, torch_version=torch.__version__, cache_key=key, **identity,
                      **combine_peaks(kind, published_gbs, published_flops, measurement))
    if measurement is not None:
        store(path, info)
    return info
