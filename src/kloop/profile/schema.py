"""The profiler skill's data model: one normalized `KernelProfile` per launch, findings, reports, diffs.

Every reader (Nsight Compute report/CSV, rocprofv3, rocpd, rocprof-compute) produces the same
`KernelProfile`; the playbook only ever looks at `NormalizedMetrics`, so NVIDIA and AMD share one
rules file. Vocabulary mapping: warp <-> wavefront, SM <-> CU, shared memory <-> LDS,
tensor cores <-> MFMA, local memory <-> scratch. No torch import here.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

# the shared vocabulary lives below profile and wiki; re-exported so profile.schema.FindingId stays valid
from kloop.findings import FindingId


class Vendor(StrEnum):
    """GPU vendor whose tool produced the profile."""

    nvidia = "nvidia"
    amd = "amd"


class Severity(StrEnum):
    """How much a finding matters; `info` is used for healthy verdicts."""

    high = "high"
    medium = "medium"
    low = "low"
    info = "info"


class Bound(StrEnum):
    """What limits the kernel, decided from speed-of-light fractions before ranking causes."""

    memory = "memory"
    compute = "compute"
    latency = "latency"
    unknown = "unknown"


class StallReason(StrEnum):
    """Vendor-neutral warp/wavefront stall reasons (keys of `NormalizedMetrics.stall_breakdown`).

    NVIDIA names map 1:1 (smsp__pcsamp_warps_issue_stalled_<reason>); AMD maps its
    SQ_WAIT_INST_* / SQ_INSTS_* wait counters onto the nearest one (vmem wait ->
    long_scoreboard, LDS/SMEM wait -> short_scoreboard, s_barrier -> barrier, ...).
    """

    long_scoreboard = "long_scoreboard"  # waiting on global/local (L1TEX / vector memory) data
    short_scoreboard = "short_scoreboard"  # waiting on shared memory / LDS / MUFU data
    barrier = "barrier"  # __syncthreads / s_barrier
    membar = "membar"  # memory fence
    math_pipe_throttle = "math_pipe_throttle"  # math pipe busy (FMA, tensor/MFMA, ...)
    mio_throttle = "mio_throttle"  # memory input/output queue full (shared, special math)
    lg_throttle = "lg_throttle"  # local/global queue full
    tex_throttle = "tex_throttle"  # texture / L1TEX queue full
    drain = "drain"  # waiting for stores to drain at exit
    not_selected = "not_selected"  # eligible but another warp issued
    selected = "selected"  # issued (not a stall; kept so fractions add up)
    wait = "wait"  # fixed-latency dependency
    branch_resolving = "branch_resolving"  # branch target computation
    no_instruction = "no_instruction"  # instruction cache miss / fetch
    dispatch_stall = "dispatch_stall"  # dispatch blocked by the pipeline
    imc_miss = "imc_miss"  # constant cache miss
    sleeping = "sleeping"  # nanosleep / s_sleep
    tensor = "tensor"  # waiting on tensor-core / MFMA results (AMD: MFMA dependency)
    misc = "misc"  # everything else


class LaunchConfig(BaseModel):
    """How the kernel was launched and what each block/workgroup reserved."""

    model_config = ConfigDict(extra="forbid")

    grid: tuple[int, int, int] | None = Field(None, description="Grid size in blocks/workgroups (x, y, z).")
    block: tuple[int, int, int] | None = Field(None, description="Block/workgroup size in threads (x, y, z).")
    registers_per_thread: int | None = Field(None, description="Registers per thread (AMD: arch VGPRs).")
    shared_mem_static_bytes: int | None = Field(None, description="Static shared memory / LDS per block, bytes.")
    shared_mem_dynamic_bytes: int | None = Field(None, description="Dynamic shared memory / LDS per block, bytes.")
    local_mem_bytes_per_thread: int | None = Field(
        None, description="Local memory (NVIDIA) / scratch (AMD) per thread, bytes; >0 usually means spills."
    )
    waves_per_unit: float | None = Field(
        None, description="Full waves of blocks per SM/CU (grid blocks / (units x blocks per unit))."
    )

    @property
    def blocks(self) -> int | None:
        """Total blocks in the grid."""
        return None if self.grid is None else self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def threads_per_block(self) -> int | None:
        """Threads per block."""
        return None if self.block is None else self.block[0] * self.block[1] * self.block[2]


class NormalizedMetrics(BaseModel):
    """Vendor-neutral metrics; every field optional (a tool or section may not provide it).

    Units are in the field name or its doc: `_pct` is percent 0-100, `_bytes` bytes, `_gbs`
    GB/s (1e9 bytes per second), counts are plain numbers. Percent-of-peak values are relative
    to the tool's own sustained peak for the device that ran the kernel.
    """

    model_config = ConfigDict(extra="forbid")

    # speed of light
    memory_throughput_pct: float | None = Field(None, description="Busiest memory unit, % of its peak (ncu 'Memory Throughput').")
    dram_throughput_pct: float | None = Field(None, description="DRAM/HBM throughput, % of peak sustained.")
    dram_bytes_read: float | None = Field(None, description="Bytes read from DRAM/HBM.")
    dram_bytes_write: float | None = Field(None, description="Bytes written to DRAM/HBM.")
    achieved_dram_gbs: float | None = Field(None, description="Achieved DRAM/HBM bandwidth, GB/s.")
    peak_dram_gbs: float | None = Field(None, description="Peak DRAM/HBM bandwidth of the device, GB/s (from arch facts or the tool).")
    compute_throughput_pct: float | None = Field(None, description="Busiest SM/CU compute pipeline, % of peak (ncu 'Compute (SM) Throughput').")
    l1_throughput_pct: float | None = Field(None, description="L1/TEX (AMD vL1D) throughput, % of peak.")
    l2_throughput_pct: float | None = Field(None, description="L2 throughput, % of peak.")
    shared_throughput_pct: float | None = Field(None, description="Shared memory / LDS pipe throughput, % of peak.")
    elapsed_cycles: float | None = Field(None, description="Kernel duration in SM/GPU cycles.")
    sm_frequency_mhz: float | None = Field(None, description="SM/CU clock during the kernel, MHz.")
    # occupancy and launch shape
    compute_units: int | None = Field(None, description="Number of SMs/CUs on the device.")
    achieved_occupancy_pct: float | None = Field(None, description="Achieved active warps/waves per SM/CU, % of the maximum.")
    theoretical_occupancy_pct: float | None = Field(None, description="Theoretical occupancy from the launch's resource use, %.")
    occupancy_limit_registers: float | None = Field(None, description="Blocks per SM/CU allowed by register use.")
    occupancy_limit_shared_mem: float | None = Field(None, description="Blocks per SM/CU allowed by shared memory/LDS use.")
    occupancy_limit_block_size: float | None = Field(None, description="Blocks per SM/CU allowed by block size / block slots.")
    occupancy_limit_warps: float | None = Field(None, description="Blocks per SM/CU allowed by the warp/wave slots.")
    waves_per_unit: float | None = Field(None, description="Waves of blocks per SM/CU (fractional tail visible here).")
    unit_active_pct: float | None = Field(None, description="Average fraction of elapsed time an SM/CU had work, %.")
    unit_imbalance_pct: float | None = Field(None, description="(max - min) / max of per-SM/CU active cycles, %.")
    # issue and latency
    stall_breakdown: dict[StallReason, float] = Field(
        default_factory=dict,
        description="Warp/wave stall reasons, fractions of sampled states (sum ~1); from an ncu details "
        "page only the reasons its CPIStall rule names.",
    )
    warp_cycles_per_issue: float | None = Field(None, description="Average cycles between two issued instructions of one warp/wave.")
    issue_slot_utilization_pct: float | None = Field(None, description="Issue slots busy, % of cycles.")
    eligible_warps_per_scheduler: float | None = Field(None, description="Warps/waves ready to issue per scheduler per cycle.")
    ipc: float | None = Field(None, description="Executed instructions per active cycle per SM/CU.")
    instructions_executed: float | None = Field(None, description="Warp/wave-level instructions executed.")
    # memory access quality
    global_load_efficiency_pct: float | None = Field(
        None, description="Useful bytes per fetched global load sector, % (100 = fully coalesced)."
    )
    global_store_efficiency_pct: float | None = Field(None, description="Useful bytes per written global store sector, %.")
    global_load_bytes_per_sector: float | None = Field(None, description="Average useful bytes per 32-byte global load sector.")
    global_store_bytes_per_sector: float | None = Field(None, description="Average useful bytes per 32-byte global store sector.")
    shared_bank_conflict_pct: float | None = Field(
        None, description="Share of shared-memory/LDS wavefronts/cycles caused by bank conflicts, % (0 = none)."
    )
    shared_bank_conflicts: float | None = Field(None, description="Shared-memory/LDS bank conflicts (NVIDIA: extra wavefronts; AMD: conflict cycles).")
    shared_wavefronts_per_request: float | None = Field(None, description="Shared-memory wavefronts per instruction (1 = conflict-free, 32 = 32-way).")
    l1_hit_rate_pct: float | None = Field(None, description="L1/TEX (AMD vL1D) hit rate, %.")
    l2_hit_rate_pct: float | None = Field(None, description="L2 hit rate, %.")
    local_spill_bytes: float | None = Field(None, description="Local memory/scratch bytes moved by spills (loads + stores).")
    local_spill_requests: float | None = Field(None, description="Local/scratch load+store instructions caused by register spilling.")
    local_instructions: float | None = Field(
        None, description="Local-memory/scratch load+store instructions executed, spills and local arrays alike (NVIDIA: SASS LDL/STL)."
    )
    spill_instructions: float | None = Field(None, description="Of those, the instructions ptxas emitted for register spilling.")
    global_atomics: float | None = Field(None, description="Global atomic / reduction instructions executed.")
    shared_atomics: float | None = Field(None, description="Shared-memory/LDS atomic instructions executed.")
    # pipes
    tensor_pipe_utilization_pct: float | None = Field(None, description="Tensor core / MFMA pipe utilisation, % of peak.")
    fp32_pipe_utilization_pct: float | None = Field(None, description="FP32 FMA / VALU pipe utilisation, % of peak.")
    fp64_pipe_utilization_pct: float | None = Field(None, description="FP64 pipe utilisation, % of peak.")
    top_pipe: str | None = Field(None, description="Name of the busiest pipe (as the tool calls it).")
    top_pipe_utilization_pct: float | None = Field(None, description="Busiest pipe utilisation, % of peak.")
    achieved_tflops: float | None = Field(None, description="Achieved floating-point rate, TFLOP/s (from counted FLOPs / duration).")
    flop_count: float | None = Field(None, description="Counted floating-point operations (FMA = 2).")
    tensor_flop_count: float | None = Field(None, description="FLOPs executed on tensor cores / MFMA.")
    # control flow and front end
    active_threads_per_warp: float | None = Field(None, description="Average active threads/lanes per executed instruction.")
    branch_divergence_pct: float | None = Field(None, description="Divergent branches, % of branches.")
    icache_miss_pct: float | None = Field(None, description="Instruction cache miss rate, %.")


class VendorRule(BaseModel):
    """One result of the profiler's own rule engine (ncu rules, rocprof-compute hints), kept as evidence."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Rule identifier as the tool names it (e.g. 'SOLBottleneck').")
    section: str | None = Field(None, description="Section/panel the rule belongs to.")
    type: str = Field(description="Rule result type as the tool reports it (OPT, WRN, INF, ERR, ...).")
    message: str = Field(description="The rule's message text.")
    est_speedup_pct: float | None = Field(None, description="The tool's own estimated speedup, %.")
    speedup_type: str | None = Field(None, description="'local' or 'global' estimated speedup, as the tool says.")


class SourceHotspot(BaseModel):
    """A source line or instruction where the kernel spends much of its samples."""

    model_config = ConfigDict(extra="forbid")

    location: str = Field(description="'file:line' for source, or 'pc 0x...' for assembly.")
    instruction: str | None = Field(None, description="SASS/ISA text at the location, if known.")
    source_text: str | None = Field(None, description="Source line text, if known.")
    samples: float = Field(description="Warp/wave samples attributed to this location.")
    share: float = Field(description="Fraction of all samples of the kernel (0..1).")
    top_stall: StallReason | None = Field(None, description="Dominant stall reason at this location.")


class KernelProfile(BaseModel):
    """One kernel launch, normalized: what every reader returns and the playbook reads."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Kernel name as the tool reports it (may be demangled with signature).")
    normalized_name: str = Field(description="Name comparable across tools and runs (kloop.profile.names).")
    vendor: Vendor = Field(description="GPU vendor.")
    arch: str | None = Field(None, description="Architecture id, e.g. 'sm_90', 'gfx942'.")
    device: str | None = Field(None, description="Device marketing name, e.g. 'NVIDIA H200'.")
    launch_id: int | None = Field(None, description="Launch/dispatch index in the report (ncu ID, dispatch id).")
    duration_ns: float | None = Field(None, description="Kernel duration, nanoseconds.")
    launch: LaunchConfig = Field(default_factory=LaunchConfig, description="Launch configuration.")
    metrics: NormalizedMetrics = Field(default_factory=NormalizedMetrics, description="Normalized metrics.")
    vendor_rules: list[VendorRule] = Field(default_factory=list, description="The tool's own rule results.")
    hotspots: list[SourceHotspot] = Field(default_factory=list, description="Top source/assembly locations by samples.")
    raw: dict[str, float | str] = Field(
        default_factory=dict, description="The tool's metrics as read (name -> value in base units where known)."
    )
    source_format: str | None = Field(None, description="Reader that produced this profile, e.g. 'ncu-rep', 'ncu-csv-details'.")
    source_path: str | None = Field(None, description="File the profile was read from.")


class Evidence(BaseModel):
    """A measured value a finding cites, and the threshold it was compared with."""

    model_config = ConfigDict(extra="forbid")

    metric: str = Field(description="Normalized metric (or derived quantity) name.")
    value: float | str | None = Field(description="Measured value (in the metric's unit).")
    threshold: float | str | None = Field(None, description="Threshold the rule compared against, if any.")


class Finding(BaseModel):
    """One diagnosis: measurement -> mechanism -> fix."""

    model_config = ConfigDict(extra="forbid")

    id: FindingId = Field(description="Vocabulary id.")
    severity: Severity = Field(description="How much it matters.")
    evidence: list[Evidence] = Field(default_factory=list, description="Measured values that triggered it.")
    mechanism: str = Field(description="Why the hardware is slow here.")
    fix: str = Field(description="The change that addresses the mechanism.")
    wiki_query: str = Field(description="Technique words to look up in KernelWiki.")
    est_gain: float | None = Field(None, description="Estimated fraction of duration saved if fixed (0..1).")


class KernelReport(BaseModel):
    """A profile after the playbook: its bound, ranked findings and the one next edit."""

    model_config = ConfigDict(extra="forbid")

    profile: KernelProfile = Field(description="The analyzed profile.")
    bound: Bound = Field(Bound.unknown, description="What limits the kernel.")
    diagnosis: str = Field("", description="One sentence citing actual values.")
    findings: list[Finding] = Field(default_factory=list, description="Ranked findings, most important first.")
    next_edit: str = Field("", description="Exactly one next change to make.")
    sol_fractions: dict[str, float] = Field(
        default_factory=dict, description="Speed-of-light fractions from --min-bytes/--min-flops (0..1)."
    )


class MetricDelta(BaseModel):
    """One normalized metric before and after."""

    model_config = ConfigDict(extra="forbid")

    base: float | None = Field(description="Value in the base report.")
    new: float | None = Field(description="Value in the new report.")
    delta: float | None = Field(description="new - base.")


class KernelDiff(BaseModel):
    """One kernel matched between base and new report by normalized name."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Normalized kernel name.")
    base_duration_ns: float | None = Field(None, description="Duration in the base report, ns.")
    new_duration_ns: float | None = Field(None, description="Duration in the new report, ns.")
    duration_ratio: float | None = Field(None, description="new / base duration (<1 = faster).")
    resolved: list[FindingId] = Field(default_factory=list, description="Findings in base but not in new.")
    new_findings: list[FindingId] = Field(default_factory=list, description="Findings in new but not in base.")
    persisting: list[FindingId] = Field(default_factory=list, description="Findings in both.")
    metric_deltas: dict[str, MetricDelta] = Field(default_factory=dict, description="Changed metrics.")


class ProfileDiff(BaseModel):
    """`--against BASE`: what changed between two reports."""

    model_config = ConfigDict(extra="forbid")

    kernels: list[KernelDiff] = Field(default_factory=list, description="Kernels present in both.")
    only_in_base: list[str] = Field(default_factory=list, description="Kernels that disappeared.")
    only_in_new: list[str] = Field(default_factory=list, description="Kernels that appeared.")
