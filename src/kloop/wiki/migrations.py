"""KernelWiki's SQLite schema as append-only numbered migrations (run by `kloop.migrations`).

Never edit or reorder a shipped migration: add a new one at the end. Each applied migration is
recorded in `wiki_migrations`, so a database says exactly which schema it has.
"""

from __future__ import annotations

import sqlite3

from kloop.migrations import Ledger, Migration, run_script
from kloop.migrations import migrate as run_migrations
from kloop.wiki.schema import utc_now


def m001_entries(db: sqlite3.Connection) -> None:
    """Entries, their filter labels, and an external-content FTS5 index kept by triggers."""
    run_script(
        db,
        """
        CREATE TABLE entries (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL,
            title TEXT NOT NULL,
            labels TEXT NOT NULL,      -- searchable tags, techniques, arch, findings
            body TEXT NOT NULL,
            excerpt TEXT NOT NULL,     -- changed paths and the kernel diff excerpt
            vendor TEXT NOT NULL,
            confidence TEXT NOT NULL,
            repo TEXT,
            commit_sha TEXT,
            pr INTEGER,
            date TEXT,
            captured_at TEXT NOT NULL,
            label_list TEXT NOT NULL,  -- JSON list of filter labels: tag:x tech:x arch:x finding:x
            source_json TEXT NOT NULL,
            entry_json TEXT NOT NULL
        );
        CREATE INDEX entries_repo ON entries(repo, date);
        CREATE TABLE entry_labels (
            label TEXT NOT NULL,
            entry_rowid INTEGER NOT NULL,
            PRIMARY KEY (label, entry_rowid)
        ) WITHOUT ROWID;
        CREATE VIRTUAL TABLE entries_fts USING fts5(
            title, labels, body, excerpt,
            content='entries', content_rowid='rowid',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER entries_ai AFTER INSERT ON entries BEGIN
            INSERT INTO entries_fts(rowid, title, labels, body, excerpt)
                VALUES (new.rowid, new.title, new.labels, new.body, new.excerpt);
            INSERT OR IGNORE INTO entry_labels(label, entry_rowid)
                SELECT value, new.rowid FROM json_each(new.label_list);
        END;
        CREATE TRIGGER entries_ad AFTER DELETE ON entries BEGIN
            INSERT INTO entries_fts(entries_fts, rowid, title, labels, body, excerpt)
                VALUES ('delete', old.rowid, old.title, old.labels, old.body, old.excerpt);
            DELETE FROM entry_labels WHERE entry_rowid = old.rowid;
        END;
        CREATE TRIGGER entries_au AFTER UPDATE ON entries BEGIN
            INSERT INTO entries_fts(entries_fts, rowid, title, labels, body, excerpt)
                VALUES ('delete', old.rowid, old.title, old.labels, old.body, old.excerpt);
            INSERT INTO entries_fts(rowid, title, labels, body, excerpt)
                VALUES (new.rowid, new.title, new.labels, new.body, new.excerpt);
            DELETE FROM entry_labels WHERE entry_rowid = old.rowid;
            INSERT OR IGNORE INTO entry_labels(label, entry_rowid)
                SELECT value, new.rowid FROM json_each(new.label_list);
        END;
        """
    )


def m002_ingest_state(db: sqlite3.Connection) -> None:
    """Where each repository's last ingest stopped, for incremental re-runs."""
    db.execute(
        """
        CREATE TABLE ingest_state (
            repo TEXT PRIMARY KEY,
            path TEXT NOT NULL,
            last_commit TEXT NOT NULL,
            commits_seen INTEGER NOT NULL,
            updated_at TEXT NOT NULL
        )
        """
    )


def m003_term_stats(db: sqlite3.Connection) -> None:
    """A read-only view of per-term document counts, used to drop near-universal query terms."""
    db.execute("CREATE VIRTUAL TABLE entries_vocab USING fts5vocab(entries_fts, 'row')")


def m004_labels_in_row(db: sqlite3.Connection) -> None:
    """Filter on `entries.label_list` directly: the per-label table's trigger halved ingest speed."""
    run_script(
        db,
        """
        DROP TRIGGER entries_ai;
        DROP TRIGGER entries_ad;
        DROP TRIGGER entries_au;
        DROP TABLE entry_labels;
        CREATE TRIGGER entries_ai AFTER INSERT ON entries BEGIN
            INSERT INTO entries_fts(rowid, title, labels, body, excerpt)
                VALUES (new.rowid, new.title, new.labels, new.body, new.excerpt);
        END;
        CREATE TRIGGER entries_ad AFTER DELETE ON entries BEGIN
            INSERT INTO entries_fts(entries_fts, rowid, title, labels, body, excerpt)
                VALUES ('delete', old.rowid, old.title, old.labels, old.body, old.excerpt);
        END;
        CREATE TRIGGER entries_au AFTER UPDATE ON entries BEGIN
            INSERT INTO entries_fts(entries_fts, rowid, title, labels, body, excerpt)
                VALUES ('delete', old.rowid, old.title, old.labels, old.body, old.excerpt);
            INSERT INTO entries_fts(rowid, title, labels, body, excerpt)
                VALUES (new.rowid, new.title, new.labels, new.body, new.excerpt);
        END;
        """,
    )


def m005_entry_filters(db: sqlite3.Connection) -> None:
    """A narrow copy of the filter columns: reading them from the wide entries rows cost most of a search."""
    run_script(
        db,
        """
        CREATE TABLE entry_filters (
            rowid INTEGER PRIMARY KEY,
            vendor TEXT NOT NULL,
            kind TEXT NOT NULL,
            label_list TEXT NOT NULL
        );
        INSERT INTO entry_filters(rowid, vendor, kind, label_list) SELECT rowid, vendor, kind, label_list FROM entries;
        CREATE TRIGGER entries_filters_ai AFTER INSERT ON entries BEGIN
            INSERT INTO entry_filters(rowid, vendor, kind, label_list)
                VALUES (new.rowid, new.vendor, new.kind, new.label_list);
        END;
        CREATE TRIGGER entries_filters_ad AFTER DELETE ON entries BEGIN
            DELETE FROM entry_filters WHERE rowid = old.rowid;
        END;
        CREATE TRIGGER entries_filters_au AFTER UPDATE ON entries BEGIN
            UPDATE entry_filters SET vendor = new.vendor, kind = new.kind, label_list = new.label_list
                WHERE rowid = old.rowid;
        END;
        """,
    )


def m006_paths_column(db: sqlite3.Connection) -> None:
    """Changed paths, and the kernel files a commit created, get their own FTS columns.

    They are weighed apart from the diff excerpt; `added` carries the first-introduction signal.
    """
    run_script(
        db,
        """
        ALTER TABLE entries ADD COLUMN paths TEXT NOT NULL DEFAULT '';
        ALTER TABLE entries ADD COLUMN added TEXT NOT NULL DEFAULT '';
        UPDATE entries SET paths = coalesce(
            (SELECT group_concat(value, char(10)) FROM json_each(json_extract(source_json, '$.paths'))), '');
        DROP TRIGGER entries_ai;
        DROP TRIGGER entries_ad;
        DROP TRIGGER entries_au;
        DROP TABLE entries_vocab;
        DROP TABLE entries_fts;
        CREATE VIRTUAL TABLE entries_fts USING fts5(
            title, labels, body, paths, added, excerpt,
            content='entries', content_rowid='rowid',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE VIRTUAL TABLE entries_vocab USING fts5vocab(entries_fts, 'row');
        CREATE TRIGGER entries_ai AFTER INSERT ON entries BEGIN
            INSERT INTO entries_fts(rowid, title, labels, body, paths, added, excerpt)
                VALUES (new.rowid, new.title, new.labels, new.body, new.paths, new.added, new.excerpt);
        END;
        CREATE TRIGGER entries_ad AFTER DELETE ON entries BEGIN
            INSERT INTO entries_fts(entries_fts, rowid, title, labels, body, paths, added, excerpt)
                VALUES ('delete', old.rowid, old.title, old.labels, old.body, old.paths, old.added, old.excerpt);
        END;
        CREATE TRIGGER entries_au AFTER UPDATE ON entries BEGIN
            INSERT INTO entries_fts(entries_fts, rowid, title, labels, body, paths, added, excerpt)
                VALUES ('delete', old.rowid, old.title, old.labels, old.body, old.paths, old.added, old.excerpt);
            INSERT INTO entries_fts(rowid, title, labels, body, paths, added, excerpt)
                VALUES (new.rowid, new.title, new.labels, new.body, new.paths, new.added, new.excerpt);
        END;
        INSERT INTO entries_fts(entries_fts) VALUES ('rebuild');
        """,
    )


def m007_commit_index(db: sqlite3.Connection) -> None:
    """`kloop wiki show <short sha>` looks entries up by commit prefix."""
    db.execute("CREATE INDEX entries_commit ON entries(commit_sha)")


def m008_added_files(db: sqlite3.Connection) -> None:
    """The kernel files a commit created, one path a line, outside the FTS index.

    Search reads them for its candidates only: an introduction question scores each created file
    on its own, so a release that created the file asked about among hundreds is not diluted.
    """
    db.execute("ALTER TABLE entries ADD COLUMN added_files TEXT NOT NULL DEFAULT ''")


def m009_learned_aliases(db: sqlite3.Connection) -> None:
    """Abbreviations each repository uses (`pa` for paged attention), learned at ingest (abbreviations.py)."""
    db.execute(
        "CREATE TABLE learned_aliases (repo TEXT NOT NULL, short TEXT NOT NULL, long TEXT NOT NULL, "
        "commits INTEGER NOT NULL, lift REAL NOT NULL, PRIMARY KEY (repo, short, long))"
    )


MIGRATIONS: list[tuple[str, Migration]] = [
    ("entries", m001_entries),
    ("ingest_state", m002_ingest_state),
    ("term_stats", m003_term_stats),
    ("labels_in_row", m004_labels_in_row),
    ("entry_filters", m005_entry_filters),
    ("paths_column", m006_paths_column),
    ("commit_index", m007_commit_index),
    ("added_files", m008_added_files),
    ("learned_aliases", m009_learned_aliases),
]


LEDGER = Ledger("wiki_migrations", number_column="number", stamp=utc_now, stamp_type="TEXT")


def migrate(db: sqlite3.Connection, where: str) -> list[int]:
    """Bring a wiki database up to date through kloop's one migration runner."""
    return run_migrations(db, MIGRATIONS, LEDGER, where)
