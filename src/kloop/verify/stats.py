"""Timing statistics whose unit of replication is a round, not an iteration.

One round times every box once (candidate, baseline, maybe the current best) in an order drawn
fresh for that round, all on the same freshly generated inputs. Iterations inside one batch share
the machine's state of that moment (load, frequency, cache), so they are not independent; rounds
are much closer to it. So a speedup's CI comes from the paired per-round log ratios
log(baseline latency / candidate latency).

Those ratios are heavy-tailed: a batch that a burst of contention hit reads 20-50 % slow while
most rounds agree within a few per cent. So the estimate is their 20 % trimmed mean, with Yuen's
standard error from the winsorized variance and Student t quantiles on (kept rounds - 1) degrees
of freedom: measured on this project's shared 2-core VM it has ~60 % of the plain mean's standard
error at the same A/A coverage (docs/verify.md, "Statistics"). The geometric mean over workloads
averages the per-workload estimates; its standard error combines theirs, with Welch-Satterthwaite
degrees of freedom. Rounds average the noise within one pair of boxes, not the pair's own offset,
so every comparison's standard error also carries the measured between-box spread (`between_boxes`).

No torch here: the gate and the benchmarks read these numbers without it.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

CONFIDENCE = 0.95

INTERVAL_METHOD = ("95 % t interval of a 20 % trimmed mean over rounds (Yuen), paired rounds for speedups, "
                   "widened by the 2 % between-box spread")  # fmt: skip
"""The one interval every figure uses, named the same wherever one is shown (verdict, report, status)."""

BOX_SD = 0.02
"""Spread of log(latency ratio) between pairs of boxes that run identical code: what rounds never
average away, since every round of one verification times the same pair of processes. Measured
with the fixed address layout on this project's 2-core VM, A/A on tests/loop/tasks/paced over
144-round verifications (`bench/box_offsets.py`): on 2026-12-02 0.3 % between two boxes that only
loaded and 0.7-1.3 % between the candidate's box and another; on 2026-12-07, 40 verifications with
forked boxes, 1.65 % and 0.9-2.2 % (16 with exec'd boxes: 1.3 % and 0.4-2.2 %), when 1 % let the
loop accept a cosmetic rewrite at 1.03x. With ASLR it was 1.6 % with tails to 30 %."""

TRIM = 0.2
"""Share of the rounds cut from each end before averaging (the usual robust choice: ~95 % of the
mean's efficiency on normal data, far better on data with spikes)."""


@dataclass(frozen=True)
class SpeedRule:
    """When a measured gain counts: one-sided confidence of the lower bound, the least gain, and how
    a promising but inconclusive first look is measured again."""

    confidence: float = 0.995
    min_gain: float = 1.01
    looks: int = 2
    """At most this many verifications per decision: a promising but inconclusive first one is
    repeated and pooled. Each look is held to `confidence`, so all looks together accept a candidate
    no faster than the best with probability at most looks x (1 - confidence) (Bonferroni): 1 %."""
    confirm_factor: int = 8
    """A repeated look times this many times the first look's rounds, so only promising candidates
    pay for the rounds a 5 % gain needs on a noisy machine."""
    confirm_pairs: int = 4
    """... spread over this many verifications, each in a fresh pair of boxes, pooled: rounds never
    average away a pair's own offset (`BOX_SD`), pairs do. With one pair of 8x rounds the box term
    was most of the confirming look's width, and a 5 % gain cleared in 5 of 10 quiet decisions."""

    @property
    def confirm_rounds_factor(self) -> int:
        """Each confirming verification's rounds, as a multiple of the first look's."""
        return max(1, self.confirm_factor // self.confirm_pairs)

    def clears(self, ratio: LogRatio) -> bool:
        """The one-sided lower bound of the speedup is above the least gain."""
        return ratio.lower(self.confidence) > self.min_gain

    def another_look(self, ratio: LogRatio, looks_done: int) -> bool:
        """Promising (the estimate is above the least gain) but not cleared, and looks are left."""
        return looks_done < self.looks and ratio.speedup > self.min_gain and not self.clears(ratio)


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


def trimmed_mean(values: list[float], trim: float = TRIM) -> LogRatio:
    """Yuen's trimmed mean: drop the `trim` share at each end, average the rest; its standard error
    comes from the winsorized variance (ends clamped, not dropped), on kept - 1 degrees of freedom."""
    n = len(values)
    if n == 0:
        raise ValueError("no values to average")
    cut = int(trim * n)
    ordered = sorted(values)
    kept = ordered[cut : n - cut]
    mean = statistics.fmean(kept)
    if len(kept) < 2:
        return LogRatio(mean, float("inf"), 0.0, n)
    winsorized = [ordered[cut]] * cut + kept + [ordered[n - cut - 1]] * cut
    h = len(kept)
    se = math.sqrt((n - 1) * statistics.variance(winsorized) / (h * (h - 1)))
    return LogRatio(mean, se, float(h - 1), n)


def paired_ratio(base_ns: list[float], cand_ns: list[float]) -> LogRatio:
    """log(baseline cost / candidate cost) per round, paired by round: their 20 % trimmed mean and
    Yuen's standard error. The pairing removes what a round's load did to both boxes; a difference
    of the two boxes' own trimmed means would not (its 95 % interval covered 1.0 for identical code
    in only 88 % of simulated verifications). So the verdict reports the candidate's own latency and
    the baseline's as `latency x speedup` (`timed.TimingSession._record`): speedup = baseline latency
    / latency exactly. At least two rounds give a finite interval."""
    if len(base_ns) != len(cand_ns) or not base_ns:
        raise ValueError("paired rounds need equally many baseline and candidate latencies")
    return trimmed_mean([math.log(max(b, 1.0) / max(c, 1.0)) for b, c in zip(base_ns, cand_ns, strict=True)])


paired_log_ratio = paired_ratio
"""The earlier name, kept for the benchmarks that import it."""


def _log_trimmed(values_ns: list[float]) -> float:
    return trimmed_mean([math.log(max(v, 1.0)) for v in values_ns]).mean


def trimmed_geomean(values_ns: list[float]) -> float:
    """A latency from per-round costs: exp of the 20 % trimmed mean of their logs."""
    return math.exp(_log_trimmed(values_ns))


def between_boxes(ratio: LogRatio, box_sd: float = BOX_SD) -> LogRatio:
    """One pair of boxes' comparison as evidence about the code: the rounds' standard error plus
    the between-box spread, taken as known (Welch-Satterthwaite degrees of freedom)."""
    if not math.isfinite(ratio.se) or box_sd <= 0:
        return ratio
    var = ratio.se**2 + box_sd**2
    df = var**2 / (ratio.se**4 / ratio.df) if ratio.df > 0 and ratio.se > 0 else float("inf")
    return LogRatio(ratio.mean, math.sqrt(var), df, ratio.replicates)


def pool(a: LogRatio, b: LogRatio) -> LogRatio:
    """Two looks at the same comparison as one: inverse-variance weights, degrees of freedom added."""
    usable = [r for r in (a, b) if r.se > 0 and math.isfinite(r.se)]
    if len(usable) < 2:
        return usable[0] if usable else b
    wa, wb = 1 / a.se**2, 1 / b.se**2
    return LogRatio((wa * a.mean + wb * b.mean) / (wa + wb), 1 / math.sqrt(wa + wb), a.df + b.df,
                    a.replicates + b.replicates)  # fmt: skip


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
    """A latency (`trimmed_geomean` of per-round per-call costs) and its interval (`INTERVAL_METHOD`), ms."""
    ratio = trimmed_mean([math.log(max(v, 1.0)) for v in per_round_ns])
    point = ratio.speedup / 1e6
    if ratio.replicates < 2:
        return point, [point, point]
    return point, [v / 1e6 for v in ratio.ci()]


@dataclass(frozen=True)
class Overhead:
    """The hand-off's own cost per call, measured with no-op calls (`fixed_ns` per batch stays 0 now)."""

    fixed_ns: float
    per_call_ns: float

    def of(self, count: int) -> float:
        return self.fixed_ns + self.per_call_ns * count
