"""The gate's speed rule on verdicts as the verifier writes them: direct comparison, second look, pooling."""

from __future__ import annotations

import math
import random

from kloop.agents.base import AgentStatus, Decision, ProgressMark, Verdict
from kloop.loop.gate import SPEED_RULE, GateInput, another_look, decide, pooled
from kloop.verify.result import Comparison, Summary, VerifyResult, VerifyStatus
from kloop.verify.stats import LogRatio


def _verdict(speedup: float, se: float, df: float = 15, *, incumbent: bool = False) -> VerifyResult:
    ratio = LogRatio(math.log(speedup), se, df, int(df) + 1)
    comp = Comparison(speedup_geomean=ratio.speedup, speedup_ci=ratio.ci(), log_mean=ratio.mean, log_se=se, df=df,
                      replicates=ratio.replicates)  # fmt: skip
    summary = Summary(speedup_geomean=3.0 * speedup if incumbent else speedup, speedup_ci=[1.0, 9.0],
                      comparison=None if incumbent else comp, incumbent=comp if incumbent else None)  # fmt: skip
    return VerifyResult(status=VerifyStatus.PASSED, task="t", solution="s", device="cpu", summary=summary)


def _accepts(verify: VerifyResult, best_is_baseline: bool = True) -> bool:
    ok = Verdict(decision=Decision.accept, progress=ProgressMark.advanced, findings=[], summary="ok")
    return decide(GateInput(agent_status=AgentStatus.completed, changed_paths=["solution/main.py"], verify=verify,
                            best_is_baseline=best_is_baseline, best_speedup=99.0, verdict=ok)).accepted  # fmt: skip


def test_the_bar_is_the_best_re_measured_not_its_old_upper_bound() -> None:
    # best_speedup=99 (a lucky old measurement) is ignored: the comparison timed in the same rounds decides
    assert _accepts(_verdict(1.10, 0.01, incumbent=True), best_is_baseline=False)
    assert not _accepts(_verdict(1.00, 0.01, incumbent=True), best_is_baseline=False)
    assert not _accepts(_verdict(1.10, 0.01), best_is_baseline=False)  # no incumbent timed: old rule, bar 99


def test_a_promising_inconclusive_verdict_gets_one_more_look_and_is_pooled() -> None:
    first = _verdict(1.08, 0.03)
    assert not _accepts(first) and another_look(first, True, 1)
    assert not another_look(first, True, SPEED_RULE.looks)  # never more than `looks`
    assert not another_look(_verdict(0.99, 0.03), True, 1)  # not promising: no second look
    both = pooled(first, _verdict(1.08, 0.03))
    assert both.summary.comparison is not None and both.summary.comparison.df == 30
    assert math.isclose(both.summary.comparison.log_se, 0.03 / math.sqrt(2))
    assert _accepts(both)


def test_two_looks_keep_false_acceptance_at_most_one_percent_in_simulation() -> None:
    rng = random.Random(7)
    trials, accepted = 4000, 0
    for _ in range(trials):
        se = 0.03
        verdict = _verdict(math.exp(rng.gauss(0, se)), se)
        if another_look(verdict, True, 1):
            verdict = pooled(verdict, _verdict(math.exp(rng.gauss(0, se)), se))
        accepted += _accepts(verdict)
    assert accepted / trials <= 0.01, accepted / trials
