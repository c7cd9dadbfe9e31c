"""Per-architecture facts as data: SM/CU counts, register files, shared memory/LDS, peaks.

The numbers live in `archs.yaml` next to this module, each arch with the URLs it came from.
Rules and the physics floor read thresholds from here instead of constants that silently
assume one chip (gfx950 has 64 LDS banks where gfx942 has 32; H200 and H100 share sm_90 but
not their bandwidth).

Public names:
- `ArchFacts`, `PeakTflops`: the pydantic models.
- `facts_for(arch, device_name=None) -> ArchFacts`: facts for an arch, SKU picked by name.
- `arch_from_device_name(name) -> str`: `sm_90` / `gfx942` from what a tool prints.
- `known_archs() -> list[str]`; `UnknownArch` (a `BadInput`) for anything not in the table.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kloop.errors import BadInput

ARCHS_YAML = Path(__file__).with_name("archs.yaml")

_GFX_RE = re.compile(r"\bgfx(9\d[0-9a-f])\b", re.IGNORECASE)
_SM_RE = re.compile(r"\bsm_?(\d{2,3})[a-z]?\b", re.IGNORECASE)


class UnknownArch(BadInput, LookupError):
    """An architecture or device name kloop has no facts for (also a LookupError, for lookups)."""

    def __init__(self, what: str) -> None:
        super().__init__("arch", f"{what}; known: {', '.join(known_archs())}")


class PeakTflops(BaseModel):
    """Dense peak rates in TFLOP/s (TOP/s for int8); None where the chip has no such path."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    fp64: float | None = None
    """FP64 on the vector / CUDA cores."""
    fp64_tensor: float | None = None
    """FP64 on tensor cores / MFMA."""
    fp32: float | None = None
    """FP32 on the vector / CUDA cores (no packed-math doubling)."""
    tf32_tensor: float | None = None
    """TF32 (NVIDIA) / XF32 (gfx942) on tensor cores / MFMA."""
    bf16_tensor: float | None = None
    """BF16 on tensor cores / MFMA."""
    fp16_tensor: float | None = None
    """FP16 on tensor cores / MFMA."""
    fp8_tensor: float | None = None
    """FP8 (e4m3/e5m2) on tensor cores / MFMA."""
    int8_tensor: float | None = None
    """INT8 on tensor cores / MFMA, TOP/s."""

    def items(self) -> list[tuple[str, float]]:
        """(name, TFLOP/s) for every rate the chip has, so callers can treat it as a mapping."""
        return [(k, v) for k, v in self.model_dump().items() if v is not None]


class ArchFacts(BaseModel):
    """What one SKU of one architecture can do; AMD terms mapped onto NVIDIA-shaped names."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    arch: str
    """`sm_80`, `sm_90`, `sm_100`, `gfx908`, `gfx90a`, `gfx942`, `gfx950`."""
    vendor: Literal["nvidia", "amd"]
    """GPU vendor."""
    family: str
    """Marketing architecture name (Hopper, CDNA3, ...)."""
    device: str
    """SKU these numbers are for (`H200 SXM`, `MI300X`)."""
    compute_units: int = Field(gt=0)
    """SMs (NVIDIA) or CUs (AMD) on the device."""
    warp_size: int = Field(gt=0)
    """Threads per warp (32) or wavefront (64)."""
    max_warps_per_unit: int = Field(gt=0)
    """Resident warps per SM / wave slots per CU."""
    max_threads_per_block: int = Field(gt=0)
    """Threads per block / workgroup."""
    max_blocks_per_unit: int | None = None
    """Resident blocks per SM; None where the vendor does not publish a workgroup limit."""
    registers_per_unit: int = Field(gt=0)
    """32-bit registers per SM; AMD: SIMDs x 64 lanes x VGPRs per lane (AGPRs included)."""
    max_registers_per_thread: int = Field(gt=0)
    """Per-thread register ceiling (255 NVIDIA; 512 VGPR+AGPR on CDNA)."""
    simds_per_unit: int | None = None
    """SIMDs per CU (AMD); waves are spread over them."""
    shader_engines: int | None = None
    """Shader engines (AMD; all XCDs together): SQ counters are summed over them."""
    shared_mem_per_unit_bytes: int = Field(gt=0)
    """Shared memory per SM / LDS per CU, bytes."""
    max_shared_mem_per_block_bytes: int = Field(gt=0)
    """Largest shared memory / LDS one block may allocate, bytes."""
    shared_mem_banks: int = Field(gt=0)
    """Shared memory / LDS banks."""
    shared_mem_bank_bytes: int = Field(gt=0)
    """Bytes per bank per cycle."""
    l2_bytes: int | None = None
    """Total L2 bytes (all XCDs)."""
    llc_bytes: int | None = None
    """Last-level cache beyond L2 (AMD Infinity Cache / MALL); None when absent."""
    xcds: int = 1
    """Accelerator complex dies (MI300X 8): per-XCD counters are summed across them."""
    l2_channels: int | None = None
    """L2 (TCC) channels on the device, when known."""
    l2_channels_per_xcd: int | None = None
    """L2 (TCC) channels per XCD (MI300: 16)."""
    peak_dram_gbs: float = Field(gt=0)
    """Peak DRAM/HBM bandwidth, GB/s."""
    peak_tflops: PeakTflops
    """Dense peak arithmetic rates."""
    clock_mhz: float | None = None
    """Peak engine / boost clock, MHz."""
    matrix_instructions: list[str]
    """Tensor-core / MFMA instruction shapes the arch offers."""
    sources: list[str] = Field(min_length=1)
    """Where the numbers come from."""

    @property
    def max_threads_per_unit(self) -> int:
        """Resident threads per SM / CU."""
        return self.max_warps_per_unit * self.warp_size


class _Sku(BaseModel):
    model_config = ConfigDict(extra="allow")
    match: list[str] = Field(min_length=1)


class _ArchEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    vendor: Literal["nvidia", "amd"]
    family: str
    default_device: str
    common: dict[str, Any]
    devices: dict[str, _Sku] = Field(min_length=1)


@cache
def _table() -> dict[str, _ArchEntry]:
    """Load and validate archs.yaml once; a broken table is a packaging error, reported by name."""
    try:
        raw = yaml.safe_load(ARCHS_YAML.read_text())["archs"]
        table = {arch: _ArchEntry.model_validate(entry) for arch, entry in raw.items()}
    except (OSError, KeyError, TypeError, yaml.YAMLError, ValidationError) as exc:
        raise BadInput(ARCHS_YAML, f"arch facts table is malformed: {exc}") from exc
    for arch, entry in table.items():
        if entry.default_device not in entry.devices:
            raise BadInput(ARCHS_YAML, f"{arch}: default_device {entry.default_device!r} not in devices")
    return table


def known_archs() -> list[str]:
    """Every arch the table covers."""
    return list(_table())


def canonical_arch(arch: str) -> str:
    """`SM90`, `sm_90a`, `9.0`, `gfx942:sramecc+:xnack-` -> the table's key (`sm_90`, `gfx942`)."""
    text = arch.strip().lower()
    text = text.split(":", 1)[0]
    if m := re.fullmatch(r"(\d+)\.(\d)", text):
        return f"sm_{m.group(1)}{m.group(2)}"
    if m := re.fullmatch(r"sm_?(\d{2,3})[a-z]?", text):
        return f"sm_{m.group(1)}"
    return text


def _sku_for(entry: _ArchEntry, device_name: str | None) -> str:
    if device_name:
        needle = device_name.lower()
        for sku, spec in entry.devices.items():
            if any(m.lower() in needle for m in spec.match):
                return sku
    return entry.default_device


@cache
def facts_for(arch: str, device_name: str | None = None) -> ArchFacts:
    """Facts for `arch`; `device_name` (as a tool prints it) picks the SKU, else the arch default.

    Raises `UnknownArch` for an arch the table does not cover.
    """
    key = canonical_arch(arch)
    table = _table()
    if key not in table:
        raise UnknownArch(f"no facts for architecture {arch!r}")
    entry = table[key]
    sku = _sku_for(entry, device_name)
    values = {**entry.common, **entry.devices[sku].model_dump(exclude={"match"})}
    try:
        return ArchFacts(arch=key, vendor=entry.vendor, family=entry.family, device=sku, **values)
    except ValidationError as exc:
        raise BadInput(
            ARCHS_YAML, f"{key}/{sku}: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}"
        ) from exc


def arch_from_device_name(name: str) -> str:
    """The arch of a device name as tools print it.

    Accepts marketing names ("NVIDIA H200", "NVIDIA H100 80GB HBM3", "AMD Instinct MI300X",
    rocprof-compute's "MI300X_A1", "MI200"), arch ids ("gfx942", "gfx942:sramecc+:xnack-",
    "sm_90a", "9.0"). Raises `UnknownArch` when nothing matches.
    """
    text = name.strip()
    if m := _GFX_RE.search(text):
        key = f"gfx{m.group(1).lower()}"
        if key in _table():
            return key
    if m := _SM_RE.search(text):
        key = f"sm_{m.group(1)}"
        if key in _table():
            return key
    key = canonical_arch(text)
    if key in _table():
        return key
    needle = text.lower()
    for arch, entry in _table().items():
        for spec in entry.devices.values():
            if any(m.lower() in needle for m in spec.match):
                return arch
    raise UnknownArch(f"cannot tell the architecture of device {name!r}")
