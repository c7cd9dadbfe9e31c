"""One migration runner (`kloop.migrations`) for the lineage and the wiki; old databases still open."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from kloop.errors import BadInput
from kloop.loop.lineage import LEDGER, MIGRATIONS, Lineage
from kloop.migrations import Ledger, applied, migrate


def _old_lineage(path: Path) -> None:
    """A lineage.sqlite exactly as the pre-runner Lineage wrote it (its own ledger DDL, one row)."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT, applied_at REAL)")
    for statement in (s for s in str(MIGRATIONS[0][1]).split(";") if s.strip()):
        db.execute(statement)
    db.execute("INSERT INTO schema_migrations VALUES (1, 'candidates, meta, sealed files', 1764600000.0)")
    db.execute("INSERT INTO meta VALUES ('status', '\"running\"')")
    db.close()


def test_a_lineage_made_before_the_shared_runner_still_opens(tmp_path: Path) -> None:
    path = tmp_path / "lineage.sqlite"
    _old_lineage(path)
    lineage = Lineage(path)
    # it opens, keeps its rows, and gains the later migrations (2: team branches) on the way
    assert lineage.migrations() == list(range(1, len(MIGRATIONS) + 1)) and lineage.meta("status") == "running"
    lineage.close()


def test_a_newer_lineage_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "lineage.sqlite"
    Lineage(path).close()
    future = len(MIGRATIONS) + 1  # one past what this kloop ships (was a literal 2 before migration 2 landed)
    db = sqlite3.connect(path)
    db.execute(f"INSERT INTO {LEDGER.table} VALUES ({future}, 'from the future', 0)")
    db.commit()
    db.close()
    with pytest.raises(BadInput, match=f"schema {future} is newer than this kloop knows"):
        Lineage(path)


def test_a_failing_migration_leaves_no_trace(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "x.sqlite", isolation_level=None)
    ledger = Ledger("my_migrations")

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE half (x INTEGER)")
        raise RuntimeError("disk full")

    steps = [("first", "CREATE TABLE a (x INTEGER);\nINSERT INTO a VALUES (1);"), ("second", broken)]
    with pytest.raises(RuntimeError, match="disk full"):
        migrate(db, steps, ledger, "x.sqlite")
    assert applied(db, ledger) == [1]
    assert db.execute("SELECT name FROM sqlite_master WHERE name = 'half'").fetchone() is None
    assert migrate(db, steps[:1] + [("second", "CREATE TABLE b (y TEXT);")], ledger, "x.sqlite") == [2]
    assert migrate(db, steps[:1] + [("second", "CREATE TABLE b (y TEXT);")], ledger, "x.sqlite") == []


def test_the_wiki_uses_the_same_runner() -> None:
    import kloop.wiki.migrations as wiki

    assert wiki.run_migrations is migrate and wiki.LEDGER.table == "wiki_migrations"
