"""The verification pool: many candidates verified at once, on local slots or a Ray cluster.

`open_pool(cluster, device, slots)` gives a `VerificationPool`; jobs are `VerifyJob`s (the task
and candidate as content-addressed bundles), outcomes `JobOutcome`s (the `VerifyResult` JSON and
the worker that produced it). Importing this package does not import torch or Ray.
"""

from __future__ import annotations

from kloop.lazy import lazy_exports

_EXPORTS = {
    **dict.fromkeys(["VerificationPool", "run_all"], "kloop.pool.base"), "open_pool": "kloop.pool.open",
    **dict.fromkeys(["Bundle"], "kloop.pool.bundle"),
    **dict.fromkeys(["VerifyJob", "JobOutcome", "WorkerIdentity"], "kloop.pool.job"),
    "LocalPool": "kloop.pool.local",
    "RayPool": "kloop.pool.ray_pool",
    "PoolVerifier": "kloop.pool.verifier",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = sorted(_EXPORTS)
