"""A routed solution: each shape goes to the best accepted candidate of its regime.

`plan_route` works from measurements only: per listed workload, which candidate is fastest;
regimes from `kloop.route.regimes`; then each regime whose winner is not the overall best must
*earn* its route: the winner's regime interval must clear the best's (`evidence.clears`), else
the regime goes back to the best. `write_routed` turns an admitted plan into one Python solution
directory: every routed candidate's sources under `c_<id>/`, and a `main.py` that reads the
routing axis from an input's shape and calls the regime's candidate. Candidates must share the
overall best's language (Python) and calling convention; others are left out, with a reason.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from kloop.route.evidence import clears, regime_ci
from kloop.route.regimes import OPEN, Regime, log_buckets, split_and_merge


class RouteCandidate(BaseModel):
    """An accepted candidate with its per-workload measurements (from its round's verify.json)."""

    candidate: str
    solution_dir: Path
    speedup_geomean: float
    speedups: dict[str, float] = Field(default_factory=dict, description="uuid -> speedup.")
    cis: dict[str, list[float]] = Field(default_factory=dict, description="uuid -> speedup 95% CI.")


class RegimeRoute(BaseModel):
    regime: Regime
    candidate: str = Field(description="Where this regime's shapes go.")
    measured_winner: str | None = Field(default=None, description="Fastest candidate measured here.")
    admitted: bool = Field(description="True when the route to a non-best candidate is significant.")
    evidence: str = Field(description="The numbers behind the decision.")


class RoutePlan(BaseModel):
    best: str
    axis: str
    routes: list[RegimeRoute]
    excluded: dict[str, str] = Field(default_factory=dict, description="candidate -> why it cannot be routed.")

    @property
    def admitted(self) -> bool:
        return any(r.admitted for r in self.routes)

    def candidates(self) -> list[str]:
        return sorted({r.candidate for r in self.routes})


def _spec(solution_dir: Path) -> dict[str, Any]:
    data = json.loads((solution_dir / "solution.json").read_text(encoding="utf-8"))
    return data.get("spec") or {}


def compatible(best: RouteCandidate, others: list[RouteCandidate]) -> tuple[list[RouteCandidate], dict[str, str]]:
    """Candidates a Python dispatcher can call like the best: same language (python), same convention."""
    want = _spec(best.solution_dir)
    if want.get("language") != "python":
        return [best], {best.candidate: f"routing supports python solutions; the best is {want.get('language')}"}
    keep, why = [best], {}
    dps = want.get("destination_passing_style", True)
    for other in others:
        spec = _spec(other.solution_dir)
        if spec.get("language") != "python":
            why[other.candidate] = f"language {spec.get('language')} (the dispatcher is python)"
        elif spec.get("destination_passing_style", True) != dps:
            why[other.candidate] = "calling convention differs from the best's"
        else:
            keep.append(other)
    return keep, why


def plan_route(candidates: list[RouteCandidate], shapes: dict[str, dict[str, int]]) -> RoutePlan:
    """Regimes and their admitted routes, from the candidates' per-workload measurements."""
    best = max(candidates, key=lambda c: c.speedup_geomean)
    usable, excluded = compatible(best, [c for c in candidates if c is not best])
    listed = {u: a for u, a in shapes.items() if any(u in c.speedups for c in usable)}
    winners = {u: max(usable, key=lambda c: (c.speedups.get(u, 0.0), c is best)).candidate for u in listed}
    regimes = split_and_merge(log_buckets(listed), listed, winners)
    by_id = {c.candidate: c for c in usable}
    routes = [_judge(regime, by_id, best) for regime in regimes]
    return RoutePlan(best=best.candidate, axis=regimes[0].axis, routes=_merge(routes), excluded=excluded)


def _judge(regime: Regime, by_id: dict[str, RouteCandidate], best: RouteCandidate) -> RegimeRoute:
    winner = regime.winner or best.candidate
    if winner == best.candidate:
        return RegimeRoute(regime=regime, candidate=best.candidate, measured_winner=winner, admitted=False,
                           evidence="the overall best wins here")
    cand = by_id[winner]
    uuids = [u for u in regime.workloads if u in cand.cis and u in best.cis]
    if not uuids:
        return RegimeRoute(regime=regime, candidate=best.candidate, measured_winner=winner, admitted=False,
                           evidence="no intervals measured for both candidates")
    mine, theirs = regime_ci([cand.cis[u] for u in uuids]), regime_ci([best.cis[u] for u in uuids])
    ok = clears(mine, theirs)
    text = (f"{winner} CI [{mine[0]:.2f}, {mine[1]:.2f}] vs {best.candidate} CI [{theirs[0]:.2f}, {theirs[1]:.2f}] "
            f"over {len(uuids)} workload(s): {'significant' if ok else 'not significant, stays with the best'}")
    return RegimeRoute(regime=regime, candidate=winner if ok else best.candidate, measured_winner=winner,
                       admitted=ok, evidence=text)


def _merge(routes: list[RegimeRoute]) -> list[RegimeRoute]:
    """Neighbouring regimes sent to the same candidate become one."""
    out: list[RegimeRoute] = []
    for route in routes:
        if out and out[-1].candidate == route.candidate:
            last = out[-1]
            regime = last.regime.model_copy(update={"hi": route.regime.hi,
                                                    "workloads": last.regime.workloads + route.regime.workloads})
            out[-1] = last.model_copy(update={"regime": regime, "admitted": last.admitted or route.admitted,
                                              "evidence": f"{last.evidence}; {route.evidence}"})
        else:
            out.append(route)
    return out


def axis_position(definition: Any, axis: str) -> tuple[int, int]:
    """(input index, dimension) of the first input whose shape names the routing axis."""
    for index, spec in enumerate(definition.inputs.values()):
        shape = list(spec.shape or [])
        if axis in shape:
            return index, shape.index(axis)
    raise ValueError(f"no input of {definition.name} has the axis {axis!r} in its shape")


def _module(entry: str) -> tuple[str, str]:
    file, _, symbol = entry.partition("::")
    return file[:-3].replace("/", "."), symbol


def write_routed(plan: RoutePlan, candidates: dict[str, Path], definition: Any, out: Path,
                 routes: list[tuple[int, int, str]] | None = None) -> Path:
    """Write the routed solution directory for `plan` (or explicit `(lo, hi, candidate)` routes) to `out`."""
    from kloop.task.load import pack_solution

    routes = routes or [(r.regime.lo, r.regime.hi, r.candidate) for r in plan.routes]
    index, dim = axis_position(definition, plan.axis)
    out.mkdir(parents=True, exist_ok=True)
    sources, imports = [{"path": "main.py"}], []
    spec: dict[str, Any] = {}
    for cand in sorted({c for _, _, c in routes}):
        packed = pack_solution(candidates[cand])
        spec = spec or packed.spec.model_dump(mode="json")
        folder = f"c_{re.sub(r'[^A-Za-z0-9_]', '_', cand)}"
        for source in packed.sources:
            target = out / folder / source.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(source.content, encoding="utf-8")
            sources.append({"path": f"{folder}/{source.path}"})
        module, symbol = _module(packed.spec.entry_point)
        imports.append(f"from .{folder}.{module} import {symbol} as {folder}")
    table = ",\n".join(f"    ({lo}, {hi if hi < OPEN else 'OPEN'}, c_{re.sub(r'[^A-Za-z0-9_]', '_', c)})"
                       for lo, hi, c in routes)
    (out / "main.py").write_text(_DISPATCH.format(imports="\n".join(imports), table=table, index=index, dim=dim,
                                                  axis=plan.axis), encoding="utf-8")
    spec["entry_point"] = "main.py::run"
    meta = {"name": f"{definition.name}_routed", "definition": definition.name, "author": "kloop-route",
            "description": "Shape-routed: " + "; ".join(f"{plan.axis} in [{lo}, {'inf' if hi >= OPEN else hi}) -> {c}"
                                                         for lo, hi, c in routes),
            "spec": spec, "sources": sources}
    (out / "solution.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return out


_DISPATCH = '''"""Generated by `kloop route`: send each shape to the candidate measured best for its regime."""

{imports}

OPEN = 2**62
ROUTES = (
{table},
)


def run(*args):
    """Route on {axis} (input {index}, dimension {dim})."""
    value = args[{index}].shape[{dim}]
    for lo, hi, fn in ROUTES:
        if lo <= value < hi:
            return fn(*args)
    return ROUTES[-1][2](*args)
'''
