"""What a device is and how fast it can go, as pydantic models (no torch import).

`peak_bandwidth_gbs` and `peak_flops` are the numbers the verifier's physics floor divides by:
an upper bound on what the device can do, so a latency below bytes / bandwidth is impossible.
They are the published peak (GPUs with known facts) or the measured rate times a safety factor,
never less than what was measured.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class DeviceKind(StrEnum):
    """Which kind of device runs the candidate."""

    CPU = "cpu"
    CUDA = "cuda"
    ROCM = "rocm"


class DtypeClass(StrEnum):
    """The arithmetic classes peak rates are quoted for."""

    FP64 = "fp64"
    FP32 = "fp32"
    TF32 = "tf32"
    FP16 = "fp16"
    BF16 = "bf16"
    FP8 = "fp8"
    INT8 = "int8"


# torch dtype name -> the class its peak rate is quoted for (data, not an if-chain)
DTYPE_CLASS_OF: dict[str, DtypeClass] = {
    "float64": DtypeClass.FP64,
    "float32": DtypeClass.FP32,
    "float16": DtypeClass.FP16,
    "bfloat16": DtypeClass.BF16,
    "float8_e4m3fn": DtypeClass.FP8,
    "float8_e5m2": DtypeClass.FP8,
    "float8_e4m3fnuz": DtypeClass.FP8,
    "float8_e5m2fnuz": DtypeClass.FP8,
    "int8": DtypeClass.INT8,
    "uint8": DtypeClass.INT8,
}


class _Model(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")


class PeakMeasurement(_Model):
    """One short measurement of the device's copy bandwidth and matmul rate."""

    copy_gbs: float = Field(gt=0)
    """Best large-copy rate, GB/s counting bytes read plus bytes written."""
    copy_bytes: int = Field(gt=0)
    """Size of the copied buffer in bytes (large enough to miss the caches)."""
    matmul_flops: dict[DtypeClass, float]
    """Best measured matmul rate per dtype class, FLOP/s (fp32 on CPU; bf16 and fp32 on GPU)."""
    matmul_n: int = Field(gt=0)
    """Square matmul size used."""
    threads: int = Field(ge=1)
    """torch intra-op threads during the measurement (CPU rates scale with it)."""
    seconds: float = Field(ge=0)
    """How long the measurement took."""
    measured_at: str
    """UTC timestamp (ISO 8601)."""


class DeviceInfo(_Model):
    """The device a verification runs on, with the peak rates its physics floor uses."""

    kind: DeviceKind
    """cpu, cuda (NVIDIA) or rocm (AMD, torch.version.hip set)."""
    name: str
    """Marketing name (`NVIDIA H200`) or the CPU model."""
    arch: str
    """`sm_90`, `gfx942`, or the CPU machine type (`x86_64`)."""
    memory_bytes: int = Field(ge=0)
    """Device memory (host RAM on the CPU)."""
    compute_units: int | None = None
    """SMs, CUs or CPU threads available to torch."""
    runtime: str | None = None
    """CUDA / HIP runtime version torch was built with; None on the CPU."""
    torch_version: str
    """torch.__version__ at detection time."""
    peak_bandwidth_gbs: float = Field(gt=0)
    """Upper bound on memory bandwidth for the physics floor, GB/s (read + write)."""
    peak_flops: dict[DtypeClass, float]
    """Upper bound on arithmetic rate per dtype class, FLOP/s."""
    measured: bool
    """True when the peaks come from (or were raised by) a measurement on this machine."""
    peak_source: str
    """Where the peaks come from: `published` (arch facts), `measured`, or both."""
    bandwidth_safety_factor: float = Field(ge=1)
    """Measured copy rate is multiplied by this to bound what caches can deliver."""
    flops_safety_factor: float = Field(ge=1)
    """Measured matmul rate is multiplied by this (clock boost, timing noise)."""
    measurement: PeakMeasurement | None = None
    """The raw measurement, when one was made."""
    cache_key: str
    """Key of this device in the device cache (name, runtime, torch version, threads)."""

    def peak_flops_for(self, dtype: str | DtypeClass) -> float:
        """Peak FLOP/s for a dtype class or torch dtype name; the largest known when unlisted.

        Falling back to the largest rate keeps the floor an upper bound (lenient, never unfair).
        """
        key = dtype if isinstance(dtype, DtypeClass) else DTYPE_CLASS_OF.get(dtype.removeprefix("torch."))
        if key is None and isinstance(dtype, str) and dtype in DtypeClass._value2member_map_:
            key = DtypeClass(dtype)
        if key is not None and key in self.peak_flops:
            return self.peak_flops[key]
        return max(self.peak_flops.values())


class ToolInfo(_Model):
    """One external tool kloop may call."""

    name: str
    """Command name (`nvcc`, `ncu`, ...) or Python package (`triton`)."""
    role: str
    """compiler, profiler, checker, build or python."""
    path: str | None = None
    """Where it was found; None when absent."""
    version: str | None = None
    """Version string it reports; None when absent or silent."""
