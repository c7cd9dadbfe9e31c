"""The flat context the playbook's expressions read: normalized metrics, launch, arch facts, derived.

Chip-dependent numbers (warp size, SM/CU count, peak bandwidth, bank count, register file) come
from `kloop.device.arch.facts_for` under `arch_*` names, never from constants here. Names are
documented in `CONTEXT_DOCS` (used for rule validation and for docs/profiler.md).
"""

from __future__ import annotations

import math
from typing import Any

from kloop.profile.schema import KernelProfile, NormalizedMetrics, StallReason

ARCH_FIELDS = (
    "warp_size", "compute_units", "max_warps_per_unit", "max_threads_per_block", "max_blocks_per_unit",
    "registers_per_unit", "max_registers_per_thread", "shared_mem_per_unit_bytes",
    "max_shared_mem_per_block_bytes", "shared_mem_banks", "peak_dram_gbs",
)  # fmt: skip

CONTEXT_DOCS: dict[str, str] = {
    "duration_ns": "kernel duration, ns",
    "blocks": "blocks/workgroups in the grid",
    "threads_per_block": "threads per block/workgroup",
    "registers_per_thread": "registers (AMD: VGPRs) per thread",
    "shared_mem_per_block_bytes": "static + dynamic shared memory/LDS per block, bytes",
    "local_mem_bytes_per_thread": "local memory/scratch per thread, bytes",
    "units": "SMs/CUs on the device (the tool's count, else arch facts)",
    "peak_dram_gbs_effective": "peak DRAM/HBM GB/s: tool, else arch facts, else achieved / fraction",
    "dram_sol_pct": "DRAM/HBM throughput, % of peak (tool's own, else achieved / peak)",
    "memory_sol_pct": "busiest memory unit (DRAM, L2, L1, shared/LDS), % of peak",
    "compute_sol_pct": "busiest compute pipe or SM/CU throughput, % of peak",
    "sol_headroom": "1 - max(memory_sol_pct, compute_sol_pct) / 100: what is left below the busiest unit",
    "store_traffic_share": "DRAM bytes written / DRAM bytes moved",
    "dram_bytes": "bytes moved to/from DRAM/HBM (read + write, else achieved GB/s x duration)",
    "min_bytes": "--min-bytes: algorithmic minimum of DRAM traffic, bytes",
    "min_flops": "--min-flops: algorithmic FLOPs",
    "dram_traffic_ratio": "dram_bytes / min_bytes",
    "sol_bytes_pct": "min_bytes / duration as % of peak DRAM bandwidth",
    "sol_flops_pct": "min_flops / duration as % of peak FLOP rate (tensor peak when tensor pipes are busy)",
    "grid_fill_pct": "blocks / units, % (capped at 100)",
    "tail_waste_pct": "share of the last wave's slots left idle, % of all waves' slots",
    "warp_efficiency_pct": "active threads per warp / warp (wavefront) size, %",
    "occupancy_gap_pct": "theoretical - achieved occupancy, percentage points",
    "atomics_per_instruction": "global atomics / instructions executed",
    "spill_per_instruction": "local/scratch spill requests / instructions executed",
    "local_per_instruction": "local-memory/scratch load+store instructions / instructions executed",
    "spill_share_of_local": "share of local-memory instructions that are register spills (0 = all from local arrays)",
    "registers_limit_is_min": "1 when the register limit is the tightest occupancy limit",
    "shared_limit_is_min": "1 when the shared memory/LDS limit is the tightest occupancy limit",
    "block_limit_is_min": "1 when the block-slot limit (small blocks) is the tightest occupancy limit",
    **{f"stall_{r.value}": f"fraction of sampled warp states stalled on {r.value}" for r in StallReason},
    **{f"arch_{name}": f"arch facts: {name}" for name in ARCH_FIELDS},
}


def known_names() -> frozenset[str]:
    """Every name a rule expression may read."""
    scalar = {n for n, f in NormalizedMetrics.model_fields.items() if n not in ("stall_breakdown", "top_pipe")}
    return frozenset(scalar | set(CONTEXT_DOCS) | {"top_pipe"})


def arch_facts(profile: KernelProfile) -> Any | None:
    """ArchFacts for the profile's arch/device, or None when unknown (rules needing them won't fire)."""
    from kloop.device.arch import UnknownArch, arch_from_device_name, facts_for

    try:
        arch = profile.arch or (arch_from_device_name(profile.device) if profile.device else None)
        return facts_for(arch, profile.device) if arch else None
    except UnknownArch:  # a broken arch table is still an error, reported by name
        return None


def _launch_context(profile: KernelProfile) -> dict[str, Any]:
    launch = profile.launch
    shared = [v for v in (launch.shared_mem_static_bytes, launch.shared_mem_dynamic_bytes) if v is not None]
    return {
        "duration_ns": profile.duration_ns,
        "blocks": launch.blocks,
        "threads_per_block": launch.threads_per_block,
        "registers_per_thread": launch.registers_per_thread,
        "shared_mem_per_block_bytes": sum(shared) if shared else None,
        "local_mem_bytes_per_thread": launch.local_mem_bytes_per_thread,
        "waves_per_unit": profile.metrics.waves_per_unit or launch.waves_per_unit,
    }


def _first(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


def _peaks(ctx: dict[str, Any], facts: Any | None) -> None:
    achieved, pct = ctx.get("achieved_dram_gbs"), ctx.get("dram_throughput_pct")
    from_tool = achieved / (pct / 100.0) if achieved and pct and pct >= 0.1 else None
    # the tool's own peak (achieved / fraction) is the measured device's; arch facts may be a default SKU
    ctx["peak_dram_gbs_effective"] = _first(ctx.get("peak_dram_gbs"), from_tool, ctx.get("arch_peak_dram_gbs"))
    peak = ctx["peak_dram_gbs_effective"]
    ctx["dram_sol_pct"] = _first(pct, 100.0 * achieved / peak if achieved is not None and peak else None)
    memory = [ctx.get(k) for k in ("memory_throughput_pct", "dram_sol_pct", "l1_throughput_pct", "l2_throughput_pct", "shared_throughput_pct")]
    compute = [ctx.get(k) for k in ("compute_throughput_pct", "tensor_pipe_utilization_pct", "fp32_pipe_utilization_pct", "top_pipe_utilization_pct")]
    ctx["memory_sol_pct"] = max((v for v in memory if v is not None), default=None)
    ctx["compute_sol_pct"] = max((v for v in compute if v is not None), default=None)
    sols = [v for v in (ctx["memory_sol_pct"], ctx["compute_sol_pct"]) if v is not None]
    if sols:
        ctx["sol_headroom"] = max(0.0, 1.0 - max(sols) / 100.0)
    if facts is not None:
        tensor = (ctx.get("tensor_pipe_utilization_pct") or 0.0) > 5.0
        rates = facts.peak_tflops
        ctx["_peak_tflops"] = _first(rates.bf16_tensor, rates.fp16_tensor) if tensor else rates.fp32


def _traffic(ctx: dict[str, Any], min_bytes: float | None, min_flops: float | None) -> None:
    duration = ctx.get("duration_ns")
    read, write = ctx.get("dram_bytes_read"), ctx.get("dram_bytes_write")
    achieved = ctx.get("achieved_dram_gbs")
    if read is not None or write is not None:
        ctx["dram_bytes"] = (read or 0.0) + (write or 0.0)
        if ctx["dram_bytes"] > 0 and write is not None:
            ctx["store_traffic_share"] = write / ctx["dram_bytes"]
    elif achieved is not None and duration:
        ctx["dram_bytes"] = achieved * duration  # GB/s x ns = bytes
    ctx["min_bytes"], ctx["min_flops"] = min_bytes, min_flops
    if min_bytes and ctx.get("dram_bytes") is not None:
        ctx["dram_traffic_ratio"] = ctx["dram_bytes"] / min_bytes
    peak = ctx.get("peak_dram_gbs_effective")
    if min_bytes and duration and peak:
        ctx["sol_bytes_pct"] = 100.0 * (min_bytes / duration) / peak
    peak_tflops = ctx.pop("_peak_tflops", None)
    if min_flops and duration and peak_tflops:
        ctx["sol_flops_pct"] = 100.0 * (min_flops / duration / 1e3) / peak_tflops


def _shape(ctx: dict[str, Any]) -> None:
    units, blocks, waves = ctx.get("units"), ctx.get("blocks"), ctx.get("waves_per_unit")
    if units and blocks is not None:
        ctx["grid_fill_pct"] = 100.0 * min(1.0, blocks / units)
    if waves is not None and waves >= 1.0:
        full = math.ceil(waves - 1e-9)
        ctx["tail_waste_pct"] = 100.0 * (full - waves) / full
    threads, warp = ctx.get("active_threads_per_warp"), ctx.get("arch_warp_size")
    if threads is not None and warp:
        ctx["warp_efficiency_pct"] = 100.0 * threads / warp
    theo, achieved = ctx.get("theoretical_occupancy_pct"), ctx.get("achieved_occupancy_pct")
    if theo is not None and achieved is not None:
        ctx["occupancy_gap_pct"] = theo - achieved
    atomics, inst = ctx.get("global_atomics"), ctx.get("instructions_executed")
    if atomics is not None and inst:
        ctx["atomics_per_instruction"] = atomics / inst
    spills = ctx.get("local_spill_requests")
    if spills is not None and inst:
        ctx["spill_per_instruction"] = spills / inst
    local, spill_inst = ctx.get("local_instructions"), ctx.get("spill_instructions")
    if local is not None and inst:
        ctx["local_per_instruction"] = local / inst
        if local > 0 and spill_inst is not None:
            ctx["spill_share_of_local"] = min(1.0, spill_inst / local)
    limits = {k: ctx.get(f"occupancy_limit_{k}") for k in ("registers", "shared_mem", "block_size", "warps")}
    known = [v for v in limits.values() if v is not None]
    for key, name in (("registers", "registers_limit_is_min"), ("shared_mem", "shared_limit_is_min"), ("block_size", "block_limit_is_min")):
        if limits[key] is not None:
            ctx[name] = 1 if limits[key] <= min(known) else 0


def build_context(
    profile: KernelProfile, *, min_bytes: float | None = None, min_flops: float | None = None, facts: Any | None = None
) -> dict[str, Any]:
    """All names rules may read, for one profile (absent values stay absent)."""
    metrics = profile.metrics
    ctx: dict[str, Any] = {k: v for k, v in metrics.model_dump().items() if k != "stall_breakdown" and v is not None}
    ctx.update({k: v for k, v in _launch_context(profile).items() if v is not None})
    if metrics.stall_breakdown:
        for reason in StallReason:
            ctx[f"stall_{reason.value}"] = metrics.stall_breakdown.get(reason, 0.0)
    if facts is not None:
        for name in ARCH_FIELDS:
            value = getattr(facts, name, None)
            if value is not None:
                ctx[f"arch_{name}"] = value
    ctx["units"] = _first(metrics.compute_units, ctx.get("arch_compute_units"))
    _peaks(ctx, facts)
    _traffic(ctx, min_bytes, min_flops)
    _shape(ctx)
    return {k: v for k, v in ctx.items() if v is not None}
