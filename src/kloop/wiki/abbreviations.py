"""Abbreviations a repository uses, learned from its own history: `pa` for paged attention, `car` for custom all-reduce.

A commit title says "support rta in pa" or "[fix]: car 6 rank coredump"; its diff says
`paged_attention` or `custom_all_reduce`. A user asks in the long words, so the title is out of
reach unless the wiki knows that this repository writes `pa` for them. The shipped alias table
(aliases.yaml) holds the spellings every kernel engineer knows; this module finds the ones a
repository made up, from the repository alone:

- a short title word `s` (2-6 letters) abbreviates a run of 2-4 identifier parts `w` (snake_case or
  camelCase names in the commit's changed paths and diff excerpt) when `s` is a non-empty prefix of
  each part of `w` in order (p + a, c + a + r, f + moe);
- they go together: at least MIN_COMMITS commits have `s` in their title and `w` in their diff, and
  a commit whose title says `s` has `w` in its diff at least MIN_LIFT times as often as the
  repository's commits overall (a word every title uses, such as "ci", abbreviates nothing).

The pairs are stored per repository (`learned_aliases`, migration 9) each time a repository is
ingested, and search reads them as synonyms of each other (search expansion only: a learned pair
never labels an entry with a technique).
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from kloop.wiki.aliases import stems, tokens_of
from kloop.wiki.query import STOPWORDS

MIN_COMMITS = 3
MIN_LIFT = 3.0
SHORTEST, LONGEST = 2, 6  # letters in an abbreviation
PARTS = (2, 3, 4)  # identifier parts one abbreviation may stand for
_IDENTIFIER = re.compile(r"(?<![A-Za-z0-9_])(?:[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+|[A-Za-z][a-z]+(?:[A-Z][a-z]+)+)")
_CAMEL = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
# Title words that are English, never a repository's shorthand (with the query stop words).
NOT_SHORT = STOPWORDS | frozenset([
    "add", "fix", "test", "tests", "ci", "cd", "docs", "doc", "bump", "update", "support", "remove", "revert", "merge",
    "enable", "disable", "minor", "misc", "clean", "new", "not", "off", "out", "up", "op", "ops", "loop", "top",
    "pre", "post", "opt", "per", "tile", "tiles", "code", "case", "cases", "perf", "type", "types"])


@dataclass(frozen=True)
class Abbreviation:
    """One learned pair: `short` in a repository's titles stands for `long` in its code."""

    repo: str
    short: str
    long: str  # the identifier parts, space-separated ("paged attention")
    commits: int  # commits with `short` in the title and `long` in the diff
    lift: float


@lru_cache(maxsize=65536)
def abbreviates(short: str, parts: tuple[str, ...]) -> bool:
    """Whether `short` is a non-empty prefix of each of `parts`, in order (pa: paged attention)."""
    if not parts:
        return not short
    head = parts[0]
    for k in range(1, min(len(head), len(short) - len(parts) + 1) + 1):
        if short[k - 1] != head[k - 1]:
            return False
        if abbreviates(short[k:], parts[1:]):
            return True
    return False


def identifier_runs(text: str) -> set[tuple[str, ...]]:
    """Every run of 2-4 consecutive word parts of the identifiers in `text` (numbers and single letters left out)."""
    runs: set[tuple[str, ...]] = set()
    for name in _IDENTIFIER.findall(text):
        parts = tuple(p.lower() for piece in name.split("_") for p in _CAMEL.findall(piece))
        parts = tuple(p for p in parts if len(p) > 1)
        for n in PARTS:
            runs.update(parts[i : i + n] for i in range(len(parts) - n + 1))
    return runs


def short_words(title: str) -> set[str]:
    """Title words that could be a repository's shorthand."""
    return {w for w in tokens_of(title) if SHORTEST <= len(w) <= LONGEST and w.isalpha() and w not in NOT_SHORT}


def _is_abbreviation(short: str, run: tuple[str, ...]) -> bool:
    """`short` stands for `run`, and is not simply one of its words or that word's inflection (tests: test ...)."""
    if short in run or short.startswith(run[0]) or set(stems(short)) & set(stems(run[0])):
        return False
    return short[0] == run[0][0] and abbreviates(short, run)


def learn(rows: list[tuple[str, str]], repo: str) -> list[Abbreviation]:
    """The pairs one repository's (title, paths + diff excerpt) rows support, strongest first."""
    together: Counter[tuple[str, tuple[str, ...]]] = Counter()
    titled: Counter[str] = Counter()
    spelled: Counter[tuple[str, ...]] = Counter()
    for title, code in rows:
        shorts = short_words(title)
        runs = identifier_runs(code)
        spelled.update(runs)
        titled.update(shorts)
        by_letter: dict[str, list[tuple[str, ...]]] = {}
        for run in runs:
            by_letter.setdefault(run[0][0], []).append(run)
        together.update((s, run) for s in shorts for run in by_letter.get(s[0], ()) if _is_abbreviation(s, run))
    found = []
    for (short, run), commits in together.items():
        if commits < MIN_COMMITS:
            continue
        lift = (commits / titled[short]) / (spelled[run] / len(rows))
        if lift >= MIN_LIFT:
            found.append(Abbreviation(repo, short, " ".join(run), commits, round(lift, 2)))
    return sorted(found, key=lambda a: (-a.commits, a.short, a.long))


def relearn(db: sqlite3.Connection, repo: str) -> list[Abbreviation]:
    """Learn one repository's abbreviations from its commit entries and store them in place of the old ones."""
    rows = db.execute(
        "SELECT title, paths || char(10) || excerpt FROM entries WHERE repo = ? AND kind IN ('commit', 'pr')", (repo,)
    ).fetchall()
    pairs = learn(rows, repo) if rows else []
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("DELETE FROM learned_aliases WHERE repo = ?", (repo,))
        db.executemany(
            "INSERT INTO learned_aliases(repo, short, long, commits, lift) VALUES (?, ?, ?, ?, ?)",
            [(a.repo, a.short, a.long, a.commits, a.lift) for a in pairs],
        )
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return pairs


def stored(db: sqlite3.Connection) -> list[Abbreviation]:
    """Every repository's learned pairs."""
    return [Abbreviation(*row) for row in db.execute(
        "SELECT repo, short, long, commits, lift FROM learned_aliases ORDER BY repo, commits DESC, short, long")]
