"""The verdict as data: `VerifyOptions` in, `VerifyResult` (the `kloop verify --json` contract) out.

No torch import: the loop, the report and the CLI read these without paying for torch.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kloop.errors import BadInput
from kloop.task.schema import VerifyStatus  # the one status enum (FIB's outcomes + REJECTED)
from kloop.verify.stats import LogRatio

# Worst first: the overall status is the most severe status any check or workload produced.
STATUS_SEVERITY: list[VerifyStatus] = [
    VerifyStatus.REJECTED,
    VerifyStatus.COMPILE_ERROR,
    VerifyStatus.TIMEOUT,
    VerifyStatus.RUNTIME_ERROR,
    VerifyStatus.INCORRECT_SHAPE,
    VerifyStatus.INCORRECT_DTYPE,
    VerifyStatus.INCORRECT_NUMERICAL,
    VerifyStatus.PASSED,
]


def worst(statuses: list[VerifyStatus]) -> VerifyStatus:
    """The most severe of `statuses` (PASSED when empty)."""
    if not statuses:
        return VerifyStatus.PASSED
    return min(statuses, key=STATUS_SEVERITY.index)


class _Model(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")


class Check(_Model):
    """One named check of the verifier, aggregated over every workload it ran on."""

    name: str
    """Stable check name (see `kloop.verify.checks.CHECKS`)."""
    passed: bool
    """False when any workload failed it; skipped checks pass with a `skipped:` detail."""
    detail: str = ""
    """What was measured, or the first failure with its workload."""


class WorkloadResult(_Model):
    """Per-workload outcome: correctness errors and, when timed, latency and speedup."""

    uuid: str
    """Workload uuid (held-out workloads get a fresh `heldout-` uuid)."""
    axes: dict[str, int]
    """Values of the var axes."""
    heldout: bool = False
    """True for a held-out workload drawn beyond the listed ones (never timed)."""
    status: VerifyStatus = VerifyStatus.PASSED
    """This workload's status."""
    max_abs_error: float | None = None
    """Largest |out - ref| over all outputs (float64 reference)."""
    max_rel_error: float | None = None
    """Largest |out - ref| / |ref| over elements with nonzero reference."""
    latency_ms: float | None = None
    """The candidate's cost of one call, ms: the box's CPU time per timed call (on a GPU, or without
    a cpuacct group, the supervisor's go-to-done wall time), the hand-off of the call included;
    trimmed geometric mean over rounds."""
    latency_ci_ms: list[float] | None = None
    """95 % interval of `latency_ms` (`kloop.verify.stats.INTERVAL_METHOD`), [lo, hi]."""
    baseline_latency_ms: float | None = None
    """The baseline's cost of one call, measured the same way in the same rounds: latency_ms x speedup
    (the speedup is the trimmed mean of the paired per-round ratios)."""
    speedup: float | None = None
    """baseline_latency_ms / latency_ms (exactly)."""
    speedup_ci: list[float] | None = None
    """95 % interval of the speedup from the paired rounds (`INTERVAL_METHOD`; kloop extension)."""
    incumbent_speedup: float | None = None
    """Speedup over the current best, timed in the same rounds (only when the loop asked for it)."""
    incumbent_speedup_ci: list[float] | None = None
    """95% confidence interval of `incumbent_speedup`."""
    wall_ms: float | None = None
    """The candidate's wall time per call, go to done on the supervisor's clock (beside the CPU time)."""
    baseline_wall_ms: float | None = None
    """The baseline's wall time per call, measured the same way."""
    harness_ms: float | None = None
    """The hand-off's own cost per call (no-op calls in the baseline's box), included in both latencies."""
    harness_bound: bool = False
    """The hand-off is over 25 % of a call's cost: latency and speedup (still reported, still in the
    geometric mean) are mostly the hand-off's, so a kernel's gain reads smaller than it is."""
    timing_note: str | None = None
    """What to know about this workload's timing (harness-bound: how much of a call the hand-off is)."""


class Comparison(_Model):
    """One geometric-mean speedup with the statistics a gate needs to set its own confidence."""

    speedup_geomean: float
    """exp(log_mean): geometric mean over workloads of the per-round latency ratios."""
    speedup_ci: list[float]
    """Two-sided 95% confidence interval."""
    log_mean: float
    """Mean log speedup (per workload: 20 % trimmed mean over rounds; then mean over workloads)."""
    log_se: float
    """Standard error of `log_mean`, from the spread of the rounds (the replicates)."""
    df: float
    """Degrees of freedom of `log_se` (kept rounds - 1 per workload, Welch-Satterthwaite across them)."""
    replicates: int
    """Rounds summed over workloads."""

    @classmethod
    def of(cls, ratio: LogRatio) -> Comparison:
        return cls(speedup_geomean=ratio.speedup, speedup_ci=ratio.ci(), log_mean=ratio.mean, log_se=ratio.se,
                   df=ratio.df, replicates=ratio.replicates)  # fmt: skip

    def ratio(self) -> LogRatio:
        """The statistics as a `LogRatio` (what the speed rule reads)."""
        return LogRatio(self.log_mean, self.log_se, self.df, self.replicates)


class Summary(_Model):
    """Aggregates over the timed workloads."""

    speedup_geomean: float | None = None
    """Geometric mean over timed workloads (harness-bound ones included) of baseline / candidate latency."""
    speedup_ci: list[float] | None = None
    """95% confidence interval of the geometric mean (paired per-round log ratios, t quantile)."""
    latency_ms_median: float | None = None
    """Median over workloads of the candidate's median latency."""
    timing_note: str | None = None
    """Why there is no speedup when there is none (timing off, interpreter mode, failure)."""
    comparison: Comparison | None = None
    """The speedup over the baseline with its log-scale statistics."""
    incumbent: Comparison | None = None
    """The speedup over the current best (`VerifyOptions.incumbent_path`), timed in the same rounds."""
    clock: str | None = None
    """What decided latency: `cpu-time` (the sandbox cgroup's CPU time) or `wall` (the supervisor's clock)."""
    interval: str | None = None
    """How every interval of this verdict was computed (`kloop.verify.stats.INTERVAL_METHOD`)."""


class VerifyResult(_Model):
    """The `kloop verify --json` document."""

    status: VerifyStatus
    """Overall verdict."""
    reasons: list[str] = Field(default_factory=list)
    """One line per failure, each naming the check that caught it (`check: detail`)."""
    task: str
    """Definition name."""
    solution: str
    """Solution name."""
    device: str
    """cpu, cuda or rocm, as actually used."""
    checks: list[Check] = Field(default_factory=list)
    """Every check by name."""
    workloads: list[WorkloadResult] = Field(default_factory=list)
    """Listed workloads first, then held-out ones."""
    summary: Summary = Field(default_factory=Summary)
    """Speedup and latency aggregates."""
    environment: dict[str, str] = Field(default_factory=dict)
    """Hardware and library versions the verdict was reached on."""
    log_path: str | None = None
    """Sandbox stdout/stderr log of the candidate (never parsed)."""

    @property
    def passed(self) -> bool:
        return self.status is VerifyStatus.PASSED

    def check(self, name: str) -> Check | None:
        """The check called `name`, if it was recorded."""
        return next((c for c in self.checks if c.name == name), None)

    def failed_checks(self) -> list[str]:
        return [c.name for c in self.checks if not c.passed]


class VerifyOptions(_Model):
    """How to verify: device, workloads, timing, limits. Defaults suit one CPU candidate."""

    device: str = "auto"
    """auto, cpu, cuda, rocm or gpu (`kloop.device.detect.REQUESTS`)."""
    workloads: int | None = None
    """Verify only the first N listed workloads (None: all)."""
    timing: bool = True
    """Time the candidate (and the baseline, for a speedup)."""
    speedup: bool = True
    """Time the baseline interleaved with the candidate and report a speedup."""
    heldout: int = 2
    """How many held-out workloads to draw beyond the listed ones."""
    timeout_s: float = 120.0
    """Wall-clock limit for any one sandbox request (build, run, timing batch)."""
    build_timeout_s: float | None = None
    """Limit for building and importing (default: max(timeout_s, 600 s); compilers are slow)."""
    memory_limit_mb: int = 8192
    """Sandbox memory limit (RLIMIT_AS on CPU; a resident-set watchdog everywhere)."""
    threads: int = 1
    """CPU threads in the sandbox (torch.set_num_threads), fixed for fair timing."""
    warmup: int = 3
    """Calls of one discarded batch per box before each workload's rounds."""
    iterations: int = 2
    """Least timed calls per batch (more for fast calls, so each batch lasts ~2 ms; one when a call is longer)."""
    rounds: int = 16
    """Timing rounds per workload: each times every box once, in a random order, on fresh inputs."""
    recheck: int = 3
    """Least timed calls per workload whose outputs are re-checked (more when outputs are small)."""
    seed: int | None = None
    """Secret seed; None draws a fresh one with `secrets` (never logged)."""
    baseline_path: Path | None = None
    """Baseline solution (default: the task's `baseline/`, else the definition's reference)."""
    incumbent_path: Path | None = None
    """The current best solution: also timed in every round, for the gate's direct comparison."""
    expected_manifest: dict[str, str] | None = None
    """{relpath: sha256} the task directory must match (the loop's sealed copy)."""
    cache_dir: Path | None = None
    """Build cache (default: $KLOOP_HOME/build-cache)."""
    log_dir: Path | None = None
    """Where sandbox logs go (default: a fresh temp dir)."""
    prestart: bool = False
    """Take sandboxes from a pool that starts the next one while this candidate runs (the loop)."""

    @field_validator("device")
    @classmethod
    def _known_device(cls, value: str) -> str:
        from kloop.device.detect import REQUESTS

        if value not in REQUESTS:
            raise ValueError(f"device must be one of {', '.join(REQUESTS)}, not {value!r}")
        return value


VERIFY_ENV = "KLOOP_VERIFY_OPTIONS"


def options_from_env() -> dict[str, object]:
    """VerifyOptions fields a run or a bench takes from $KLOOP_VERIFY_OPTIONS (a JSON object), checked here once."""
    text = os.environ.get(VERIFY_ENV)
    if not text:
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(VERIFY_ENV, f"not JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise BadInput(VERIFY_ENV, "must be a JSON object of VerifyOptions fields")
    return data
