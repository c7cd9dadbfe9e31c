"""The orchestrator: a run is its stages in order, each a sequence of gated rounds.

    research -> freeze the plan -> iterate (writer rounds) -> tune (tuner rounds)

A run ends through one family of stop exceptions (`kloop.loop.stopping`); whatever happens,
the summary and report are saved in `finally`, and the lineage plus the write-ahead round
state let `--resume` continue after a crash, repeating at most the interrupted round.
"""

from __future__ import annotations

import fcntl
import signal
from pathlib import Path
from typing import Any

from kloop.errors import BadInput, HarnessFailure
from kloop.loop.ceiling import overall
from kloop.loop.config import RunConfig, Stage, load_config, save_config
from kloop.loop.context import RunContext
from kloop.loop.lineage import Lineage
from kloop.loop.record import CandidateRecord
from kloop.loop.rounds import RoundRunner
from kloop.loop.seal import Seal, remove_tree
from kloop.loop.services import Services
from kloop.loop.stages import STAGES
from kloop.loop.stages.research import ensure_plan
from kloop.loop.state import RunPaths, load_round
from kloop.loop.stopping import (
    BudgetExhausted,
    Completed,
    Interrupted,
    RunStatus,
    SpeedOfLight,
    StopRun,
    TargetReached,
)
from kloop.loop.summary import Summary, build_summary, tested_hypotheses, write_summary
from kloop.loop.workspace import Workspace
from kloop.skills import install as install_skills
from kloop.skills import target_for_agent
from kloop.task.load import load_task, write_solution_dir
from kloop.verify.result import VerifyResult

__all__ = ["Campaign", "Services"]


class Campaign:
    """One run directory and the parts that act on it."""

    def __init__(self, run_dir: Path, config: RunConfig, services: Services) -> None:
        self.ctx = RunContext.open(run_dir, config, services)
        self.paths, self.config, self.services, self.lineage = self.ctx.paths, config, services, self.ctx.lineage
        self.runner = RoundRunner(self.ctx)
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
        if not baseline.is_dir():  # the definition's reference is the baseline
            baseline = write_solution_dir(load_task(seal.pristine).baseline_or_reference(), paths.private / "reference")
        target = target_for_agent(config.writer)
        if target is not None:  # the writer's CLI finds verify/profile/wiki/loop skills in its project
            install_skills(target, paths.workspace)
        workspace = Workspace(paths.workspace)
        workspace.create(baseline, {})
        remove_tree(paths.private / "reference")
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
                ensure_plan(self.ctx, stage)
                self.run_stage(stage)
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

    def run_stage(self, stage: Stage) -> None:
        """Play one stage to its end (a team plays iterate on its branches: `kloop.loop.team`)."""
        STAGES[stage](self).run()

    # -- between rounds -----------------------------------------------------------------------
    def after_round(self, record: CandidateRecord) -> None:
        """Save, stop at the target, and profile a new best (its digest feeds the next prompt)."""
        best = self.ctx.best()
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

    def _check_speed_of_light(self, record: CandidateRecord) -> None:
        path = self.paths.round_dir(record.round) / "verify.json"
        if not path.is_file():
            return
        result = VerifyResult.model_validate_json(path.read_text(encoding="utf-8"))
        fractions = self.services.ceiling.fractions(self.paths.sealed, result)
        fraction = overall(fractions)
        if fraction is None:
            return
        self.lineage.set_meta("best_sol_fractions", fractions)  # what the report shows per workload
        self.lineage.set_meta("best_sol_fraction", fraction)
        if fraction >= self.config.sol_fraction:
            raise SpeedOfLight(f"{record.candidate} runs at {fraction:.0%} of the device's speed of light "
                               f"(stop at {self.config.sol_fraction:.0%}): little is left to gain")

    def check_budgets(self) -> None:
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
        tokens = self.lineage.spent_tokens()
        if self.config.token_limit is not None and tokens >= self.config.token_limit:
            raise BudgetExhausted(f"token budget used: {tokens} of {self.config.token_limit} tokens")

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

    def _completion_reason(self) -> str:
        best = self.ctx.best()
        rounds = self.lineage.rounds()
        if best.round == 0:
            return (f"every stage finished; {len(rounds)} rounds, none beat the baseline; tested: "
                    f"{tested_hypotheses(rounds)}")
        return (f"every stage finished; best {best.candidate} at {best.speedup_geomean:.2f}x "
                f"after {len(rounds)} rounds")

    def _save(self, status: RunStatus, reason: str) -> Summary:
        self.lineage.set_meta("elapsed_s", self.elapsed())
        self.lineage.set_meta("status", status.value)
        summary = build_summary(self.lineage, self.ctx.task.name, status, reason)
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
        """The first signal stops after this round; a second goes to the handler that was there before
        (the CLI's `kloop.signals`: kill every descendant, save state, exit 130/143 in one line)."""
        previous: dict[int, Any] = {}

        def first(signum: int, frame: Any) -> None:
            self.interrupted = True
            self.services.progress.update(note="stopping after this round (signal again to stop now)")
            before = previous.get(signum)
            signal.signal(signum, before if callable(before) else signal.default_int_handler)

        try:
            for sig in (signal.SIGINT, signal.SIGTERM):
                previous[sig] = signal.signal(sig, first)
        except ValueError:  # not the main thread: no signal handling
            return {}
        return previous

    def _restore_signals(self, previous: dict[int, Any]) -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

