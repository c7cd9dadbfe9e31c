"""The profiler finding vocabulary: the one definition of DESIGN.md's fixed ids.

It sits below both the profiler (whose rules emit findings) and the wiki (whose cards name
them), so neither imports the other for it. Ids are a contract: add new ones, never rename.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["FindingId"]


class FindingId(StrEnum):
    """The fixed finding vocabulary of DESIGN.md (add new ids, never rename)."""

    memory_bound = "memory_bound"
    compute_bound = "compute_bound"
    latency_bound = "latency_bound"
    near_speed_of_light = "near_speed_of_light"
    tensor_core_bound = "tensor_core_bound"
    grid_too_small = "grid_too_small"
    tail_effect = "tail_effect"
    occupancy_limited_registers = "occupancy_limited_registers"
    occupancy_limited_shared_memory = "occupancy_limited_shared_memory"
    occupancy_limited_block_size = "occupancy_limited_block_size"
    register_spill = "register_spill"
    uncoalesced_global_access = "uncoalesced_global_access"
    shared_memory_bank_conflict = "shared_memory_bank_conflict"
    warp_divergence = "warp_divergence"
    atomic_contention = "atomic_contention"
    tensor_cores_unused = "tensor_cores_unused"
    poor_data_reuse = "poor_data_reuse"
    redundant_dram_traffic = "redundant_dram_traffic"
    long_scoreboard_stall = "long_scoreboard_stall"
    barrier_stall = "barrier_stall"
    pipe_throttle = "pipe_throttle"
    instruction_cache_miss = "instruction_cache_miss"
    low_issue_efficiency = "low_issue_efficiency"
    launch_overhead = "launch_overhead"
    workload_imbalance = "workload_imbalance"
