"""Real AMD workloads from rocprofiler-compute's own test data, beyond vcopy (issue #14).

- mixbench (MI100 Omniperf 1.x layout, MI200): one kernel per data type and number of compute
  iterations per element. The benchmark is built to sweep arithmetic intensity across the roofline
  ridge, so its own design is the label: with no compute it is memory bound, at 128+ iterations it is
  compute bound, in between the bound flips exactly once, and where FP64 runs at half the FP32 rate
  (MI100) double crosses where float does, while at the full rate (MI200) it crosses later.
- multikernel (MI200): seven kernels each launched with a single work-item (`sample/vmem`): the grid
  is the problem.
Sources and licence: tests/fixtures/profile/README.md.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from kloop.profile import analyze, read
from kloop.profile.schema import Bound, FindingId

AMD = Path(__file__).resolve().parents[1] / "fixtures" / "profile" / "amd"
MIXBENCH = re.compile(r"benchmark_func<(float|double|__half2|int), 256, 8u, (\d+)u")


@cache
def _sweep(gpu: str) -> dict[str, list[tuple[int, Bound, FindingId]]]:
    """dtype -> [(compute iterations, bound, first finding)] sorted by iterations."""
    sweep: dict[str, list[tuple[int, Bound, FindingId]]] = {}
    for profile in read(AMD / f"mixbench_{gpu}"):
        match = MIXBENCH.search(profile.name)
        if match:
            report = analyze([profile])[0]
            sweep.setdefault(match.group(1), []).append((int(match.group(2)), report.bound, report.findings[0].id))
    return {dtype: sorted(points) for dtype, points in sweep.items()}


def _crossover(points: list[tuple[int, Bound, FindingId]]) -> int:
    """The first iteration count that is compute bound."""
    return next(n for n, bound, _ in points if bound is Bound.compute)


@pytest.mark.parametrize("gpu", ["mi100", "mi200"])
@pytest.mark.parametrize("dtype", ["float", "double", "__half2", "int"])
def test_mixbench_flips_from_memory_to_compute_bound_exactly_once(gpu: str, dtype: str) -> None:
    points = _sweep(gpu)[dtype]
    assert len(points) >= 30, f"{gpu}/{dtype}: only {len(points)} kernels read"
    bounds = [bound for _, bound, _ in points]
    assert bounds[0] is Bound.memory and bounds[-1] is Bound.compute
    flips = sum(1 for a, b in zip(bounds, bounds[1:], strict=False) if a is not b)
    assert flips == 1, f"{gpu}/{dtype}: {[(n, b.value) for n, b, _ in points]}"
    assert {n for n, bound, _ in points if n >= 128} <= {n for n, bound, _ in points if bound is Bound.compute}
    for _, bound, first in points:  # a tuned benchmark: the bound itself is the first finding
        assert first is (FindingId.memory_bound if bound is Bound.memory else FindingId.compute_bound)


def test_mixbench_double_crossover_follows_each_chips_fp64_rate() -> None:
    mi100, mi200 = _sweep("mi100"), _sweep("mi200")
    # MI100: FP64 at half the FP32 rate and twice the bytes per element: the same iteration count
    assert abs(_crossover(mi100["double"]) - _crossover(mi100["float"])) <= 8
    # MI200: FP64 vector at the full FP32 rate: double needs more iterations to become compute bound
    assert _crossover(mi200["double"]) > _crossover(mi200["float"])


def test_multikernel_single_work_item_launches_are_grid_too_small() -> None:
    profiles = read(AMD / "multikernel_mi200")
    assert len(profiles) == 7
    for profile in profiles:
        report = analyze([profile])[0]
        assert report.findings[0].id is FindingId.grid_too_small, (profile.name, [f.id.value for f in report.findings])


def test_omniperf_1x_sysinfo_layout_is_read() -> None:
    profile = read(AMD / "mixbench_mi100")[0]
    assert profile.arch == "gfx908" and profile.vendor.value == "amd"
