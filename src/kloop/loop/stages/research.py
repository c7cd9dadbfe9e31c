"""research: check the baseline, search the wiki, profile the baseline, write notes/plan.md.

The plan is frozen (committed, its hash kept, the baseline recorded as round 0) when research
ends, or only after `kloop approve` under `--gate plan`. A run without a research stage gets
the same plan without the baseline check (`ensure_plan`).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from kloop.loop.config import Stage
from kloop.loop.context import RunContext
from kloop.loop.lineage import CandidateRecord
from kloop.loop.plan import plan_markdown
from kloop.loop.stopping import AwaitingApproval, Blocked

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
        (ctx.workspace.notes / "plan.md").write_text(plan, encoding="utf-8")
        ctx.workspace.commit_round(0, "research: plan")
        ctx.lineage.set_meta("plan_written", True)


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
