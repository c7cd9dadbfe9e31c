"""A team's branches as the lineage and the run directory see them (`kloop run --team N`).

Every branch writes to the run's one `lineage.sqlite`: its rows carry its name, and round
numbers stay unique across the team because a branch claims each number in the database
(`round_claims`) before it starts the round. `BranchLineage` is one branch's view of that
shared database: its own rounds, head and spending, but the *global* best, so a branch's
candidate is gated against the best of the whole team. A stalled branch rebases: its head
becomes the global best, recorded in the lineage so a resumed run sees the same head.

Layout, next to the single-run layout (which does not change):

    RUN/branches/bK/          git worktree of RUN/workspace (the branch's writer acts here)
    RUN/branches/sealed       link to ../sealed, so each worktree's `sealed` link resolves
    RUN/.kloop/branches/bK/   the branch's write-ahead round state
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from kloop.loop.lineage import Lineage
from kloop.loop.state import RunPaths

if TYPE_CHECKING:
    from kloop.loop.record import CandidateRecord

TEAM_KEY = "team"
"""Lineage meta key: the branch names of a team run (absent in a single run)."""


def branch_names(team: int) -> list[str]:
    """b1 .. bN: short, sortable, and safe as git branch and folder names."""
    return [f"b{i}" for i in range(1, team + 1)]


def state_key(branch: str) -> str:
    return f"branch:{branch}"


def rebases_key(branch: str) -> str:
    return f"rebases:{branch}"


class BranchPaths(RunPaths):
    """The run's layout seen from one branch: its worktree and its own round state.

    `git_pristine` points nowhere: a worktree's hooks and config live in the main repository
    (RUN/workspace/.git), outside the branch's worktree, and kloop's git calls never run hooks.
    """

    def __init__(self, run_dir: Path, branch: str) -> None:
        super().__init__(run_dir)
        self.branch = branch
        self.workspace = run_dir / "branches" / branch
        self.branch_private = self.private / "branches" / branch
        self.round_state = self.branch_private / "round.json"
        self.git_pristine = self.branch_private / "no-git-pristine"


class BranchLineage(Lineage):
    """One branch's view of the shared lineage (its own connection: WAL, 30 s busy timeout)."""

    def __init__(self, path: Path, branch: str) -> None:
        super().__init__(path)
        self.branch = branch

    @classmethod
    def view(cls, lineage: Lineage, branch: str) -> BranchLineage:
        """A read view over an open connection (status and summaries): no second connection."""
        view = cls.__new__(cls)
        view.path, view.db, view.branch, view.plain = lineage.path, lineage.db, branch, lineage.plain
        return view

    def add(self, record: CandidateRecord) -> None:
        super().add(record.model_copy(update={"branch": self.branch}))

    def next_round(self) -> int:
        """This branch's open claim (a round it started and never recorded), else a new number.

        The claim is taken in one IMMEDIATE transaction, so two branches never get one number;
        reusing the open claim keeps a repeated round (after a crash) at its number.
        """
        self.db.execute("BEGIN IMMEDIATE")
        try:
            row = self.db.execute(
                "SELECT MIN(c.round) FROM round_claims c LEFT JOIN candidates r ON r.round = c.round "
                "WHERE c.branch = ? AND r.round IS NULL", (self.branch,)).fetchone()
            if row[0] is None:
                top = self.db.execute("SELECT MAX(n) FROM (SELECT MAX(round) AS n FROM candidates "
                                      "UNION ALL SELECT MAX(round) FROM round_claims)").fetchone()[0]
                number = (top if top is not None else -1) + 1
                self.db.execute("INSERT INTO round_claims VALUES (?, ?)", (number, self.branch))
            else:
                number = int(row[0])
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return number

    def release_claims(self) -> None:
        """Give back an open claim (the writer had nothing more), so no number waits on this branch."""
        self.db.execute("DELETE FROM round_claims WHERE branch = ? AND round NOT IN (SELECT round FROM candidates)",
                        (self.branch,))

    # A branch asks these several times a round. They select in SQL and parse only the rows they
    # return: parsing every row of the team's lineage costs about 0.5 ms a row (2.7 s a round at
    # 5,000 rows, measured by bench/pool_scaling.py --bottlenecks), and a team's lineage grows
    # with every branch.
    def _select(self, where: str, params: tuple[Any, ...] = (), tail: str = "ORDER BY round") -> list[CandidateRecord]:
        return [self._record(r) for r in self.db.execute(f"SELECT * FROM candidates WHERE {where} {tail}", params)]

    def rounds(self) -> list[CandidateRecord]:
        """This branch's writer rounds: its budgets, stall count and replay turns count these."""
        return self._select("round > 0 AND branch = ?", (self.branch,))

    def spent_usd(self) -> float:
        row = self.db.execute("SELECT SUM(cost_usd) FROM candidates WHERE round > 0 AND branch = ?",
                              (self.branch,)).fetchone()
        return float(row[0] or 0.0)

    def spent_tokens(self) -> int:
        """This branch's agent tokens (its rounds' writers and reviews): what its token share is held to."""
        row = self.db.execute("SELECT SUM(tokens) FROM candidates WHERE round > 0 AND branch = ?",
                              (self.branch,)).fetchone()
        return int(row[0] or 0)

    def best(self) -> CandidateRecord | None:
        """The global best (any branch): `Lineage.best`'s rule, highest speedup then earliest round."""
        rows = self._select("accepted = 1", (), "ORDER BY COALESCE(speedup_geomean, 0.0) DESC, round ASC LIMIT 1")
        return rows[0] if rows else None

    def _own_accepted(self, order: str) -> CandidateRecord | None:
        rows = self._select("round > 0 AND branch = ? AND accepted = 1", (self.branch,), f"ORDER BY {order} LIMIT 1")
        return rows[0] if rows else None

    def rebases(self) -> list[dict[str, Any]]:
        """[{"after_round": N, "onto": candidate, "onto_round": M}], oldest first."""
        return list(self.meta(rebases_key(self.branch), []))

    def rebase_onto(self, record: CandidateRecord) -> None:
        """Make `record` (another branch's best) this branch's head from now on."""
        marks = self.rebases() + [{"after_round": self.last_claimed(), "onto": record.candidate,
                                   "onto_round": record.round}]
        self.set_meta(rebases_key(self.branch), marks)

    def last_claimed(self) -> int:
        """The highest round number taken so far by any branch: later rounds of this one come after it."""
        top = self.db.execute("SELECT MAX(n) FROM (SELECT MAX(round) AS n FROM candidates "
                              "UNION ALL SELECT MAX(round) FROM round_claims)").fetchone()[0]
        return int(top) if top is not None else 0

    def head(self) -> CandidateRecord | None:
        """The parent of this branch's next round: its last accepted candidate, or what it rebased onto."""
        last = self._own_accepted("round DESC")
        marks = self.rebases()
        if marks and (last is None or last.round < marks[-1]["after_round"]):
            return self.get(int(marks[-1]["onto_round"]))
        return last or self.get(0)

    def own_best(self) -> CandidateRecord | None:
        """The fastest candidate this branch itself got accepted (None: none yet)."""
        return self._own_accepted("COALESCE(speedup_geomean, 0.0) DESC, round ASC")

    def marker(self) -> int:
        """The round after which this branch's stall count starts: its last acceptance or rebase."""
        row = self.db.execute("SELECT MAX(round) FROM candidates WHERE round > 0 AND branch = ? AND accepted = 1",
                              (self.branch,)).fetchone()
        marks = [int(m["after_round"]) for m in self.rebases()]
        return max([int(row[0] or 0)] + marks + [0])


def branch_report(lineage: Lineage, branch: str) -> dict[str, Any]:
    """One branch as status and summary.json show it: state, head, own best, rounds, rebases."""
    view = BranchLineage.view(lineage, branch)
    head, best = view.head(), view.own_best()
    rounds = view.rounds()
    state = lineage.meta(state_key(branch), {}) or {}
    return {
        "name": branch, "status": state.get("status", "running"), "reason": state.get("reason", ""),
        "head": head.candidate if head else None,
        "best": {"candidate": best.candidate, "round": best.round, "speedup_geomean": best.speedup_geomean}
        if best else None,
        "rounds": len(rounds), "accepted": sum(r.accepted for r in rounds), "rebases": view.rebases(),
    }


def team_of(lineage: Lineage) -> list[str]:
    """The branch names of a team run, [] for a single run."""
    return list(lineage.meta(TEAM_KEY, []) or [])
