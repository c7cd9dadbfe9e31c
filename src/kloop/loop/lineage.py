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
from typing import Any

from pydantic import BaseModel, Field

from kloop.migrations import Ledger, Migration, applied, migrate

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

_JSON_FIELDS = ("config", "changed_paths", "verify_summary", "workload_speedups", "findings", "reasons")


class CandidateRecord(BaseModel):
    """One lineage row: a round's candidate, what was claimed and measured, and the gate's word."""

    round: int = Field(description="Round number (0 = the baseline).")
    candidate: str = Field(description="Candidate id (`baseline`, `r001`, ...).")
    parent: str | None = Field(default=None, description="The candidate this one was built from.")
    stage: str = Field(description="research, iterate or tune.")
    commit_sha: str | None = Field(default=None, description="Workspace commit holding the attempt.")
    agent_status: str = Field(description="How the writer's turn ended.")
    claim: str = Field(default="", description="The writer's claim.")
    hypothesis: str = Field(default="", description="The mechanism the writer bet on.")
    prediction: float | None = Field(default=None, description="Predicted speedup.")
    goal: str | None = Field(default=None, description="Declared non-speed goal, if any.")
    config: dict[str, Any] | None = Field(default=None, description="Tuner configuration, if any.")
    changed_paths: list[str] = Field(default_factory=list, description="Paths the writer changed.")
    verify_status: str | None = Field(default=None, description="Verifier status, None if not verified.")
    verify_summary: dict[str, Any] | None = Field(default=None, description="Verifier summary block.")
    speedup_geomean: float | None = Field(default=None, description="Measured geomean speedup.")
    speedup_lo: float | None = Field(default=None, description="Lower end of its confidence interval.")
    speedup_hi: float | None = Field(default=None, description="Upper end of its confidence interval.")
    workload_speedups: dict[str, float | None] = Field(default_factory=dict, description="uuid -> speedup.")
    review_decision: str | None = Field(default=None, description="accept or reject, None if not reviewed.")
    review_progress: str | None = Field(default=None, description="advanced, stalled or regressed.")
    findings: list[dict[str, str]] = Field(default_factory=list, description="Reviewer findings.")
    accepted: bool = Field(description="Did the gate accept the candidate?")
    reasons: list[str] = Field(default_factory=list, description="One per failed gate condition.")
    cost_usd: float | None = Field(default=None, description="Agent cost of the round (writer and reviewer), when known.")
    tokens: int | None = Field(default=None, description="Agent tokens of the round (writer and reviewer), when known.")
    review_tokens: int | None = Field(default=None, description="Of `tokens`, the reviewer's.")
    review_cost_usd: float | None = Field(default=None, description="Of `cost_usd`, the reviewer's.")
    started_at: float | None = Field(default=None, description="Unix time the round began.")
    finished_at: float | None = Field(default=None, description="Unix time the row was written.")
    branch: str | None = Field(default=None, description="Team branch (b1, b2, ...); None in a single run.")


class Lineage:
    """The run's lineage database."""

    def __init__(self, path: Path) -> None:
        self.path = path
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
