"""Tunable solutions: `${NAME}` placeholders in sources, values declared in solution.json.

A solution declaring `"kloop": {"tunables": {"BLOCK": [256, 1024]}}` is, when verified or
exported as-is, its default configuration (each tunable's first value): FlashInfer-Bench
and compilers cannot take placeholders. The tuner instantiates other configurations.
"""

from __future__ import annotations

import re

from kloop.task.schema import Solution, SolutionKloopSettings, SourceFile, TunableValue

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

    def render(source: SourceFile) -> SourceFile:
        python = source.path.endswith(".py")

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            return format_value(values[name], python=python) if name in values else match.group(0)

        return source.model_copy(update={"content": PLACEHOLDER.sub(replace, source.content)})

    sources = [render(s) for s in solution.sources]
    settings = SolutionKloopSettings(config={**solution.kloop.config, **values})
    return solution.model_copy(update={"sources": sources, "kloop": settings})


def format_value(value: TunableValue, *, python: bool) -> str:
    """A value spelled for the source it lands in: `True` in Python/Triton, `true` in C++."""
    if isinstance(value, bool) and not python:
        return "true" if value else "false"
    return str(value)
