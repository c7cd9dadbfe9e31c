"""`tuner`: searches the tunables a solution declares, no model involved.

A solution directory declares `"kloop": {"tunables": {"NAME": [values...]}}` in solution.json
and uses `${NAME}` in its sources. Each configuration is its own candidate: the tuner writes
the instantiated sources into `solution/` (tunables replaced by `"config"`), the loop verifies
it like any round. The search itself lives in `kloop.route.search` (exhaustive when the space
fits the tune budget, else a balanced design then model-guided steps), shared with `kloop tune`.
"""

from __future__ import annotations

from typing import Any

from kloop.agents.base import AgentRequest, AgentResult, AgentStatus, Claim
from kloop.task.tunables import first_values, instantiate_dir, read_space

EXHAUSTIVE_LIMIT = 16
Config = dict[str, Any]


def default_config(space: dict[str, list[Any]]) -> Config:
    return first_values(space)


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
        space = read_space(solution)
        if not space:
            return AgentResult(status=AgentStatus.exhausted, final_message="no change: no tunables declared")
        config = next_config(space, request.history, self.budget)
        if config is None:
            return AgentResult(status=AgentStatus.exhausted, final_message="no change: search finished")
        instantiate_dir(solution, config)
        label = ", ".join(f"{k}={v}" for k, v in config.items())
        text = f"tuner: configuration {label}"
        return AgentResult(
            status=AgentStatus.completed,
            final_message=text,
            claim=Claim(text=text, hypothesis=f"tunables {label}", goal=None),
        )
