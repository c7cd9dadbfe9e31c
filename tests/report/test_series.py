"""The report's per-regime chart: one best-so-far line per regime, from each round's per-workload speedups."""

from __future__ import annotations

from pathlib import Path

from kloop.report.data import Round, RunData
from kloop.report.series import regime_series, regimes_of

SHAPES = {"w1": 1, "w40": 40, "w300": 300}


def _round(number: int, accepted: bool, speedups: dict[str, float]) -> Round:
    verify = {"workloads": [{"uuid": u, "axes": {"n": n}, "heldout": False} for u, n in SHAPES.items()]}
    row = {"round": number, "candidate": f"r{number:03d}", "parent": None, "stage": "iterate", "accepted": accepted,
           "workload_speedups": speedups, "speedup_geomean": 1.0, "reasons": [], "findings": []}
    return Round(row=row, verify=verify)


def test_one_line_per_regime_and_rejected_rounds_do_not_raise_it(tmp_path: Path) -> None:
    rounds = [_round(0, True, {}), _round(1, True, {"w1": 3.0, "w40": 1.5, "w300": 1.2}),
              _round(2, False, {"w1": 9.0, "w40": 9.0, "w300": 9.0}), _round(3, True, {"w1": 1.0, "w40": 2.0, "w300": 4.0})]
    data = RunData(run_dir=tmp_path, summary={}, rounds=rounds)
    assert [r.name for r in regimes_of(data)] == ["n:0-15", "n:16-255", "n:256-inf"]
    svg = regime_series(data)
    assert 'id="chart-regimes"' in svg and svg.count("<path") == 3
    for name in ("n:0-15", "n:16-255", "n:256-inf"):
        assert f">{name}</text>" in svg
    assert ">9<" not in svg  # the y axis never reached the rejected round's 9x
