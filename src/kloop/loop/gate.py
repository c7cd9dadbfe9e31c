"""The gate: a candidate counts only if every condition holds, and each failed one says why.

accepted = writer finished ∧ allowed paths ∧ integrity ∧ verify passed
           ∧ (speed rule ∨ declared non-speed goal met)
           ∧ reviewer accepts

Speed rule: the verifier timed the candidate and the current best in the same rounds, on the
same fresh inputs (`summary.incumbent`; while the best is still the baseline, `summary.comparison`
is that comparison). The one-sided lower confidence bound of candidate / best at
`SPEED_RULE.confidence` must exceed `SPEED_RULE.min_gain`. The best is re-measured every time,
so a best that was lucky once does not raise the bar for later rounds (no ratchet). A first
verification that is promising (point estimate above the bar) but inconclusive is repeated with
`confirm_factor` times the rounds, spread over `confirm_pairs` fresh pairs of boxes, and all of
them pooled (`another_look`, `pooled`); a round no
faster than the best is accepted with probability at most looks x (1 - confidence) = 1 %.
Verdicts without those statistics (a fake verifier) fall back to: CI lower bound > the bar
passed in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kloop.agents.base import AgentStatus, Decision, Severity, Verdict
from kloop.verify.result import Comparison, VerifyResult
from kloop.verify.stats import SpeedRule, pool

SPEED_RULE = SpeedRule()
NON_SPEED_GOALS = {"tunables", "refactor"}
# A non-speed goal may cost a little speed, never a clear regression.
GOAL_TOLERANCE = 0.95


@dataclass
class GateInput:
    """Everything the gate looks at for one round."""

    agent_status: AgentStatus
    agent_message: str = ""
    changed_paths: list[str] = field(default_factory=list)
    path_violations: list[str] = field(default_factory=list)
    integrity_problems: list[str] = field(default_factory=list)
    verify: VerifyResult | None = None
    best_speedup: float = 1.0  # the fallback bar: the current best's upper CI bound
    best_is_baseline: bool = True  # the current best is the task's baseline (round 0)
    rule: SpeedRule = SPEED_RULE
    goal: str | None = None
    declares_tunables: bool = False
    verdict: Verdict | None = None
    reviewer_problem: str | None = None


@dataclass
class GateDecision:
    accepted: bool
    reasons: list[str]


def direct(inp: GateInput) -> Comparison | None:
    """The candidate against the current best, timed in the same rounds, when the verifier did that."""
    summary = inp.verify.summary if inp.verify else None
    if summary is None:
        return None
    if summary.incumbent is not None:
        return summary.incumbent
    return summary.comparison if inp.best_is_baseline else None


def _speed_reason(inp: GateInput) -> str | None:
    summary = inp.verify.summary if inp.verify else None
    value = summary.speedup_geomean if summary else None
    if value is None or summary is None:
        note = summary.timing_note if summary and summary.timing_note else "no timing"
        return f"speed: no speedup measured ({note})"
    lo, hi = summary.speedup_ci or [value, value]
    versus = direct(inp)
    if versus is not None:
        return _direct_reason(inp, versus)
    if lo > inp.best_speedup:
        return None
    if inp.goal:
        return _goal_reason(inp, value, hi)
    return (f"speed: {value:.2f}x (CI {lo:.2f}-{hi:.2f}) does not clear the current best "
            f"{inp.best_speedup:.2f}x (its upper CI bound)")


def _direct_reason(inp: GateInput, versus: Comparison) -> str | None:
    ratio = versus.ratio()
    bound = ratio.lower(inp.rule.confidence)
    if inp.rule.clears(ratio):
        return None
    if inp.goal:  # a non-speed goal may cost a little speed: the best re-measured is the reference
        return _goal_reason(inp, ratio.speedup, ratio.ci()[1], bar=1.0)
    return (f"speed: {ratio.speedup:.3f}x the current best, timed in the same rounds; its "
            f"{inp.rule.confidence:.1%} lower bound {bound:.3f} does not clear the current best by "
            f"{inp.rule.min_gain - 1:.0%}")


def _goal_reason(inp: GateInput, value: float, hi: float, bar: float | None = None) -> str | None:
    goal = inp.goal or ""
    best = inp.best_speedup if bar is None else bar
    if goal not in NON_SPEED_GOALS:
        return f"goal: {goal!r} is not a goal kloop can check (known: {', '.join(sorted(NON_SPEED_GOALS))})"
    if goal == "tunables" and not inp.declares_tunables:
        return "goal: 'tunables' declared but solution.json declares no kloop.tunables"
    if hi < best * GOAL_TOLERANCE:
        return (f"goal: {goal!r} met but {value:.2f}x (CI hi {hi:.2f}) is a clear regression from "
                f"{best:.2f}x")
    return None


def decide(inp: GateInput) -> GateDecision:
    """Apply every condition; the reasons list is empty exactly when the candidate is accepted."""
    reasons: list[str] = []
    if inp.agent_status is not AgentStatus.completed:
        reasons.append(f"writer: {inp.agent_status.value}: {inp.agent_message}".rstrip(": "))
    elif not (inp.changed_paths or inp.path_violations or inp.integrity_problems):
        reasons.append("writer: no change to solution/ or notes/")
    reasons += [f"paths: {v}" for v in inp.path_violations]
    reasons += [f"integrity: {p}" for p in inp.integrity_problems]
    if reasons:
        return GateDecision(False, reasons)
    if inp.verify is None:
        reasons.append("verify: not run")
    elif not inp.verify.passed:
        detail = "; ".join(inp.verify.reasons[:3]) or "no reason given"
        reasons.append(f"verify: {inp.verify.status.value}: {detail}")
    else:
        speed = _speed_reason(inp)
        if speed:
            reasons.append(speed)
    if inp.reviewer_problem:
        reasons.append(f"reviewer: {inp.reviewer_problem}")
    elif inp.verdict is None:
        reasons.append("reviewer: no verdict")
    elif inp.verdict.decision is not Decision.accept:
        high = [f.text for f in inp.verdict.findings if f.severity is Severity.high]
        reasons.append("reviewer: rejected: " + ("; ".join(high[:3]) or inp.verdict.summary))
    return GateDecision(not reasons, reasons)


def best_speed_now(verify: VerifyResult | None, fallback: float) -> float:
    """The current best's speedup over the baseline as re-measured in this verification, if it was."""
    summary = verify.summary if verify else None
    if summary is None or summary.incumbent is None or not summary.speedup_geomean:
        return fallback
    return summary.speedup_geomean / summary.incumbent.speedup_geomean


def another_look(verify: VerifyResult | None, best_is_baseline: bool, looks_done: int,
                 rule: SpeedRule = SPEED_RULE) -> bool:  # fmt: skip
    """Repeat the verification: it passed, looks promising, and has not cleared the bar yet."""
    if verify is None or not verify.passed:
        return False
    versus = direct(GateInput(agent_status=AgentStatus.completed, verify=verify, best_is_baseline=best_is_baseline))
    return versus is not None and rule.another_look(versus.ratio(), looks_done)


def confirmed(first: VerifyResult, verify_pair: Callable[[int], VerifyResult],
              rule: SpeedRule = SPEED_RULE) -> VerifyResult:  # fmt: skip
    """The confirming look: `rule.confirm_pairs` verifications, each in fresh boxes (`verify_pair(i)`,
    `rule.confirm_rounds_factor` times the rounds), pooled with `first`; a failed one ends it."""
    result = first
    for pair in range(rule.confirm_pairs):
        again = verify_pair(pair)
        result = pooled(result, again)
        if not again.passed:
            break
    return result


def pooled(first: VerifyResult, again: VerifyResult) -> VerifyResult:
    """`first` with its comparisons pooled with `again`'s (`kloop.verify.stats.pool`)."""
    if not again.passed:
        return again
    summary = first.summary.model_copy()
    for name in ("comparison", "incumbent"):
        a, b = getattr(first.summary, name), getattr(again.summary, name)
        if a is not None and b is not None:
            setattr(summary, name, Comparison.of(pool(a.ratio(), b.ratio())))
    if summary.comparison is not None:
        summary.speedup_geomean, summary.speedup_ci = summary.comparison.speedup_geomean, summary.comparison.speedup_ci
    return first.model_copy(update={"summary": summary})

