"""The stages of a run as a table: a stage name -> the class that plays it.

    research -> iterate -> tune

Each stage is one small module with a class taking the `StageHost` (the campaign) and a
`run()` that returns when the stage is over or raises a stop (`kloop.loop.stopping`). The
campaign walks `config.stages` and looks each one up here; add a stage by adding a row.
"""

from __future__ import annotations

from typing import Protocol

from kloop.loop.config import Stage
from kloop.loop.context import RunContext
from kloop.loop.record import CandidateRecord
from kloop.loop.rounds import RoundRunner


class StageHost(Protocol):
    """What a stage may ask of the campaign running it."""

    ctx: RunContext
    runner: RoundRunner

    def check_budgets(self) -> None:
        """Raise the stop that applies (signal, rounds, wall time, cost), else return."""

    def after_round(self, record: CandidateRecord) -> None:
        """Save, then profile and check the target and speed of light for a new best."""


class StageRun(Protocol):
    def __init__(self, host: StageHost) -> None: ...

    def run(self) -> None: ...


def _table() -> dict[Stage, type[StageRun]]:
    from kloop.loop.stages.iterate import Iterate
    from kloop.loop.stages.research import Research
    from kloop.loop.stages.tune import Tune

    return {Stage.research: Research, Stage.iterate: Iterate, Stage.tune: Tune}


STAGES: dict[Stage, type[StageRun]] = _table()

__all__ = ["STAGES", "StageHost", "StageRun"]
