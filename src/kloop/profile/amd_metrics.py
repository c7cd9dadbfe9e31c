"""AMD counters -> one normalized `KernelProfile`: the step every AMD reader shares.

The readers (rocprofv3 CSV, rocpd SQLite, rocprof-compute folders) only parse their format into
an `AmdDispatch` (launch + counters) and an `AmdDevice` (what ran it); `build_profile` then
evaluates the formula table in `amd_metrics.yaml` and the occupancy model below, so every AMD
format yields the same metrics from the same counters.

Public names: `AmdDispatch`, `AmdDevice`, `device_from_facts`, `build_profile`,
`sum_instances` (TCC_HIT[0..n] -> TCC_HIT_sum), `duration_from_timestamps`, `occupancy_limits`,
`evaluate_formulas`, `parse_formula`, `evaluate_formula`.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from kloop.errors import BadInput
from kloop.profile.names import normalize_kernel_name
from kloop.profile.schema import KernelProfile, LaunchConfig, NormalizedMetrics, StallReason, Vendor

FORMULAS_YAML = Path(__file__).with_name("amd_metrics.yaml")
_INSTANCE = re.compile(r"^(?P<base>.+)\[(?P<index>\d+)\]$")
_EXACT_INT = re.compile(r"^\s*\d+\s*$")


@dataclass(frozen=True)
class AmdDevice:
    """The GPU a dispatch ran on, with the numbers the formulas divide by (None = unknown)."""

    arch: str | None = None
    name: str | None = None
    cu: int | None = None
    se: int | None = None
    xcds: int = 1
    simds_per_cu: int = 4
    sclk_mhz: float | None = None
    peak_dram_gbs: float | None = None
    l2_channels: int | None = None
    l2_bytes_per_clk: int | None = None
    wave_size: int = 64
    max_waves_per_cu: int | None = None
    lds_bytes_per_cu: int | None = None
    vgprs_per_simd_lane: int = 512
    agprs_separate: bool = False

    def context(self) -> dict[str, float]:
        """The known numbers under the names the formula table uses."""
        values = {
            "cu": self.cu,
            "se": self.se,
            "xcds": self.xcds,
            "sclk_mhz": self.sclk_mhz,
            "peak_dram_gbs": self.peak_dram_gbs,
            "l2_channels": self.l2_channels,
            "l2_bytes_per_clk": self.l2_bytes_per_clk,
            "wave_size": self.wave_size,
            "max_waves_per_cu": self.max_waves_per_cu,
        }
        return {k: float(v) for k, v in values.items() if v is not None}


@dataclass
class AmdDispatch:
    """One kernel dispatch as an AMD tool recorded it: launch shape and summed counters."""

    name: str
    dispatch_id: int | None = None
    duration_ns: float | None = None
    grid_items: tuple[int, int, int] | None = None
    workgroup: tuple[int, int, int] | None = None
    lds_bytes: int | None = None
    scratch_bytes_per_item: int | None = None
    arch_vgpr: int | None = None
    accum_vgpr: int | None = None
    sgpr: int | None = None
    counters: dict[str, float] = field(default_factory=dict)
    extra: dict[str, float | str] = field(default_factory=dict)


def device_from_facts(arch: str | None, device_name: str | None = None, **overrides: Any) -> AmdDevice:
    """An `AmdDevice` from kloop's arch facts, with what the tool itself reported overriding them.

    An arch kloop has no facts for still yields a device (metrics needing peaks stay unknown).
    """
    from kloop.device.arch import UnknownArch, arch_from_device_name, facts_for

    if arch is None and device_name:
        try:
            arch = arch_from_device_name(device_name)
        except UnknownArch:
            arch = None
    base = AmdDevice(arch=arch, name=device_name)
    if arch:
        try:
            facts = facts_for(arch, device_name)
        except UnknownArch:
            facts = None
        if facts is not None and facts.vendor == "amd":
            channels = facts.l2_channels or (
                facts.l2_channels_per_xcd * facts.xcds if facts.l2_channels_per_xcd else None
            )
            base = replace(
                base,
                name=device_name or facts.device,
                cu=facts.compute_units,
                se=facts.shader_engines,
                xcds=facts.xcds,
                simds_per_cu=facts.simds_per_unit or 4,
                sclk_mhz=facts.clock_mhz,
                peak_dram_gbs=facts.peak_dram_gbs,
                l2_channels=channels,
                wave_size=facts.warp_size,
                max_waves_per_cu=facts.max_warps_per_unit,
                lds_bytes_per_cu=facts.shared_mem_per_unit_bytes,
                agprs_separate=arch == "gfx908",
            )
        params = _table()["arch_params"].get(arch, {})
        base = replace(base, l2_bytes_per_clk=params.get("l2_bytes_per_clk"))
    known = {k: v for k, v in overrides.items() if v is not None}
    return replace(base, **known)


def sum_instances(values: Mapping[str, float]) -> dict[str, float]:
    """Counters with `X_sum` filled from `X[0..n]` and from a bare, already summed `X`.

    rocprof-compute writes both `TCC_HIT[i]` and (usually) `TCC_HIT_sum`; rocprofv3 writes
    `TCC_HIT` summed over instances. Existing `_sum` columns win: they are the tool's own sum.
    """
    out = {k: v for k, v in values.items() if not _INSTANCE.match(k)}
    sums: dict[str, float] = {}
    for key, value in values.items():
        if m := _INSTANCE.match(key):
            sums[m["base"]] = sums.get(m["base"], 0.0) + value
    for base, total in sums.items():
        out.setdefault(f"{base}_sum", total)
        out.setdefault(base, total)
    for key in [k for k in out if not k.endswith("_sum")]:
        out.setdefault(f"{key}_sum", out[key])
    return out


def duration_from_timestamps(start: str | float | None, end: str | float | None) -> float | None:
    """End - Start in ns, or None when either is missing or lossy (`1.62068E+14` has no ns left)."""
    if start is None or end is None:
        return None
    if isinstance(start, str) or isinstance(end, str):
        if not (_EXACT_INT.match(str(start)) and _EXACT_INT.match(str(end))):
            return None
        start, end = int(start), int(end)
    delta = float(end) - float(start)
    return delta if delta > 0 else None


# ---- the formula table -------------------------------------------------------------------------

_BINOPS: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_FUNCS: dict[str, Callable[..., float]] = {"max": max, "min": min}


class _Missing(Exception):
    """An input of the formula is absent or a division by zero: try the next alternative."""


def _check(node: ast.AST, where: str) -> None:
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.USub, ast.Constant, ast.Name, ast.Load, ast.Call)
    for child in ast.walk(node):
        if isinstance(child, ast.operator) and type(child) not in _BINOPS:
            raise BadInput(FORMULAS_YAML, f"{where}: operator {type(child).__name__} not allowed")
        if not isinstance(child, allowed + tuple(_BINOPS)):
            raise BadInput(FORMULAS_YAML, f"{where}: {type(child).__name__} not allowed in a formula")
        if isinstance(child, ast.Call) and not (isinstance(child.func, ast.Name) and child.func.id in _FUNCS):
            raise BadInput(FORMULAS_YAML, f"{where}: only max()/min() may be called")


def _evaluate(node: ast.AST, env: Mapping[str, float]) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body, env)
    if isinstance(node, ast.Constant):
        return float(node.value)
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise _Missing(node.id)
        return env[node.id]
    if isinstance(node, ast.UnaryOp):
        return -_evaluate(node.operand, env)
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        return _FUNCS[node.func.id](*(_evaluate(arg, env) for arg in node.args))
    assert isinstance(node, ast.BinOp)
    left, right = _evaluate(node.left, env), _evaluate(node.right, env)
    if isinstance(node.op, ast.Div) and right == 0:
        raise _Missing("division by zero")
    return _BINOPS[type(node.op)](left, right)


def parse_formula(text: str, where: str) -> ast.Expression:
    """A formula as a checked expression tree: numbers, names, + - * /, max() and min() only."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise BadInput(FORMULAS_YAML, f"{where}: {exc.msg} in {text!r}") from exc
    _check(tree, where)
    return tree


def evaluate_formula(tree: ast.Expression, env: Mapping[str, float]) -> float | None:
    """The value of a parsed formula, or None when an input is missing or a divisor is zero."""
    try:
        return _evaluate(tree, env)
    except _Missing:
        return None


@cache
def _table() -> dict[str, Any]:
    """amd_metrics.yaml with every formula parsed and checked once (a bad table fails loudly)."""
    try:
        raw = yaml.safe_load(FORMULAS_YAML.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise BadInput(FORMULAS_YAML, f"cannot read the AMD formula table: {exc}") from exc

    def parse(name: str, alternatives: list[str]) -> list[ast.Expression]:
        return [parse_formula(str(text), name) for text in alternatives]

    return {
        "arch_params": raw.get("arch_params", {}),
        "duration_fallback": parse("duration_fallback_ns", raw["duration_fallback_ns"]),
        "formulas": {name: parse(name, alts) for name, alts in raw["formulas"].items()},
        "stalls": {StallReason(name): parse(name, alts) for name, alts in raw.get("stalls", {}).items()},
    }


def _first(alternatives: list[ast.Expression], env: Mapping[str, float]) -> float | None:
    for tree in alternatives:
        try:
            value = _evaluate(tree, env)
        except _Missing:
            continue
        if math.isfinite(value):
            return value
    return None


def evaluate_formulas(counters: Mapping[str, float], context: Mapping[str, float]) -> dict[str, float]:
    """Every formula of the table that the counters and context allow, in table order."""
    env: dict[str, float] = {**counters, **context}
    results: dict[str, float] = {}
    for name, alternatives in _table()["formulas"].items():
        value = _first(alternatives, env)
        if value is not None:
            env[name] = results[name] = value
    return results


def stall_fractions(counters: Mapping[str, float]) -> dict[StallReason, float]:
    """Fractions of wave cycles per vendor-neutral stall reason, scaled to sum to at most 1.

    The counters may come from different hardware passes, so their sum can overshoot slightly.
    """
    out: dict[StallReason, float] = {}
    for reason, alternatives in _table()["stalls"].items():
        value = _first(alternatives, counters)
        if value is not None:
            out[reason] = max(value, 0.0)
    total = sum(out.values())
    return {k: v / total for k, v in out.items()} if total > 1 else out


def fallback_duration_ns(counters: Mapping[str, float], device: AmdDevice) -> tuple[float | None, str | None]:
    """Duration from busy-cycle counters when timestamps are unusable, and which counter gave it."""
    env = {**counters, **device.context()}
    for tree in _table()["duration_fallback"]:
        try:
            value = _evaluate(tree, env)
        except _Missing:
            continue
        if value > 0:
            first_name = next(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in counters)
            return value, first_name
    return None, None


# ---- occupancy ---------------------------------------------------------------------------------


def _ceil_to(value: int, granule: int) -> int:
    return -(-value // granule) * granule


def occupancy_limits(dispatch: AmdDispatch, device: AmdDevice) -> dict[str, float]:
    """Workgroups per CU allowed by wave slots, VGPRs and LDS, and the theoretical occupancy.

    CDNA allocates VGPRs per wave in granules of 8 from a 512-entry file per SIMD lane
    (gfx90a+: arch VGPRs rounded to 4, then AGPRs, share it; gfx908 has separate 256-entry
    VGPR and AGPR files). Waves of a workgroup spread over the CU's SIMDs.
    """
    if dispatch.workgroup is None or device.max_waves_per_cu is None:
        return {}
    threads = dispatch.workgroup[0] * dispatch.workgroup[1] * dispatch.workgroup[2]
    waves_per_block = max(1, -(-threads // device.wave_size))
    limits = {"occupancy_limit_warps": device.max_waves_per_cu // waves_per_block}
    waves_per_simd_max = device.max_waves_per_cu // device.simds_per_cu
    if dispatch.arch_vgpr:
        agpr = dispatch.accum_vgpr or 0
        if device.agprs_separate:
            per_wave = max(_ceil_to(dispatch.arch_vgpr, 8), _ceil_to(agpr, 8))
            file_size = device.vgprs_per_simd_lane // 2
        else:
            per_wave = _ceil_to(_ceil_to(dispatch.arch_vgpr, 4) + agpr, 8)
            file_size = device.vgprs_per_simd_lane
        waves_per_simd = min(waves_per_simd_max, file_size // max(per_wave, 1))
        limits["occupancy_limit_registers"] = waves_per_simd * device.simds_per_cu // waves_per_block
    if dispatch.lds_bytes and device.lds_bytes_per_cu:
        limits["occupancy_limit_shared_mem"] = device.lds_bytes_per_cu // dispatch.lds_bytes
    if "occupancy_limit_registers" not in limits:  # without a VGPR count, occupancy is unknown
        return {k: float(v) for k, v in limits.items()}
    blocks = min(limits.values())
    limits["theoretical_occupancy_pct"] = 100.0 * blocks * waves_per_block / device.max_waves_per_cu
    if dispatch.grid_items and device.cu and blocks > 0:
        grid_blocks = math.prod(
            -(-g // w) for g, w in zip(dispatch.grid_items, dispatch.workgroup, strict=True)
        )
        limits["waves_per_unit"] = grid_blocks / (device.cu * blocks)
    return {k: float(v) for k, v in limits.items()}


# ---- the profile -------------------------------------------------------------------------------

_METRIC_FIELDS = frozenset(NormalizedMetrics.model_fields)


def _launch(dispatch: AmdDispatch, limits: Mapping[str, float]) -> LaunchConfig:
    grid = None
    if dispatch.grid_items and dispatch.workgroup:
        grid = tuple(-(-g // max(w, 1)) for g, w in zip(dispatch.grid_items, dispatch.workgroup, strict=True))
    return LaunchConfig(
        grid=grid,
        block=dispatch.workgroup,
        registers_per_thread=dispatch.arch_vgpr,
        shared_mem_static_bytes=dispatch.lds_bytes,
        local_mem_bytes_per_thread=dispatch.scratch_bytes_per_item,
        waves_per_unit=limits.get("waves_per_unit"),
    )


def _raw(dispatch: AmdDispatch, derived: Mapping[str, float], device: AmdDevice) -> dict[str, float | str]:
    raw: dict[str, float | str] = {k: v for k, v in dispatch.counters.items() if not _INSTANCE.match(k)}
    raw.update(dispatch.extra)
    raw.update({f"derived.{k}": v for k, v in derived.items() if k not in _METRIC_FIELDS})
    raw.update({f"device.{k}": v for k, v in device.context().items()})
    if dispatch.accum_vgpr is not None:
        raw["accum_vgpr"] = float(dispatch.accum_vgpr)
    if dispatch.sgpr is not None:
        raw["sgpr"] = float(dispatch.sgpr)
    return raw


def build_profile(
    dispatch: AmdDispatch, device: AmdDevice, *, source_format: str, source_path: str | Path | None
) -> KernelProfile:
    """One normalized profile: formulas over the counters, occupancy from the launch, AMD->neutral names."""
    counters = sum_instances(dispatch.counters)
    duration, duration_source = dispatch.duration_ns, "timestamps"
    if duration is None:
        duration, duration_source = fallback_duration_ns(counters, device)
    context = device.context()
    if duration is not None:
        context["duration_ns"] = duration
    derived = evaluate_formulas(counters, context)
    limits = occupancy_limits(dispatch, device)
    metrics = {
        k: v for k, v in {**limits, **derived}.items() if k in _METRIC_FIELDS and k != "waves_per_unit"
    }
    if device.cu is not None:
        metrics["compute_units"] = device.cu
    if "waves_per_unit" in limits:
        metrics["waves_per_unit"] = limits["waves_per_unit"]
    pipes = {
        "VALU": derived.get("fp32_pipe_utilization_pct"),
        "MFMA": derived.get("tensor_pipe_utilization_pct"),
    }
    known_pipes = {k: v for k, v in pipes.items() if v is not None}
    if known_pipes:
        metrics["top_pipe"] = max(known_pipes, key=known_pipes.__getitem__)
        metrics["top_pipe_utilization_pct"] = known_pipes[metrics["top_pipe"]]
    if stalls := stall_fractions(counters):
        metrics["stall_breakdown"] = stalls
    raw = _raw(dispatch, derived, device)
    if duration_source and duration is not None:
        raw["duration_source"] = duration_source
    return KernelProfile(
        name=dispatch.name,
        normalized_name=normalize_kernel_name(dispatch.name),
        vendor=Vendor.amd,
        arch=device.arch,
        device=device.name,
        launch_id=dispatch.dispatch_id,
        duration_ns=duration,
        launch=_launch(dispatch, limits),
        metrics=NormalizedMetrics(**metrics),
        raw=raw,
        source_format=source_format,
        source_path=str(source_path) if source_path is not None else None,
    )
