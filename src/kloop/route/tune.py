"""`kloop tune`: every configuration of a tunable solution is a solution, judged by the real verifier.

The search (`kloop.route.search`) picks which configurations to measure within the budget; each
one is instantiated into its own directory and verified (timing and the interleaved baseline
on), optionally on one regime's workloads only. The result names the fastest configuration
and whether it beats the solution's default configuration by the gate's rule
(`kloop.route.evidence.clears`): a configuration that is only faster by noise is reported, not
promoted.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from kloop.errors import BadInput
from kloop.route.evidence import clears
from kloop.route.regimes import Regime, find_regime, log_buckets
from kloop.route.search import Config, Observation, Search, read_space, space_size
from kloop.verify.result import Comparison, VerifyResult
from kloop.verify.stats import SpeedRule, pool

Judge = Callable[..., VerifyResult]
"""(task, solution_dir, incumbent=None) -> VerifyResult; `incumbent` is timed in the same rounds when supported."""


class Evaluation(BaseModel):
    """One measured configuration."""

    config: dict[str, Any] = Field(description="Tunable values.")
    status: str = Field(description="Verifier status.")
    speedup_geomean: float | None = Field(default=None, description="Geomean speedup over the baseline.")
    speedup_ci: list[float] | None = Field(default=None, description="Its 95% confidence interval.")
    reasons: list[str] = Field(default_factory=list, description="Verifier reasons when it failed.")


class TuneResult(BaseModel):
    """The `kloop tune --json` document."""

    task: str
    solution: str
    regime: str | None = Field(default=None, description="The regime tuned for, None for all workloads.")
    space_size: int
    budget: int
    strategy: str = Field(description="exhaustive (the space fits the budget) or adaptive.")
    evaluations: list[Evaluation]
    best: Evaluation | None = Field(default=None, description="Fastest passing configuration measured.")
    default: Evaluation | None = Field(default=None, description="The solution's default configuration.")
    significant: bool = Field(default=False, description="best clears default by the gate's rule.")
    evidence: str = Field(default="", description="How `significant` was decided, with the numbers.")


def workloads_of(task: Any, regime: str | None) -> tuple[Any, Regime | None]:
    """The task restricted to one regime's listed workloads (the whole task when `regime` is None)."""
    if regime is None:
        return task, None
    shapes = {w.uuid: dict(w.axes) for w in task.workloads}
    chosen = find_regime(log_buckets(shapes), regime)
    kept = [w for w in task.workloads if w.uuid in set(chosen.workloads)]
    return dataclasses.replace(task, workloads=kept), chosen


def real_judge(options: dict[str, Any] | None = None) -> Judge:
    """The real verifier with these VerifyOptions overrides (timing and speedup on)."""
    from kloop.verify import verify
    from kloop.verify.result import VerifyOptions

    opts = VerifyOptions.model_validate({"device": "auto", **(options or {}), "timing": True, "speedup": True})
    direct = "incumbent_path" in VerifyOptions.model_fields

    def judge(task: Any, solution_dir: Path, incumbent: Path | None = None, rounds_factor: int = 1) -> VerifyResult:
        chosen = opts.model_copy(update={"rounds": opts.rounds * rounds_factor})
        if incumbent is not None and direct:
            return verify(task, solution_dir, chosen.model_copy(update={"incumbent_path": incumbent}))
        return verify(task, solution_dir, chosen)

    judge.direct = direct  # type: ignore[attr-defined]
    return judge


def _instance(solution_dir: Path, config: Config, where: Path) -> Path:
    """A scratch copy of the tunable solution, instantiated at `config`."""
    from kloop.task.tunables import instantiate_dir

    shutil.copytree(solution_dir, where, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    instantiate_dir(where, config)
    return where


def measure(task: Any, solution_dir: Path, config: Config, judge: Judge) -> Evaluation:
    """Instantiate one configuration in a scratch copy and verify it."""
    with tempfile.TemporaryDirectory(prefix="kloop-tune-") as tmp:
        result = judge(task, _instance(solution_dir, config, Path(tmp) / "solution"))
    return Evaluation(config=config, status=result.status.value, speedup_geomean=result.summary.speedup_geomean,
                      speedup_ci=result.summary.speedup_ci, reasons=result.reasons[:3])


def _direct_looks(task: Any, mine: Path, theirs: Path, judge: Judge, rule: SpeedRule) -> tuple[Comparison | None, int]:
    """The gate's looks: a promising, inconclusive comparison is timed again with more rounds and pooled."""
    result = judge(task, mine, incumbent=theirs)
    versus = result.summary.incumbent if result.passed else None
    looks = 1
    while versus is not None and rule.another_look(versus.ratio(), looks):
        looks += 1
        for _ in range(rule.confirm_pairs):  # one look, its rounds over fresh pairs of boxes
            again = judge(task, mine, incumbent=theirs, rounds_factor=rule.confirm_rounds_factor)
            more = again.summary.incumbent if again.passed else None
            if more is None:
                return versus, looks
            versus = Comparison.of(pool(versus.ratio(), more.ratio()))
    return versus, looks


def _cost(evaluation: Evaluation) -> float | None:
    ok = evaluation.status == "PASSED" and evaluation.speedup_geomean
    return 1.0 / evaluation.speedup_geomean if ok and evaluation.speedup_geomean else None


def tune(task: Any, solution_dir: Path, *, budget: int, regime: str | None = None,
         judge: Judge | None = None, progress: Callable[[Evaluation], None] | None = None,
         rule: SpeedRule | None = None) -> TuneResult:
    """Search the declared tunables of `solution_dir` on `task` within `budget` verifications."""
    space = read_space(solution_dir)
    if not space:
        raise BadInput(solution_dir / "solution.json", "declares no kloop.tunables: nothing to tune")
    if budget < 1:
        raise BadInput("--budget", "must be at least 1")
    scoped, chosen = workloads_of(task, regime)
    judge = judge or real_judge()
    default = {name: values[0] for name, values in space.items()}
    search = Search(space, budget=budget, seed=0, start=default)
    evaluations: list[Evaluation] = []
    history: list[Observation] = []
    while (config := search.next(history)) is not None:
        evaluation = measure(scoped, solution_dir, config, judge)
        evaluations.append(evaluation)
        history.append(Observation(config, _cost(evaluation)))
        if progress:
            progress(evaluation)
    passing = [e for e in evaluations if _cost(e) is not None]
    best = max(passing, key=lambda e: e.speedup_geomean or 0.0) if passing else None
    base = next((e for e in evaluations if e.config == default), None)
    significant, evidence = False, "the default is the fastest measured" if best is base else "nothing passed"
    if best is not None and base is not None and best is not base:
        significant, evidence = confirm(scoped, solution_dir, best, base, judge, rule or SpeedRule())
    return TuneResult(task=getattr(task, "name", "task"), solution=solution_dir.name,
                      regime=chosen.name if chosen else None, space_size=space_size(space), budget=budget,
                      strategy="exhaustive" if search.exhaustive else "adaptive", evaluations=evaluations,
                      best=best, default=base, significant=significant, evidence=evidence)


def confirm(task: Any, solution_dir: Path, best: Evaluation, base: Evaluation, judge: Judge,
            rule: SpeedRule) -> tuple[bool, str]:
    """Does the best configuration beat the default? Timed against it in the same rounds when the
    verifier can (the gate's direct rule, with its second look), else by the intervals already measured."""
    if getattr(judge, "direct", False):
        with tempfile.TemporaryDirectory(prefix="kloop-tune-") as tmp:
            mine = _instance(solution_dir, best.config, Path(tmp) / "best")
            theirs = _instance(solution_dir, base.config, Path(tmp) / "default")
            versus, looks = _direct_looks(task, mine, theirs, judge, rule)
        if versus is not None:
            ok = rule.clears(versus.ratio())
            return ok, (f"re-timed against the default in the same rounds ({looks} look{'s' * (looks > 1)}): "
                        f"{versus.speedup_geomean:.3f}x, {rule.confidence:.1%} lower bound "
                        f"{'above' if ok else 'not above'} {rule.min_gain}")
    ok = clears(best.speedup_ci, base.speedup_ci)
    return ok, (f"intervals: best {best.speedup_ci} vs default {base.speedup_ci}: "
                f"{'disjoint' if ok else 'overlapping'}")
