"""The round-replicate statistics and the gate's rule, checked against exact values and by simulation.

The simulations draw timings the way a loaded machine produces them: a drift shared by the boxes
of one round (load coming and going), independent noise per batch, and heavy-tailed spikes. A/A
coverage and false acceptance must hold there, and a real gain must be found. Seeds are fixed,
so these tests are deterministic; the real-machine numbers are bench/aa_coverage.py's and
bench/gate_power.py's.
"""

from __future__ import annotations

import math
import random

import pytest

from kloop.loop.gate import SPEED_RULE
from kloop.verify.stats import LogRatio, _t, batch_latency_ns, fit_overhead, geomean, paired_log_ratio

# scipy.stats.t.ppf(q, df), tabulated
EXACT_T = {(1, 0.975): 12.7062, (2, 0.975): 4.30265, (3, 0.975): 3.18245, (5, 0.975): 2.57058,
           (5, 0.99): 3.36493, (7, 0.99): 2.99795, (11, 0.975): 2.20099, (30, 0.99): 2.45726}  # fmt: skip


@pytest.mark.parametrize(("df", "q"), sorted(EXACT_T))
def test_t_quantile_matches_the_table(df: int, q: float) -> None:
    assert _t(q, df) == pytest.approx(EXACT_T[(df, q)], rel=0.01)


def _rounds(rng: random.Random, gain: float, rounds: int, noise: float = 0.05,
            spikes: float = 0.03) -> tuple[list[float], list[float]]:  # fmt: skip
    """Per-round baseline and candidate latencies: shared drift, per-batch noise, rare spikes."""
    base, cand = [], []
    for _ in range(rounds):
        drift = math.exp(rng.gauss(0, 0.3))  # the machine's load this round, felt by both boxes
        spike = [1.5 if rng.random() < spikes else 1.0 for _ in range(2)]  # a burst of contention
        base.append(1e6 * drift * spike[0] * math.exp(rng.gauss(0, noise)))
        cand.append(1e6 / gain * drift * spike[1] * math.exp(rng.gauss(0, noise)))
    return base, cand


def test_identical_code_gets_a_ci_that_contains_one_95_percent_of_the_time() -> None:
    rng = random.Random(11)
    trials = 2000
    covered = 0
    for _ in range(trials):
        parts = [paired_log_ratio(*_rounds(rng, 1.0, 6)) for _ in range(2)]
        lo, hi = geomean(parts).ci()
        covered += lo <= 1.0 <= hi
    assert 0.94 <= covered / trials <= 0.99, covered / trials  # spikes make t a little conservative


def test_per_workload_ci_is_paired_by_round_so_shared_drift_cancels() -> None:
    rng = random.Random(3)
    base, cand = _rounds(rng, 2.0, 8, noise=0.01, spikes=0.0)
    ratio = paired_log_ratio(base, cand)
    lo, hi = ratio.ci()
    assert lo < 2.0 < hi and hi / lo < 1.3  # drift of +-30 % per round, yet a tight interval
    assert ratio.replicates == 8 and ratio.df == 7


def test_one_round_has_no_finite_interval_and_geomean_averages_logs() -> None:
    single = paired_log_ratio([2e6], [1e6])
    assert single.ci() == [0.0, math.inf] or single.ci()[1] == math.inf
    both = geomean([LogRatio(math.log(2), 0.01, 5, 6), LogRatio(math.log(8), 0.01, 5, 6)])
    assert both.speedup == pytest.approx(4.0)
    assert both.df == pytest.approx(10.0)  # equal variances: Welch-Satterthwaite adds the dfs


def _gate_accepts(ratio: LogRatio) -> bool:
    return ratio.lower(SPEED_RULE.confidence) > SPEED_RULE.min_gain


def test_gate_rule_false_acceptance_and_power_in_simulation() -> None:
    rng = random.Random(5)
    trials = 2000
    false = sum(_gate_accepts(geomean([paired_log_ratio(*_rounds(rng, 1.0, 6)) for _ in range(2)]))
                for _ in range(trials))  # fmt: skip
    found = sum(_gate_accepts(geomean([paired_log_ratio(*_rounds(rng, 1.10, 6, noise=0.03, spikes=0.0)) for _ in range(2)]))
                for _ in range(trials))  # fmt: skip
    assert false / trials <= 0.01, false / trials
    assert found / trials >= 0.9, found / trials


def test_overhead_fit_and_batch_latency_never_collapse() -> None:
    over = fit_overhead((1, [110, 100, 120]), (101, [1110, 1100, 1150]))
    assert over.per_call_ns == pytest.approx(10.0) and over.fixed_ns == pytest.approx(100.0)
    assert batch_latency_ns(10_000, over.of(100), 100) == pytest.approx((10_000 - 1100) / 100)
    assert batch_latency_ns(1_000, 5_000, 10) == pytest.approx(1.0)  # 1 % of the raw per-call time
