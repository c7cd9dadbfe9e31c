"""SQLite schemas as append-only numbered migrations, one runner for every kloop database.

A migration is an SQL script or a function of the connection; its number is its place in the
list (from 1). Each applied migration is recorded in the database's ledger table, inside the
same transaction as the migration itself, so a database says exactly which schema it has and a
crash leaves it at a migration boundary (the habit of simonw/llm). Never edit or reorder a
shipped migration: add a new one at the end. A database newer than this kloop is refused.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kloop.errors import BadInput

Migration = str | Callable[[sqlite3.Connection], None]

__all__ = ["Ledger", "Migration", "applied", "migrate", "run_script"]


@dataclass(frozen=True)
class Ledger:
    """Where a database records its migrations (names as shipped: existing databases keep opening)."""

    table: str
    number_column: str = "number"
    stamp: Callable[[], object] = time.time
    stamp_type: str = "REAL"

    def create(self, db: sqlite3.Connection) -> None:
        db.execute(f"CREATE TABLE IF NOT EXISTS {self.table} ({self.number_column} INTEGER PRIMARY KEY, "
                   f"name TEXT NOT NULL, applied_at {self.stamp_type} NOT NULL)")


def run_script(db: sqlite3.Connection, script: str) -> None:
    """Run statements one by one: `executescript` would commit the migration's open transaction."""
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            db.execute(statement)
            statement = ""
    if statement.strip():
        raise ValueError(f"incomplete SQL statement in a migration: {statement.strip()[:60]}")


def applied(db: sqlite3.Connection, ledger: Ledger) -> list[int]:
    """Numbers of the migrations this database has."""
    ledger.create(db)
    return [row[0] for row in db.execute(f"SELECT {ledger.number_column} FROM {ledger.table} ORDER BY 1")]


def migrate(db: sqlite3.Connection, migrations: list[tuple[str, Migration]], ledger: Ledger,
            where: str | Path) -> list[int]:
    """Apply every migration the database lacks, each in its own transaction; return those applied.

    `db` must be in autocommit mode (`isolation_level=None`): the runner owns the transactions.
    """
    done = applied(db, ledger)
    if done and max(done) > len(migrations):
        raise BadInput(where, f"database schema {max(done)} is newer than this kloop knows ({len(migrations)})")
    ran = []
    for number, (name, step) in enumerate(migrations, start=1):
        if number in done:
            continue
        db.execute("BEGIN IMMEDIATE")
        try:
            if db.execute(f"SELECT 1 FROM {ledger.table} WHERE {ledger.number_column} = ?", (number,)).fetchone():
                db.execute("ROLLBACK")  # another process migrated while we waited for the lock
                continue
            run_script(db, step) if isinstance(step, str) else step(db)
            db.execute(f"INSERT INTO {ledger.table}({ledger.number_column}, name, applied_at) VALUES (?, ?, ?)",
                       (number, name, ledger.stamp()))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        ran.append(number)
    return ran
