"""Tunable solutions: `${NAME}` placeholders in sources, values declared in solution.json.

A solution declaring `"kloop": {"tunables": {"BLOCK": [256, 1024]}}` is, when verified or
exported as-is, its default configuration (each tunable's first value): FlashInfer-Bench
and compilers cannot take placeholders. The tuner instantiates other configurations.
"""

from __future__ import annotations

import re

from kloop.task.schema import Solution, SolutionKloopSettings, TunableValue

PLACEHOLDER = re.compile(r"\$\{(\w+)\}")


def default_config(solution: Solution) -> dict[str, TunableValue]:
    """Each declared tunable's first value."""
    tunables = solution.kloop.tunables if solution.kloop else {}
    return {name: values[0] for name, values in tunables.items()}


def render_tunables(solution: Solution, config: dict[str, TunableValue] | None = None) -> Solution:
    """The solution with declared placeholders replaced (`config` over the defaults).

    Only declared names are replaced, so an unrelated `${X}` (a shell snippet) is left alone.
    The result declares no tunables and records the configuration under `kloop.config`.
    """
    if solution.kloop is None or not solution.kloop.tunables:
        return solution
    values = {**default_config(solution), **(config or {})}

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        return _format(values[name]) if name in values else match.group(0)

    sources = [s.model_copy(update={"content": PLACEHOLDER.sub(replace, s.content)}) for s in solution.sources]
    settings = SolutionKloopSettings(config={**solution.kloop.config, **values})
    return solution.model_copy(update={"sources": sources, "kloop": settings})


def _format(value: TunableValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"  # C++ and Triton constexpr spelling
    return str(value)
