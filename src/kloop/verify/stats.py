"""Timing statistics: medians, bootstrap confidence intervals, the geometric-mean speedup.

Also the "fresh inputs" rule both sides of the channel share: timed iteration `i` runs on the
staged inputs with every float tensor rolled by an amount drawn from that iteration's seed, so no
two timed iterations see the same bytes at the same address, and the supervisor can rebuild any
iteration's inputs to re-check its outputs.
"""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np

CONFIDENCE = 0.95
BOOTSTRAP_SAMPLES = 2000


def median_ms(samples_ns: list[int]) -> float:
    return float(np.median(np.asarray(samples_ns, dtype=np.float64))) / 1e6


def _percentiles(values: np.ndarray) -> list[float]:
    lo = (1 - CONFIDENCE) / 2 * 100
    hi = 100 - lo
    return [float(np.percentile(values, lo)), float(np.percentile(values, hi))]


def _boot_medians(samples: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    idx = rng.integers(0, len(samples), size=(BOOTSTRAP_SAMPLES, len(samples)))
    return np.median(samples[idx], axis=1)


def median_ci_ms(samples_ns: list[int], seed: int = 0) -> list[float]:
    """Bootstrap CI of the median latency in milliseconds."""
    samples = np.asarray(samples_ns, dtype=np.float64) / 1e6
    return _percentiles(_boot_medians(samples, np.random.default_rng(seed)))


def speedup_with_ci(
    baseline_ns: list[list[int]], candidate_ns: list[list[int]], seed: int = 0
) -> tuple[list[float], list[list[float]], float, list[float]]:
    """Per-workload speedups (ratio of medians) with CIs, and the geomean with its CI.

    Each bootstrap replicate resamples every workload's baseline and candidate samples, takes
    the ratio of medians per workload and the geometric mean across workloads.
    """
    rng = np.random.default_rng(seed)
    per: list[float] = []
    per_ci: list[list[float]] = []
    log_reps = np.zeros(BOOTSTRAP_SAMPLES)
    for base, cand in zip(baseline_ns, candidate_ns, strict=True):
        b = np.asarray(base, dtype=np.float64)
        c = np.asarray(cand, dtype=np.float64)
        per.append(float(np.median(b) / np.median(c)))
        reps = _boot_medians(b, rng) / _boot_medians(c, rng)
        per_ci.append(_percentiles(reps))
        log_reps += np.log(reps)
    n = len(per)
    geomean = math.exp(sum(math.log(s) for s in per) / n)
    return per, per_ci, geomean, _percentiles(np.exp(log_reps / n))


def iteration_seeds(seed: int, count: int) -> list[int]:
    """Seeds of `count` timed iterations, derived from a per-batch seed the supervisor draws."""
    rng = random.Random(seed)
    return [rng.getrandbits(62) for _ in range(count)]


def fresh_inputs(base: dict[str, Any], seed: int) -> dict[str, Any]:
    """New tensors for one timed iteration: float tensors rolled by a seed-drawn shift.

    Integer and bool tensors (indices, lengths) keep their values, as their structure matters;
    they are still fresh copies at new addresses.
    """
    import torch

    rng = random.Random(seed)
    out: dict[str, Any] = {}
    for name, value in base.items():
        if not isinstance(value, torch.Tensor):
            out[name] = value
            continue
        n = value.numel()
        if value.is_floating_point() and n > 1:
            shift = rng.randrange(1, n)
            out[name] = value.reshape(-1).roll(shift).reshape(value.shape).clone()
        else:
            out[name] = value.clone()
    return out
