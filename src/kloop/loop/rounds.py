"""One round: writer -> path check -> commit -> integrity -> verify -> review -> gate -> lineage.

Each step is announced in the write-ahead round state first; the lineage insert is the commit
point. Everything before it is repeatable from the round's base commit, everything after it
is idempotent bookkeeping (restore sealed/, put the workspace at the head).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kloop.agents.base import (
    Agent,
    AgentRequest,
    AgentResult,
    AgentStatus,
    Claim,
    ReviewEvidence,
    Role,
    Verdict,
    WorkloadMeasure,
)
from kloop.errors import BadInput, HarnessFailure
from kloop.loop.context import RunContext
from kloop.loop.gate import SPEED_RULE, GateInput, another_look, best_speed_now, confirmed, decide
from kloop.loop.prompts import PromptContext, reviewer_prompt, writer_prompt
from kloop.loop.record import CandidateRecord
from kloop.loop.services import call_agent
from kloop.loop.state import RoundState, clear_round, crash_point, save_round
from kloop.loop.stopping import Blocked
from kloop.task.tunables import first_values, instantiate_dir, read_space
from kloop.verify.result import VerifyResult

KLOOP_CHANGED = "kloop's own package files changed"
N = TypeVar("N", int, float)


def _kloop_changed(digest: Callable[[], str] | None, before: str | None, during: str) -> list[str]:
    """The integrity problem when kloop's installed package no longer hashes as it did."""
    return [] if digest is None or digest() == before else [f"{KLOOP_CHANGED} during {during}"]


def bar_of(best: CandidateRecord) -> float:
    """The speed a candidate must clear: the best's upper CI bound (its point value when no CI).

    Comparing against the upper bound, not the point, keeps a re-measurement of the same code
    from passing as progress on noise.
    """
    return max(best.speedup_geomean or 1.0, best.speedup_hi or 0.0)


@dataclass
class RoundInput:
    stage: str
    agent: Agent
    parent: CandidateRecord
    turn: int
    best: CandidateRecord
    last: CandidateRecord | None = None
    replan: bool = False
    full_review: bool = False
    history: list[dict[str, Any]] = field(default_factory=list)
    profile_digest: str | None = None
    wiki_hits: list[str] = field(default_factory=list)


def _split_refusals(denials: list[str], run_dir: Path) -> tuple[list[str], list[str]]:
    """Refusals that aimed at what decides the reward (sealed/, .kloop/, kloop's install, $KLOOP_HOME,
    the workspace's .git) reject the round; the rest (a denied shell command, a read outside the
    workspace) were stopped by the CLI or the containment and are kept as evidence only."""
    from kloop.agents.containment import default_protected

    guarded = [str(run_dir / "sealed"), str(run_dir / ".kloop"), str(run_dir / "workspace" / ".git"), "sealed/",
               ".kloop/", ".git/", *(str(p) for p in default_protected())]
    tampering = [d for d in denials if any(g in d for g in guarded)]
    return tampering, [d for d in denials if d not in tampering]


REFUSED_ATTEMPT = "the writer tried what it may not and kloop's containment refused it"


def refused_attempts(result: AgentResult) -> list[str]:
    """One reason per refused attempt, from kloop's own evidence (the audit of failed syscalls, kloop's
    tool policy), the same words whatever channel (shell, file tool, patch tool) made it."""
    return [f"{REFUSED_ATTEMPT}: {line}" for line in result.contained_denials]


@dataclass
class Attempt:
    """What a round gathered before the gate."""

    result: AgentResult
    claim: Claim
    changed: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    integrity: list[str] = field(default_factory=list)
    commit: str | None = None
    verify: VerifyResult | None = None
    verdict: Verdict | None = None
    reviewer_problem: str | None = None
    review_cost_usd: float | None = None
    review_tokens: int | None = None
    config: dict[str, Any] | None = None
    declares_tunables: bool = False


class RoundRunner:
    """Runs rounds for a campaign; holds the run's parts, owns no policy beyond one round."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.paths, self.config, self.lineage = ctx.paths, ctx.config, ctx.lineage
        self.workspace, self.seal, self.task = ctx.workspace, ctx.seal, ctx.task
        self.verifier, self.reviewer = ctx.services.verifier, ctx.services.reviewer
        self.clock, self.progress = ctx.services.clock, ctx.services.progress

    # -- steps -------------------------------------------------------------------------------
    def _step(self, state: RoundState, step: str) -> None:
        state.step = step
        save_round(self.paths, state)
        self.progress.update(round=state.round, stage=state.stage, step=step)

    def run(self, inp: RoundInput) -> CandidateRecord | None:
        """Play one round; None when the writer had nothing more to offer (no round recorded)."""
        number = self.lineage.next_round()
        state = RoundState(round=number, stage=inp.stage, parent=inp.parent.candidate,
                           base_commit=inp.parent.commit_sha or "", turn=inp.turn)
        self._step(state, "prepare")
        self.prepare(state)
        started = self.clock.now()
        digest = self.ctx.services.kloop_digest  # kloop's own files: a writer past containment must not count
        kloop_before = digest() if digest else None
        art = self.paths.round_dir(number)
        art.mkdir(parents=True, exist_ok=True)
        self._step(state, "writer")
        attempt = self._write(number, inp, art)
        if attempt is None:
            self.finish(state)
            shutil.rmtree(art, ignore_errors=True)
            return None
        crash_point("after_writer", number)
        self._step(state, "commit")
        attempt.commit = self.workspace.commit_round(number, attempt.claim.text or attempt.result.final_message)
        crash_point("after_commit", number)
        self._step(state, "integrity")
        trusted = self.lineage.sealed()
        attempt.integrity = self.seal.guard_problems(trusted) + self.seal.problems(trusted)
        attempt.integrity += _kloop_changed(digest, kloop_before, "the writer's turn")
        if self._verifiable(attempt):
            self._step(state, "verify")
            self._verify(number, art, attempt, inp.best)
            crash_point("after_verify", number)
            self._step(state, "review")
            self._review(number, inp, art, attempt)
            attempt.integrity += _kloop_changed(digest, kloop_before, "the review")
            crash_point("after_review", number)
        self._step(state, "gate")
        record = self._record(number, inp, attempt, started)
        self.lineage.add(record)
        crash_point("after_lineage", number)
        self._step(state, "finish")
        self.finish(state)
        crash_point("after_finish", number)
        if any(problem.startswith(KLOOP_CHANGED) for problem in attempt.integrity):
            raise Blocked(f"round {number}: {KLOOP_CHANGED}; every later verdict would be suspect: "
                          "reinstall kloop, then `kloop run --resume`")
        return record

    def prepare(self, state: RoundState) -> None:
        """Start from the parent's commit with an intact sealed/ (idempotent; also used on resume)."""
        self._heal_seal()
        self.workspace.reset_to(state.base_commit, self.paths.git_pristine)
        shutil.rmtree(self.paths.round_dir(state.round), ignore_errors=True)

    def finish(self, state: RoundState) -> None:
        """After the lineage row: restore sealed/ if touched, put the workspace at the head (idempotent)."""
        self._heal_seal()
        head = self.lineage.head()
        self.workspace.reset_to(head.commit_sha if head and head.commit_sha else state.base_commit,
                                self.paths.git_pristine)
        clear_round(self.paths)

    def _heal_seal(self) -> None:
        trusted = self.lineage.sealed()
        self.seal.guard_problems(trusted)
        if self.seal.problems(self.seal.trusted(trusted)):
            self.seal.restore(trusted)

    def _write(self, number: int, inp: RoundInput, art: Path) -> Attempt | None:
        ctx = PromptContext(task=self.task.name, description=self.task.description, round=number,
                            stage=inp.stage, plan=self.ctx.plan(),
                            best=inp.best, last=inp.last, profile_digest=inp.profile_digest, replan=inp.replan,
                            wiki_hits=inp.wiki_hits)
        prompt = writer_prompt(ctx)
        (art / "prompt.md").write_text(prompt, encoding="utf-8")
        before = self.workspace.fingerprint()
        plan_hash = self.lineage.meta("plan_sha256")
        request = AgentRequest(role=Role.writer, prompt=prompt, workspace=self.workspace.root, round=number,
                               turn=inp.turn, time_limit_s=self.config.agent_time_limit_s,
                               cost_limit_usd=self._cost_left(), token_limit=self._tokens_left(),
                               artifacts_dir=art, history=inp.history)
        result = call_agent(inp.agent, request)
        if result.status is AgentStatus.exhausted:
            return None
        claim = result.claim or Claim(text=result.final_message)
        (art / "claim.json").write_text(claim.model_dump_json(indent=1), encoding="utf-8")
        attempt = Attempt(result=result, claim=claim)
        attempt.violations = self.workspace.violations(before)
        attempt.changed = self.workspace.changed_paths()
        if plan_hash and "notes/plan.md" in attempt.changed:
            attempt.violations.append("notes/plan.md is frozen after research")
        attempt.violations += refused_attempts(result)
        tampering, refused = _split_refusals(result.permission_denials, self.workspace.root.parent)
        attempt.violations += [f"writer was refused: {d}" for d in tampering]
        if refused:  # blocked attempts at nothing kloop protects: evidence, not a verdict
            (art / "writer_refusals.json").write_text(json.dumps(refused, indent=1), encoding="utf-8")
        return attempt

    def _cost_left(self, spent_this_round: float | None = None) -> float | None:
        """What the run's cost budget has left, less what this round's agents already spent."""
        limit = self.config.cost_limit_usd
        return None if limit is None else max(0.0, limit - self.lineage.spent_usd() - (spent_this_round or 0.0))

    def _tokens_left(self, spent_this_round: int | None = None) -> int | None:
        """What the run's token budget has left, less what this round's agents already spent."""
        limit = self.config.token_limit
        return None if limit is None else max(0, limit - self.lineage.spent_tokens() - (spent_this_round or 0))

    def _verifiable(self, attempt: Attempt) -> bool:
        return (attempt.result.status is AgentStatus.completed and bool(attempt.changed)
                and not attempt.violations and not attempt.integrity)

    def _candidate_dir(self, art: Path, attempt: Attempt) -> Path:
        """The exact bytes verified: a copy of solution/, tunables set to their first values."""
        target = art / "candidate"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(self.workspace.solution, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        try:
            space = read_space(target)
        except BadInput:
            space = {}
        meta = target / "solution.json"
        if space:
            attempt.declares_tunables = True
            instantiate_dir(target, first_values(space))
        elif meta.is_file():
            try:
                attempt.config = (json.loads(meta.read_text()).get("kloop") or {}).get("config")
            except (json.JSONDecodeError, AttributeError):
                attempt.config = None
        return target

    def _verify(self, number: int, art: Path, attempt: Attempt, best: CandidateRecord) -> None:
        candidate = self._candidate_dir(art, attempt)
        incumbent = self.paths.round_dir(best.round) / "candidate" if best.round > 0 else None
        incumbent = incumbent if incumbent is not None and incumbent.is_dir() else None
        try:  # the best is timed in the same rounds: the gate compares with it directly
            result = self.verifier.verify(self.paths.sealed, candidate, self.lineage.sealed(), art / "logs",
                                          incumbent=incumbent)
            looks = 1
            while another_look(result, best.round == 0, looks):  # promising, inconclusive: measure again, pool
                (art / f"verify-look{looks}.json").write_text(result.model_dump_json(indent=1), encoding="utf-8")
                looks += 1
                result = confirmed(result, lambda pair, logs=art / f"logs-look{looks}": self.verifier.verify(
                    self.paths.sealed, candidate, self.lineage.sealed(), logs / f"pair{pair + 1}", incumbent=incumbent,
                    rounds_factor=SPEED_RULE.confirm_rounds_factor))  # fmt: skip
        except HarnessFailure as exc:
            raise Blocked(f"round {number}: the verifier could not judge: {exc}") from exc
        attempt.verify = result
        (art / "verify.json").write_text(result.model_dump_json(indent=1), encoding="utf-8")

    def _evidence(self, inp: RoundInput, attempt: Attempt) -> ReviewEvidence:
        verify = attempt.verify
        summary = verify.summary if verify else None
        return ReviewEvidence(
            claim=attempt.claim,
            diff=self.workspace.diff(inp.parent.commit_sha or "HEAD", attempt.commit or "HEAD"),
            files={k: v for k, v in self.workspace.read_files(attempt.commit or "HEAD").items()},
            verify_status=verify.status.value if verify else "",
            verify_reasons=list(verify.reasons) if verify else [],
            speedup_geomean=summary.speedup_geomean if summary else None,
            speedup_ci=summary.speedup_ci if summary else None,
            workloads=[WorkloadMeasure(uuid=w.uuid, axes=w.axes, status=w.status.value, speedup=w.speedup)
                       for w in (verify.workloads if verify else [])],
            best_speedup=best_speed_now(verify, bar_of(inp.best)),
            listed_axes=self.task.listed_axes,
            plan=self.ctx.plan(),
        )

    def _review(self, number: int, inp: RoundInput, art: Path, attempt: Attempt) -> None:
        evidence = self._evidence(inp, attempt)
        (art / "evidence.json").write_text(evidence.model_dump_json(indent=1), encoding="utf-8")
        request = AgentRequest(role=Role.reviewer, prompt=reviewer_prompt(evidence, inp.full_review),
                               workspace=self.workspace.root, read_only=True, round=number,
                               time_limit_s=self.config.agent_time_limit_s, artifacts_dir=art,
                               full_review=inp.full_review, evidence=evidence,
                               cost_limit_usd=self._cost_left(attempt.result.cost_usd),
                               token_limit=self._tokens_left(attempt.result.tokens))
        before = self.workspace.fingerprint()
        result = call_agent(self.reviewer, request)
        attempt.review_cost_usd = result.cost_usd  # the reviewer spends from the run's budgets too
        attempt.review_tokens = result.tokens
        if self.workspace.fingerprint() != before or self.workspace.changed_paths():
            attempt.reviewer_problem = "the reviewer changed the workspace (it is read-only); reverted"
            self.workspace.reset_to(attempt.commit or "HEAD", self.paths.git_pristine)
        elif result.status is not AgentStatus.completed:
            attempt.reviewer_problem = f"{result.status.value}: {result.final_message}"
        elif result.verdict is None:
            attempt.reviewer_problem = "no verdict JSON in the reviewer's answer"
        attempt.verdict = result.verdict
        payload = {"verdict": result.verdict.model_dump() if result.verdict else None,
                   "status": result.status.value, "full_review": inp.full_review, "problem": attempt.reviewer_problem,
                   "permission_denials": result.permission_denials}  # what the read-only reviewer was refused
        (art / "review.json").write_text(json.dumps(payload, indent=1), encoding="utf-8")

    def _record(self, number: int, inp: RoundInput, attempt: Attempt, started: float) -> CandidateRecord:
        decision = decide(GateInput(
            agent_status=attempt.result.status, agent_message=attempt.result.final_message,
            changed_paths=attempt.changed, path_violations=attempt.violations,
            integrity_problems=attempt.integrity, verify=attempt.verify,
            best_speedup=bar_of(inp.best), best_is_baseline=inp.best.round == 0, goal=attempt.claim.goal,
            declares_tunables=attempt.declares_tunables, verdict=attempt.verdict,
            reviewer_problem=attempt.reviewer_problem,
        ))
        verify, verdict = attempt.verify, attempt.verdict
        summary = verify.summary if verify else None
        ci = (summary.speedup_ci if summary else None) or [None, None]
        return CandidateRecord(
            round=number, candidate=f"r{number:03d}", parent=inp.parent.candidate, stage=inp.stage,
            commit_sha=attempt.commit, agent_status=attempt.result.status.value, claim=attempt.claim.text,
            hypothesis=attempt.claim.hypothesis, prediction=attempt.claim.prediction, goal=attempt.claim.goal,
            config=attempt.config, changed_paths=attempt.changed,
            verify_status=verify.status.value if verify else None,
            verify_summary=summary.model_dump() if summary else None,
            speedup_geomean=summary.speedup_geomean if summary else None, speedup_lo=ci[0], speedup_hi=ci[1],
            workload_speedups={w.uuid: w.speedup for w in verify.workloads if not w.heldout} if verify else {},
            review_decision=verdict.decision.value if verdict else None,
            review_progress=verdict.progress.value if verdict else None,
            findings=[f.model_dump(mode="json") for f in verdict.findings] if verdict else [],
            accepted=decision.accepted, reasons=decision.reasons,
            cost_usd=_total(attempt.result.cost_usd, attempt.review_cost_usd), review_cost_usd=attempt.review_cost_usd,
            tokens=_total(attempt.result.tokens, attempt.review_tokens), review_tokens=attempt.review_tokens,
            started_at=started, finished_at=self.clock.now(),
        )


def _total(*costs: N | None) -> N | None:
    """The round's agent spending (writer and reviewer), dollars or tokens; None when neither reported one."""
    known = [c for c in costs if c is not None]
    return sum(known) if known else None
