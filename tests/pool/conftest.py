"""Shared pieces of the pool tests: a quick CPU task and options slow enough to kill a worker mid-job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SILU = ROOT / "examples" / "silu_and_mul"
RMSNORM = ROOT / "examples" / "rmsnorm"
VECTORIZED = SILU / "solutions" / "python_vectorized"
FAST: dict[str, Any] = {"iterations": 2, "rounds": 6, "warmup": 1, "heldout": 1, "recheck": 1, "timeout_s": 60,
                        "workloads": 1}

SLOW: dict[str, Any] = {**FAST, "rounds": 40, "workloads": None}
"""Options that keep a verification running for seconds: time to kill its worker mid-job."""


def judged(result: Any) -> bool:
    """A full verdict on an honest candidate: every workload timed, and PASSED, or rejected only by the
    off-CPU check, which a machine loaded by other jobs trips (the wall clock then runs ahead of the
    CPU clock for every candidate); never a verdict made up of a lost worker."""
    if not result.workloads or any("lost" in r for r in result.reasons):
        return False
    return result.status.value == "PASSED" or all(r.startswith("off_cpu:") for r in result.reasons)
