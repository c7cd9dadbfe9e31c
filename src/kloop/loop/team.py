"""`kloop run --team N`: N writers on N branches of one run, sharing what decides progress.

A team is a campaign whose iterate stage is played by N branches at once, each a thread
running the ordinary `RoundRunner` rounds in its own git worktree (RUN/branches/bK). Agent
turns are subprocesses and verification goes through one pool, so threads are enough: the
GIL is not what a branch waits on. What the branches share is what makes them one run:

- the lineage (one `lineage.sqlite`, rows tagged with their branch, round numbers claimed in
  the database so they stay unique: `kloop.loop.branches`);
- the global best: every candidate is gated against the best of the whole team, and the
  incumbent timed beside it is that best;
- one reviewer queue (reviews run one at a time, in the order asked);
- one verification pool (a slot verifies one job at a time, and a job carries the candidate
  with its baseline and incumbent, so both are timed on the same slot).

Each branch has its own budgets (an even share of the run's rounds, cost and tokens) and its own
stall rule; a stalled branch rebases onto the global best, or ends when it already stands on
it. The run keeps its totals. Research and tune run once, before and after the branches, as in
a single run; `--team 1` is a plain `Campaign`.
"""

from __future__ import annotations

import math
import queue
import threading
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kloop.agents.base import Agent, AgentRequest, AgentResult
from kloop.loop.branches import TEAM_KEY, BranchLineage, BranchPaths, branch_names, state_key
from kloop.loop.campaign import Campaign
from kloop.loop.config import RunConfig, Stage
from kloop.loop.context import RunContext
from kloop.loop.record import CandidateRecord
from kloop.loop.rounds import RoundInput, RoundRunner
from kloop.loop.services import Services
from kloop.loop.stages.iterate import digest_of, wiki_hits
from kloop.loop.state import load_round
from kloop.loop.stopping import (
    AwaitingApproval,
    Blocked,
    BudgetExhausted,
    Interrupted,
    RunStatus,
    SpeedOfLight,
    Stalled,
    StopRun,
    TargetReached,
    stagnation,
)
from kloop.loop.summary import Summary
from kloop.loop.workspace import Workspace

TEAM_WIDE: tuple[type[StopRun], ...] = (TargetReached, SpeedOfLight, Blocked, Interrupted, AwaitingApproval)
"""Stops that end every branch (after its round in flight); the others end one branch."""


class ReviewerQueue:
    """The team's one reviewer: requests are served one at a time, first come first served.

    A single worker thread drains a FIFO queue, so two branches never review at once and an
    early request is never overtaken; each caller waits for its own answer.
    """

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self._queue: queue.Queue[tuple[AgentRequest, Future[AgentResult]]] = queue.Queue()
        threading.Thread(target=self._serve, name="kloop-reviewer-queue", daemon=True).start()

    def _serve(self) -> None:
        while True:
            request, future = self._queue.get()
            try:
                future.set_result(self.agent.run(request))
            except BaseException as exc:  # the caller's call_agent turns it into a crashed review
                future.set_exception(exc)

    def run(self, request: AgentRequest) -> AgentResult:
        future: Future[AgentResult] = Future()
        self._queue.put((request, future))
        return future.result()


class BranchProgress:
    """The run's progress view, with each line saying which branch it is about."""

    def __init__(self, view: Any, branch: str) -> None:
        self.view, self.branch = view, branch

    def update(self, **fields: Any) -> None:
        if fields.get("note"):
            fields["note"] = f"{self.branch}: {fields['note']}"
        if "round" in fields:
            fields["round"] = f"{self.branch}/{fields['round']}"
        self.view.update(**fields)

    def close(self) -> None:
        return None


def share(total: float | None, parts: int, whole: bool) -> float | None:
    """A branch's even share of a run budget (rounds round up, so N branches can spend the total)."""
    if total is None:
        return None
    return float(math.ceil(total / parts)) if whole else total / parts


def branch_config(config: RunConfig) -> RunConfig:
    """A branch's own budgets: its share of the run's rounds, cost and tokens; the wall time is the run's."""
    rounds = share(config.rounds, config.team, whole=True)
    tokens = share(config.token_limit, config.team, whole=True)
    return config.model_copy(update={"rounds": int(rounds) if rounds is not None else None,
                                     "cost_limit_usd": share(config.cost_limit_usd, config.team, whole=False),
                                     "token_limit": int(tokens) if tokens is not None else None})


@dataclass
class BranchEnd:
    """How a branch's iterate stage ended."""

    status: RunStatus
    reason: str


class Branch:
    """One writer on its own worktree, playing iterate rounds (the `StageHost` of its rounds)."""

    def __init__(self, team: TeamCampaign, name: str) -> None:
        self.team, self.name = team, name
        paths = BranchPaths(team.paths.root, name)
        services = replace(team.services, writer=team.writer_for(name), reviewer=team.reviewer,
                           progress=BranchProgress(team.services.progress, name))
        self.ctx = RunContext(paths=paths, config=branch_config(team.config), services=services,
                              lineage=BranchLineage(paths.lineage, name), workspace=Workspace(paths.workspace),
                              seal=team.ctx.seal, task=team.ctx.task)
        self.lineage: BranchLineage = self.ctx.lineage  # type: ignore[assignment]
        self.runner = RoundRunner(self.ctx)

    # -- the branch's life ---------------------------------------------------------------------
    def run(self) -> BranchEnd:
        """Recover a round a crash interrupted, then play rounds until this branch's stop."""
        self._set_state(RunStatus.running, "")
        try:
            self._recover()
            self._rounds()
            end = BranchEnd(RunStatus.completed, "the writer has nothing more")
        except StopRun as stop:
            end = BranchEnd(stop.status, stop.reason)
            if isinstance(stop, TEAM_WIDE):
                self.team.halt(stop)
        except BaseException as exc:
            self.team.fail(exc)
            end = BranchEnd(RunStatus.blocked, f"{type(exc).__name__}: {exc}")
        self.lineage.release_claims()
        self._set_state(end.status, end.reason)
        return end

    def _recover(self) -> None:
        """The branch's own write-ahead state: finish a recorded round, or undo an unrecorded one."""
        self.ctx.paths.round_state.parent.mkdir(parents=True, exist_ok=True)
        state = load_round(self.ctx.paths)
        if state is None:
            return
        if self.lineage.get(state.round) is None:
            self.runner.prepare(state)
        self.runner.finish(state)

    def _rounds(self) -> None:
        ctx = self.ctx
        while True:
            self.check_budgets()
            rows = [r for r in self.lineage.rounds() if r.stage == Stage.iterate.value]
            since = sum(1 for r in rows if r.round > self.lineage.marker())
            mark = stagnation(since, ctx.config.replan_after, ctx.config.stall_after)
            if mark == "stalled":
                self._rebase_or_stop(since)
                continue
            best, last = ctx.best(), rows[-1] if rows else None
            record = self.runner.run(RoundInput(
                stage=Stage.iterate.value, agent=ctx.services.writer, parent=ctx.head(), turn=len(rows),
                best=best, last=last, replan=mark == "replan",
                full_review=(len(rows) + 1) % ctx.config.full_review_every == 0,
                profile_digest=digest_of(ctx, best), wiki_hits=wiki_hits(ctx, last),
            ))  # fmt: skip
            if record is None:
                return
            self.after_round(record)

    def _rebase_or_stop(self, since: int) -> None:
        """Stalled: move this branch's head to the global best, or stop when it already stands there."""
        best, head = self.ctx.best(), self.ctx.head()
        if best.candidate == head.candidate or not best.commit_sha:
            raise Stalled(f"{self.name}: {since} rounds without an accepted candidate, and it already "
                          f"stands on the global best {best.candidate} ({best.speedup_geomean or 1.0:.2f}x)")
        self.lineage.rebase_onto(best)  # recorded first: a crash after it resumes from the new head
        self.ctx.workspace.reset_to(best.commit_sha, self.ctx.paths.git_pristine)
        self.ctx.services.progress.update(note=f"stalled after {since} rounds: rebased onto {best.candidate} "
                                               f"({best.speedup_geomean or 1.0:.2f}x, branch {best.branch or '-'})")

    # -- what a stage host offers --------------------------------------------------------------
    def check_budgets(self) -> None:
        """The team's stops and totals first, then this branch's own rounds, cost and tokens."""
        self.team.check_team()
        config = self.ctx.config
        done = len(self.lineage.rounds())
        if config.rounds is not None and done >= config.rounds:
            raise BudgetExhausted(f"{self.name}: its round budget is used: {done} of {config.rounds}")
        spent = self.lineage.spent_usd()
        if config.cost_limit_usd is not None and spent >= config.cost_limit_usd:
            raise BudgetExhausted(f"{self.name}: its cost budget is used: ${spent:.2f} of ${config.cost_limit_usd:.2f}")
        tokens = self.lineage.spent_tokens()
        if config.token_limit is not None and tokens >= config.token_limit:
            raise BudgetExhausted(f"{self.name}: its token budget is used: {tokens} of {config.token_limit} tokens")

    def after_round(self, record: CandidateRecord) -> None:
        """The run's bookkeeping (summary, target, profiling a new global best), under the team's lock."""
        self.team.after_round(record)

    def _set_state(self, status: RunStatus, reason: str) -> None:
        self.lineage.set_meta(state_key(self.name), {"status": status.value, "reason": reason})


class TeamCampaign(Campaign):
    """A campaign whose iterate stage runs on `config.team` branches at once."""

    def __init__(self, run_dir: Path, config: RunConfig, services: Services) -> None:
        super().__init__(run_dir, config, services)
        self.names = branch_names(config.team)
        self.lock = threading.RLock()  # the run's own lineage connection, summary and report: one at a time
        self.reviewer = ReviewerQueue(services.reviewer)
        self.stopped: StopRun | None = None
        self.failure: BaseException | None = None
        self.lineage.set_meta(TEAM_KEY, self.names)

    def writer_for(self, branch: str) -> Agent:
        from kloop.agents import get_agent

        return get_agent(self.config.writer_for(branch), where="--writer")

    # -- the iterate stage on branches ---------------------------------------------------------
    def run_stage(self, stage: Stage) -> None:
        if stage is not Stage.iterate:
            super().run_stage(stage)
            return
        self._make_worktrees()
        branches = [Branch(self, name) for name in self.names]
        ends: dict[str, BranchEnd] = {}
        threads = [threading.Thread(target=lambda b=b: ends.__setitem__(b.name, b.run()), name=f"kloop-{b.name}",
                                    daemon=True) for b in branches]
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():  # short joins: the main thread stays free for signal handlers
                thread.join(0.5)
        for branch in branches:
            branch.lineage.close()
        self._end_stage(ends)

    def _end_stage(self, ends: dict[str, BranchEnd]) -> None:
        """The stage's outcome from its branches': a failure or a team-wide stop first, then done
        if any branch's writer finished, else the run stops on its branches' budgets or stalls."""
        self.workspace_to_best()
        if self.failure is not None:
            raise self.failure
        if self.stopped is not None:
            raise self.stopped
        if any(end.status is RunStatus.completed for end in ends.values()):
            return
        why = "; ".join(end.reason for _, end in sorted(ends.items()))
        if any(end.status is RunStatus.budget for end in ends.values()):
            raise BudgetExhausted(why)
        raise Stalled(why)

    def _make_worktrees(self) -> None:
        """RUN/branches/bK: a worktree per branch on branch bK at the baseline commit (kept on resume)."""
        base = self.ctx.lineage.get(0)
        if base is None or not base.commit_sha:
            raise Blocked("no baseline in the lineage")
        root = self.paths.root / "branches"
        root.mkdir(exist_ok=True)
        link = root / "sealed"  # each worktree's committed `sealed -> ../sealed` link resolves through it
        if not link.is_symlink():
            link.symlink_to(Path("..") / "sealed")
        self.ctx.workspace.git("worktree", "prune")
        for name in self.names:
            path = root / name
            if not (path / ".git").exists():
                self.ctx.workspace.git("worktree", "add", "-q", "-f", "-B", name, str(path), base.commit_sha)
            (self.paths.private / "branches" / name).mkdir(parents=True, exist_ok=True)

    def workspace_to_best(self) -> None:
        """RUN/workspace ends at the global best, whichever branch found it."""
        best = self.ctx.lineage.best()
        if best is not None and best.commit_sha:
            with self.lock:
                self.ctx.workspace.reset_to(best.commit_sha, self.paths.git_pristine)

    # -- what branches share ---------------------------------------------------------------------
    def halt(self, stop: StopRun) -> None:
        """A team-wide stop: the first one is the run's; every branch stops after its round."""
        with self.lock:
            if self.stopped is None:
                self.stopped = stop

    def fail(self, exc: BaseException) -> None:
        """kloop's own failure on a branch (or a bug): stop the others and raise it in the driver."""
        with self.lock:
            if self.failure is None:
                self.failure = exc

    def check_team(self) -> None:
        """Raise the team's stop (signal, a team-wide stop, a failure, the run's totals), else return."""
        if self.interrupted:
            raise Interrupted("interrupted by a signal; continue with `kloop run --resume`")
        stop = self.stopped
        if stop is not None:
            raise type(stop)(stop.reason)
        if self.failure is not None:
            raise Blocked(f"another branch failed: {self.failure}")
        with self.lock:
            self.check_budgets()

    def after_round(self, record: CandidateRecord) -> None:
        with self.lock:
            super().after_round(record)

    def _save(self, status: RunStatus, reason: str) -> Summary:
        """Summary and report from the run's connection: one writer at a time, branches included."""
        with self.lock:
            return super()._save(status, reason)
