"""Tunable solutions: `${NAME}` placeholders in sources, values declared in solution.json.

A solution declaring `"kloop": {"tunables": {"BLOCK": [256, 1024]}}` is, when verified or
exported as-is, its default configuration (each tunable's first value): FlashInfer-Bench
and compilers cannot take placeholders. The tuner instantiates other configurations.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import ValidationError

from kloop.errors import BadInput
from kloop.task.schema import Solution, SolutionKloopSettings, SourceFile, TunableValue

PLACEHOLDER = re.compile(r"\$\{(\w+)\}")


def first_values(space: dict[str, list[TunableValue]]) -> dict[str, TunableValue]:
    """The default configuration of a space: each tunable's first value."""
    return {name: values[0] for name, values in space.items()}


def default_config(solution: Solution) -> dict[str, TunableValue]:
    """Each declared tunable's first value."""
    return first_values(solution.kloop.tunables if solution.kloop else {})


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


def space_of(data: object, where: object) -> dict[str, list[TunableValue]]:
    """The tunables a parsed solution.json declares ({} when none); a malformed block is `BadInput`."""
    block = data.get("kloop") if isinstance(data, dict) else None
    try:
        return SolutionKloopSettings.model_validate(block or {}).tunables
    except ValidationError as exc:
        first = exc.errors()[0]
        raise BadInput(where, f"kloop.tunables: {first['msg']}") from None


def read_space(solution_dir: Path) -> dict[str, list[TunableValue]]:
    """The declared space of a solution directory, `{}` when it declares none or has no solution.json."""
    path = solution_dir / "solution.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return space_of(data, path)


def instantiate_dir(solution_dir: Path, config: dict[str, TunableValue]) -> None:
    """Rewrite a tunable solution directory in place as the solution for one configuration.

    The directory form of `render_tunables` (same placeholder, same spelling); other keys of
    solution.json are kept as written, so a directory round-trips.
    """
    meta_path = solution_dir / "solution.json"
    data = json.loads(meta_path.read_text(encoding="utf-8"))

    def substitute(text: str, python: bool) -> str:
        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            return format_value(config[name], python=python) if name in config else match.group(0)

        return PLACEHOLDER.sub(value, text)

    for source in data.get("sources", []):
        python = str(source.get("path", "")).endswith(".py")
        if isinstance(source.get("content"), str):
            source["content"] = substitute(source["content"], python)
            continue
        file = solution_dir / source["path"]
        if file.is_file():
            file.write_text(substitute(file.read_text(encoding="utf-8"), python), encoding="utf-8")
    kloop = dict(data.get("kloop") or {})
    kloop.pop("tunables", None)
    kloop["config"] = config
    data["kloop"] = kloop
    meta_path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def placeholders(solution: Solution) -> set[str]:
    """Declared tunables that appear as `${NAME}` in the sources (others, e.g. shell, are text)."""
    declared = solution.kloop.tunables if solution.kloop else {}
    return {name for src in solution.sources for name in PLACEHOLDER.findall(src.content) if name in declared}


def instantiate(solution: Solution, config: dict[str, TunableValue]) -> Solution:
    """One configuration of a tunable solution, strict about the config (a tuner's front door).

    `config` must name only declared tunables, with declared values, and give a value for every
    tunable the sources use (start from `default_config(solution)` to vary one at a time).
    """
    declared = solution.kloop.tunables if solution.kloop else {}
    unknown = sorted(set(config) - set(declared))
    if unknown:
        raise BadInput("tunables", f"unknown tunable(s) {', '.join(unknown)}; "
                       f"declared: {', '.join(sorted(declared)) or 'none'}")
    bad = sorted(f"{name}={value!r}" for name, value in config.items() if value not in declared[name])
    if bad:
        raise BadInput("tunables", f"tunable value(s) {', '.join(bad)} not among the declared values")
    missing = sorted(placeholders(solution) - set(config))
    if missing:
        raise BadInput("tunables", f"no value for tunable(s) {', '.join(missing)} used in the sources")
    return render_tunables(solution, config)
