"""Shape regimes: ranges of one var axis, from log-scale buckets and the measured crossovers.

A regime is a half-open range `[lo, hi)` of the routing axis (the var axis with the most
distinct workload values; other var axes do not split regimes). Regimes start as log-4 buckets
of the listed workloads' values, so `kloop tune --regime` can name one before anything is
measured. Once candidates are measured per workload, each bucket is split where the winning
candidate changes between neighbouring workloads (the boundary goes at the geometric midpoint of
the two values: the crossover) and neighbouring regimes with the same winner are merged. The
first regime starts at 0 and the last is open-ended, so every shape, held-out ones included,
falls in exactly one regime.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from pydantic import BaseModel, Field

from kloop.errors import BadInput

LOG_BASE = 4
OPEN = 2**62  # the last regime's upper end: no listed shape reaches it


class Regime(BaseModel):
    """One range of the routing axis and the workloads listed in it."""

    axis: str = Field(description="The routing axis (a var axis of the definition).")
    lo: int = Field(description="Smallest axis value in the regime (inclusive).")
    hi: int = Field(description="Upper end (exclusive); OPEN for the last regime.")
    workloads: list[str] = Field(default_factory=list, description="uuids of listed workloads in the regime.")
    winner: str | None = Field(default=None, description="Candidate measured fastest here, once measured.")

    @property
    def name(self) -> str:
        top = "inf" if self.hi >= OPEN else str(self.hi - 1)
        return f"{self.axis}:{self.lo}-{top}"

    def contains(self, value: int) -> bool:
        return self.lo <= value < self.hi


def routing_axis(shapes: dict[str, dict[str, int]]) -> str | None:
    """The var axis with the most distinct values over the workloads (None: no var axis)."""
    counts: dict[str, set[int]] = {}
    for axes in shapes.values():
        for name, value in axes.items():
            counts.setdefault(name, set()).add(value)
    if not counts:
        return None
    return max(sorted(counts), key=lambda n: len(counts[n]))


def _bucket(value: int) -> int:
    return -1 if value <= 0 else int(math.floor(math.log(value, LOG_BASE) + 1e-9))


def log_buckets(shapes: dict[str, dict[str, int]]) -> list[Regime]:
    """Log-4 buckets of the routing axis holding at least one listed workload, covering 0..inf."""
    axis = routing_axis(shapes)
    if axis is None:
        return [Regime(axis="-", lo=0, hi=OPEN, workloads=sorted(shapes))]
    by_bucket: dict[int, list[str]] = {}
    for uuid, axes in sorted(shapes.items(), key=lambda kv: (kv[1].get(axis, 0), kv[0])):
        by_bucket.setdefault(_bucket(axes.get(axis, 0)), []).append(uuid)
    keys = sorted(by_bucket)
    regimes = []
    for i, b in enumerate(keys):
        lo = 0 if i == 0 else max(0, LOG_BASE**b)
        hi = OPEN if i == len(keys) - 1 else LOG_BASE ** keys[i + 1]
        regimes.append(Regime(axis=axis, lo=lo, hi=hi, workloads=by_bucket[b]))
    return regimes


def _crossover(a: int, b: int) -> int:
    """The boundary between neighbouring values a < b: their geometric midpoint, rounded up."""
    return max(a + 1, min(b, math.ceil(math.sqrt(max(a, 1) * b))))


def split_and_merge(regimes: list[Regime], shapes: dict[str, dict[str, int]],
                    winners: dict[str, str]) -> list[Regime]:
    """Split buckets where the per-workload winner changes, then merge neighbours with one winner."""
    pieces: list[Regime] = []
    for regime in regimes:
        run: list[str] = []
        lo = regime.lo
        for uuid in regime.workloads:
            if run and winners.get(uuid) != winners.get(run[-1]):
                cut = _crossover(shapes[run[-1]][regime.axis], shapes[uuid][regime.axis])
                pieces.append(regime.model_copy(update={"lo": lo, "hi": cut, "workloads": run,
                                                        "winner": winners.get(run[-1])}))
                lo, run = cut, []
            run.append(uuid)
        pieces.append(regime.model_copy(update={"lo": lo, "workloads": run,
                                                "winner": winners.get(run[-1]) if run else None}))
    merged: list[Regime] = []
    for piece in pieces:
        if merged and merged[-1].winner == piece.winner:
            last = merged[-1]
            merged[-1] = last.model_copy(update={"hi": piece.hi, "workloads": last.workloads + piece.workloads})
        else:
            merged.append(piece)
    return merged


def find_regime(regimes: Iterable[Regime], name: str) -> Regime:
    """The regime called `name` (as `kloop tune --regime` spells it), or BadInput listing the known ones."""
    regimes = list(regimes)
    for regime in regimes:
        if regime.name == name:
            return regime
    known = ", ".join(r.name for r in regimes) or "none"
    raise BadInput("--regime", f"unknown regime {name!r} (known: {known})")
