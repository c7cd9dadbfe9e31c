"""WikiStore: the SQLite/FTS5 database behind KernelWiki.

WAL journal and a busy timeout let any number of readers search while one writer ingests;
writers commit in batches so readers always see whole batches. The schema comes only from
`migrations.py`.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kloop.errors import BadInput
from kloop.wiki.aliases import AliasTable, default_alias_table
from kloop.wiki.cards import shipped_cards
from kloop.wiki.migrations import migrate
from kloop.wiki.query import parse_query
from kloop.wiki.schema import Hit, Source, WikiEntry

BUSY_TIMEOUT_MS = 10_000
# bm25 column weights: title > labels (tags, techniques, arch, findings) > body > paths/diff excerpt.
COLUMN_WEIGHTS = (10.0, 5.0, 1.0, 0.4)
# A match on an alias spelling counts this much of a match on the words the user typed.
EXPANSION_WEIGHT = 0.25
# Candidates taken from each of the two MATCH expressions before fusing their scores.
CANDIDATES = 50
KINDS = ("pr", "commit", "card", "doc")
VENDORS = ("nvidia", "amd", "any")
_COLUMNS = (
    "id, kind, title, labels, body, excerpt, vendor, confidence, repo, commit_sha, pr, date, "
    "captured_at, label_list, source_json, entry_json"
)


def default_db_path() -> Path:
    """`$KLOOP_HOME/wiki.sqlite`, KLOOP_HOME defaulting to ~/.kloop."""
    home = os.environ.get("KLOOP_HOME") or str(Path.home() / ".kloop")
    return Path(home).expanduser() / "wiki.sqlite"


def entry_labels(entry: WikiEntry) -> list[str]:
    """Filter labels: tag:x, tech:x, arch:x (arch:none when unspecified), finding:x."""
    labels = [f"tag:{t}" for t in entry.tags if not t.startswith("finding:")]
    labels += [t for t in entry.tags if t.startswith("finding:")]
    labels += [f"tech:{t}" for t in entry.techniques]
    labels += [f"arch:{a}" for a in entry.arch] or ["arch:none"]
    return list(dict.fromkeys(labels))


def _row(entry: WikiEntry) -> tuple[object, ...]:
    labels = " ".join([*entry.tags, *entry.techniques, *entry.arch, entry.vendor.value])
    excerpt = "\n".join([*entry.source.paths, entry.excerpt])
    src = entry.source
    return (
        entry.id, entry.kind.value, entry.title, labels, entry.body, excerpt, entry.vendor.value,
        entry.confidence.value, src.repo, src.commit, src.pr, src.date, entry.captured_at,
        json.dumps(entry_labels(entry)), src.model_dump_json(exclude_none=True), entry.model_dump_json(),
    )


class WikiStore:
    """Open (creating and migrating when needed) a KernelWiki database."""

    def __init__(
        self, path: str | Path | None = None, *, aliases: AliasTable | None = None, seed_cards: bool = True
    ) -> None:
        """A new database is seeded with kloop's shipped cards (unless `seed_cards=False`)."""
        self.path = Path(path) if path is not None else default_db_path()
        self.aliases = aliases or default_alias_table()
        if self.path.is_dir():
            raise BadInput(self.path, "is a directory, not a wiki database file")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
            self.db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self.db.execute("PRAGMA journal_mode = WAL")
            self.db.execute("PRAGMA synchronous = NORMAL")
            self.db.execute("PRAGMA cache_size = -65536")
            created = 1 in migrate(self.db, str(self.path))
        except sqlite3.DatabaseError as exc:
            raise BadInput(self.path, f"not a usable wiki database ({exc})") from None
        if created and seed_cards:
            self.add(shipped_cards(self.aliases))

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> WikiStore:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE: writers queue, readers never block)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def add(self, entries: Iterable[WikiEntry], *, replace: bool = True) -> int:
        """Store entries in one transaction; `replace=False` keeps existing ids untouched (dedupe).

        Returns how many rows were inserted or changed.
        """
        rows = [_row(e) for e in entries]
        if not rows:
            return 0
        marks = ", ".join("?" * 16)
        if replace:
            updates = ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS.split(", ")[1:])
            sql = f"INSERT INTO entries({_COLUMNS}) VALUES ({marks}) ON CONFLICT(id) DO UPDATE SET {updates}"
        else:
            sql = f"INSERT OR IGNORE INTO entries({_COLUMNS}) VALUES ({marks})"
        with self.transaction() as db:
            return db.executemany(sql, rows).rowcount

    def get(self, entry_id: str) -> WikiEntry | None:
        """The entry with this id (a card's bare id also finds `card/<id>`)."""
        for candidate in (entry_id, f"card/{entry_id}"):
            row = self.db.execute("SELECT entry_json FROM entries WHERE id = ?", (candidate,)).fetchone()
            if row:
                return WikiEntry.model_validate_json(row[0])
        return None

    def has(self, ids: list[str]) -> set[str]:
        """Which of these ids are already stored."""
        found: set[str] = set()
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            marks = ", ".join("?" * len(chunk))
            found.update(r[0] for r in self.db.execute(f"SELECT id FROM entries WHERE id IN ({marks})", chunk))
        return found

    def count(self, kind: str | None = None) -> int:
        if kind is None:
            return self.db.execute("SELECT count(*) FROM entries").fetchone()[0]
        return self.db.execute("SELECT count(*) FROM entries WHERE kind = ?", (kind,)).fetchone()[0]

    def ingest_state(self, repo: str) -> tuple[str, int] | None:
        """(last commit, commits seen) of the repository's previous ingest."""
        row = self.db.execute(
            "SELECT last_commit, commits_seen FROM ingest_state WHERE repo = ?", (repo,)
        ).fetchone()
        return (row[0], row[1]) if row else None

    def clone_path(self, repo: str | None) -> Path | None:
        """Where the repository was ingested from, if it ever was."""
        if not repo:
            return None
        row = self.db.execute("SELECT path FROM ingest_state WHERE repo = ?", (repo,)).fetchone()
        return Path(row[0]) if row else None

    def search(
        self,
        query: str,
        k: int = 10,
        vendor: str | None = None,
        arch: str | None = None,
        tag: str | None = None,
        kind: str | None = None,
        *,
        expand: bool = True,
    ) -> list[Hit]:
        """BM25-ranked hits; `vendor` keeps vendor-neutral entries, `arch` keeps arch-neutral ones."""
        parsed = parse_query(query, self.aliases, expand=expand)
        options = {"vendor": vendor, "arch": arch, "tag": tag, "kind": kind}
        filters = {**parsed.filters, **{key: value for key, value in options.items() if value}}
        if k < 1:
            raise BadInput("-k", f"must be at least 1, got {k}")
        if parsed.match is None:
            return []
        where, params = self._filter_sql(filters)
        pool = max(CANDIDATES, 2 * k)
        scored: dict[str, list] = {}
        for expression, weight in ((parsed.match, 1.0), (parsed.expansion, EXPANSION_WEIGHT)):
            if expression is None:
                continue
            for row in self._match(expression, where, params, pool, query):
                hit = scored.setdefault(row[0], [0.0, row])
                hit[0] += weight * -row[3]
        ranked = sorted(scored.values(), key=lambda item: -item[0])[:k]
        return [
            Hit(
                id=r[0], title=r[1], kind=r[2], score=round(score, 4), snippet=" ".join(r[4].split()),
                source=Source.model_validate_json(r[5]), vendor=r[6], confidence=r[7],
            )
            for score, r in ranked
        ]

    def _match(self, expression: str, where: str, params: list[str], limit: int, query: str) -> list[tuple]:
        """Top `limit` rows for one MATCH expression under the filters, best (lowest bm25) first."""
        weights = ", ".join(str(w) for w in COLUMN_WEIGHTS)
        sql = (
            f"SELECT e.id, e.title, e.kind, bm25(entries_fts, {weights}) AS rank, "
            "snippet(entries_fts, 2, '[', ']', '…', 20), e.source_json, e.vendor, e.confidence "
            "FROM entries_fts JOIN entries e ON e.rowid = entries_fts.rowid "
            f"WHERE entries_fts MATCH ? {where} ORDER BY rank LIMIT ?"
        )
        try:
            return self.db.execute(sql, [expression, *params, limit]).fetchall()
        except sqlite3.OperationalError as exc:  # a query we built must never reach the user as SQL
            raise BadInput("query", f"cannot search for {query!r}: {exc}") from None

    def _filter_sql(self, filters: dict[str, str]) -> tuple[str, list[str]]:
        """SQL conditions for vendor / arch / tag / kind filters, validated against their vocabularies."""
        clauses: list[str] = []
        params: list[str] = []
        vendor = filters.get("vendor")
        if vendor:
            if vendor not in VENDORS:
                raise BadInput("--vendor", f"unknown vendor {vendor!r} (expected one of {', '.join(VENDORS)})")
            clauses.append("e.vendor IN (?, 'any')")
            params.append(vendor)
        if filters.get("arch"):
            arch = filters["arch"]
            clauses.append("(instr(e.label_list, ?) > 0 OR instr(e.label_list, '\"arch:none\"') > 0)")
            params.append(f'"arch:{arch}"')
            if arch_vendor := self._arch_vendor(arch):
                clauses.append("e.vendor IN (?, 'any')")
                params.append(arch_vendor)
        if filters.get("tag"):
            tag = filters["tag"].lower()
            wanted = [tag] if tag.startswith("finding:") else [f"tag:{tag}", f"tech:{tag}", f"finding:{tag}"]
            clauses.append("(" + " OR ".join("instr(e.label_list, ?) > 0" for _ in wanted) + ")")
            params += [f'"{label}"' for label in wanted]
        if filters.get("kind"):
            if filters["kind"] not in KINDS:
                raise BadInput("--kind", f"unknown kind {filters['kind']!r} (expected one of {', '.join(KINDS)})")
            clauses.append("e.kind = ?")
            params.append(filters["kind"])
        return "".join(f" AND {c}" for c in clauses), params

    def _arch_vendor(self, arch: str) -> str | None:
        """The vendor an arch id implies (sm_* -> nvidia, gfx* -> amd), from the alias table."""
        for row in self.aliases.rows:
            if row.field == "arch" and row.canonical == arch:
                return row.vendor
        return "nvidia" if arch.startswith("sm_") else "amd" if arch.startswith("gfx") else None
