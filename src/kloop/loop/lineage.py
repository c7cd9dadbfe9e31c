"""lineage.sqlite: every candidate of a run, accepted or not, with its evidence and reasons.

WAL mode; the schema only grows through append-only numbered migrations recorded in
`schema_migrations`. A round is *done* once its row is written: that insert is the commit
point resume relies on.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from kloop.migrations import Ledger, Migration, applied, migrate

if TYPE_CHECKING:
    from kloop.loop.record import CandidateRecord

# the ledger as shipped: run directories made before the shared runner keep opening
LEDGER = Ledger("schema_migrations", number_column="version")

MIGRATIONS: list[tuple[str, Migration]] = [
    ("candidates, meta, sealed files", """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE sealed_files (path TEXT PRIMARY KEY, sha256 TEXT NOT NULL);
        CREATE TABLE candidates (
            round INTEGER PRIMARY KEY,
            candidate TEXT NOT NULL UNIQUE,
            parent TEXT,
            stage TEXT NOT NULL,
            commit_sha TEXT,
            agent_status TEXT NOT NULL,
            claim TEXT NOT NULL DEFAULT '',
            hypothesis TEXT NOT NULL DEFAULT '',
            prediction REAL,
            goal TEXT,
            config TEXT,
            changed_paths TEXT NOT NULL DEFAULT '[]',
            verify_status TEXT,
            verify_summary TEXT,
            speedup_geomean REAL,
            speedup_lo REAL,
            speedup_hi REAL,
            workload_speedups TEXT NOT NULL DEFAULT '{}',
            review_decision TEXT,
            review_progress TEXT,
            findings TEXT NOT NULL DEFAULT '[]',
            accepted INTEGER NOT NULL,
            reasons TEXT NOT NULL DEFAULT '[]',
            cost_usd REAL,
            started_at REAL,
            finished_at REAL
        );
    """),
    ("team branches: each row's branch, round numbers claimed by branches", """
        ALTER TABLE candidates ADD COLUMN branch TEXT;
        CREATE TABLE round_claims (round INTEGER PRIMARY KEY, branch TEXT NOT NULL);
    """),
    ("agent spending: the round's tokens, and the reviewer's share of its tokens and cost", """
        ALTER TABLE candidates ADD COLUMN tokens INTEGER;
        ALTER TABLE candidates ADD COLUMN review_tokens INTEGER;
        ALTER TABLE candidates ADD COLUMN review_cost_usd REAL;
    """),
]

_SPENT_SQL = ("SELECT branch, SUM(COALESCE(cost_usd, 0) - COALESCE(review_cost_usd, 0)), "
              "SUM(COALESCE(tokens, 0) - COALESCE(review_tokens, 0)), SUM(COALESCE(review_cost_usd, 0)), "
              "SUM(COALESCE(review_tokens, 0)) FROM candidates WHERE round > 0 GROUP BY branch")


def _spent(usd: Any, tokens: Any) -> dict[str, Any]:
    """Dollars and tokens as `summary.Spent` holds them (None counts 0)."""
    return {"usd": round(float(usd or 0.0), 6), "tokens": int(tokens or 0)}


def _sum(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"usd": round(sum(p["usd"] for p in parts), 6), "tokens": sum(p["tokens"] for p in parts)}


_JSON_FIELDS = ("config", "changed_paths", "verify_summary", "workload_speedups", "findings", "reasons")


class Lineage:
    """The run's lineage database.

    Rows come back as `CandidateRecord`s (validated, what the loop builds on); with `plain=True` as
    namespaces of the same fields, for readers that only show them (`kloop status`), which then never
    import pydantic (0.2-0.3 s of a 2-core machine's start-up)."""

    def __init__(self, path: Path, *, plain: bool = False) -> None:
        self.path = path
        self.plain = plain
        # a team's coordinator writes summaries from its branch threads, one at a time under its lock
        self.db = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        migrate(self.db, MIGRATIONS, LEDGER, path)

    def close(self) -> None:
        self.db.close()

    def migrations(self) -> list[int]:
        return applied(self.db, LEDGER)

    # meta ---------------------------------------------------------------------------------
    def set_meta(self, key: str, value: Any) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    def meta(self, key: str, default: Any = None) -> Any:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def set_sealed(self, hashes: dict[str, str]) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        self.db.execute("DELETE FROM sealed_files")
        self.db.executemany("INSERT INTO sealed_files VALUES (?, ?)", sorted(hashes.items()))
        self.db.execute("COMMIT")

    def sealed(self) -> dict[str, str]:
        return {row[0]: row[1] for row in self.db.execute("SELECT path, sha256 FROM sealed_files")}

    # candidates ---------------------------------------------------------------------------
    def add(self, record: CandidateRecord) -> None:
        data = record.model_dump()
        for key in _JSON_FIELDS:
            data[key] = json.dumps(data[key])
        data["accepted"] = int(record.accepted)
        data["finished_at"] = data["finished_at"] or time.time()
        columns = ", ".join(data)
        marks = ", ".join(f":{k}" for k in data)
        self.db.execute(f"INSERT INTO candidates ({columns}) VALUES ({marks})", data)

    def _record(self, row: sqlite3.Row) -> CandidateRecord:
        data = dict(row)
        for key in _JSON_FIELDS:
            data[key] = json.loads(data[key]) if data[key] is not None else None
        data["changed_paths"] = data["changed_paths"] or []
        data["workload_speedups"] = data["workload_speedups"] or {}
        data["findings"] = data["findings"] or []
        data["reasons"] = data["reasons"] or []
        if self.plain:
            data["accepted"] = bool(data["accepted"])
            return SimpleNamespace(**data)  # type: ignore[return-value]  # the same fields, read only
        from kloop.loop.record import CandidateRecord

        return CandidateRecord.model_validate(data)

    def get(self, round_number: int) -> CandidateRecord | None:
        row = self.db.execute("SELECT * FROM candidates WHERE round = ?", (round_number,)).fetchone()
        return self._record(row) if row else None

    def all(self) -> list[CandidateRecord]:
        return [self._record(r) for r in self.db.execute("SELECT * FROM candidates ORDER BY round")]

    def spent_usd(self) -> float:
        """Agent cost so far, summed from the rounds themselves (nothing to lose in a crash), plus the
        research stage's planning call (meta `research_cost_usd`)."""
        return sum(record.cost_usd or 0.0 for record in self.all()) + float(self.meta("research_cost_usd") or 0.0)

    def spending(self, team: list[str] | None = None) -> dict[str, Any]:
        """What the run's agents spent, in `summary.Spending`'s shape: the total and the writer's, reviewer's and
        research's parts, and with a team each branch's (total, writer, reviewer). One grouped query and two meta
        keys. A row from before the reviewer's share was kept counts wholly as the writer's."""
        per: dict[str | None, tuple[dict[str, Any], dict[str, Any]]] = {}
        for branch, w_usd, w_tok, r_usd, r_tok in self.db.execute(_SPENT_SQL):
            per[branch] = (_spent(w_usd, w_tok), _spent(r_usd, r_tok))
        writer, reviewer = _sum(*(w for w, _ in per.values())), _sum(*(r for _, r in per.values()))
        research = _spent(self.meta("research_cost_usd"), self.meta("research_tokens"))
        out = {**_sum(writer, reviewer, research), "writer": writer, "reviewer": reviewer, "research": research,
               "branches": None}  # fmt: skip
        if team:
            out["branches"] = {}
            for name in team:
                w, r = per.get(name) or (_spent(0.0, 0), _spent(0.0, 0))
                out["branches"][name] = {**_sum(w, r), "writer": w, "reviewer": r}
        return out

    def spent_tokens(self) -> int:
        """Agent tokens so far, as the calls' gateways counted them: the rounds' rows plus the research
        stage's planning call (meta `research_tokens`). From the lineage, so `--resume` keeps the count."""
        row = self.db.execute("SELECT SUM(tokens) FROM candidates").fetchone()
        return int(row[0] or 0) + int(self.meta("research_tokens") or 0)

    def rounds(self) -> list[CandidateRecord]:
        """Writer rounds only (the baseline row excluded)."""
        return [r for r in self.all() if r.round > 0]

    def accepted(self) -> list[CandidateRecord]:
        return [r for r in self.all() if r.accepted]

    def head(self) -> CandidateRecord | None:
        """The last accepted candidate: the parent of the next iterate round."""
        accepted = self.accepted()
        return accepted[-1] if accepted else None

    def best(self) -> CandidateRecord | None:
        """The accepted candidate with the highest measured speedup (the baseline counts as 1.0)."""
        accepted = self.accepted()
        if not accepted:
            return None
        return max(accepted, key=lambda r: (r.speedup_geomean or 0.0, -r.round))

    def next_round(self) -> int:
        """The number of the next round: one past the last row (a team branch claims its numbers)."""
        return self.last_round() + 1

    def last_round(self) -> int:
        row = self.db.execute("SELECT MAX(round) FROM candidates").fetchone()
        return int(row[0]) if row and row[0] is not None else -1
