"""The orchestrator: a run is its stages in order, each a sequence of gated rounds.

    research -> freeze the plan -> iterate (writer rounds) -> tune (tuner rounds)

A run ends through one family of stop exceptions (`kloop.loop.stopping`); whatever happens,
the summary and report are saved in `finally`, and the lineage plus the write-ahead round
state let `--resume` continue after a crash, repeating at most the interrupted round.
"""

from __future__ import annotations

import fcntl
import json
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kloop.agents.base import Agent
from kloop.errors import BadInput, HarnessFailure
from kloop.loop.ceiling import Ceiling, NoCeiling
from kloop.loop.config import RunConfig, Stage, load_config, save_config
from kloop.loop.lineage import CandidateRecord, Lineage
from kloop.loop.progress import NullProgress, ProgressView
from kloop.loop.rounds import RoundInput, RoundRunner
from kloop.loop.seal import Seal, remove_tree
from kloop.loop.services import Clock, NoProfiler, NoWiki, Profiler, SystemClock, Wiki
from kloop.loop.stages import plan_markdown, read_task_facts, reference_solution_files
from kloop.loop.state import RunPaths, load_round
from kloop.loop.stopping import (
    AwaitingApproval,
    Blocked,
    BudgetExhausted,
    Completed,
    Interrupted,
    RunStatus,
    SpeedOfLight,
    Stalled,
    StopRun,
    TargetReached,
    stagnation,
)
from kloop.loop.summary import Summary, build_summary, tested_hypotheses, write_summary
from kloop.loop.verifier import Verifier
from kloop.loop.workspace import Workspace
from kloop.verify.result import VerifyResult


@dataclass
class Services:
    """Every I/O boundary of a run, passed in."""

    writer: Agent
    reviewer: Agent
    tuner: Agent
    verifier: Verifier
    profiler: Profiler = field(default_factory=NoProfiler)
    wiki: Wiki = field(default_factory=NoWiki)
    clock: Clock = field(default_factory=SystemClock)
    progress: ProgressView = field(default_factory=NullProgress)
    ceiling: Ceiling = field(default_factory=NoCeiling)


class Campaign:
    """One run directory and the parts that act on it."""

    def __init__(self, run_dir: Path, config: RunConfig, services: Services) -> None:
        self.paths = RunPaths(run_dir)
        self.config, self.services = config, services
        self.lineage = Lineage(self.paths.lineage)
        self.workspace = Workspace(self.paths.workspace)
        self.seal = Seal(run_dir)
        self.facts = read_task_facts(self.seal.pristine)  # kloop's own copy: sealed/ may be mid-tamper
        self.runner = RoundRunner(self.paths, config, self.lineage, self.workspace, self.seal, services.verifier,
                                  services.reviewer, services.profiler, services.clock, services.progress,
                                  self.facts)
        self.interrupted = False
        self.session_start = services.clock.now()
        self.prior_elapsed = float(self.lineage.meta("elapsed_s", 0.0))

    # -- creating and opening -----------------------------------------------------------------
    @classmethod
    def create(cls, task_dir: Path, run_dir: Path, config: RunConfig, services: Services) -> Campaign:
        paths = RunPaths(run_dir)
        if paths.config.exists():
            raise BadInput(run_dir, "already holds a run; continue it with `kloop run --resume`")
        if paths.private.is_dir():  # a setup that died before it finished: kloop's own files only
            for leftover in (paths.sealed, paths.workspace, paths.private):
                remove_tree(leftover)
            for name in ("lineage.sqlite", "lineage.sqlite-wal", "lineage.sqlite-shm"):
                (run_dir / name).unlink(missing_ok=True)
        if run_dir.exists() and any(run_dir.iterdir()):
            raise BadInput(run_dir, "output directory is not empty")
        paths.private.mkdir(parents=True, exist_ok=True)
        seal = Seal(run_dir)
        trusted = seal.create(task_dir)
        lineage = Lineage(paths.lineage)
        lineage.set_sealed(trusted)
        lineage.close()
        baseline = paths.sealed / "baseline"
        initial = {} if baseline.is_dir() else reference_solution_files(paths.sealed)
        workspace = Workspace(paths.workspace)
        workspace.create(baseline if baseline.is_dir() else None, initial)
        workspace.save_git_pristine(paths.git_pristine)
        save_config(config, paths.config)  # last: its presence marks a complete run directory
        return cls(run_dir, config, services)

    @classmethod
    def open(cls, run_dir: Path, services: Services) -> Campaign:
        return cls(run_dir, load_config(RunPaths(run_dir).config), services)

    # -- the run ------------------------------------------------------------------------------
    def run(self) -> Summary:
        status, reason = RunStatus.interrupted, "kloop stopped unexpectedly"
        lock = self._lock()
        previous = self._trap_signals()
        try:
            self._recover()
            done = list(self.lineage.meta("stages_done", []))
            for stage in self.config.stages:
                if stage.value in done:
                    continue
                self.lineage.set_meta("stage", stage.value)
                self._ensure_plan(stage)
                getattr(self, f"_stage_{stage.value}")()
                done.append(stage.value)
                self.lineage.set_meta("stages_done", done)
            raise Completed(self._completion_reason())
        except StopRun as stop:
            status, reason = stop.status, stop.reason
        except HarnessFailure as exc:
            status, reason = RunStatus.blocked, f"kloop could not judge: {exc}"
        finally:
            self._restore_signals(previous)
            summary = self._save(status, reason)
            self.services.progress.close()
            lock.close()
        return summary

    def _stage_research(self) -> None:
        """Baseline check, wiki, profile -> notes/plan.md; frozen now, or after `kloop approve`."""
        if self.lineage.get(0) is not None:
            return
        if self.lineage.meta("plan_written") is None:
            self.services.progress.update(stage="research", step="baseline check")
            art = self.paths.artifacts / "research"
            art.mkdir(parents=True, exist_ok=True)
            check = self.services.verifier.verify(self.paths.sealed, self.workspace.solution,
                                                  self.lineage.sealed(), art / "logs", timing=False)
            (art / "baseline-verify.json").write_text(check.model_dump_json(indent=1), encoding="utf-8")
            self.lineage.set_meta("baseline_status", check.status.value)
            if not check.passed:
                raise Blocked(f"the baseline does not pass the verifier: {check.status.value}: "
                              + "; ".join(check.reasons[:3]))
            query = f"{self.facts.name} {self.facts.description}"[:200]
            hits = self.services.wiki.search(query, 5)
            digest = self.services.profiler.digest(self.paths.sealed, self.workspace.solution, art)
            if digest:
                (art / "profile-digest.md").write_text(digest, encoding="utf-8")
            plan = plan_markdown(self.facts, self.config, check, hits, digest)
            (self.workspace.notes / "plan.md").write_text(plan, encoding="utf-8")
            self.workspace.commit_round(0, "research: plan")
            self.lineage.set_meta("plan_written", True)
        if self.config.gate_plan:
            self._require_approval()
        self._freeze_plan()

    def _require_approval(self) -> None:
        """The plan frozen must be the plan a person approved, byte for byte."""
        import hashlib

        approved = self.lineage.meta("plan_approved")
        if not approved:
            raise AwaitingApproval("research done: review notes/plan.md, then `kloop approve RUN_DIR` "
                                   "and `kloop run --resume RUN_DIR`")
        current = hashlib.sha256((self.workspace.notes / "plan.md").read_bytes()).hexdigest()
        if current != approved:
            raise AwaitingApproval("notes/plan.md changed since `kloop approve`: review it and approve again")

    def _ensure_plan(self, stage: Stage) -> None:
        if stage is Stage.research or self.lineage.get(0) is not None:
            return
        (self.workspace.notes / "plan.md").write_text(
            plan_markdown(self.facts, self.config, None, [], None), encoding="utf-8")
        self._freeze_plan()

    def _freeze_plan(self) -> None:
        """Commit notes/plan.md as approved, keep its hash, and record the baseline: round 0."""
        import hashlib

        plan = (self.workspace.notes / "plan.md").read_bytes()
        if self.workspace.changed_paths():
            self.workspace.commit_round(0, "plan frozen")
        self.lineage.set_meta("plan_sha256", hashlib.sha256(plan).hexdigest())
        self.lineage.add(CandidateRecord(
            round=0, candidate="baseline", parent=None, stage="research", commit_sha=self.workspace.head(),
            agent_status="completed", claim="the task's baseline", verify_status=self.lineage.meta("baseline_status"),
            speedup_geomean=1.0, speedup_lo=1.0, speedup_hi=1.0, accepted=True,
            started_at=self.services.clock.now(),
        ))

    def _stage_iterate(self) -> None:
        while True:
            self._check_budgets()
            rounds = self.lineage.rounds()
            iterate = [r for r in rounds if r.stage == Stage.iterate.value]
            since = _rounds_since_acceptance(iterate)
            mark = stagnation(since, self.config.replan_after, self.config.stall_after)
            if mark == "stalled":
                best = self._best()
                raise Stalled(f"{since} rounds without an accepted candidate (replan after "
                              f"{self.config.replan_after}); best stays {best.candidate} at "
                              f"{best.speedup_geomean or 1.0:.2f}x; tested: {tested_hypotheses(iterate[-since:])}")
            number = len(rounds) + 1
            last = rounds[-1] if rounds else None
            record = self.runner.run(RoundInput(
                stage=Stage.iterate.value, agent=self.services.writer, parent=self._head(), turn=len(iterate),
                best=self._best(), last=last, replan=mark == "replan",
                full_review=number % self.config.full_review_every == 0,
                profile_digest=self._digest_of(self._best()), wiki_hits=self._wiki_hits(last),
            ))
            if record is None:
                return
            self._after_round(record)

    def _stage_tune(self) -> None:
        parents = [r for r in self.lineage.accepted() if r.stage != Stage.tune.value and self._tunable(r)]
        for parent in parents:
            while True:
                self._check_budgets()
                tried = [r for r in self.lineage.rounds() if r.stage == Stage.tune.value and r.parent == parent.candidate]
                history = [{"config": self._default_config(parent), "speedup": parent.speedup_geomean, "passed": True}]
                history += [{"config": r.config, "speedup": r.speedup_geomean, "passed": r.verify_status == "PASSED"}
                            for r in tried if r.config]
                record = self.runner.run(RoundInput(
                    stage=Stage.tune.value, agent=self.services.tuner, parent=parent, turn=len(tried),
                    best=self._best(), last=self.lineage.rounds()[-1] if self.lineage.rounds() else None,
                    history=history,
                ))
                if record is None:
                    break
                self._after_round(record)

    # -- between rounds -----------------------------------------------------------------------
    def _after_round(self, record: CandidateRecord) -> None:
        best = self._best()
        state = "accepted" if record.accepted else "rejected: " + "; ".join(record.reasons)[:100]
        self.services.progress.update(best=best.speedup_geomean, note=f"round {record.round} {state}")
        self._save(RunStatus.running, f"round {record.round} done")
        target = self.config.target_speedup
        if target and best.round > 0 and (best.speedup_geomean or 0.0) >= target:
            raise TargetReached(f"{best.candidate} reached {best.speedup_geomean:.2f}x >= target {target:g}x")
        if record.accepted and record.candidate == best.candidate:
            self._profile(record)
            self._check_speed_of_light(record)

    def _profile(self, record: CandidateRecord) -> None:
        art = self.paths.round_dir(record.round)
        self.services.progress.update(step="profile")
        digest = self.services.profiler.digest(self.paths.sealed, art / "candidate", art)
        if digest:
            (art / "profile-digest.md").write_text(digest, encoding="utf-8")

    def _digest_of(self, record: CandidateRecord) -> str | None:
        art = self.paths.artifacts / "research" if record.round == 0 else self.paths.round_dir(record.round)
        path = art / "profile-digest.md"
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def _wiki_hits(self, last: CandidateRecord | None) -> list[str]:
        """Wiki entries for the task and what the last round ran into (fenced as untrusted in the prompt)."""
        words = [self.facts.name, self.facts.description[:120]]
        if last is not None:
            words += [f.get("text", "")[:80] for f in last.findings[:2]] + last.reasons[:1]
        return self.services.wiki.search(" ".join(w for w in words if w)[:300], 3)

    def _check_speed_of_light(self, record: CandidateRecord) -> None:
        path = self.paths.round_dir(record.round) / "verify.json"
        if not path.is_file():
            return
        result = VerifyResult.model_validate_json(path.read_text(encoding="utf-8"))
        fraction = self.services.ceiling.fraction(self.paths.sealed, result)
        if fraction is None:
            return
        self.lineage.set_meta("best_sol_fraction", fraction)
        if fraction >= self.config.sol_fraction:
            raise SpeedOfLight(f"{record.candidate} runs at {fraction:.0%} of the device's speed of light "
                               f"(stop at {self.config.sol_fraction:.0%}): little is left to gain")

    def _check_budgets(self) -> None:
        if self.interrupted:
            raise Interrupted("interrupted by a signal; continue with `kloop run --resume`")
        done = len(self.lineage.rounds())
        if self.config.rounds is not None and done >= self.config.rounds:
            raise BudgetExhausted(f"round budget used: {done} of {self.config.rounds} rounds")
        if self.config.budget_s is not None and self.elapsed() >= self.config.budget_s:
            raise BudgetExhausted(f"wall-time budget used: {self.elapsed():.0f}s of {self.config.budget_s:.0f}s")
        cost = self.lineage.spent_usd()
        if self.config.cost_limit_usd is not None and cost >= self.config.cost_limit_usd:
            raise BudgetExhausted(f"cost budget used: ${cost:.2f} of ${self.config.cost_limit_usd:.2f}")

    def _recover(self) -> None:
        """Finish or undo the round a crash interrupted (its lineage row decides which)."""
        state = load_round(self.paths)
        if state is None:
            return
        if self.lineage.get(state.round) is not None:
            self.runner.finish(state)
        else:
            self.runner.prepare(state)
            self.runner.finish(state)

    # -- helpers -------------------------------------------------------------------------------
    def elapsed(self) -> float:
        return self.prior_elapsed + (self.services.clock.now() - self.session_start)

    def _best(self) -> CandidateRecord:
        best = self.lineage.best()
        if best is None:
            raise Blocked("no baseline in the lineage")
        return best

    def _head(self) -> CandidateRecord:
        head = self.lineage.head()
        if head is None:
            raise Blocked("no baseline in the lineage")
        return head

    def _tunables(self, record: CandidateRecord) -> dict[str, list[Any]]:
        text = self.workspace.git("show", f"{record.commit_sha}:solution/solution.json", check=False)
        try:
            space = ((json.loads(text) or {}).get("kloop") or {}).get("tunables") or {}
        except (json.JSONDecodeError, AttributeError):
            return {}
        return space if isinstance(space, dict) and all(isinstance(v, list) and v for v in space.values()) else {}

    def _tunable(self, record: CandidateRecord) -> bool:
        return bool(self._tunables(record))

    def _default_config(self, record: CandidateRecord) -> dict[str, Any]:
        """The configuration the tunable candidate itself was verified at (its first values)."""
        return {name: values[0] for name, values in self._tunables(record).items()}

    def _completion_reason(self) -> str:
        best = self._best()
        rounds = self.lineage.rounds()
        if best.round == 0:
            return (f"every stage finished; {len(rounds)} rounds, none beat the baseline; tested: "
                    f"{tested_hypotheses(rounds)}")
        return (f"every stage finished; best {best.candidate} at {best.speedup_geomean:.2f}x "
                f"after {len(rounds)} rounds")

    def _save(self, status: RunStatus, reason: str) -> Summary:
        self.lineage.set_meta("elapsed_s", self.elapsed())
        self.lineage.set_meta("status", status.value)
        summary = build_summary(self.lineage, self.facts.name, status, reason)
        write_summary(summary, self.paths.summary)
        try:
            from kloop.report.html import write_report

            write_report(self.paths.root, self.lineage, summary)
        except ImportError:
            pass
        return summary

    def _lock(self) -> Any:
        handle = open(self.paths.lock, "w")  # noqa: SIM115 - held for the whole run
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise BadInput(self.paths.root, "another kloop process is running this run") from None
        return handle

    def _trap_signals(self) -> dict[int, Any]:
        def first(signum: int, frame: Any) -> None:
            self.interrupted = True
            self.services.progress.update(note="stopping after this round (signal again to stop now)")
            signal.signal(signum, signal.default_int_handler)

        previous: dict[int, Any] = {}
        try:
            for sig in (signal.SIGINT, signal.SIGTERM):
                previous[sig] = signal.signal(sig, first)
        except ValueError:  # not the main thread: no signal handling
            return {}
        return previous

    def _restore_signals(self, previous: dict[int, Any]) -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _rounds_since_acceptance(rounds: list[CandidateRecord]) -> int:
    count = 0
    for record in reversed(rounds):
        if record.accepted:
            break
        count += 1
    return count
