"""tune: for each accepted candidate that declares tunables, let the tuner measure configurations; then offer routing.

The tuner sees the measured history (the candidate's own default configuration first) and
proposes one configuration per round; each configuration is verified and gated like any round.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kloop.errors import BadInput
from kloop.loop.config import Stage
from kloop.loop.record import CandidateRecord
from kloop.loop.rounds import RoundInput
from kloop.task.schema import TunableValue
from kloop.task.tunables import first_values, space_of
from kloop.verify.result import VerifyResult, VerifyStatus

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
        self.offer_route()

    def offer_route(self) -> None:
        """Shape routing, offered once tuning is done: a route is built only where a regime's gain is significant."""
        from kloop.route.run import route_run

        ctx = self.ctx
        log_dir = ctx.paths.artifacts / "route"

        def judge(task: object, solution_dir: Path) -> VerifyResult:
            return ctx.services.verifier.verify(ctx.paths.sealed, solution_dir, ctx.lineage.sealed(), log_dir)

        ctx.services.progress.update(stage="tune", step="route")
        try:
            report = route_run(ctx.paths.root, judge=judge)
        except (BadInput, ValueError) as exc:
            ctx.lineage.set_meta("route", {"admitted": False, "reason": f"not offered: {exc}"[:300]})
            return
        ctx.lineage.set_meta("route", {"admitted": report.admitted, "status": report.status,
                                       "speedup_geomean": report.speedup_geomean, "reason": report.reason[:300]})

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
