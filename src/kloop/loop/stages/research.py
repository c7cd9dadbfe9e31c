"""research: check the baseline, search the wiki, profile the baseline, write notes/plan.md.

With a researcher agent (a model-driven writer kind plays it) the agent writes the plan from
the same inputs, starting from kloop's template; when it fails, the template is the plan.

The plan is frozen (committed, its hash kept, the baseline recorded as round 0) when research
ends, or only after `kloop approve` under `--gate plan`. A run without a research stage gets
the same plan without the baseline check (`ensure_plan`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from kloop.agents.base import Agent, AgentRequest, AgentStatus, Role
from kloop.loop.config import Stage
from kloop.loop.context import RunContext
from kloop.loop.plan import plan_markdown
from kloop.loop.prompts import researcher_prompt
from kloop.loop.record import CandidateRecord
from kloop.loop.services import call_agent
from kloop.loop.stopping import AwaitingApproval, Blocked
from kloop.verify.result import VerifyResult

if TYPE_CHECKING:
    from kloop.loop.stages import StageHost


class Research:
    """The research stage: plan once, freeze it (or wait for approval)."""

    def __init__(self, host: StageHost) -> None:
        self.ctx = host.ctx

    def run(self) -> None:
        ctx = self.ctx
        if ctx.lineage.get(0) is not None:
            return
        if ctx.lineage.meta("plan_written") is None:
            self._write_plan()
        if ctx.config.gate_plan:
            require_approval(ctx)
        freeze_plan(ctx)

    def _write_plan(self) -> None:
        ctx, services = self.ctx, self.ctx.services
        services.progress.update(stage="research", step="baseline check")
        art = ctx.paths.artifacts / "research"
        art.mkdir(parents=True, exist_ok=True)
        check = services.verifier.verify(ctx.paths.sealed, ctx.workspace.solution, ctx.lineage.sealed(),
                                         art / "logs", timing=False)
        (art / "baseline-verify.json").write_text(check.model_dump_json(indent=1), encoding="utf-8")
        ctx.lineage.set_meta("baseline_status", check.status.value)
        if not check.passed:
            raise Blocked(f"the baseline does not pass the verifier: {check.status.value}: "
                          + "; ".join(check.reasons[:3]))
        hits = services.wiki.search(f"{ctx.task.name} {ctx.task.description}"[:200], 5)
        digest = services.profiler.digest(ctx.paths.sealed, ctx.workspace.solution, art)
        if digest:
            (art / "profile-digest.md").write_text(digest, encoding="utf-8")
        plan = plan_markdown(ctx.task, ctx.config, check, hits, digest)
        (ctx.workspace.notes / "plan.md").write_text(plan, encoding="utf-8")  # the fallback, and the start
        author = "template"
        if services.researcher is not None:
            services.progress.update(stage="research", step="researcher")
            author = agent_plan(ctx, services.researcher, art, plan, check, hits, digest)
        ctx.lineage.set_meta("plan_author", author)
        ctx.workspace.commit_round(0, f"research: plan ({author})")
        ctx.lineage.set_meta("plan_written", True)


def agent_plan(ctx: RunContext, agent: Agent, art: Path, template: str, check: VerifyResult,
               hits: list[str], digest: str | None) -> str:  # fmt: skip
    """Let the researcher agent write notes/plan.md; kloop's template stays when it fails.

    The researcher may change notes/ only; anything else, a missing or empty plan, or a call that
    did not complete puts the workspace and sealed/ back and keeps the template. Returns who wrote
    the plan (`researcher` or `template`); artifacts/research/researcher.json says why.
    """
    baseline = f"{check.status.value}; " + ("; ".join(check.reasons[:3]) or "all checks passed")
    prompt = researcher_prompt(ctx.task.name, ctx.task.description, baseline, template, digest, hits)
    (art / "researcher-prompt.md").write_text(prompt, encoding="utf-8")
    before = ctx.workspace.fingerprint()
    limit, tokens = ctx.config.cost_limit_usd, ctx.config.token_limit
    request = AgentRequest(role=Role.researcher, prompt=prompt, workspace=ctx.workspace.root, round=0,
                           time_limit_s=ctx.config.agent_time_limit_s, artifacts_dir=art,
                           cost_limit_usd=None if limit is None else max(0.0, limit - ctx.lineage.spent_usd()),
                           token_limit=None if tokens is None else max(0, tokens - ctx.lineage.spent_tokens()))
    result = call_agent(agent, request)
    if result.cost_usd:  # the plan is paid from the run's budgets like every round
        ctx.lineage.set_meta("research_cost_usd", float(ctx.lineage.meta("research_cost_usd") or 0.0) + result.cost_usd)
    if result.tokens:
        ctx.lineage.set_meta("research_tokens", int(ctx.lineage.meta("research_tokens") or 0) + result.tokens)
    plan_path = ctx.workspace.notes / "plan.md"
    problems = ctx.workspace.violations(before)
    problems += [f"changed {p} (the researcher writes notes/ only)" for p in ctx.workspace.changed_paths()
                 if not p.startswith("notes/")]  # fmt: skip
    problems += ctx.seal.problems(ctx.lineage.sealed())
    problems += [f"refused: {d}" for d in result.permission_denials]
    if result.status is not AgentStatus.completed:
        problems.append(f"{result.status.value}: {result.final_message[:300]}")
    text = plan_path.read_text(encoding="utf-8", errors="replace") if plan_path.is_file() else ""
    if not text.strip() or text == template:
        problems.append("notes/plan.md was not written")
    record = {"status": result.status.value, "used": not problems, "problems": problems,
              "tokens": result.tokens, "cost_usd": result.cost_usd,
              "transcript": str(result.transcript_path) if result.transcript_path else None}  # fmt: skip
    (art / "researcher.json").write_text(json.dumps(record, indent=1), encoding="utf-8")
    if not problems:
        return "researcher"
    ctx.workspace.reset_to(ctx.workspace.head(), ctx.paths.git_pristine)
    if ctx.seal.problems(ctx.lineage.sealed()):
        ctx.seal.restore(ctx.lineage.sealed())
    plan_path.write_text(template, encoding="utf-8")
    return "template"


def require_approval(ctx: RunContext) -> None:
    """The plan frozen must be the plan a person approved, byte for byte."""
    approved = ctx.lineage.meta("plan_approved")
    if not approved:
        raise AwaitingApproval("research done: review notes/plan.md, then `kloop approve RUN_DIR` "
                               "and `kloop run --resume RUN_DIR`")
    current = hashlib.sha256((ctx.workspace.notes / "plan.md").read_bytes()).hexdigest()
    if current != approved:
        raise AwaitingApproval("notes/plan.md changed since `kloop approve`: review it and approve again")


def ensure_plan(ctx: RunContext, stage: Stage) -> None:
    """Before a writer stage of a run that skipped research: the default plan, frozen."""
    if stage is Stage.research or ctx.lineage.get(0) is not None:
        return
    (ctx.workspace.notes / "plan.md").write_text(plan_markdown(ctx.task, ctx.config, None, [], None),
                                                 encoding="utf-8")
    freeze_plan(ctx)


def freeze_plan(ctx: RunContext) -> None:
    """Commit notes/plan.md as approved, keep its hash, and record the baseline: round 0."""
    plan = (ctx.workspace.notes / "plan.md").read_bytes()
    if ctx.workspace.changed_paths():
        ctx.workspace.commit_round(0, "plan frozen")
    ctx.lineage.set_meta("plan_sha256", hashlib.sha256(plan).hexdigest())
    ctx.lineage.add(CandidateRecord(
        round=0, candidate="baseline", parent=None, stage="research", commit_sha=ctx.workspace.head(),
        agent_status="completed", claim="the task's baseline", verify_status=ctx.lineage.meta("baseline_status"),
        speedup_geomean=1.0, speedup_lo=1.0, speedup_hi=1.0, accepted=True, started_at=ctx.services.clock.now(),
    ))
