"""The rule tuning and routing share with the gate: faster only when the evidence says so.

Two forms, as in `kloop.loop.gate`. With a direct comparison (the verifier timed the candidate
and the incumbent in the same rounds: `summary.incumbent`), `kloop.verify.stats.SpeedRule` decides,
looks and all (`kloop.route.tune.confirm`). Without one, the candidate's speedup interval must lie
wholly above the incumbent's (`clears`), the gate's fallback. Identical code measured twice
overlaps itself, so it never clears: noise is not a gain.
"""

from __future__ import annotations

import math


def clears(candidate_ci: list[float] | None, incumbent_ci: list[float] | None) -> bool:
    """True when the candidate's CI lies wholly above the incumbent's; False when either is unknown."""
    if not candidate_ci or not incumbent_ci:
        return False
    return candidate_ci[0] > incumbent_ci[1]


def geomean(values: list[float]) -> float:
    """Geometric mean of positive values (speedups over a regime's workloads)."""
    return math.exp(sum(math.log(v) for v in values) / len(values))


def regime_ci(per_workload: list[list[float]]) -> list[float]:
    """A regime's speedup interval from per-workload intervals: geomean of the lows, geomean of the highs.

    Conservative: the bounds of all workloads are taken at once, as if fully correlated.
    """
    return [geomean([ci[0] for ci in per_workload]), geomean([ci[1] for ci in per_workload])]
