"""The loop's `Verifier` over a pool: a round's candidate goes out as a job, its verdict comes back.

Same arguments and the same `VerifyResult` as `kloop.loop.verifier.KloopVerifier`, so the gate
cannot tell where the verdict was reached, except that `environment["pool_worker"]` names the
worker and device. Thread-safe: every branch of a team shares one.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from kloop.pool.base import VerificationPool
from kloop.pool.bundle import Bundle
from kloop.pool.job import VerifyJob

_IDS = itertools.count(1)


def job_options(device: str, overrides: dict[str, Any], timing: bool, rounds_factor: int) -> dict[str, Any]:
    """The VerifyOptions a job carries: device and overrides, less anything that is a local path."""
    from kloop.verify.result import VerifyOptions

    options: dict[str, Any] = {"device": device, **overrides}
    for key in ("log_dir", "cache_dir", "baseline_path", "incumbent_path", "expected_manifest"):
        options.pop(key, None)
    if rounds_factor > 1:
        options["rounds"] = rounds_factor * int(overrides.get("rounds", VerifyOptions().rounds))
    if not timing:
        options.update(timing=False, speedup=False)
    return options


class PoolVerifier:
    """Verifies through a `VerificationPool` (local slots or Ray actors)."""

    def __init__(self, pool: VerificationPool, device: str = "auto", overrides: dict[str, Any] | None = None) -> None:
        self.pool, self.device, self.overrides = pool, device, dict(overrides or {})
        self._task_bundles: dict[Path, Bundle] = {}

    def _task(self, task_dir: Path) -> Bundle:
        if task_dir not in self._task_bundles:  # the sealed task does not change within a run
            self._task_bundles[task_dir] = Bundle.from_dir(task_dir)
        return self._task_bundles[task_dir]

    def verify(
        self, task_dir: Path, solution_dir: Path, manifest: dict[str, str], log_dir: Path, timing: bool = True,
        incumbent: Path | None = None, rounds_factor: int = 1,
    ) -> Any:
        job = VerifyJob(id=f"job-{next(_IDS)}", task=self._task(task_dir), solution=Bundle.from_dir(solution_dir),
                        incumbent=Bundle.from_dir(incumbent) if incumbent is not None and timing else None,
                        manifest=manifest or None,
                        options=job_options(self.device, self.overrides, timing, rounds_factor))
        outcome = self.pool.submit(job).result()
        log_dir.mkdir(parents=True, exist_ok=True)
        (log_dir / "pool.json").write_text(json.dumps(
            {"worker": outcome.worker.model_dump() if outcome.worker else None, "attempts": outcome.attempts,
             "lost": outcome.lost, "solution_bundle": job.solution.digest}, indent=1), encoding="utf-8")
        return outcome.verify_result()
