"""Timing statistics whose unit of replication is a round, not an iteration.

One round times every box once (candidate, baseline, maybe the current best) in an order drawn
fresh for that round, all on the same freshly generated inputs. Iterations inside one batch share
the machine's state of that moment (load, frequency, cache), so they are not independent; rounds
are much closer to it. So a speedup's CI comes from the paired per-round log ratios
log(baseline latency / candidate latency): their mean, its standard error and a Student t
quantile. The geometric mean over workloads averages the per-workload log means; its standard
error combines theirs, with Welch-Satterthwaite degrees of freedom.

No torch here: the gate and the benchmarks read these numbers without it.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

CONFIDENCE = 0.95


@dataclass(frozen=True)
class SpeedRule:
    """When a measured gain counts: one-sided confidence of the lower bound, and the least gain."""

    confidence: float = 0.995
    min_gain: float = 1.01
    looks: int = 2
    """At most this many verifications per round: a promising but inconclusive first one is repeated
    and pooled. Each look is held to `confidence`, so all looks together accept a candidate no
    faster than the best with probability at most looks x (1 - confidence) (Bonferroni): 1 %."""
    confirm_factor: int = 8
    """A repeated look times this many times the first look's rounds. A paired round's log ratio
    spreads by ~0.19 on a shared 2-core VM, so 16 rounds resolve ~±10 %; only promising candidates
    pay for the rounds a 5 % gain needs."""


@dataclass(frozen=True)
class LogRatio:
    """An estimate of log(speedup): mean over replicates, its standard error, degrees of freedom."""

    mean: float
    se: float
    df: float
    replicates: int

    @property
    def speedup(self) -> float:
        return math.exp(self.mean)

    def ci(self, confidence: float = CONFIDENCE) -> list[float]:
        """Two-sided interval of the speedup at `confidence`."""
        half = _t(1 - (1 - confidence) / 2, self.df) * self.se
        return [math.exp(self.mean - half), math.exp(self.mean + half)]

    def lower(self, confidence: float) -> float:
        """One-sided lower bound of the speedup at `confidence` (what a gate compares with its bar)."""
        return math.exp(self.mean - _t(confidence, self.df) * self.se)


def _t(q: float, df: float) -> float:
    """Student t quantile: exact for 1 and 2 degrees of freedom, Cornish-Fisher beyond.

    The expansion (Abramowitz & Stegun 26.7.5) is within 1 % of the exact quantile from three degrees
    of freedom on (0.2 % at a 97.5 % quantile); it saves a SciPy dependency.
    """
    if not math.isfinite(df) or df <= 0:
        return float("inf")
    if df < 1.5:
        return math.tan(math.pi * (q - 0.5))
    if df < 2.5:
        return (2 * q - 1) / math.sqrt(2 * q * (1 - q))
    z = statistics.NormalDist().inv_cdf(q)
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def paired_log_ratio(base_ns: list[float], cand_ns: list[float]) -> LogRatio:
    """log(base/cand) per round, paired by round; at least two rounds give a finite CI."""
    if len(base_ns) != len(cand_ns) or not base_ns:
        raise ValueError("paired rounds need equally many baseline and candidate latencies")
    diffs = [math.log(max(b, 1.0) / max(c, 1.0)) for b, c in zip(base_ns, cand_ns, strict=True)]
    n = len(diffs)
    mean = statistics.fmean(diffs)
    if n < 2:
        return LogRatio(mean, float("inf"), 0.0, n)
    return LogRatio(mean, statistics.stdev(diffs) / math.sqrt(n), float(n - 1), n)


def geomean(parts: list[LogRatio]) -> LogRatio:
    """Geometric mean over workloads: mean of log means; Welch-Satterthwaite df for its se."""
    if not parts:
        raise ValueError("no workloads to average")
    k = len(parts)
    mean = statistics.fmean(p.mean for p in parts)
    variances = [(p.se / k) ** 2 for p in parts]
    var = sum(variances)
    if not math.isfinite(var):
        return LogRatio(mean, float("inf"), 0.0, sum(p.replicates for p in parts))
    denominator = sum(v * v / p.df for v, p in zip(variances, parts, strict=True) if p.df > 0 and v > 0)
    df = var * var / denominator if denominator > 0 else float(sum(p.df for p in parts))
    return LogRatio(mean, math.sqrt(var), df, sum(p.replicates for p in parts))


def latency_ci_ms(per_round_ns: list[float]) -> tuple[float, list[float]]:
    """Candidate latency (geometric mean over rounds) and its t interval, in milliseconds."""
    logs = [math.log(max(v, 1.0)) for v in per_round_ns]
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        point = math.exp(mean) / 1e6
        return point, [point, point]
    half = _t(1 - (1 - CONFIDENCE) / 2, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(mean) / 1e6, [math.exp(mean - half) / 1e6, math.exp(mean + half) / 1e6]


def batch_latency_ns(wall_ns: int, overhead_ns: float, count: int) -> float:
    """Per-call latency of one batch on the supervisor's clock, the harness's calibrated cost removed.

    Never below 1 % of the raw per-call wall time: a calibration that came out high must not turn
    a batch into zero (the log ratio would explode); the physics floor judges implausibly low ones.
    """
    raw = wall_ns / max(count, 1)
    return max((wall_ns - overhead_ns) / max(count, 1), 0.01 * raw, 1.0)


@dataclass(frozen=True)
class Overhead:
    """The harness's own cost of a batch of `n` calls, fitted as fixed + per-call before any load."""

    fixed_ns: float
    per_call_ns: float

    def of(self, count: int) -> float:
        return self.fixed_ns + self.per_call_ns * count


def fit_overhead(small: tuple[int, list[int]], large: tuple[int, list[int]]) -> Overhead:
    """Line through the medians of no-op batches at two sizes (noise only ever adds wall time)."""
    n1, w1 = small[0], statistics.median(small[1])
    n2, w2 = large[0], statistics.median(large[1])
    per = max((w2 - w1) / (n2 - n1), 0.0) if n2 > n1 else 0.0
    return Overhead(max(w1 - per * n1, 0.0), per)
