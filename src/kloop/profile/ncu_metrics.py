"""Nsight Compute -> normalized metrics, as data tables.

Three tables feed `NormalizedMetrics`:
- `RAW_METRICS`: ncu metric names (report files and the CSV raw page) -> normalized field, with a
  combining operation (first present, ratio, sum, ...). Names are Nsight Compute 2023+ (GH100 list).
- `DETAILS_METRICS`: the human labels of the CSV details page (section, metric label) -> field.
- `RULE_EXTRACTS`: numbers stated in ncu's own rule messages -> field, used only to fill fields the
  details page lacks (coalescing, bank conflicts); direct metrics always win.
Field names prefixed `launch.` go to `LaunchConfig`; `duration_ns` to the profile itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from kloop.profile.schema import LaunchConfig, NormalizedMetrics, StallReason


@dataclass(frozen=True)
class RawMetric:
    """One normalized field computed from raw ncu metrics.

    op: `first` (first name present), `sum`, `max`, `ratio` (a/b), `ratio_pct` (100*a/b),
    `active_pct` (100*a/b), `spread_pct` (100*(a-b)/a), `complement_pct` (100-a).
    """

    field: str
    names: tuple[str, ...]
    op: str = "first"
    scale: float = 1.0
    zero_is_missing: bool = False  # e.g. bytes per sector is 0 when there was no such access at all


RAW_METRICS: tuple[RawMetric, ...] = (
    RawMetric("duration_ns", ("gpu__time_duration.sum", "gpu__time_duration.avg")),
    RawMetric("memory_throughput_pct", ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",)),
    RawMetric("dram_throughput_pct", ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "dram__throughput.avg.pct_of_peak_sustained_elapsed")),
    RawMetric("dram_bytes_read", ("dram__bytes_read.sum",)),
    RawMetric("dram_bytes_write", ("dram__bytes_write.sum",)),
    RawMetric("achieved_dram_gbs", ("dram__bytes.sum.per_second",), scale=1e-9),
    RawMetric("compute_throughput_pct", ("sm__throughput.avg.pct_of_peak_sustained_elapsed",)),
    RawMetric("l1_throughput_pct", ("l1tex__throughput.avg.pct_of_peak_sustained_elapsed",)),
    RawMetric("l2_throughput_pct", ("lts__throughput.avg.pct_of_peak_sustained_elapsed",)),
    RawMetric("shared_throughput_pct", ("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed",)),
    RawMetric("elapsed_cycles", ("gpc__cycles_elapsed.max", "sm__cycles_elapsed.max")),
    RawMetric("sm_frequency_mhz", ("gpc__cycles_elapsed.avg.per_second", "sm__cycles_elapsed.avg.per_second"), scale=1e-6),
    RawMetric("compute_units", ("launch__sm_count", "device__attribute_multiprocessor_count")),
    RawMetric("achieved_occupancy_pct", ("sm__warps_active.avg.pct_of_peak_sustained_active",)),
    RawMetric("theoretical_occupancy_pct", ("sm__maximum_warps_per_active_cycle_pct",)),
    RawMetric("occupancy_limit_registers", ("launch__occupancy_limit_registers",)),
    RawMetric("occupancy_limit_shared_mem", ("launch__occupancy_limit_shared_mem",)),
    RawMetric("occupancy_limit_block_size", ("launch__occupancy_limit_blocks",)),
    RawMetric("occupancy_limit_warps", ("launch__occupancy_limit_warps",)),
    RawMetric("waves_per_unit", ("launch__waves_per_multiprocessor",)),
    RawMetric("unit_active_pct", ("sm__cycles_active.avg", "sm__cycles_elapsed.avg"), op="ratio_pct"),
    RawMetric("unit_imbalance_pct", ("sm__cycles_active.max", "sm__cycles_active.min"), op="spread_pct"),
    RawMetric("warp_cycles_per_issue", ("smsp__average_warp_latency_per_inst_issued.ratio",)),
    RawMetric("issue_slot_utilization_pct", ("smsp__issue_active.avg.pct_of_peak_sustained_active",)),
    RawMetric("eligible_warps_per_scheduler", ("smsp__warps_eligible.avg.per_cycle_active",)),
    RawMetric("ipc", ("sm__inst_executed.avg.per_cycle_active",)),
    RawMetric("instructions_executed", ("smsp__inst_executed.sum",)),
    RawMetric("global_load_bytes_per_sector", ("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio",), zero_is_missing=True),
    RawMetric("global_store_bytes_per_sector", ("smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio",), zero_is_missing=True),
    RawMetric(
        "global_load_efficiency_pct",
        ("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio", "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.max_rate"),
        op="ratio_pct",
        zero_is_missing=True,
    ),
    RawMetric(
        "global_store_efficiency_pct",
        ("smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio", "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.max_rate"),
        op="ratio_pct",
        zero_is_missing=True,
    ),
    RawMetric("shared_bank_conflicts", ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",)),
    RawMetric(
        "shared_bank_conflict_pct",
        ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"),
        op="ratio_pct",
    ),
    RawMetric(
        "shared_wavefronts_per_request",
        ("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "smsp__sass_inst_executed_op_shared.sum"),
        op="ratio",
    ),
    RawMetric("l1_hit_rate_pct", ("l1tex__t_sector_hit_rate.pct",)),
    RawMetric("l2_hit_rate_pct", ("lts__t_sector_hit_rate.pct",)),
    RawMetric("local_spill_requests", ("derived__local_spilling_requests",)),
    RawMetric(
        "local_spill_bytes",
        ("l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum", "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum"),
        op="sum",
    ),
    RawMetric("local_instructions", ("sass__inst_executed_local_loads", "sass__inst_executed_local_stores"), op="sum"),
    RawMetric("spill_instructions", ("sass__inst_executed_register_spilling",)),
    RawMetric(
        "global_atomics",
        ("l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum"),
        op="sum",
    ),
    RawMetric("shared_atomics", ("l1tex__t_requests_pipe_lsu_mem_dshared_op_atom.sum",)),
    RawMetric(
        "tensor_pipe_utilization_pct",
        (
            "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
            "sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
            "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
            "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_elapsed",
        ),
        op="max",
    ),
    RawMetric("fp32_pipe_utilization_pct", ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed", "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_elapsed"), op="max"),
    RawMetric("fp64_pipe_utilization_pct", ("sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed",)),
    RawMetric("active_threads_per_warp", ("smsp__thread_inst_executed_per_inst_executed.ratio",)),
    RawMetric("branch_divergence_pct", ("smsp__sass_average_branch_targets_threads_uniform.pct",), op="complement_pct"),
    RawMetric("launch.registers_per_thread", ("launch__registers_per_thread",)),
    RawMetric("launch.shared_mem_static_bytes", ("launch__shared_mem_per_block_static",)),
    RawMetric("launch.shared_mem_dynamic_bytes", ("launch__shared_mem_per_block_dynamic",)),
    RawMetric("launch.waves_per_unit", ("launch__waves_per_multiprocessor",)),
)

#: Pipes ncu reports utilisation for; the busiest becomes `top_pipe`.
PIPE_METRICS: dict[str, str] = {
    pipe: f"sm__inst_executed_pipe_{pipe}.avg.pct_of_peak_sustained_active"
    for pipe in ("alu", "fma", "fmaheavy", "fp64", "lsu", "xu", "adu", "cbu", "uniform", "tensor_op_hmma", "tensor_op_gmma", "tensor_op_imma", "tma")
}

#: ncu stall reason suffix (smsp__pcsamp_warps_issue_stalled_<suffix>) -> normalized reason.
STALL_REASONS: dict[str, StallReason] = {
    "long_scoreboard": StallReason.long_scoreboard,
    "short_scoreboard": StallReason.short_scoreboard,
    "barrier": StallReason.barrier,
    "membar": StallReason.membar,
    "math_pipe_throttle": StallReason.math_pipe_throttle,
    "mio_throttle": StallReason.mio_throttle,
    "lg_throttle": StallReason.lg_throttle,
    "tex_throttle": StallReason.tex_throttle,
    "drain": StallReason.drain,
    "not_selected": StallReason.not_selected,
    "selected": StallReason.selected,
    "wait": StallReason.wait,
    "branch_resolving": StallReason.branch_resolving,
    "no_instructions": StallReason.no_instruction,
    "no_instruction": StallReason.no_instruction,
    "dispatch_stall": StallReason.dispatch_stall,
    "imc_miss": StallReason.imc_miss,
    "sleeping": StallReason.sleeping,
    "warpgroup_arrive": StallReason.tensor,
    "gmma": StallReason.tensor,
    "misc": StallReason.misc,
}
STALL_SAMPLE_PREFIX = "smsp__pcsamp_warps_issue_stalled_"
STALL_RATIO_TEMPLATE = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"

#: CSV details page: (section, metric label) -> field. A `!` prefix on the field means 100 - value.
DETAILS_METRICS: dict[tuple[str, str], str] = {
    ("GPU Speed Of Light Throughput", "Duration"): "duration_ns",
    ("GPU Speed Of Light Throughput", "Memory Throughput"): "memory_throughput_pct",
    ("GPU Speed Of Light Throughput", "DRAM Throughput"): "dram_throughput_pct",
    ("GPU Speed Of Light Throughput", "L1/TEX Cache Throughput"): "l1_throughput_pct",
    ("GPU Speed Of Light Throughput", "L2 Cache Throughput"): "l2_throughput_pct",
    ("GPU Speed Of Light Throughput", "Compute (SM) Throughput"): "compute_throughput_pct",
    ("GPU Speed Of Light Throughput", "Elapsed Cycles"): "elapsed_cycles",
    ("GPU Speed Of Light Throughput", "SM Frequency"): "sm_frequency_mhz",
    ("Compute Workload Analysis", "Executed Ipc Active"): "ipc",
    ("Memory Workload Analysis", "Memory Throughput"): "achieved_dram_gbs",
    ("Memory Workload Analysis", "L1/TEX Hit Rate"): "l1_hit_rate_pct",
    ("Memory Workload Analysis", "L2 Hit Rate"): "l2_hit_rate_pct",
    ("Memory Workload Analysis", "Local Memory Spilling Requests"): "local_spill_requests",
    ("Scheduler Statistics", "One or More Eligible"): "issue_slot_utilization_pct",
    ("Scheduler Statistics", "Eligible Warps Per Scheduler"): "eligible_warps_per_scheduler",
    ("Warp State Statistics", "Warp Cycles Per Issued Instruction"): "warp_cycles_per_issue",
    ("Warp State Statistics", "Avg. Active Threads Per Warp"): "active_threads_per_warp",
    ("Instruction Statistics", "Executed Instructions"): "instructions_executed",
    ("Launch Statistics", "Registers Per Thread"): "launch.registers_per_thread",
    ("Launch Statistics", "Static Shared Memory Per Block"): "launch.shared_mem_static_bytes",
    ("Launch Statistics", "Dynamic Shared Memory Per Block"): "launch.shared_mem_dynamic_bytes",
    ("Launch Statistics", "Waves Per SM"): "launch.waves_per_unit",
    ("Launch Statistics", "# SMs"): "compute_units",
    ("Occupancy", "Block Limit Registers"): "occupancy_limit_registers",
    ("Occupancy", "Block Limit Shared Mem"): "occupancy_limit_shared_mem",
    ("Occupancy", "Block Limit SM"): "occupancy_limit_block_size",
    ("Occupancy", "Block Limit Warps"): "occupancy_limit_warps",
    ("Occupancy", "Theoretical Occupancy"): "theoretical_occupancy_pct",
    ("Occupancy", "Achieved Occupancy"): "achieved_occupancy_pct",
    ("Source Counters", "Branch Efficiency"): "!branch_divergence_pct",
}

#: Scale from a base unit to the field's unit (fields whose unit is not the base one).
FIELD_SCALE: dict[str, float] = {"achieved_dram_gbs": 1e-9, "sm_frequency_mhz": 1e-6}


@dataclass(frozen=True)
class RuleExtract:
    """A number stated in an ncu rule message, turned into a normalized field."""

    rule: str
    pattern: re.Pattern[str]
    field: str
    complement: bool = False


RULE_EXTRACTS: tuple[RuleExtract, ...] = (
    RuleExtract("SharedMemoryConflicts", re.compile(r"represent\s+([\d.]+)%\s+of the overall"), "shared_bank_conflict_pct"),
    RuleExtract("SharedMemoryConflicts", re.compile(r"average a\s+([\d.]+)\s*-\s*way bank conflict"), "shared_wavefronts_per_request"),
    RuleExtract("UncoalescedSharedAccess", re.compile(r"excessive wavefronts \(([\d.]+)%"), "shared_bank_conflict_pct"),
    RuleExtract("UncoalescedGlobalAccess", re.compile(r"excessive sectors \(([\d.]+)%"), "global_load_efficiency_pct", complement=True),
    RuleExtract("MemoryCacheAccessPattern", re.compile(r"global loads.*?only\s+([\d.]+)\s+of the\s+\d+\s+bytes", re.S), "global_load_bytes_per_sector"),
    RuleExtract("MemoryCacheAccessPattern", re.compile(r"global stores.*?only\s+([\d.]+)\s+of the\s+\d+\s+bytes", re.S), "global_store_bytes_per_sector"),
)


#: ncu's CPIStall rule names the dominant stall reasons in words and states each one's share of the
#: cycles between issues; the details page has no other stall data, so these phrases fill it.
CPI_STALL_RULE = "CPIStall"
CPI_STALL_SHARE = re.compile(r"represents about\s+([\d.]+)%\s+of the total")
CPI_STALL_PHRASES: tuple[tuple[re.Pattern[str], StallReason], ...] = tuple(
    (re.compile(pattern, re.I), reason)
    for pattern, reason in (
        (r"scoreboard dependency on a L1TEX", StallReason.long_scoreboard),
        (r"scoreboard dependency on a MIO", StallReason.short_scoreboard),
        (r"MIO \(memory input/output\) instruction queue", StallReason.mio_throttle),
        (r"queue for local and global \(LG\)", StallReason.lg_throttle),
        (r"queue for texture operations", StallReason.tex_throttle),
        (r"sibling warps at a CTA barrier", StallReason.barrier),
        (r"waiting on a memory barrier", StallReason.membar),
        (r"execution pipe to be available", StallReason.math_pipe_throttle),
        (r"fixed latency execution dependency", StallReason.wait),
        (r"after EXIT waiting for all outstanding memory", StallReason.drain),
        (r"WARPGROUP\.ARRIVES|WARPGROUP\.WAIT", StallReason.tensor),
        (r"instruction cache miss", StallReason.no_instruction),
        (r"branch target to be computed", StallReason.branch_resolving),
        (r"immediate constant cache \(IMC\) miss", StallReason.imc_miss),
        (r"micro scheduler to select the warp", StallReason.not_selected),
    )
)


#: ncu's HighPipeUtilization rule names the busiest pipe: "FMA is the highest-utilized pipeline (94.6%)".
TOP_PIPE_RULE = "HighPipeUtilization"
TOP_PIPE_MESSAGE = re.compile(r"(\w[\w ]*?) is the highest-utilized pipeline \(([\d.]+)%\)")
#: that pipe name -> the normalized field it also fills (when the page has no direct metric)
TOP_PIPE_FIELDS = {"fma": "fp32_pipe_utilization_pct", "fp64": "fp64_pipe_utilization_pct", "tensor": "tensor_pipe_utilization_pct"}


def top_pipe_from_rules(rules: list[tuple[str, str]]) -> dict[str, object]:
    """top_pipe (+ the matching pipe field) from ncu's HighPipeUtilization message."""
    for name, message in rules:
        match = TOP_PIPE_MESSAGE.search(message) if name == TOP_PIPE_RULE else None
        if match:
            pipe, value = match.group(1).strip(), float(match.group(2))
            found: dict[str, object] = {"top_pipe": pipe, "top_pipe_utilization_pct": value}
            field = TOP_PIPE_FIELDS.get(pipe.lower())
            if field:
                found[field] = value
            return found
    return {}


def stalls_from_rules(rules: list[tuple[str, str]]) -> dict[StallReason, float]:
    """Stall shares (0..1) that ncu's CPIStall rule messages state, for pages without stall metrics."""
    stalls: dict[StallReason, float] = {}
    for name, message in rules:
        share = CPI_STALL_SHARE.search(message) if name == CPI_STALL_RULE else None
        reason = next((r for pattern, r in CPI_STALL_PHRASES if pattern.search(message)), None) if share else None
        if share and reason is not None:
            stalls[reason] = max(stalls.get(reason, 0.0), float(share.group(1)) / 100.0)
    return stalls


def _num(raw: dict[str, float | str], name: str) -> float | None:
    value = raw.get(name)
    return float(value) if isinstance(value, int | float) and value == value else None


_PAIR_OPS: dict[str, Callable[[float, float], float | None]] = {
    "ratio": lambda a, b: a / b if b else None,
    "ratio_pct": lambda a, b: 100.0 * a / b if b else None,
    "spread_pct": lambda a, b: 100.0 * (a - b) / a if a else None,
}


def _combine(spec: RawMetric, raw: dict[str, float | str]) -> float | None:
    values = [_num(raw, n) for n in spec.names]
    if spec.zero_is_missing and values and values[0] == 0:
        return None
    present = [v for v in values if v is not None]
    if spec.op == "first":
        return present[0] if present else None
    if spec.op in ("sum", "max"):
        return (sum(present) if spec.op == "sum" else max(present)) if present else None
    a = values[0]
    if spec.op == "complement_pct":
        return None if a is None else 100.0 - a
    b = values[1] if len(values) > 1 else None
    return None if a is None or b is None else _PAIR_OPS[spec.op](a, b)


def stall_breakdown(raw: dict[str, float | str]) -> dict[StallReason, float]:
    """Stall fractions from PC sampling, else from the per-issue stall ratios."""
    for source in ("samples", "ratios"):
        counts: dict[StallReason, float] = {}
        for suffix, reason in STALL_REASONS.items():
            name = STALL_SAMPLE_PREFIX + suffix if source == "samples" else STALL_RATIO_TEMPLATE.format(suffix)
            value = _num(raw, name)
            if value is not None:
                counts[reason] = counts.get(reason, 0.0) + value
        total = sum(counts.values())
        if total > 0:
            return {reason: value / total for reason, value in counts.items() if value > 0}
    return {}


def top_pipe(raw: dict[str, float | str]) -> tuple[str | None, float | None]:
    """The busiest instruction pipe and its utilisation."""
    best: tuple[str | None, float | None] = (None, None)
    for pipe, name in PIPE_METRICS.items():
        value = _num(raw, name)
        if value is not None and (best[1] is None or value > best[1]):
            best = (pipe, value)
    return best


def assign(fields: dict[str, float], launch: dict[str, float], name: str, value: float) -> None:
    """Route one value to the metrics or the launch dict by its `launch.` prefix."""
    if name.startswith("launch."):
        launch[name.removeprefix("launch.")] = value
    else:
        fields[name] = value


def normalize_raw(raw: dict[str, float | str]) -> tuple[float | None, dict[str, float], NormalizedMetrics]:
    """Apply RAW_METRICS to one launch's raw metrics: (duration_ns, launch fields, metrics)."""
    fields: dict[str, float] = {}
    launch: dict[str, float] = {}
    for spec in RAW_METRICS:
        value = _combine(spec, raw)
        if value is not None:
            assign(fields, launch, spec.field, value * spec.scale)
    duration = fields.pop("duration_ns", None)
    pipe, pipe_pct = top_pipe(raw)
    tensor = fields.get("tensor_pipe_utilization_pct")
    if tensor is not None and (pipe_pct is None or tensor > pipe_pct):
        pipe, pipe_pct = "tensor", tensor
    metrics = build_metrics(fields, stalls=stall_breakdown(raw), top=(pipe, pipe_pct))
    return duration, launch, metrics


def build_metrics(
    fields: dict[str, float], *, stalls: dict[StallReason, float] | None = None, top: tuple[str | None, float | None] = (None, None)
) -> NormalizedMetrics:
    """NormalizedMetrics from a field dict, integers where the schema wants them."""
    values: dict[str, object] = dict(fields)
    if "compute_units" in values:
        values["compute_units"] = int(values["compute_units"])  # type: ignore[arg-type]
    if stalls:
        values["stall_breakdown"] = stalls
    if top[0] is not None:
        values["top_pipe"], values["top_pipe_utilization_pct"] = top
    return NormalizedMetrics.model_validate(values)


def build_launch(grid: tuple[int, int, int] | None, block: tuple[int, int, int] | None, fields: dict[str, float]) -> LaunchConfig:
    """LaunchConfig from dims and the `launch.` fields."""
    ints = {k: int(v) for k, v in fields.items() if k != "waves_per_unit"}
    return LaunchConfig(grid=grid, block=block, waves_per_unit=fields.get("waves_per_unit"), **ints)


def fill_from_rules(metrics: NormalizedMetrics, rules: list[tuple[str, str]]) -> NormalizedMetrics:
    """Fill fields still missing from numbers stated in ncu rule messages (name, message)."""
    updates: dict[str, object] = {}
    for extract in RULE_EXTRACTS:
        if getattr(metrics, extract.field) is not None or extract.field in updates:
            continue
        for name, message in rules:
            match = extract.pattern.search(message) if name == extract.rule else None
            if match:
                value = float(match.group(1))
                updates[extract.field] = 100.0 - value if extract.complement else value
                break
    if metrics.top_pipe is None:
        updates.update({k: v for k, v in top_pipe_from_rules(rules).items() if getattr(metrics, k) is None})
    if not metrics.stall_breakdown:
        stalls = stalls_from_rules(rules)
        if stalls:
            updates["stall_breakdown"] = stalls
    return metrics.model_copy(update=updates) if updates else metrics


def _check_tables() -> None:
    """Fail at import, not mid-analysis, when a table entry is malformed."""
    for spec in RAW_METRICS:
        if spec.op not in ("first", "sum", "max", "complement_pct", *_PAIR_OPS):
            raise ValueError(f"RAW_METRICS {spec.field}: unknown op {spec.op!r}")
        if spec.op in _PAIR_OPS and len(spec.names) != 2:
            raise ValueError(f"RAW_METRICS {spec.field}: {spec.op} needs exactly two metric names")


_check_tables()
