"""tune: for each accepted candidate that declares tunables, let the tuner measure configurations.

The tuner sees the measured history (the candidate's own default configuration first) and
proposes one configuration per round; each configuration is verified and gated like any round.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from kloop.errors import BadInput
from kloop.loop.config import Stage
from kloop.loop.lineage import CandidateRecord
from kloop.loop.rounds import RoundInput
from kloop.task.schema import TunableValue
from kloop.task.tunables import first_values, space_of
from kloop.verify.result import VerifyStatus

if TYPE_CHECKING:
    from kloop.loop.stages import StageHost


class Tune:
    """The tune stage: tuner rounds per tunable candidate until its search is over."""

    def __init__(self, host: StageHost) -> None:
        self.host, self.ctx = host, host.ctx

    def run(self) -> None:
        lineage = self.ctx.lineage
        parents = [r for r in lineage.accepted() if r.stage != Stage.tune.value and self.space(r)]
        for parent in parents:
            while True:
                self.host.check_budgets()
                record = self.host.runner.run(RoundInput(
                    stage=Stage.tune.value, agent=self.ctx.services.tuner, parent=parent,
                    turn=len(self._tried(parent)), best=self.ctx.best(),
                    last=lineage.rounds()[-1] if lineage.rounds() else None, history=self.history(parent),
                ))
                if record is None:
                    break
                self.host.after_round(record)

    def _tried(self, parent: CandidateRecord) -> list[CandidateRecord]:
        return [r for r in self.ctx.lineage.rounds() if r.stage == Stage.tune.value and r.parent == parent.candidate]

    def history(self, parent: CandidateRecord) -> list[dict[str, Any]]:
        """Measured configurations of `parent`: its default (first values) first, then each tuner round."""
        history = [{"config": first_values(self.space(parent)), "speedup": parent.speedup_geomean, "passed": True}]
        history += [{"config": r.config, "speedup": r.speedup_geomean, "passed": r.verify_status == VerifyStatus.PASSED.value}
                    for r in self._tried(parent) if r.config]
        return history

    def space(self, record: CandidateRecord) -> dict[str, list[TunableValue]]:
        """The tunables declared by the candidate's committed solution.json ({} when none or unreadable)."""
        text = self.ctx.workspace.git("show", f"{record.commit_sha}:solution/solution.json", check=False)
        try:
            return space_of(json.loads(text), f"{record.candidate}: solution/solution.json")
        except (json.JSONDecodeError, BadInput):
            return {}
