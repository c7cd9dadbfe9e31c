"""The tuner's search strategy: which configuration to measure next, given what was measured.

The strategy adapts to the size of the space. A space that fits the budget is searched
exhaustively, in declaration order. A larger one gets a space-filling design first (every value
of every tunable appears early, values rotated so the design is balanced), then model-guided
steps: an additive model of log latency (one effect per tunable value, fitted by least squares
with a little shrinkage) proposes the untried configuration it predicts fastest, alternating with
a one-change neighbour of the incumbent so an interaction the additive model cannot see is still
found. Failed configurations count as very slow. No randomness beyond the seed given, so a
search is reproducible.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kloop.errors import BadInput

Config = dict[str, Any]
Space = dict[str, list[Any]]
FAILED_PENALTY = 3.0  # a failed configuration scores as e^3 ~ 20x slower than the slowest seen


def read_space(solution_dir: Path) -> Space:
    """The tunables a solution directory declares, `{}` when it declares none."""
    path = solution_dir / "solution.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    space = (data.get("kloop") or {}).get("tunables") or {}
    if not isinstance(space, dict) or not all(isinstance(v, list) and v for v in space.values()):
        raise BadInput(path, "kloop.tunables must map each name to a non-empty list of values")
    return space


def all_configs(space: Space) -> list[Config]:
    names = list(space)
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(space[n] for n in names))]


def space_size(space: Space) -> int:
    return math.prod(len(v) for v in space.values()) if space else 0


def key(config: Config) -> str:
    return json.dumps(config, sort_keys=True)


@dataclass
class Observation:
    """One measured configuration: its cost (lower is better; None = failed)."""

    config: Config
    cost: float | None


@dataclass
class Search:
    """The adaptive strategy as an object: `next(history)` until it returns None."""

    space: Space
    budget: int
    seed: int = 0
    start: Config | None = None
    _design: list[Config] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self.configs = all_configs(self.space)
        self.exhaustive = len(self.configs) <= self.budget
        self._design = [] if self.exhaustive else design(self.space, self.seed, self.start)

    def next(self, history: list[Observation]) -> Config | None:
        tried = {key(o.config) for o in history}
        if len(history) >= self.budget or len(tried) >= len(self.configs):
            return None
        if self.exhaustive:
            return next(c for c in self.configs if key(c) not in tried)
        for config in self._design:
            if key(config) not in tried:
                return config
        untried = [c for c in self.configs if key(c) not in tried]
        if len(history) % 2 == 0:
            neighbour = _best_neighbour(self.space, history, tried)
            if neighbour is not None:
                return neighbour
        model = fit_additive(self.space, history)
        return min(untried, key=lambda c: (model(c), key(c)))


def design(space: Space, seed: int, start: Config | None = None) -> list[Config]:
    """A balanced space-filling design: max(levels) + 1 configurations, every value of every tunable used.

    Row i takes value (i + offset_t) mod levels_t of tunable t, with a seeded offset per tunable,
    so values are spread across rows; the declared default (`start`) comes first when given.
    """
    rng = random.Random(seed)
    names = list(space)
    rows = max(len(v) for v in space.values()) + 1
    offsets = {n: rng.randrange(len(space[n])) for n in names}
    strides = {n: rng.choice([s for s in range(1, len(space[n]) + 1) if math.gcd(s, len(space[n])) == 1] or [1])
               for n in names}
    out: list[Config] = [dict(start)] if start else []
    seen = {key(c) for c in out}
    for i in range(rows):
        config = {n: space[n][(offsets[n] + i * strides[n]) % len(space[n])] for n in names}
        if key(config) not in seen:
            seen.add(key(config))
            out.append(config)
    return out


def _scores(history: list[Observation]) -> list[tuple[Config, float]]:
    ok = [math.log(o.cost) for o in history if o.cost]
    worst = max(ok, default=0.0) + FAILED_PENALTY
    return [(o.config, math.log(o.cost) if o.cost else worst) for o in history]


def fit_additive(space: Space, history: list[Observation]) -> Callable[[Config], float]:
    """Least-squares additive model of log cost: intercept + one effect per (tunable, value)."""
    columns = [(n, key({"v": v})) for n in space for v in space[n]]
    index = {c: i for i, c in enumerate(columns)}
    scored = _scores(history)

    def row(config: Config) -> np.ndarray:
        x = np.zeros(len(columns) + 1)
        x[0] = 1.0
        for n, v in config.items():
            x[1 + index[(n, key({"v": v}))]] = 1.0
        return x

    a = np.array([row(c) for c, _ in scored])
    y = np.array([s for _, s in scored])
    ridge = 1e-3 * np.eye(a.shape[1])
    ridge[0, 0] = 0.0
    coef = np.linalg.solve(a.T @ a + ridge, a.T @ y)
    return lambda config: float(row(config) @ coef)


def _best_neighbour(space: Space, history: list[Observation], tried: set[str]) -> Config | None:
    """The first untried configuration one change away from the incumbent, nearest values first."""
    measured = [o for o in history if o.cost]
    if not measured:
        return None
    best = min(measured, key=lambda o: o.cost or math.inf).config
    model = fit_additive(space, history)
    options = []
    for name, values in space.items():
        for value in values:
            if value != best[name]:
                candidate = {**best, name: value}
                if key(candidate) not in tried:
                    options.append(candidate)
    return min(options, key=lambda c: (model(c), key(c))) if options else None
