"""Routed solutions: only significant regimes earn a route; the dispatcher is verified as one solution."""

from __future__ import annotations

import importlib
import json
import sys
import types
from pathlib import Path

import pytest

from kloop.route.regimes import OPEN
from kloop.route.routed import RouteCandidate, plan_route, write_routed
from kloop.task.load import load_task

TASK = Path(__file__).parent / "tasks" / "rowscale_wide"
SHAPES = {f"rowscale-n{n}": {"n": n} for n in (2, 6, 40, 300)}
FAST = {"iterations": 5, "rounds": 2, "warmup": 1, "recheck": 1, "timeout_s": 60, "device": "cpu"}


def _solution(root: Path, name: str, body: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "main.py").write_text(body)
    meta = {"name": name, "definition": "rowscale_d16", "author": "tests",
            "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": "main.py::run",
                     "destination_passing_style": False}, "sources": [{"path": "main.py"}]}
    (folder / "solution.json").write_text(json.dumps(meta))
    return folder


def _cand(name: str, folder: Path, per: dict[str, tuple[float, float, float]]) -> RouteCandidate:
    speeds = {u: s for u, (s, _, _) in per.items()}
    import math

    geo = math.exp(sum(math.log(s) for s in speeds.values()) / len(speeds))
    return RouteCandidate(candidate=name, solution_dir=folder, speedup_geomean=geo, speedups=speeds,
                          cis={u: [lo, hi] for u, (_, lo, hi) in per.items()})


def test_only_a_regime_whose_gain_is_significant_earns_a_route(tmp_path: Path) -> None:
    a = _solution(tmp_path, "a", "def run(x, w):\n    return x * w\n")
    b = _solution(tmp_path, "b", "def run(x, w):\n    return x * w\n")
    long_ = _cand("r001", a, {"rowscale-n2": (2.0, 1.9, 2.1), "rowscale-n6": (3.0, 2.9, 3.1),
                               "rowscale-n40": (9.0, 8.5, 9.5), "rowscale-n300": (30.0, 28.0, 32.0)})
    short = _cand("r002", b, {"rowscale-n2": (4.0, 3.8, 4.2), "rowscale-n6": (2.0, 1.8, 2.3),
                              "rowscale-n40": (9.2, 8.4, 9.9), "rowscale-n300": (10.0, 9.0, 11.0)})
    plan = plan_route([long_, short], SHAPES)
    assert plan.best == "r001" and plan.admitted
    routes = [(r.regime.lo, r.regime.hi, r.candidate, r.admitted) for r in plan.routes]
    assert routes == [(0, 4, "r002", True), (4, OPEN, "r001", False)]  # n=40: faster by noise only, stays
    assert "not significant" in plan.routes[1].evidence


def test_noise_alone_admits_no_route(tmp_path: Path) -> None:
    a = _solution(tmp_path, "a", "def run(x, w):\n    return x * w\n")
    one = _cand("r001", a, {u: (3.0, 2.5, 3.5) for u in SHAPES})
    two = _cand("r002", a, {"rowscale-n2": (3.3, 2.7, 3.9), **{u: (2.9, 2.4, 3.4) for u in list(SHAPES)[1:]}})
    assert not plan_route([one, two], SHAPES).admitted


def test_routed_solution_dispatches_by_shape_and_passes_the_verifier(tmp_path: Path) -> None:
    from kloop.verify import verify
    from kloop.verify.result import VerifyOptions

    counter = "CALLS = []\n\n\ndef run(x, w):\n    CALLS.append(x.shape[0])\n    return x * w\n"
    dirs = {"r001": _solution(tmp_path, "long", counter), "r002": _solution(tmp_path, "short", counter)}
    plan = plan_route([_cand("r001", dirs["r001"], {u: (3.0, 2.9, 3.1) for u in SHAPES}),
                       _cand("r002", dirs["r002"], {u: (1.0, 0.9, 1.1) for u in SHAPES})], SHAPES)
    out = write_routed(plan, dirs, load_task(TASK).definition, tmp_path / "routed",
                       routes=[(0, 16, "r002"), (16, OPEN, "r001")])
    package = types.ModuleType("routed_pkg")
    package.__path__ = [str(out)]
    sys.modules["routed_pkg"] = package
    main = importlib.import_module("routed_pkg.main")
    import torch

    for n in (3, 15, 16, 500):
        main.run(torch.ones(n, 16), torch.ones(16))
    assert importlib.import_module("routed_pkg.c_r002.main").CALLS == [3, 15]
    assert importlib.import_module("routed_pkg.c_r001.main").CALLS == [16, 500]

    # correctness of the one routed solution on every listed and held-out shape (timing is the bench's job:
    # the wall-clock cross-check is not dependable on a machine shared by many test runs)
    result = verify(load_task(TASK), out, VerifyOptions(**FAST, timing=False, speedup=False))
    assert result.passed, result.reasons
    assert set(SHAPES) <= {w.uuid for w in result.workloads} and sum(w.heldout for w in result.workloads) >= 2


@pytest.mark.parametrize("language", ["cpp"])
def test_a_candidate_in_another_language_is_left_out_with_a_reason(tmp_path: Path, language: str) -> None:
    a = _solution(tmp_path, "a", "def run(x, w):\n    return x * w\n")
    c = _solution(tmp_path, "c", "")
    meta = json.loads((c / "solution.json").read_text())
    meta["spec"]["language"] = language
    (c / "solution.json").write_text(json.dumps(meta))
    plan = plan_route([_cand("r001", a, {u: (3.0, 2.9, 3.1) for u in SHAPES}),
                       _cand("r002", c, {u: (9.0, 8.9, 9.1) for u in SHAPES})], SHAPES)
    assert plan.best == "r002" and "routing supports python" in plan.excluded["r002"]
    assert not plan.admitted
