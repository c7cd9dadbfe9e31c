"""The profile schema: the finding vocabulary is DESIGN's, and importing it stays light."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import ValidationError

from kloop.profile.schema import Evidence, Finding, FindingId, KernelProfile, NormalizedMetrics, Severity

DESIGN_VOCABULARY = ["memory_bound", "compute_bound", "latency_bound", "near_speed_of_light", "tensor_core_bound", "grid_too_small", "tail_effect", "occupancy_limited_registers", "occupancy_limited_shared_memory", "occupancy_limited_block_size", "register_spill", "uncoalesced_global_access", "shared_memory_bank_conflict", "warp_divergence", "atomic_contention", "tensor_cores_unused", "poor_data_reuse", "redundant_dram_traffic", "long_scoreboard_stall", "barrier_stall", "pipe_throttle", "instruction_cache_miss", "low_issue_efficiency", "launch_overhead", "workload_imbalance"]


def test_finding_ids_are_exactly_the_design_vocabulary() -> None:
    assert [f.value for f in FindingId] == DESIGN_VOCABULARY


def test_unknown_finding_id_and_unknown_metric_are_rejected() -> None:
    with pytest.raises(ValidationError):
        Finding(id="slow_kernel", severity=Severity.high, mechanism="m", fix="f", wiki_query="q")
    with pytest.raises(ValidationError):
        NormalizedMetrics(dram_throughput_percent=50.0)


def test_every_metric_field_is_documented() -> None:
    for name, field in NormalizedMetrics.model_fields.items():
        assert field.description, name
    for name, field in KernelProfile.model_fields.items():
        assert field.description, name


def test_finding_round_trips_through_json() -> None:
    finding = Finding(
        id=FindingId.memory_bound, severity=Severity.medium, evidence=[Evidence(metric="dram_sol_pct", value=80.0, threshold=">= 60")],
        mechanism="m", fix="f", wiki_query="q", est_gain=0.2,
    )
    assert Finding.model_validate_json(finding.model_dump_json()) == finding


def test_importing_the_profile_package_does_not_import_torch_or_ncu_report() -> None:
    code = "import sys, kloop.profile, kloop.profile.commands; print('torch' in sys.modules, 'ncu_report' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
