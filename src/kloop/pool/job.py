"""One verification as a pool sees it: the job that travels out, the outcome that comes back.

`run_job` is what every worker (a local slot process, a Ray actor) runs: unpack the bundles,
call kloop's one verifier entry point (`kloop.verify.verify`, supervisor + sandbox, fresh secret
seed), and return the `VerifyResult` JSON with the worker's identity in it. The baseline (and the
incumbent, when the loop sends one) is in the task bundle, so it is timed on the same device,
interleaved with the candidate, exactly as `kloop verify` does.
"""

from __future__ import annotations

import os
import socket
import tempfile
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from kloop.errors import BadInput, HarnessFailure
from kloop.pool.bundle import Bundle

POOL_ENV_KEY = "pool_worker"
"""The key under `VerifyResult.environment` that names the worker and device a verdict came from."""


class VerifyJob(BaseModel):
    """A candidate to verify, self-contained: nothing on the worker's disk is assumed."""

    id: str = Field(description="Caller's id for the job (unique within one pool).")
    task: Bundle = Field(description="The task directory (definition, workloads, baseline/).")
    solution: Bundle = Field(description="The candidate solution directory.")
    incumbent: Bundle | None = Field(default=None, description="The current best, timed in the same rounds.")
    manifest: dict[str, str] | None = Field(default=None, description="{relpath: sha256} the task must match.")
    options: dict[str, Any] = Field(default_factory=dict, description="VerifyOptions fields (no paths).")


class WorkerIdentity(BaseModel):
    """Where a verdict was reached: the device identity goes into the result."""

    pool: str = Field(description="local or ray.")
    slot: str = Field(description="The slot or actor name.")
    host: str = Field(description="Host name of the worker.")
    pid: int = Field(description="Worker process id.")
    device: str = Field(description="cpu:<cpu list> or cuda:<visible device> / rocm:<visible device>.")
    node: str | None = Field(default=None, description="Ray node id (first 12 hex digits); None on a local slot. "
                                                       "Nodes on one host share its name, so the host alone does "
                                                       "not say which node judged.")

    def label(self) -> str:
        where = f"{self.slot}@{self.node}" if self.node else self.slot
        return f"{self.pool}:{self.host}/{where}/{self.device}"


class OutcomeKind(StrEnum):
    verdict = "verdict"
    """The verifier judged the candidate (passed or not)."""
    harness = "harness"
    """kloop could not judge (exit 3 material), on this worker."""


class JobOutcome(BaseModel):
    """What comes back for one job."""

    id: str
    kind: OutcomeKind
    result: dict[str, Any] | None = Field(default=None, description="VerifyResult JSON (kind verdict).")
    error: str | None = Field(default=None, description="Why kloop could not judge (kind harness).")
    worker: WorkerIdentity | None = None
    attempts: int = Field(default=1, description="Workers tried; >1 when a worker died mid-job.")
    lost: list[str] = Field(default_factory=list, description="One line per worker lost while holding the job.")

    def verify_result(self) -> Any:
        """The `VerifyResult`; a harness outcome raises `HarnessFailure` (never a rejection)."""
        from kloop.verify.result import VerifyResult

        if self.kind is not OutcomeKind.verdict or self.result is None:
            raise HarnessFailure(f"job {self.id}: {self.error or 'no result'}")
        return VerifyResult.model_validate(self.result)


def device_label(device: str) -> str:
    """cpu:<affinity> on the CPU; the visible accelerator otherwise (set per slot by the local pool,
    per actor by Ray: `CUDA_VISIBLE_DEVICES` on NVIDIA nodes, `HIP_VISIBLE_DEVICES` on AMD ones, which
    a `--device gpu`/`auto` Ray pool cannot tell apart from the driver)."""
    if device in ("cuda", "gpu", "rocm"):
        cuda, hip = os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ.get("HIP_VISIBLE_DEVICES")
        if device == "rocm" or (hip is not None and cuda is None):  # a Ray actor on an AMD node: Ray sets HIP_*
            return f"rocm:{hip or 'all'}"
        return f"cuda:{cuda or 'all'}"
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = list(range(os.cpu_count() or 1))
    return "cpu:" + ",".join(str(c) for c in cpus)


def identity(pool: str, slot: str, device: str, node: str | None = None) -> WorkerIdentity:
    return WorkerIdentity(pool=pool, slot=slot, host=socket.gethostname(), pid=os.getpid(),
                          device=device_label(device), node=node)


def run_job(job: VerifyJob, who: WorkerIdentity, cache_root: Path | None = None) -> JobOutcome:
    """Verify one job here; a wrong candidate is a verdict, kloop's own failure a harness outcome."""
    from kloop.task.load import load_task
    from kloop.verify import verify
    from kloop.verify.result import VerifyOptions, VerifyResult, VerifyStatus

    cache = cache_root or Path(tempfile.gettempdir()) / f"kloop-pool-{os.getuid()}"
    cache.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        with tempfile.TemporaryDirectory(prefix="kloop-job-") as tmp:
            task_dir = job.task.cached(cache / "tasks")
            solution = job.solution.materialize(Path(tmp) / "solution")
            extra: dict[str, Any] = {"expected_manifest": job.manifest}
            if job.incumbent is not None:
                extra["incumbent_path"] = job.incumbent.materialize(Path(tmp) / "incumbent")
            options = VerifyOptions.model_validate({**job.options, **extra})
            task = load_task(task_dir)
            try:
                result = verify(task, solution, options)
            except BadInput as exc:  # a candidate too malformed to load is the candidate's failure
                result = VerifyResult(status=VerifyStatus.COMPILE_ERROR, reasons=[f"load: {exc}"],
                                      task=task.name, solution="candidate", device="none")
    except HarnessFailure as exc:
        return JobOutcome(id=job.id, kind=OutcomeKind.harness, error=str(exc), worker=who)
    result.environment[POOL_ENV_KEY] = who.label()
    return JobOutcome(id=job.id, kind=OutcomeKind.verdict, result=result.model_dump(mode="json"), worker=who)
