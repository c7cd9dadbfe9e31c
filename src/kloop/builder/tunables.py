"""Tunables: `${NAME}` placeholders in sources, values declared in solution.json.

`"kloop": {"tunables": {"BLOCK": [64, 128]}}` declares a tunable; every configuration is its own
solution. Substitution itself is the task layer's (`kloop.task.tunables.render_tunables`, one
implementation for loading and building); this module adds the strict front door the tuner
uses: `instantiate` refuses unknown names, values outside the declared lists and configurations
that leave a used placeholder without a value.
"""

from __future__ import annotations

from typing import Any

from kloop.builder.result import BuildError
from kloop.task.tunables import PLACEHOLDER, default_config, render_tunables

__all__ = ["default_config", "instantiate", "placeholders", "resolve_placeholders"]


def declared_tunables(solution: Any) -> dict[str, list[Any]]:
    """Name -> candidate values from the solution's kloop block (empty when none)."""
    settings = getattr(solution, "kloop", None)
    return dict(getattr(settings, "tunables", None) or {})


def placeholders(solution: Any) -> set[str]:
    """Declared tunables that appear as `${NAME}` in the sources (others, e.g. shell, are text)."""
    declared = declared_tunables(solution)
    return {name for src in solution.sources for name in PLACEHOLDER.findall(src.content) if name in declared}


def instantiate(solution: Any, config: dict[str, Any]) -> Any:
    """The solution with each `${NAME}` replaced by `config[NAME]`; strict about the config.

    `config` must name only declared tunables, with declared values, and give a value for every
    tunable the sources use (start from `default_config(solution)` to vary one at a time).
    """
    declared = declared_tunables(solution)
    unknown = sorted(set(config) - set(declared))
    if unknown:
        raise BuildError(f"unknown tunable(s) {', '.join(unknown)}; declared: {', '.join(sorted(declared)) or 'none'}")
    bad = sorted(f"{name}={value!r}" for name, value in config.items() if value not in declared[name])
    if bad:
        raise BuildError(f"tunable value(s) {', '.join(bad)} not among the declared values")
    missing = sorted(placeholders(solution) - set(config))
    if missing:
        raise BuildError(f"no value for tunable(s) {', '.join(missing)} used in the sources")
    return render_tunables(solution, config)


def resolve_placeholders(solution: Any) -> Any:
    """A buildable solution: unchanged without declared tunables, else its default configuration."""
    if not declared_tunables(solution):
        return solution
    return render_tunables(solution)
