"""The gate: a candidate counts only if every condition holds, and each failed one says why.

accepted = writer finished ∧ allowed paths ∧ integrity ∧ verify passed
           ∧ (speedup CI lower bound > current best ∨ declared non-speed goal met)
           ∧ reviewer accepts
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kloop.agents.base import AgentStatus, Decision, Severity, Verdict
from kloop.verify.result import VerifyResult

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
    best_speedup: float = 1.0  # the bar: the current best's upper CI bound
    goal: str | None = None
    declares_tunables: bool = False
    verdict: Verdict | None = None
    reviewer_problem: str | None = None


@dataclass
class GateDecision:
    accepted: bool
    reasons: list[str]


def _speed_reason(inp: GateInput) -> str | None:
    summary = inp.verify.summary if inp.verify else None
    value = summary.speedup_geomean if summary else None
    if value is None:
        note = summary.timing_note if summary and summary.timing_note else "no timing"
        return f"speed: no speedup measured ({note})"
    lo, hi = summary.speedup_ci or [value, value]
    if lo > inp.best_speedup:
        return None
    if inp.goal:
        return _goal_reason(inp, value, hi)
    return (f"speed: {value:.2f}x (CI {lo:.2f}-{hi:.2f}) does not clear the current best "
            f"{inp.best_speedup:.2f}x (its upper CI bound)")


def _goal_reason(inp: GateInput, value: float, hi: float) -> str | None:
    goal = inp.goal or ""
    if goal not in NON_SPEED_GOALS:
        return f"goal: {goal!r} is not a goal kloop can check (known: {', '.join(sorted(NON_SPEED_GOALS))})"
    if goal == "tunables" and not inp.declares_tunables:
        return "goal: 'tunables' declared but solution.json declares no kloop.tunables"
    if hi < inp.best_speedup * GOAL_TOLERANCE:
        return (f"goal: {goal!r} met but {value:.2f}x (CI hi {hi:.2f}) is a clear regression from "
                f"{inp.best_speedup:.2f}x")
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
