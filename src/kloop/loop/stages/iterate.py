"""iterate: writer rounds from the current head until a stop (budget, target, stall).

After `replan_after` rounds without an accepted candidate the writer is asked to replan;
after `stall_after` more the run stops as stalled, naming the hypotheses it tested.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kloop.loop.config import Stage
from kloop.loop.context import RunContext
from kloop.loop.record import CandidateRecord
from kloop.loop.rounds import RoundInput
from kloop.loop.stopping import Stalled, stagnation
from kloop.loop.summary import tested_hypotheses

if TYPE_CHECKING:
    from kloop.loop.stages import StageHost


class Iterate:
    """The iterate stage: one writer round after another."""

    def __init__(self, host: StageHost) -> None:
        self.host, self.ctx = host, host.ctx

    def run(self) -> None:
        ctx = self.ctx
        while True:
            self.host.check_budgets()
            rounds = ctx.lineage.rounds()
            iterate = [r for r in rounds if r.stage == Stage.iterate.value]
            since = rounds_since_acceptance(iterate)
            mark = stagnation(since, ctx.config.replan_after, ctx.config.stall_after)
            if mark == "stalled":
                best = ctx.best()
                raise Stalled(f"{since} rounds without an accepted candidate (replan after "
                              f"{ctx.config.replan_after}); best stays {best.candidate} at "
                              f"{best.speedup_geomean or 1.0:.2f}x; tested: {tested_hypotheses(iterate[-since:])}")
            last = rounds[-1] if rounds else None
            record = self.host.runner.run(RoundInput(
                stage=Stage.iterate.value, agent=ctx.services.writer, parent=ctx.head(), turn=len(iterate),
                best=ctx.best(), last=last, replan=mark == "replan",
                full_review=(len(rounds) + 1) % ctx.config.full_review_every == 0,
                profile_digest=self._digest_of(ctx.best()), wiki_hits=self._wiki_hits(last),
            ))
            if record is None:
                return
            self.host.after_round(record)

    def _digest_of(self, record: CandidateRecord) -> str | None:
        return digest_of(self.ctx, record)

    def _wiki_hits(self, last: CandidateRecord | None) -> list[str]:
        return wiki_hits(self.ctx, last)


def digest_of(ctx: RunContext, record: CandidateRecord) -> str | None:
    """The profile digest of `record` (the baseline's from research), when one was written."""
    paths = ctx.paths
    art = paths.artifacts / "research" if record.round == 0 else paths.round_dir(record.round)
    path = art / "profile-digest.md"
    return path.read_text(encoding="utf-8") if path.is_file() else None


def wiki_hits(ctx: RunContext, last: CandidateRecord | None) -> list[str]:
    """Wiki entries for the task and what the last round ran into (fenced as untrusted in the prompt)."""
    words = [ctx.task.name, ctx.task.description[:120]]
    if last is not None:
        words += [f.get("text", "")[:80] for f in last.findings[:2]] + last.reasons[:1]
    return ctx.services.wiki.search(" ".join(w for w in words if w)[:300], 3)


def rounds_since_acceptance(rounds: list[CandidateRecord]) -> int:
    count = 0
    for record in reversed(rounds):
        if record.accepted:
            break
        count += 1
    return count
