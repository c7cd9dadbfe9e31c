"""WikiStore: the SQLite/FTS5 database behind KernelWiki.

WAL journal and a busy timeout let any number of readers search while one writer ingests;
writers commit in batches so readers always see whole batches. The schema comes only from
`migrations.py`.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kloop.errors import BadInput
from kloop.wiki.aliases import AliasTable, default_alias_table
from kloop.wiki.location import default_db_path
from kloop.wiki.migrations import migrate
from kloop.wiki.ranker import Candidate, RankModel, shipped_model
from kloop.wiki.schema import Hit, WikiEntry
from kloop.wiki.search import FtsSearch

BUSY_TIMEOUT_MS = 10_000
_SHA = re.compile(r"[0-9a-fA-F]{7,40}")
_COLUMNS = (
    "id, kind, title, labels, body, paths, added, excerpt, vendor, confidence, repo, commit_sha, pr, date, "
    "captured_at, label_list, source_json, entry_json, added_files"
)


def entry_labels(entry: WikiEntry) -> list[str]:
    """Filter labels: tag:x, tech:x, arch:x (arch:none when unspecified), finding:x."""
    labels = [f"tag:{t}" for t in entry.tags if not t.startswith("finding:")]
    labels += [t for t in entry.tags if t.startswith("finding:")]
    labels += [f"tech:{t}" for t in entry.techniques]
    labels += [f"arch:{a}" for a in entry.arch] or ["arch:none"]
    if entry.stats.get("added_files"):
        labels.append("git:adds-kernel-files")
    if entry.stats.get("mechanical"):
        labels.append("git:mechanical")
    if entry.stats.get("history_only"):
        labels.append("git:history-only")
    return list(dict.fromkeys(labels))


def _row(entry: WikiEntry) -> tuple[object, ...]:
    labels = " ".join([*entry.tags, *entry.techniques, *entry.arch, entry.vendor.value])
    paths = entry.path_terms or "\n".join(entry.source.paths)
    src = entry.source
    return (
        entry.id, entry.kind.value, entry.title, labels, entry.body, paths, entry.added_terms, entry.excerpt,
        entry.vendor.value,
        entry.confidence.value, src.repo, src.commit, src.pr, src.date, entry.captured_at,
        json.dumps(entry_labels(entry)), src.model_dump_json(exclude_none=True), entry.model_dump_json(),
        "\n".join(entry.added_files),
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
        self._search = FtsSearch(self.db, self._search_aliases(), shipped_model())
        if created and seed_cards:
            # cards are YAML front matter: parsed only when a new wiki is seeded, not for every search
            from kloop.wiki.cards import shipped_cards

            self.add(shipped_cards(self.aliases))

    def _search_aliases(self) -> AliasTable:
        """The alias table searches expand with: the shipped one and each repository's learned abbreviations."""
        pairs = self.db.execute("SELECT DISTINCT short, long FROM learned_aliases ORDER BY commits DESC, short, long")
        found = pairs.fetchall()
        return self.aliases.with_abbreviations(found) if found else self.aliases

    def relearn_abbreviations(self, repo: str) -> int:
        """Learn `repo`'s abbreviations from its entries again (after an ingest); searches use them from now on."""
        from kloop.wiki.abbreviations import relearn

        count = len(relearn(self.db, repo))
        self._search.aliases = self._search_aliases()
        return count

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
        marks = ", ".join("?" * len(_COLUMNS.split(", ")))
        if replace:
            updates = ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS.split(", ")[1:])
            sql = f"INSERT INTO entries({_COLUMNS}) VALUES ({marks}) ON CONFLICT(id) DO UPDATE SET {updates}"
        else:
            sql = f"INSERT OR IGNORE INTO entries({_COLUMNS}) VALUES ({marks})"
        with self.transaction() as db:
            return db.executemany(sql, rows).rowcount

    def get(self, entry_id: str) -> WikiEntry | None:
        """The entry with this id; a card's bare id finds `card/<id>`, a commit sha (7+ hex digits) its entry.

        A sha prefix may be bare (`3e515a4`) or after the repository (`flashinfer@3e515a4753`);
        one that names several entries is refused (BadInput lists how many), never guessed.
        """
        for candidate in (entry_id, f"card/{entry_id}"):
            row = self.db.execute("SELECT entry_json FROM entries WHERE id = ?", (candidate,)).fetchone()
            if row:
                return WikiEntry.model_validate_json(row[0])
        repo, _, sha = entry_id.rpartition("@")
        if not _SHA.fullmatch(sha):
            return None
        sql = "SELECT id, entry_json FROM entries WHERE commit_sha >= ? AND commit_sha < ? AND (? = '' OR id LIKE ?) LIMIT 6"
        prefix = sha.lower()
        rows = self.db.execute(sql, (prefix, prefix + "z", repo, f"{repo}@%")).fetchall()
        if len(rows) > 1:
            raise BadInput(entry_id, f"names {len(rows)}{'+' if len(rows) > 5 else ''} entries: "
                           + ", ".join(r[0] for r in rows[:5]))
        return WikiEntry.model_validate_json(rows[0][1]) if rows else None

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
        filters = {"vendor": vendor, "arch": arch, "tag": tag, "kind": kind}
        return self._search.search(query, k, filters, expand=expand)

    def guidance(self, query: str, k: int = 3, vendor: str | None = None, arch: str | None = None,
                 shown: frozenset[str] = frozenset()) -> list[Hit]:  # fmt: skip
        """The cards for `query`, ranked among cards alone: the labelled list beside the evidence, since in
        the one ranking every phrasing shares, cards take at most one of the first five places."""
        hits = self.search(query, k + len(shown), vendor=vendor, arch=arch, kind="card")
        return [hit for hit in hits if hit.id not in shown][:k]

    def use_ranker(self, model: RankModel | None) -> None:
        """Weigh every question by `model` from now on (None: the hand-set factors, for comparison)."""
        self._search.model = model

    def candidates(self, query: str) -> tuple[bool, bool, list[tuple[str | None, Candidate]]]:
        """(history?, introduction?, [(commit sha, candidate)]) of every entry a search for `query` weighs."""
        intent, found = self._search.candidates(query)
        if not found:
            return intent.history, intent.introduction, []
        marks = ", ".join("?" * len(found))
        sha = dict(self.db.execute(f"SELECT rowid, commit_sha FROM entries WHERE rowid IN ({marks})", [c.rowid for c in found]))
        return intent.history, intent.introduction, [(sha.get(c.rowid), c) for c in found]
