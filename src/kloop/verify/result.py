"""The verdict as data: `VerifyOptions` in, `VerifyResult` (the `kloop verify --json` contract) out.

No torch import: the loop, the report and the CLI read these without paying for torch.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kloop.task.schema import VerifyStatus  # the one status enum (FIB's outcomes + REJECTED)


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
    """Median candidate latency, milliseconds."""
    latency_ci_ms: list[float] | None = None
    """Bootstrap 95% confidence interval of the median latency, [lo, hi]."""
    baseline_latency_ms: float | None = None
    """Median baseline latency measured interleaved with the candidate."""
    speedup: float | None = None
    """baseline_latency_ms / latency_ms."""
    speedup_ci: list[float] | None = None
    """Bootstrap 95% confidence interval of the speedup (kloop extension)."""


class Summary(_Model):
    """Aggregates over the timed workloads."""

    speedup_geomean: float | None = None
    """Geometric mean over timed workloads of baseline / candidate latency."""
    speedup_ci: list[float] | None = None
    """Bootstrap 95% confidence interval of the geometric mean."""
    latency_ms_median: float | None = None
    """Median over workloads of the candidate's median latency."""
    timing_note: str | None = None
    """Why there is no speedup when there is none (timing off, interpreter mode, failure)."""


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
    """Untimed iterations before each workload's timing."""
    iterations: int = 20
    """Least timed iterations per batch (more for fast calls, so each batch lasts ~0.1 s)."""
    rounds: int = 3
    """A-B interleaved timing rounds per workload."""
    recheck: int = 3
    """How many timed iterations per workload and sandbox have their outputs re-checked."""
    seed: int | None = None
    """Secret seed; None draws a fresh one with `secrets` (never logged)."""
    baseline_path: Path | None = None
    """Baseline solution (default: the task's `baseline/`, else the definition's reference)."""
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
