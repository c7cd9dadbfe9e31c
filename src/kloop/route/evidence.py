"""The one rule tuning and routing share with the gate: faster only when the intervals say so.

A candidate clears an incumbent when the lower end of its speedup confidence interval lies above
the upper end of the incumbent's (`kloop.loop.gate` bars a round the same way, against the current
best's upper bound). Identical code measured twice overlaps itself, so it never clears: noise is
not a gain.
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
