"""summary.json: the run's outcome in the contract's exact shape, rebuilt from the lineage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from kloop.loop.branches import branch_report, team_of
from kloop.loop.lineage import Lineage
from kloop.loop.record import CandidateRecord
from kloop.loop.state import atomic_write
from kloop.loop.stopping import Outcome, RunStatus


class SummaryBest(BaseModel):
    candidate: str = Field(description="Best accepted candidate id (`baseline` when none beat it).")
    round: int = Field(description="Its round (0 for the baseline).")
    speedup_geomean: float | None = Field(description="Its measured geomean speedup over the baseline.")


class SummaryRound(BaseModel):
    round: int = Field(description="Round number, from 1 in writer-call order.")
    stage: str = Field(description="research, iterate or tune.")
    candidate: str = Field(description="Candidate id.")
    parent: str | None = Field(description="Parent candidate id.")
    verify_status: str | None = Field(description="Verifier status, null when not verified.")
    speedup_geomean: float | None = Field(description="Measured geomean speedup.")
    review_decision: str | None = Field(description="accept, reject, or null when not reviewed.")
    accepted: bool = Field(description="The gate's decision.")
    reasons: list[str] = Field(description="One per failed gate condition.")
    branch: str | None = Field(default=None, description="Team branch of the round (team runs only).")


class SummaryBranch(BaseModel):
    """One branch of a team run (`--team N`)."""

    name: str = Field(description="b1, b2, ...")
    status: str = Field(description="running, or how the branch ended (completed, stalled, budget, ...).")
    reason: str = Field(default="", description="Why it ended, in words and numbers.")
    head: str | None = Field(description="The candidate its next round starts from.")
    best: SummaryBest | None = Field(description="The fastest candidate this branch got accepted.")
    rounds: int = Field(description="Its writer rounds.")
    accepted: int = Field(description="Of which accepted.")
    rebases: list[dict[str, Any]] = Field(description="Each time it stalled and rebased onto the global best.")


class Spent(BaseModel):
    """Dollars and tokens some agent calls spent, as their gateways (or the agents) counted them."""

    usd: float = Field(default=0.0, description="Dollars (calls that reported none count 0).")
    tokens: int = Field(default=0, description="Tokens (calls that reported none count 0).")


class BranchSpending(Spent):
    """What one team branch's rounds spent: the total and its writer's and reviewer's calls."""

    writer: Spent = Field(default_factory=Spent, description="The writer calls of every round.")
    reviewer: Spent = Field(default_factory=Spent, description="The reviewer calls of every round.")


class Spending(BranchSpending):
    """What the run's agents spent: the total, and the writer's, reviewer's and researcher's parts.

    The totals are what the run's cost and token budgets are held to (`Lineage.spent_usd`,
    `spent_tokens`): the same lineage rows and research meta, summed here in one query."""

    research: Spent = Field(default_factory=Spent, description="The research stage's planning call.")
    branches: dict[str, BranchSpending] | None = Field(default=None, description="Team runs only: each "
                                                       "branch's rounds (research is the run's).")


def spending(lineage: Lineage, team: list[str] | None = None) -> Spending:
    """The run's spending from its lineage (`Lineage.spending`, which `kloop status` shows as it is)."""
    return Spending.model_validate(lineage.spending(team))


class Summary(BaseModel):
    """The contract of summary.json, plus `reason`: why the run stopped, and `spent`: what its agents spent."""

    task: str = Field(description="Task (definition) name.")
    status: RunStatus = Field(description="How the run stopped.")
    outcome: Outcome = Field(description="improvement, no-go or blocked.")
    reason: str = Field(default="", description="The stop's reason, in words and numbers.")
    best: SummaryBest = Field(description="The best accepted candidate.")
    rounds: list[SummaryRound] = Field(description="Every writer round, accepted or not.")
    branches: list[SummaryBranch] | None = Field(default=None, description="Team runs only: every branch.")
    spent: Spending = Field(default_factory=Spending, description="Dollars and tokens the run's agents spent "
                            "(an addition to the contract's keys).")


def _row(record: CandidateRecord) -> SummaryRound:
    return SummaryRound(
        round=record.round, stage=record.stage, candidate=record.candidate, parent=record.parent,
        verify_status=record.verify_status, speedup_geomean=record.speedup_geomean,
        review_decision=record.review_decision, accepted=record.accepted, reasons=record.reasons,
        branch=record.branch,
    )  # fmt: skip


def outcome_for(status: RunStatus, best: CandidateRecord | None) -> Outcome:
    if status is RunStatus.blocked:
        return Outcome.blocked
    if best is not None and best.round > 0:
        return Outcome.improvement
    return Outcome.no_go


def tested_hypotheses(records: list[CandidateRecord], limit: int = 4) -> str:
    """'H -> best measured speedup (round)' per hypothesis tried: the numbers behind a no-go."""
    best: dict[str, CandidateRecord] = {}
    for record in records:
        key = (record.hypothesis or record.claim or record.candidate)[:70]
        if record.speedup_geomean is None:
            continue
        if key not in best or record.speedup_geomean > (best[key].speedup_geomean or 0.0):
            best[key] = record
    if not best:
        return "no candidate produced a measurement"
    parts = [f"{key!r}: {r.speedup_geomean:.2f}x ({r.candidate}, {'accepted' if r.accepted else 'rejected'})"
             for key, r in sorted(best.items(), key=lambda kv: -(kv[1].speedup_geomean or 0.0))[:limit]]
    return "; ".join(parts)


def build_summary(lineage: Lineage, task: str, status: RunStatus, reason: str) -> Summary:
    best = lineage.best()
    chosen = SummaryBest(candidate="baseline", round=0, speedup_geomean=1.0)
    if best is not None:
        chosen = SummaryBest(candidate=best.candidate, round=best.round, speedup_geomean=best.speedup_geomean)
    team = team_of(lineage)
    branches = [SummaryBranch.model_validate(branch_report(lineage, name)) for name in team] if team else None
    return Summary(task=task, status=status, outcome=outcome_for(status, best), reason=reason,
                   best=chosen, rounds=[_row(r) for r in lineage.rounds()], branches=branches,
                   spent=spending(lineage, team))


def write_summary(summary: Summary, path: Path) -> None:
    """The contract's shape plus `spent`; a team run adds `branches`, each round's `branch` and `spent`'s
    branches, a single run does not."""
    if summary.branches is None:
        text = summary.model_dump_json(indent=2, exclude={"branches": True, "rounds": {"__all__": {"branch"}},
                                                          "spent": {"branches"}})
    else:
        text = summary.model_dump_json(indent=2)
    atomic_write(path, text + "\n")
