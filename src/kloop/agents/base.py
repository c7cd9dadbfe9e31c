"""The one agent protocol: `run(request) -> result`, and the schemas that cross it.

Every agent kind (CLI adapters, replay, tuner, rules) is an implementation of `Agent`.
The loop builds an `AgentRequest`, the agent acts on the workspace (a writer) or judges
an evidence bundle (a reviewer), and answers with an `AgentResult`. Nothing here imports
the loop: the evidence a reviewer sees is plain data.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field


class Role(StrEnum):
    """What an agent is asked to be in a round."""

    writer = "writer"
    reviewer = "reviewer"
    researcher = "researcher"


class AgentStatus(StrEnum):
    """How an agent's turn ended (closed set; the loop maps each to a round outcome)."""

    completed = "completed"
    exhausted = "exhausted"  # nothing left to offer: an ended campaign, a searched-out space
    crashed = "crashed"
    timed_out = "timed_out"
    over_budget = "over_budget"


class Decision(StrEnum):
    accept = "accept"
    reject = "reject"


class ProgressMark(StrEnum):
    advanced = "advanced"
    stalled = "stalled"
    regressed = "regressed"


class Severity(StrEnum):
    low = "low"
    medium = "medium"
    high = "high"


class ReviewFinding(BaseModel):
    """One observation of a reviewer; `high` findings are reasons to reject."""

    severity: Severity = Field(description="How much the finding weighs: high means reject.")
    text: str = Field(description="What was seen and where, in one sentence.")


class Verdict(BaseModel):
    """The reviewer's JSON contract (DESIGN.md, Agents and the loop)."""

    model_config = ConfigDict(extra="ignore")

    decision: Decision = Field(description="accept or reject the candidate.")
    progress: ProgressMark = Field(description="Did the candidate move the goal forward?")
    findings: list[ReviewFinding] = Field(default_factory=list, description="Observations, worst first.")
    summary: str = Field(default="", description="One paragraph a person can read.")


class Claim(BaseModel):
    """What the writer says it did and expects; kept in the lineage next to what was measured."""

    model_config = ConfigDict(extra="ignore")

    text: str = Field(default="", description="The writer's own account of the round.")
    hypothesis: str = Field(default="", description="The mechanism the writer bets on.")
    prediction: float | None = Field(default=None, description="Predicted speedup over the baseline.")
    goal: str | None = Field(
        default=None,
        description="A declared non-speed goal (`tunables`, `refactor`); met without a speed gain.",
    )


class WorkloadMeasure(BaseModel):
    """One workload of a verification, as a reviewer needs it."""

    uuid: str = ""
    axes: dict[str, Any] = Field(default_factory=dict)
    status: str = ""
    speedup: float | None = None


class ReviewEvidence(BaseModel):
    """The evidence bundle a reviewer judges: the claim, the diff and the measured numbers."""

    claim: Claim = Field(default_factory=Claim, description="The writer's claim for this round.")
    diff: str = Field(default="", description="Unified diff of the round, parent to candidate.")
    files: dict[str, str] = Field(
        default_factory=dict, description="Full text of the candidate's solution files (relpath: text)."
    )
    verify_status: str = Field(default="", description="The verifier's status (PASSED, REJECTED, ...).")
    verify_reasons: list[str] = Field(default_factory=list, description="The verifier's reasons.")
    speedup_geomean: float | None = Field(default=None, description="Measured geomean speedup.")
    speedup_ci: list[float] | None = Field(default=None, description="Its confidence interval [lo, hi].")
    workloads: list[WorkloadMeasure] = Field(default_factory=list, description="Per-workload results.")
    best_speedup: float = Field(default=1.0, description="The current best's geomean speedup.")
    listed_axes: dict[str, list[int]] = Field(
        default_factory=dict, description="Values of each var axis in the task's listed workloads."
    )
    plan: str = Field(default="", description="notes/plan.md, the frozen acceptance criteria.")


class AgentRequest(BaseModel):
    """One call of an agent: who it is, what it is told, where it may act and its limits."""

    role: Role = Field(description="writer, reviewer or researcher.")
    prompt: str = Field(description="The full prompt kloop assembled for this call.")
    workspace: Path = Field(description="The run's workspace (git repository root).")
    read_only: bool = Field(default=False, description="True for reviewers: no writes allowed.")
    time_limit_s: float = Field(default=1800.0, description="Wall-clock budget of this call.")
    cost_limit_usd: float | None = Field(default=None, description="Cost budget of this call, if any.")
    token_limit: int | None = Field(default=None, description="Token budget of this call (the gateway enforces it).")
    round: int = Field(default=0, description="The round number (from 1, in writer-call order).")
    turn: int = Field(default=0, description="How many times this agent was called before in this stage.")
    artifacts_dir: Path | None = Field(default=None, description="Where the agent may write a transcript.")
    full_review: bool = Field(default=False, description="Reviewer: judge the whole solution against the plan.")
    evidence: ReviewEvidence | None = Field(default=None, description="Reviewer: the evidence bundle.")
    history: list[dict[str, Any]] = Field(
        default_factory=list, description="Tuner: configurations measured so far ({config, speedup, passed})."
    )


class AgentResult(BaseModel):
    """What came back from one agent call."""

    status: AgentStatus = Field(description="How the call ended.")
    final_message: str = Field(default="", description="The agent's last message (a writer's claim).")
    claim: Claim | None = Field(default=None, description="Writer: structured claim, when given.")
    verdict: Verdict | None = Field(default=None, description="Reviewer: the parsed verdict.")
    transcript_path: Path | None = Field(default=None, description="Where the transcript was written.")
    tokens: int | None = Field(default=None, description="Tokens used, when known.")
    cost_usd: float | None = Field(default=None, description="Cost of the call, when known.")
    permission_denials: list[str] = Field(default_factory=list, description="Actions the agent was refused.")
    contained_denials: list[str] = Field(
        default_factory=list,
        description="What kloop's containment refused, seen from outside the agent (audit of failed syscalls, "
        "kloop's own tool policy): `INTENT PATH (CALL: ERRNO)` lines. Never taken from a CLI's wording.",
    )


@runtime_checkable
class Agent(Protocol):
    """Anything that can take a turn."""

    def run(self, request: AgentRequest) -> AgentResult: ...


def parse_verdict(text: str) -> Verdict | None:
    """The verdict when the reviewer's whole answer is one (None otherwise).

    Structured only: the answer (or the output-schema file a CLI wrote) must be exactly one JSON
    object, optionally in a single ```json fence. A verdict found inside prose is not taken, so a
    reviewer that quotes the writer's `{"decision": ...}` cannot adopt the writer's verdict.
    """
    import json

    body = text.strip()
    if body.startswith("```") and body.endswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body[: body.rfind("```")].strip()
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    try:
        return Verdict.model_validate(data)
    except ValueError:
        return None
