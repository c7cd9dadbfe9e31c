"""`tuner`: searches the tunables a solution declares, no model involved.

A solution directory declares `"kloop": {"tunables": {"NAME": [values...]}}` in solution.json
and uses `${NAME}` in its sources. Each configuration is its own candidate: the tuner writes
the instantiated sources into `solution/` (tunables replaced by `"config"`), the loop verifies
it like any round. The search itself lives in `kloop.route.search` (exhaustive when the space
fits the tune budget, else a balanced design then model-guided steps), shared with `kloop tune`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from kloop.agents.base import AgentRequest, AgentResult, AgentStatus, Claim
from kloop.errors import BadInput

EXHAUSTIVE_LIMIT = 16
Config = dict[str, Any]


def read_tunables(solution_dir: Path) -> dict[str, list[Any]]:
    """The declared space, `{}` when the solution declares none."""
    path = solution_dir / "solution.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    space = (data.get("kloop") or {}).get("tunables") or {}
    if not isinstance(space, dict) or not all(isinstance(v, list) and v for v in space.values()):
        raise BadInput(path, "kloop.tunables must map each name to a non-empty list of values")
    return space


def _substitute(text: str, config: Config, *, python: bool) -> str:
    """Placeholders replaced the way kloop.task renders them (same pattern, same spelling)."""
    from kloop.task.tunables import PLACEHOLDER, format_value

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        return format_value(config[name], python=python) if name in config else match.group(0)

    return PLACEHOLDER.sub(value, text)


def instantiate(solution_dir: Path, config: Config) -> None:
    """Rewrite a tunable solution directory in place as the solution for one configuration."""
    meta_path = solution_dir / "solution.json"
    data = json.loads(meta_path.read_text(encoding="utf-8"))
    for source in data.get("sources", []):
        if isinstance(source.get("content"), str):
            source["content"] = _substitute(source["content"], config, python=source["path"].endswith(".py"))
            continue
        file = solution_dir / source["path"]
        if file.is_file():
            text = _substitute(file.read_text(encoding="utf-8"), config, python=file.suffix == ".py")
            file.write_text(text, encoding="utf-8")
    kloop = dict(data.get("kloop") or {})
    kloop.pop("tunables", None)
    kloop["config"] = config
    data["kloop"] = kloop
    meta_path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def default_config(space: dict[str, list[Any]]) -> Config:
    return {name: values[0] for name, values in space.items()}


def all_configs(space: dict[str, list[Any]]) -> list[Config]:
    from kloop.route.search import all_configs as configs

    return configs(space)


def observations(history: list[dict[str, Any]]) -> list[Any]:
    """The loop's tune history (config, speedup, passed) as the search's observations (cost = 1/speedup)."""
    from kloop.route.search import Observation

    return [Observation(item["config"], 1.0 / item["speedup"] if item.get("passed") and item.get("speedup") else None)
            for item in history]


def next_config(space: dict[str, list[Any]], history: list[dict[str, Any]], budget: int) -> Config | None:
    """The next configuration to measure, or None when the search is over (kloop.route.search decides)."""
    from kloop.route.search import Search

    search = Search(space, budget=budget, seed=0, start=default_config(space))
    return search.next(observations(history))


class TunerAgent:
    """The tune stage's writer: one configuration per call, picked from the measured history."""

    def __init__(self, budget: int = EXHAUSTIVE_LIMIT) -> None:
        self.budget = budget

    def run(self, request: AgentRequest) -> AgentResult:
        solution = request.workspace / "solution"
        space = read_tunables(solution)
        if not space:
            return AgentResult(status=AgentStatus.exhausted, final_message="no change: no tunables declared")
        config = next_config(space, request.history, self.budget)
        if config is None:
            return AgentResult(status=AgentStatus.exhausted, final_message="no change: search finished")
        instantiate(solution, config)
        label = ", ".join(f"{k}={v}" for k, v in config.items())
        text = f"tuner: configuration {label}"
        return AgentResult(
            status=AgentStatus.completed,
            final_message=text,
            claim=Claim(text=text, hypothesis=f"tunables {label}", goal=None),
        )
