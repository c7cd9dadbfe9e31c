"""The report's numbers: best-so-far speedup over rounds and time, per regime, speed-of-light fractions."""

from __future__ import annotations

import math
from typing import Any

from kloop.report.data import Round, RunData, shapes_of
from kloop.report.plots import Series, line_chart


def _best_so_far(points: list[tuple[float, float, bool]]) -> list[tuple[float, float]]:
    out, best = [], None
    for x, y, ok in points:
        if ok and (best is None or y > best):
            best = y
        if best is not None:
            out.append((x, best))
    return out


def _marks(rounds: list[Round], x_of: Any) -> list[tuple[float, float, bool]]:
    return [(x_of(r), r.speedup_geomean, r.accepted) for r in rounds if r.speedup_geomean is not None]


def round_series(data: RunData) -> str:
    marks = _marks(data.rounds, lambda r: float(r.round))
    return line_chart("Speedup over rounds", [Series("overall", _best_so_far(marks), marks)],
                      "round", "speedup (x)", "chart-rounds")


def time_series(data: RunData) -> str:
    done = [r for r in data.rounds if r.finished_at]
    start = min([r.started_at for r in data.rounds if r.started_at] + [r.finished_at for r in done], default=0.0)
    span = max((r.finished_at - start for r in done), default=0.0)
    unit, scale = ("minutes", 60.0) if span >= 120 else ("seconds", 1.0)
    marks = _marks(done, lambda r: round((r.finished_at - start) / scale, 2))
    return line_chart("Speedup over time", [Series("overall", _best_so_far(marks), marks)],
                      f"{unit} since start", "speedup (x)", "chart-time")


def regimes_of(data: RunData) -> list[Any]:
    """The task's regimes (log buckets of the routing axis), from the listed workloads' shapes."""
    from kloop.route.regimes import log_buckets

    shapes = shapes_of(data)
    return log_buckets(shapes) if shapes else []


def _regime_speedup(r: Round, uuids: list[str]) -> float | None:
    per = r.workload_speedups or {}
    values = [per.get(u) for u in uuids]
    if r.round == 0:
        return 1.0
    if not values or any(not v for v in values):
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def regime_series(data: RunData) -> str:
    series = []
    for regime in regimes_of(data):
        marks = [(float(r.round), s, r.accepted) for r in data.rounds
                 if (s := _regime_speedup(r, regime.workloads)) is not None]
        series.append(Series(regime.name, _best_so_far(marks)))
    if len(series) < 2:
        return ""
    return line_chart("Speedup per regime over rounds", series, "round", "speedup (x)", "chart-regimes")


def sol_fractions(data: RunData, best: Round) -> dict[str, float]:
    """uuid -> floor / latency on the device the run measured, as the loop stored them with the best
    candidate's speed-of-light number (`kloop.loop.ceiling`). Never detected where the report is
    rendered: that machine's peaks are not the run's, and detecting imports torch into `kloop status`."""
    stored = data.meta.get("best_sol_fractions")  # written with `best_sol_fraction`, for the best only
    if not isinstance(stored, dict) or not best.verify:
        return {}
    return {str(k): float(v) for k, v in stored.items() if isinstance(v, int | float)}
