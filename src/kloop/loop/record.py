"""One lineage row as the loop builds and reads it: a pydantic model, kept apart from `kloop.loop.lineage`
so that reading a run (`kloop status`) never imports pydantic."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class CandidateRecord(BaseModel):
    """One lineage row: a round's candidate, what was claimed and measured, and the gate's word."""

    round: int = Field(description="Round number (0 = the baseline).")
    candidate: str = Field(description="Candidate id (`baseline`, `r001`, ...).")
    parent: str | None = Field(default=None, description="The candidate this one was built from.")
    stage: str = Field(description="research, iterate or tune.")
    commit_sha: str | None = Field(default=None, description="Workspace commit holding the attempt.")
    agent_status: str = Field(description="How the writer's turn ended.")
    claim: str = Field(default="", description="The writer's claim.")
    hypothesis: str = Field(default="", description="The mechanism the writer bet on.")
    prediction: float | None = Field(default=None, description="Predicted speedup.")
    goal: str | None = Field(default=None, description="Declared non-speed goal, if any.")
    config: dict[str, Any] | None = Field(default=None, description="Tuner configuration, if any.")
    changed_paths: list[str] = Field(default_factory=list, description="Paths the writer changed.")
    verify_status: str | None = Field(default=None, description="Verifier status, None if not verified.")
    verify_summary: dict[str, Any] | None = Field(default=None, description="Verifier summary block.")
    speedup_geomean: float | None = Field(default=None, description="Measured geomean speedup.")
    speedup_lo: float | None = Field(default=None, description="Lower end of its confidence interval.")
    speedup_hi: float | None = Field(default=None, description="Upper end of its confidence interval.")
    workload_speedups: dict[str, float | None] = Field(default_factory=dict, description="uuid -> speedup.")
    review_decision: str | None = Field(default=None, description="accept or reject, None if not reviewed.")
    review_progress: str | None = Field(default=None, description="advanced, stalled or regressed.")
    findings: list[dict[str, str]] = Field(default_factory=list, description="Reviewer findings.")
    accepted: bool = Field(description="Did the gate accept the candidate?")
    reasons: list[str] = Field(default_factory=list, description="One per failed gate condition.")
    cost_usd: float | None = Field(default=None, description="Agent cost of the round (writer and reviewer), when known.")
    tokens: int | None = Field(default=None, description="Agent tokens of the round (writer and reviewer), when known.")
    review_tokens: int | None = Field(default=None, description="Of `tokens`, the reviewer's.")
    review_cost_usd: float | None = Field(default=None, description="Of `cost_usd`, the reviewer's.")
    started_at: float | None = Field(default=None, description="Unix time the round began.")
    finished_at: float | None = Field(default=None, description="Unix time the row was written.")
    branch: str | None = Field(default=None, description="Team branch (b1, b2, ...); None in a single run.")
