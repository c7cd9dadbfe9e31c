"""`kloop route RUN_DIR`: plan routes from a run's accepted candidates, build and verify the routed solution.

Reads the run directory as files (lineage.sqlite read-only, each round's verify.json and
candidate/), so this layer never imports the loop. The routed solution is verified as one
solution over every listed workload and the held-out shapes. Its dispatch overhead is measured
by a second routed solution that sends every shape to the overall best: its latency minus the
best's own, per workload, both verified now on the same machine.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from kloop.errors import BadInput
from kloop.route.regimes import OPEN
from kloop.route.routed import RouteCandidate, RoutePlan, plan_route, write_routed
from kloop.route.tune import Judge, real_judge
from kloop.verify.result import VerifyResult


class Overhead(BaseModel):
    uuid: str
    axes: dict[str, int]
    best_ms: float | None
    routed_ms: float | None
    overhead_ms: float | None


class RouteReport(BaseModel):
    """The `kloop route --json` document (also saved as RUN_DIR/routed/route.json)."""

    run_dir: str
    admitted: bool = Field(description="At least one regime earned a route to a non-best candidate.")
    reason: str
    plan: RoutePlan | None = None
    solution_dir: str | None = None
    status: str | None = Field(default=None, description="Verifier status of the routed solution.")
    speedup_geomean: float | None = None
    speedup_ci: list[float] | None = None
    best_speedup_geomean: float | None = None
    best_speedup_ci: list[float] | None = None
    dispatch_overhead: list[Overhead] = Field(default_factory=list)
    workloads: list[dict[str, Any]] = Field(default_factory=list, description="Routed per-workload results.")


def accepted_candidates(run_dir: Path) -> list[RouteCandidate]:
    """Accepted non-baseline candidates with their measurements and sources, from the run's files."""
    db = run_dir / "lineage.sqlite"
    if not db.is_file():
        raise BadInput(run_dir, "not a kloop run directory (no lineage.sqlite)")
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT round, candidate, speedup_geomean FROM candidates "
                            "WHERE accepted = 1 AND round > 0 ORDER BY round").fetchall()
    out = []
    for number, candidate, speedup in rows:
        art = run_dir / "artifacts" / f"round-{number:03d}"
        if not (art / "verify.json").is_file() or not (art / "candidate" / "solution.json").is_file():
            continue
        result = VerifyResult.model_validate_json((art / "verify.json").read_text(encoding="utf-8"))
        timed = [w for w in result.workloads if not w.heldout and w.speedup]
        out.append(RouteCandidate(candidate=candidate, solution_dir=art / "candidate",
                                  speedup_geomean=speedup or result.summary.speedup_geomean or 0.0,
                                  speedups={w.uuid: w.speedup for w in timed if w.speedup},
                                  cis={w.uuid: w.speedup_ci for w in timed if w.speedup_ci}))
    return out


def route_run(run_dir: Path, judge: Judge | None = None) -> RouteReport:
    """Plan, write and verify the routed solution of a finished (or paused) run."""
    from kloop.task.load import load_task

    task = load_task(run_dir / "sealed")
    candidates = accepted_candidates(run_dir)
    if len(candidates) < 2:
        return RouteReport(run_dir=str(run_dir), admitted=False,
                           reason=f"{len(candidates)} accepted candidate(s): nothing to route between")
    shapes = {w.uuid: dict(w.axes) for w in task.workloads}
    plan = plan_route(candidates, shapes)
    if not plan.admitted:
        refused = RouteReport(run_dir=str(run_dir), admitted=False, plan=plan,
                              reason="no regime's gain over the best is significant: " +
                                     "; ".join(f"{r.regime.name}: {r.evidence}" for r in plan.routes))
        (run_dir / "routed").mkdir(exist_ok=True)
        (run_dir / "routed" / "route.json").write_text(refused.model_dump_json(indent=1), encoding="utf-8")
        return refused
    dirs = {c.candidate: c.solution_dir for c in candidates}
    out = run_dir / "routed"
    routed = write_routed(plan, dirs, task.definition, out / "solution")
    identity = write_routed(plan, dirs, task.definition, out / "identity", routes=[(0, OPEN, plan.best)])
    judge = judge or real_judge()
    result, same, alone = judge(task, routed), judge(task, identity), judge(task, dirs[plan.best])
    report = RouteReport(
        run_dir=str(run_dir), admitted=True, plan=plan, solution_dir=str(routed), status=result.status.value,
        reason="; ".join(f"{r.regime.name} -> {r.candidate}" for r in plan.routes),
        speedup_geomean=result.summary.speedup_geomean, speedup_ci=result.summary.speedup_ci,
        best_speedup_geomean=alone.summary.speedup_geomean, best_speedup_ci=alone.summary.speedup_ci,
        dispatch_overhead=_overheads(same, alone),
        workloads=[w.model_dump(mode="json") for w in result.workloads])
    (out / "route.json").write_text(report.model_dump_json(indent=1), encoding="utf-8")
    (out / "verify.json").write_text(result.model_dump_json(indent=1), encoding="utf-8")
    return report


def _overheads(identity: VerifyResult, best: VerifyResult) -> list[Overhead]:
    mine = {w.uuid: w for w in best.workloads if not w.heldout}
    out = []
    for w in identity.workloads:
        if w.heldout or w.uuid not in mine:
            continue
        b = mine[w.uuid].latency_ms
        diff = w.latency_ms - b if w.latency_ms is not None and b is not None else None
        out.append(Overhead(uuid=w.uuid, axes=w.axes, best_ms=b, routed_ms=w.latency_ms, overhead_ms=diff))
    return out


def median_overhead_ms(report: RouteReport) -> float | None:
    values = sorted(o.overhead_ms for o in report.dispatch_overhead if o.overhead_ms is not None)
    return values[len(values) // 2] if values else None


def dump(report: Any, path: Path | None) -> None:
    if path is not None:
        path.write_text(json.dumps(report.model_dump(mode="json"), indent=1) + "\n", encoding="utf-8")


__all__ = ["RouteReport", "accepted_candidates", "dump", "median_overhead_ms", "route_run"]
