"""Ranking for WikiStore.search: BM25 passes fused, weighed to the question, bounded so big wikis stay fast.

Pass one matches the words the user typed; the next ones the alias synonyms and related terms,
weighted lower. Every phrasing (history, how-to, symptom, keywords) takes the same passes and the
same weighing, so a paraphrase ranks the same evidence: commits whose titles, diffs or created
files spell the question's words join the candidates, and the ranker (or the hand weights) orders
them; introduction questions (intent.py) favour the commits that created the files asked about.
FTS5 computes bm25 for every matching row (~4 us each), so on a big wiki each pass ranks only
its rarest phrases, up to ROW_BUDGET matching rows in all; common phrases carry little BM25
weight anyway. A lone phrase commoner than that is ranked over its newest ROW_BUDGET matches.
Only the final k rows pay for snippets.
"""

from __future__ import annotations

import heapq
import math
import re
import sqlite3
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import lru_cache

from kloop.errors import BadInput
from kloop.wiki.aliases import AliasTable, tokens_of
from kloop.wiki.compound import splitter_for
from kloop.wiki.coverage import file_coverage, title_coverage, wanted
from kloop.wiki.gitlog import NAME_PATTERN
from kloop.wiki.intent import (
    HISTORY_WORDS,
    INTRO_WORDS,
    QUESTION_ONLY,
    REPO_BOOST,
    VENDOR_BOOST,
    Intent,
    read_intent,
)
from kloop.wiki.query import STOPWORDS, adjacent_pairs, compounds, parse_query, quote
from kloop.wiki.ranker import Candidate, RankModel
from kloop.wiki.schema import Hit, Source
from kloop.wiki.symptoms import SymptomTable, default_symptom_table

# bm25 column weights: title, labels (tags, techniques, arch, findings), body, changed paths,
# kernel files the commit created, diff excerpt. An introduction question ("when was X added")
# weighs the created files up: the commit that created `sm90_tile_scheduler_stream_k.hpp` is
# the answer even when its subject is "CUTLASS 3.2".
COLUMN_WEIGHTS = (10.0, 5.0, 1.0, 2.0, 1.0, 0.4)
INTRO_COLUMN_WEIGHTS = (10.0, 5.0, 1.0, 2.0, 6.0, 0.4)
# History questions also take the TITLE_CANDIDATES entries whose titles alone match best.
TITLE_COLUMN_WEIGHTS = (1.0, 0.0, 0.0, 0.0, 0.0, 0.0)
TITLE_CANDIDATES = 50


def rank_function(weights: tuple[float, ...]) -> str:
    return "bm25(entries_fts, " + ", ".join(str(w) for w in weights) + ")"


def _rank_clause(weights: tuple[float, ...]) -> str:
    """FTS5's `rank` column set to bm25 with these column weights, for one query."""
    return f"rank MATCH '{rank_function(weights).replace('entries_fts, ', '')}'"


# A match on an alias spelling counts this much of a match on the words the user typed
# (0.1 / 0.25 / 0.35 / 0.5 / 1.0 tried on bench/wiki_eval.py; 0.25 was best).
EXPANSION_WEIGHT = 0.25
# Another spelling of what was typed (asm for assembly, fwd for forward) counts this much.
SYNONYM_WEIGHT = 0.25
# A mechanism the fix of a named symptom would say (symptoms.yaml: "hangs" -> deadlock, terminate) counts this
# much, and at most MAX_MECHANISMS of them are searched (in the order the question names the symptoms).
SYMPTOM_WEIGHT = 0.25
MAX_MECHANISMS = 24
# Introduction questions: the oldest candidate counts up to this much more than the newest (0.6 until
# 2026-12-02b; 0.8 / 1.0 / 1.2 / 1.5: held AMD r@1 0.500 -> 0.571 / 0.571 / 0.643 / 0.643, fresh NVIDIA r@1
# 0.640 -> 0.680 / 0.640 / 0.680 / 0.680; 1.2 cost fresh2 AMD r@1, 1.5 tune r@1).
DATE_BOOST = 0.8
# History questions: a commit whose title spells all the question's content words counts this much more.
TITLE_BONUS = 1.0
# Introduction questions: a commit that created one file whose path spells all of them, this much more.
FILE_BONUS = 1.5
# ... and the oldest of the commits that created a file spelling all of it (FIRST_MIN) this much more:
# the first-introduction signal per path. Tune split r@1 / r@5: 0 -> 0.796 / 0.907, 0.5 -> 0.796 / 0.926,
# 1.5 or 2.0 -> 0.833 / 0.944, 3.0 -> 0.852 / 0.944 (2.0: mid-plateau); FIRST_MIN 0.5 or 0.75 cost r@1.
FIRST_BONUS = 2.0
FIRST_MIN = 1.0
# A card or topic page (guidance) counts this much against commits (evidence), under any phrasing.
CARD_FACTOR = 0.35
# A move / format / lint commit counts this much, unless the question asks about a move.
MECHANICAL_FACTOR = 0.5
# Candidates taken from each pass before fusing and weighing their scores (50 on the tune split of
# bench/wiki_real: recall@1 / @5 0.778 / 0.870; 100: 0.796 / 0.889; 200: 0.796 / 0.889). The first commit
# of a kind is often short and old: it must reach the weighing to be lifted by it.
CANDIDATES = 100
# Evidence first: cards and docs take at most this many of the first TOP_SLOTS hits, never the first one
# when a commit or PR matched (they took 51 of 200 top-5 slots on a 40-question set written by a new user,
# and hit@1 rose from 16 to 20 without them).
GUIDANCE_SLOTS = 1
TOP_SLOTS = 5
# Alias alternatives searched per query (synonyms come before related terms): each phrase of
# common words costs a positional intersection even when it matches nothing.
MAX_ALTERNATIVES = 16
# Most rows one pass may rank, once the wiki is big enough for the scan to cost anything.
ROW_BUDGET = 2500
PRUNE_FROM_ENTRIES = 20000
KINDS = ("pr", "commit", "card", "doc")
# Introduction questions: the oldest MAKERS entries whose created files spell all of at least MAKERS_MIN_GROUPS
# content groups join the candidates.
MAKERS = 5
MAKERS_MIN_GROUPS = 2
# A name the question gives brings the oldest NAME_BEARERS entries whose diffs or file names spell it.
NAME_BEARERS = 3
NAME_COLUMNS = "{excerpt paths added} : "
# Content groups checked one by one for which candidates spell them (one FTS5 match list each).
MAX_SPELLED_GROUPS = 8
# Auxiliary verbs: no title or file name spells them (kept in the BM25 terms, where dropping them tied).
AUXILIARIES = frozenset(["were", "did", "has", "have", "had", "been", "being"])
# Words every kernel-history question may say, so no created file is asked for by them.
GENERIC_WORDS = frozenset(["kernel", "kernels"])
VENDORS = ("nvidia", "amd", "any")


def snippet(body: str, terms: list[str], width: int = 160) -> str:
    """A window of `body` around the first query term, matched words in [brackets]."""
    words = sorted({t for term in terms for t in tokens_of(term) if len(t) > 1}, key=len, reverse=True)
    text = " ".join(body.split())
    if not words:
        return text[:width]
    pattern = re.compile(r"(?<![A-Za-z0-9])(" + "|".join(map(re.escape, words)) + r")[A-Za-z0-9]*", re.I)
    first = pattern.search(text)
    start = max(0, (first.start() if first else 0) - width // 3)
    window = text[start : start + width]
    marked = pattern.sub(lambda m: f"[{m.group(0)}]", window)
    return ("…" if start else "") + marked + ("…" if start + width < len(text) else "")


@lru_cache(maxsize=65536)
def instant(date: str | None) -> float | None:
    """Seconds since the epoch of an ISO date (offsets honoured: 02:07-07:00 is after 17:00+08:00), None if unreadable."""
    if not date:
        return None
    try:
        parsed = datetime.fromisoformat(date)
    except ValueError:
        return None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


def _oldest_best(values: dict[int, float], dates: dict[int, float | None], at_least: float = 1e-9) -> int | None:
    """The oldest dated candidate among those with the highest value, if that value reaches `at_least`:
    of the commits that spell the question best, the oldest is likeliest its introduction."""
    best = max(values.values(), default=0.0)
    if best < at_least:
        return None
    tied = [rowid for rowid, value in values.items() if value == best and dates.get(rowid)]
    return min(tied, key=lambda rowid: dates[rowid], default=None)


def _hand_factor(c: Candidate, intent: Intent, titled: bool) -> float:
    """The hand-set weighing, where no ranker is shipped (or `--hand` compares against it)."""
    factor = 1.0
    if titled and not c.is_card:
        factor *= (1.0 + TITLE_BONUS * c.title) * (1.0 + FILE_BONUS * c.file)
        if c.first:
            factor *= 1.0 + FIRST_BONUS
    if c.is_card:
        factor *= CARD_FACTOR
    elif intent.introduction:
        if c.adds_kernel:
            factor *= 1.0 + intent.intro_boost
        factor *= 1.0 + DATE_BOOST * c.older  # the older of two close candidates is likelier the introduction
    if c.mechanical:
        factor *= MECHANICAL_FACTOR
    if c.same_vendor:
        factor *= 1.0 + VENDOR_BOOST
    if c.same_repo:
        factor *= 1.0 + REPO_BOOST
    return factor


_BACKTICKED = re.compile(r"`([^`]+)`")
_NAME = re.compile(NAME_PATTERN)
_CODE_SHAPED = re.compile(r"[A-Za-z0-9]_[A-Za-z0-9]|[a-z][A-Z]")


def named_identifiers(query: str, repositories: frozenset[str] = frozenset()) -> list[tuple[str, ...]]:
    """Identifiers a question gives: names and paths in backticks, and snake_case or camelCase words
    anywhere except the names of repositories (DeepGEMM is camelCase too)."""
    backticked = _BACKTICKED.findall(query)
    paths = [text for text in backticked if "/" in text]  # `cutlass/version.h`: one name, not three
    quoted = [n for text in backticked if "/" not in text for n in _NAME.findall(text)]
    shaped = [n for n in _NAME.findall(_BACKTICKED.sub(" ", query)) if _CODE_SHAPED.search(n)]
    names = (tuple(tokens_of(n)) for n in paths + quoted + shaped if "".join(tokens_of(n)) not in repositories)
    return [tokens for tokens in dict.fromkeys(names) if tokens]


def evidence_first(ranked: list[tuple[int, float]], cards: frozenset[int]) -> list[tuple[int, float]]:
    """Cards and docs (guidance) never push commits and PRs (evidence) out of the top: where any evidence
    matched, the first hit is evidence and guidance takes at most GUIDANCE_SLOTS of the first TOP_SLOTS.
    Otherwise the weighed order stands (a merge of the two lists by rank under those limits). Guidance
    has its own labelled list besides (`kloop wiki search` prints it; `kind="card"` asks for it)."""
    evidence = [row for row in ranked if row[0] not in cards]
    guidance = [row for row in ranked if row[0] in cards]
    if not evidence or not guidance:
        return ranked
    rank = {row[0]: i for i, row in enumerate(ranked)}
    out: list[tuple[int, float]] = []
    shown = 0  # guidance rows among the first TOP_SLOTS
    while evidence or guidance:
        allowed = len(out) >= TOP_SLOTS or (bool(out) and shown < GUIDANCE_SLOTS)
        if guidance and (not evidence or (allowed and rank[guidance[0][0]] < rank[evidence[0][0]])):
            shown += len(out) < TOP_SLOTS
            out.append(guidance.pop(0))
        else:
            out.append(evidence.pop(0))
    return out


def _softmax(scores: dict[int, float]) -> dict[int, float]:
    """The model's scores as each candidate's probability of being the answer, among the candidates."""
    top = max(scores.values())
    weights = {rowid: math.exp(s - top) for rowid, s in scores.items()}
    total = sum(weights.values())
    return {rowid: w / total for rowid, w in weights.items()}


@dataclass(frozen=True)
class Pool:
    """One search's candidates before weighing: fused BM25 scores, with what the question asks."""

    intent: Intent
    scores: dict[int, float]
    groups: list[list[list[str]]]  # the question's content words as spellings
    terms: list[str]  # what snippets mark
    names: list[tuple[str, ...]]  # identifiers the question gives, as token lists
    mechanism: dict[int, float] = field(default_factory=dict)  # BM25 of the symptom-mechanism pass alone
    symptoms: list[int] = field(default_factory=list)  # the symptom rows the question names (symptoms.yaml)


class FtsSearch:
    """Runs searches against one connection, caching document frequencies per phrase."""

    def __init__(self, db: sqlite3.Connection, aliases: AliasTable, model: RankModel | None = None) -> None:
        self.db = db
        self.aliases = aliases
        self.model = model  # weighs every question's candidates; None: the hand weights
        self._df: dict[str, int] = {}
        self._df_total = -1
        self._symptoms: SymptomTable | None = None
        self._repos: tuple[str, ...] = ()
        self._repos_at = -1
        self._scanned: dict[tuple[str, str, tuple[str, ...], tuple[float, ...]], dict[int, float]] = {}
        self._use_symptoms = True

    def use_symptoms(self, table: SymptomTable | None) -> None:
        """Search the mechanisms of the symptoms a question names from `table`; None: not at all."""
        self._symptoms, self._use_symptoms = table, table is not None

    @property
    def symptoms(self) -> SymptomTable | None:
        """The symptom vocabulary, read at the first search that needs it (shipped symptoms.yaml by default)."""
        if self._use_symptoms and self._symptoms is None:
            self._symptoms = default_symptom_table()
        return self._symptoms

    def search(self, query: str, k: int, filters: dict[str, str | None], expand: bool = True) -> list[Hit]:
        """The top `k` hits for `query` under `filters` (vendor, arch, tag, kind)."""
        if k < 1:
            raise BadInput("-k", f"must be at least 1, got {k}")
        pool = self._gather(query, CANDIDATES, filters, expand)
        ranked = self._ranked(pool, query)
        if k > len(ranked):  # a long page: the rows past the fixed candidate pool follow, in their own order
            seen = {rowid for rowid, _ in ranked}
            wide = self._ranked(self._gather(query, 2 * k, filters, expand), query)
            ranked += [(rowid, score) for rowid, score in wide if rowid not in seen]
        return self._hits(ranked[:k], pool.terms)

    def _ranked(self, pool: Pool, query: str) -> list[tuple[int, float]]:
        """The pool's rows, best first, evidence before guidance. The pool has a fixed size, never one that
        grows with `-k`, so the first five of `-k 100` are the five of `-k 5`."""
        weighed = sorted(self._weigh(pool, query).items(), key=lambda item: -item[1])
        return evidence_first(weighed, self._cards(pool))

    def _cards(self, pool: Pool) -> frozenset[int]:
        """The guidance rows (cards, docs) among the pool's candidates."""
        if not pool.scores:
            return frozenset()
        marks = ", ".join("?" * len(pool.scores))
        sql = f"SELECT rowid FROM entries WHERE kind IN ('card', 'doc') AND rowid IN ({marks})"
        return frozenset(r[0] for r in self.db.execute(sql, list(pool.scores)))

    def candidates(self, query: str, k: int = 5) -> tuple[Intent, list[Candidate]]:
        """Every candidate a search for `query` weighs, with what the weighing reads of it (to fit the ranker)."""
        pool = self._gather(query, k, {}, True)
        return pool.intent, self._read_candidates(pool, query) if pool.scores else []

    def _gather(self, query: str, k: int, filters: dict[str, str | None], expand: bool) -> Pool:
        """The candidates' fused BM25 scores, with the question's intent, content groups and terms."""
        self._scanned = {}  # one search's BM25 scans, shared by its passes and the rows they join
        intent = self._intent(query)
        parsed = parse_query(query, self.aliases, expand=expand, drop=QUESTION_ONLY,
                             symptoms=self.symptoms if expand else None)
        merged = {**parsed.filters, **{key: value for key, value in filters.items() if value}}
        where, params = self.filter_sql(merged)
        if not parsed.clauses:
            return Pool(intent, {}, [], parsed.terms, [])
        mechanisms = parsed.mechanisms[:MAX_MECHANISMS]
        pool = max(CANDIDATES, 2 * k)
        scores: dict[int, float] = {}
        synonyms = parsed.synonyms[:MAX_ALTERNATIVES]
        related = parsed.alternatives[: max(0, MAX_ALTERNATIVES - len(synonyms))]
        passes = (
            (parsed.clauses, 1.0, ROW_BUDGET),
            (synonyms, SYNONYM_WEIGHT, ROW_BUDGET // 2),
            (self._joined(query, parsed.clauses), SYNONYM_WEIGHT, ROW_BUDGET // 2),
            (related, EXPANSION_WEIGHT, ROW_BUDGET // 2),
            (mechanisms, SYMPTOM_WEIGHT, ROW_BUDGET // 2),
        )
        weights = INTRO_COLUMN_WEIGHTS if intent.introduction else COLUMN_WEIGHTS
        mechanism: dict[int, float] = {}  # the mechanism pass alone: how well a candidate spells the fix named
        for phrases, weight, budget in passes:
            if not phrases:
                continue
            kept, capped = self._plan(phrases, budget)
            for rowid, rank in self._rank(" OR ".join(kept), where, params, pool, capped, budget, query, weights):
                scores[rowid] = scores.get(rowid, 0.0) - weight * rank
                if phrases is mechanisms:
                    mechanism[rowid] = -rank
        title_groups = self._title_groups(query, expand)
        if parsed.clauses:
            # commits whose titles match best join too, however long the bodies that outrank them
            # ("Tkw1 (#236)", "Gemm+Bilinear (#316)": the terse first commit of a technique)
            kept, capped = self._plan(parsed.clauses + synonyms, ROW_BUDGET)
            titled = self._rank(" OR ".join(kept), where, params, TITLE_CANDIDATES, capped, ROW_BUDGET, query,
                                TITLE_COLUMN_WEIGHTS)
            self._join([rowid for rowid, _ in titled if rowid not in scores], passes, scores, weights, mechanism)
        symptom_rows = self.symptoms.fired(query) if self.symptoms is not None else []
        if expand and symptom_rows and (fixes := self._fixes(query, parsed.clauses + synonyms, merged, intent, scores)):
            self._join(fixes, passes, scores, weights, mechanism)
        names = named_identifiers(query, self._repo_names())
        if names:
            # the oldest commits whose diffs spell a name the question gives (`get_best_configs`) join too
            self._join(self._name_bearers(names, where, params, scores), passes, scores, weights, mechanism)
        if intent.introduction and (makers := self._first_makers(title_groups, where, params, scores)):
            # the oldest commits whose created files spell every word asked about join the candidates,
            # scored by the same passes: a short first commit BM25 ranks below hundreds of reworks
            self._join(makers, passes, scores, INTRO_COLUMN_WEIGHTS, mechanism)
        return Pool(intent, scores, title_groups, parsed.terms, names, mechanism, symptom_rows)

    def _fixes(
        self, query: str, phrases: list[str], filters: dict[str, str], intent: Intent, scores: dict[int, float]
    ) -> list[int]:
        """For a question that names a symptom: the best-matching commits whose titles say they fix something (of
        the vendor the question names), not yet candidates. Nearly every answer to a symptom is such a fix, yet its
        words are the user's paraphrase: ranked among all history it often falls past the pool, among fixes not."""
        symptoms = self.symptoms
        if symptoms is None or not symptoms.fix_words:
            return []
        where, params = self.filter_sql({**filters, "vendor": filters.get("vendor") or intent.vendor})
        kept, capped = self._plan(phrases, ROW_BUDGET)
        fix = "title : (" + " OR ".join(quote(tokens_of(w)) for w in symptoms.fix_words) + ")"
        found = self._rank(f"({' OR '.join(kept)}) AND {fix}", where, params, CANDIDATES, capped, ROW_BUDGET, query,
                           COLUMN_WEIGHTS)
        return [rowid for rowid, _ in found if rowid not in scores]

    def _intent(self, query: str) -> Intent:
        """What the question asks (intent.py), with every repository this wiki holds that it names by its short
        name ("triton's reduction lowering" names ROCm/triton, which no alias table lists)."""
        intent = read_intent(query, self.aliases)
        joined = "_" + "_".join(tokens_of(query)) + "_"
        held = [name for name in self._held_repos() if f"_{name}_" in joined and name not in intent.repos]
        return replace(intent, repos=(*intent.repos, *held)) if held else intent

    def _held_repos(self) -> tuple[str, ...]:
        """Short names of the repositories this wiki holds entries of (lower case, '-' as '_'), cached per size."""
        total = self._entry_total()
        if self._repos_at != total:
            rows = self.db.execute("SELECT DISTINCT repo FROM entries WHERE repo IS NOT NULL AND repo != ''")
            names = {r[0].lower().rsplit("/", 1)[-1].replace("-", "_") for r in rows}
            self._repos, self._repos_at = tuple(sorted(n for n in names if not n.startswith("kloop_"))), total
        return self._repos

    def _repo_names(self) -> frozenset[str]:
        """The alias table's repository names, run together (composablekernel, deepgemm)."""
        return frozenset("".join(tokens_of(name)) for name in self.aliases.repo_vendor)

    @staticmethod
    def _joined(query: str, typed: list[str]) -> list[str]:
        """Neighbouring content words run together, as names and titles write them ("Maxpool", "groupnorm")."""
        words = [t for t in tokens_of(query) if t not in QUESTION_ONLY]
        pairs = adjacent_pairs(words, HISTORY_WORDS | INTRO_WORDS | AUXILIARIES)
        return [p for p in dict.fromkeys(quote([a + b]) for a, b in pairs) if p not in typed][:MAX_ALTERNATIVES]

    def _name_bearers(self, names: list[tuple[str, ...]], where: str, params: list[str], scores: dict[int, float]) -> list[int]:
        """The oldest NAME_BEARERS entries, not yet candidates, whose diff, paths or created files spell each name."""
        found = [rowid for name in names for rowid in self._oldest(NAME_COLUMNS + quote(name), where, params, NAME_BEARERS)]
        return [rowid for rowid in dict.fromkeys(found) if rowid not in scores]

    def _join(
        self, rowids: list[int], passes: tuple[tuple[list[str], float, int], ...], scores: dict[int, float],
        weights: tuple[float, ...], mechanism: dict[int, float],
    ) -> None:
        """Add these rows to the candidates, scored by the same passes as the rest (the last pass: mechanisms)."""
        if not rowids:
            return
        for index, (phrases, weight, _) in enumerate(passes):
            if phrases:
                for rowid, rank in self._rank_rows(" OR ".join(phrases), rowids, weights):
                    scores[rowid] = scores.get(rowid, 0.0) - weight * rank
                    if index == len(passes) - 1:
                        mechanism[rowid] = -rank

    def _first_makers(
        self, groups: list[list[list[str]]], where: str, params: list[str], scores: dict[int, float]
    ) -> list[int]:
        """The oldest entries, not yet candidates, whose created files spell every group a file can spell."""
        named = [g for g in groups if not (len(g) == 1 and g[0][0] in GENERIC_WORDS)]
        if len(named) < MAKERS_MIN_GROUPS:
            return []
        expression = " AND ".join(
            "added : (" + " OR ".join(quote(spelling) for spelling in group if spelling) + ")" for group in named
        )
        return [rowid for rowid in self._oldest(expression, where, params, MAKERS) if rowid not in scores]

    def _oldest(self, expression: str, where: str, params: list[str], limit: int) -> list[int]:
        """The `limit` oldest dated entries matching `expression` under the filters."""
        join = "JOIN entry_filters e ON e.rowid = entries_fts.rowid " if where else ""
        sql = (
            f"SELECT entries_fts.rowid FROM entries_fts JOIN entries d ON d.rowid = entries_fts.rowid {join}"
            f"WHERE entries_fts MATCH ? {where} AND d.date IS NOT NULL ORDER BY julianday(d.date) LIMIT ?"
        )
        return [r[0] for r in self._execute(sql, [expression, *params, limit], expression)]

    def _rank_rows(self, expression: str, rowids: list[int], weights: tuple[float, ...]) -> list[tuple[int, float]]:
        """(rowid, bm25) of these rows under `expression`."""
        if self._entry_total() < PRUNE_FROM_ENTRIES:
            scanned = self._scan(expression, "", [], weights, expression)
            return [(rowid, scanned[rowid]) for rowid in rowids if rowid in scanned]
        marks = ", ".join("?" * len(rowids))
        sql = (
            f"SELECT rowid, rank FROM entries_fts WHERE entries_fts MATCH ? "
            f"AND {_rank_clause(weights)} AND rowid IN ({marks})"
        )
        return self._execute(sql, [expression, *rowids], expression)

    @staticmethod
    def _symptom_groups(symptoms: SymptomTable, query: str, tokens: list[str], covered: set[int]) -> list[list[list[str]]]:
        """A symptom the question names, as a concept a fix's title may spell ("spins forever": deadlock, terminate,
        ...); a size past the rule (4096, 2^31), as the large-size mechanisms; and, once any symptom is named, that
        a fix is asked for. Spans already read as aliases stay theirs; the typed words keep their own groups too
        (a title that says "illegal memory address" still spells "illegal" and "memory")."""
        groups: list[list[list[str]]] = []
        for a, b, mechanisms in symptoms.spans(tokens):
            if covered.isdisjoint(range(a, b)):
                groups.append([tokens[a:b], *(tokens_of(m) for m in mechanisms)])
        if size := symptoms.size_mechanisms(query, tokens):
            groups.append([tokens_of(m) for m in size])
        if groups or symptoms.fired(query):
            groups.append([tokens_of(w) for w in symptoms.fix_words])
        return groups

    def _title_groups(self, query: str, expand: bool = True) -> list[list[list[str]]]:
        """The question's content words as groups of spellings (an alias span: all its synonyms; a symptom span:
        the mechanisms its fix would name, symptoms.yaml)."""
        raw = tokens_of(query)
        keep = [i for i, t in enumerate(raw)
                if t not in STOPWORDS and t not in HISTORY_WORDS and t not in INTRO_WORDS and t not in AUXILIARIES]
        tokens = [raw[i] for i in keep]
        groups: list[list[list[str]]] = []
        covered: set[int] = set()  # positions in `tokens`
        # alias spans are read from every word, as the BM25 passes read them ("all reduce", "out of bounds")
        for a, b, typed, synonyms, _ in self.aliases.expansion_groups(raw):
            inside = {j for j, i in enumerate(keep) if a <= i < b}
            if inside:
                groups.append([tokens_of(typed), *(tokens_of(x) for x in synonyms)])
                covered |= inside
        if expand and (symptoms := self.symptoms) is not None:
            groups += self._symptom_groups(symptoms, query, tokens, covered)
        spanned = {tokens[i] for i in covered}
        joined: set[str] = set()  # parts of hyphenated words: one group, spelled apart or joined
        for parts in compounds(query):
            if spanned.isdisjoint(parts) and "".join(parts) not in tokens:
                groups.append([parts, ["".join(parts)]])
                joined.update(parts)
        groups += [[[t]] for i, t in enumerate(tokens) if i not in covered and t not in joined]
        return groups

    def _weigh(self, pool: Pool, query: str) -> dict[int, float]:
        """Fit the ranking to the question: the learned model where one is shipped, the hand weights otherwise."""
        scores, intent = pool.scores, pool.intent
        if not scores:
            return scores
        candidates = self._read_candidates(pool, query)
        if self.model is not None:
            return _softmax({c.rowid: self.model.score(c, intent.introduction) for c in candidates})
        return {c.rowid: c.bm25 * _hand_factor(c, intent, bool(pool.groups)) for c in candidates}

    def _read_candidates(self, pool: Pool, query: str) -> list[Candidate]:
        """What the weighing knows of each candidate: kind, labels, dates, and how much of the question it spells."""
        scores, intent, title_groups = pool.scores, pool.intent, pool.groups
        marks = ", ".join("?" * len(scores))
        files_sql = "e.added_files" if intent.introduction and title_groups else "''"  # read only when scored
        sql = (
            f"SELECT f.rowid, f.kind, f.label_list, f.vendor, e.repo, e.date, length(e.paths), e.title, {files_sql}, "
            "length(e.body) FROM entry_filters f "
            f"JOIN entries e ON e.rowid = f.rowid WHERE f.rowid IN ({marks})"
        )
        rows = self.db.execute(sql, list(scores)).fetchall()
        want = wanted(title_groups, splitter_for(self.aliases).split)
        # a created file is asked for by the question's specific words: "kernel" names no file
        specific = wanted([g for g in title_groups if not (len(g) == 1 and g[0][0] in GENERIC_WORDS)],
                          splitter_for(self.aliases).split)
        when_of = {r[0]: instant(r[5]) for r in rows}  # author dates carry their own offsets: compare in UTC
        dates = sorted({w for w in when_of.values() if w is not None})
        older = {d: 1.0 - i / max(1, len(dates) - 1) for i, d in enumerate(dates)}
        # the file asked about, created among others: each created file scored on its own
        files = {r[0]: file_coverage(r[8].split("\n"), specific) for r in rows if r[8] and r[1] not in ("card", "doc")}
        first = _oldest_best(files, when_of, FIRST_MIN)
        asked = {r.replace("-", "_") for r in intent.repos}
        symptoms = self.symptoms
        named_rows = pool.symptoms
        symptom = bool(named_rows)
        fix_words = frozenset(symptoms.fix_words if symptoms is not None else ())
        spelled = self._spelled(title_groups, list(scores), query)
        named = self._named(pool.names, list(scores), query)
        first_named = _oldest_best(named, when_of)
        titles = {r[0]: title_coverage(r[7], want) for r in rows if title_groups and r[1] not in ("card", "doc")}
        candidates = []
        for rowid, kind, labels, vendor, repo, _, breadth, title, _, body in rows:
            short = repo.lower().rsplit("/", 1)[-1].replace("-", "_") if repo else ""
            is_entry = kind not in ("card", "doc")
            title_tokens = tokens_of(title)
            in_title = symptoms.named_by(title_tokens, named_rows) if symptoms is not None and is_entry else (0.0, 0.0)
            candidates.append(Candidate(
                rowid=rowid, bm25=scores[rowid], kind=kind,
                adds_kernel='"git:adds-kernel-files"' in labels, history_only='"git:history-only"' in labels,
                mechanical=not intent.moves and '"git:mechanical"' in labels,
                same_vendor=bool(intent.vendor) and vendor == intent.vendor,
                same_repo=short in asked,
                other_repo=bool(asked) and is_entry and bool(short) and short not in asked,
                older=older[when_of[rowid]] if when_of[rowid] is not None else 0.0,
                title=titles.get(rowid, 0.0), title_words=len(title_tokens),
                fix=is_entry and not fix_words.isdisjoint(title_tokens), symptom=symptom,
                title_symptom=in_title[0], title_mechanism=in_title[1], howto=intent.howto,
                file=files.get(rowid, 0.0), first=rowid == first, breadth=breadth or 0, body=body or 0,
                spelled=spelled.get(rowid, 0.0), names=named.get(rowid, 0.0), first_named=rowid == first_named,
                mechanism=pool.mechanism.get(rowid, 0.0),
            ))
        return candidates

    def _named(self, names: list[tuple[str, ...]], rowids: list[int], query: str) -> dict[int, float]:
        """Share of the identifiers the question gives that each candidate's diff, paths or created files spell."""
        checked = names[:MAX_SPELLED_GROUPS]
        return self._share([NAME_COLUMNS + quote(name) for name in checked], rowids, query)

    def _spelled(self, groups: list[list[list[str]]], rowids: list[int], query: str) -> dict[int, float]:
        """Share of the question's content groups each candidate spells anywhere (title, body, paths, diff)."""
        expressions = [" OR ".join(quote(s) for s in group if s) for group in groups[:MAX_SPELLED_GROUPS]]
        return self._share(expressions, rowids, query)

    def _share(self, expressions: list[str], rowids: list[int], query: str) -> dict[int, float]:
        """Per candidate, the share of `expressions` it matches (each expression's whole match list, read
        without ranking, intersected here: FTS5's `rowid IN` costs milliseconds per expression)."""
        if not expressions or not rowids:
            return {}
        among = set(rowids)
        counts: dict[int, int] = {}
        for expression in expressions:
            for (rowid,) in self._execute("SELECT rowid FROM entries_fts WHERE entries_fts MATCH ?", [expression], query):
                if rowid in among:
                    counts[rowid] = counts.get(rowid, 0) + 1
        return {rowid: n / len(expressions) for rowid, n in counts.items()}

    def _plan(self, phrases: list[str], budget: int) -> tuple[list[str], bool]:
        """The phrases one pass ranks over, and whether it must cap the scan to the newest matches."""
        if self._entry_total() < PRUNE_FROM_ENTRIES:
            return phrases, False
        counts = {p: self._doc_count(p) for p in phrases}
        kept: list[str] = []
        used = 0
        for phrase in sorted(phrases, key=counts.__getitem__):
            if used + counts[phrase] > budget:
                break
            kept.append(phrase)
            used += counts[phrase]
        if kept:
            return [p for p in phrases if p in kept], False
        return [min(phrases, key=counts.__getitem__)], True

    def _entry_total(self) -> int:
        """Entries in the wiki (its largest rowid); cached document counts are dropped when it grows."""
        total = self.db.execute("SELECT max(rowid) FROM entries").fetchone()[0] or 0
        if total != self._df_total:
            self._df, self._df_total = {}, total
        return total

    def _doc_count(self, phrase: str) -> int:
        """Matching rows, counted no further than ROW_BUDGET + 1 (cached until the wiki grows)."""
        if phrase not in self._df:
            sql = "SELECT count(*) FROM (SELECT 1 FROM entries_fts WHERE entries_fts MATCH ? LIMIT ?)"
            self._df[phrase] = self.db.execute(sql, (phrase, ROW_BUDGET + 1)).fetchone()[0]
        return self._df[phrase]

    def _rank(
        self, expression: str, where: str, params: list[str], limit: int, capped: bool, budget: int, query: str,
        weights: tuple[float, ...] = COLUMN_WEIGHTS,
    ) -> list[tuple[int, float]]:
        """(rowid, bm25) of the best `limit` rows; joins entries only when a filter needs it."""
        join = "JOIN entry_filters e ON e.rowid = entries_fts.rowid " if where else ""
        if capped:
            sql = (
                f"SELECT entries_fts.rowid, {rank_function(weights)} "
                f"FROM entries_fts {join}WHERE entries_fts MATCH ? {where} ORDER BY entries_fts.rowid DESC LIMIT ?"
            )
            rows = self._execute(sql, [expression, *params, budget], query)
            return sorted(rows, key=lambda row: row[1])[:limit]
        if self._entry_total() < PRUNE_FROM_ENTRIES:
            scanned = self._scan(expression, where, params, weights, query)
            return heapq.nsmallest(limit, scanned.items(), key=lambda row: (row[1], row[0]))
        sql = (
            f"SELECT entries_fts.rowid, rank FROM entries_fts {join}"
            f"WHERE entries_fts MATCH ? AND {_rank_clause(weights)} {where} "
            "ORDER BY rank LIMIT ?"
        )
        return self._execute(sql, [expression, *params, limit], query)

    def _scan(self, expression: str, where: str, params: list[str], weights: tuple[float, ...],
              query: str) -> dict[int, float]:  # fmt: skip
        """BM25 of every row matching `expression`, unordered, once per search: below PRUNE_FROM_ENTRIES entries a
        whole match list costs less to score than FTS5's ordered top-k or its `rowid IN` (23 vs 59 and 207 ms for
        60 rows of a 16-word question on the 11,000-entry wiki), and the rows a pass joins later are looked up."""
        key = (expression, where, tuple(params), weights)
        if key not in self._scanned:
            join = "JOIN entry_filters e ON e.rowid = entries_fts.rowid " if where else ""
            sql = f"SELECT entries_fts.rowid, {rank_function(weights)} FROM entries_fts {join}WHERE entries_fts MATCH ? {where}"
            self._scanned[key] = dict(self._execute(sql, [expression, *params], query))
        return self._scanned[key]

    def _hits(self, top: list[tuple[int, float]], terms: list[str]) -> list[Hit]:
        """Metadata and a snippet for the final rows only (plain rowid lookups: FTS5 `rowid IN` is slow)."""
        if not top:
            return []
        marks = ", ".join("?" * len(top))
        sql = f"SELECT rowid, id, title, kind, body, source_json, vendor, confidence FROM entries WHERE rowid IN ({marks})"
        rows = {r[0]: r for r in self.db.execute(sql, [rowid for rowid, _ in top])}
        return [
            Hit(
                id=r[1], title=r[2], kind=r[3], score=round(score, 4), snippet=snippet(r[4], terms),
                source=Source.model_validate_json(r[5]), vendor=r[6], confidence=r[7],
            )
            for rowid, score in top
            if (r := rows.get(rowid))
        ]

    def _execute(self, sql: str, params: list[object], query: str) -> list[tuple]:
        try:
            return self.db.execute(sql, params).fetchall()
        except sqlite3.OperationalError as exc:  # a query we built must never reach the user as SQL
            raise BadInput("query", f"cannot search for {query!r}: {exc}") from None

    def filter_sql(self, filters: dict[str, str | None]) -> tuple[str, list[str]]:
        """SQL conditions for vendor / arch / tag / kind, validated against their vocabularies."""
        clauses: list[str] = []
        params: list[str] = []
        if vendor := filters.get("vendor"):
            if vendor not in VENDORS:
                raise BadInput("--vendor", f"unknown vendor {vendor!r} (expected one of {', '.join(VENDORS)})")
            clauses.append("e.vendor IN (?, 'any')")
            params.append(vendor)
        if arch := filters.get("arch"):
            clauses.append("(instr(e.label_list, ?) > 0 OR instr(e.label_list, '\"arch:none\"') > 0)")
            params.append(f'"arch:{arch}"')
            if arch_vendor := self._arch_vendor(arch):
                clauses.append("e.vendor IN (?, 'any')")
                params.append(arch_vendor)
        if tag := (filters.get("tag") or "").lower():
            wanted = [tag] if tag.startswith("finding:") else [f"tag:{tag}", f"tech:{tag}", f"finding:{tag}"]
            clauses.append("(" + " OR ".join("instr(e.label_list, ?) > 0" for _ in wanted) + ")")
            params += [f'"{label}"' for label in wanted]
        if kind := filters.get("kind"):
            if kind not in KINDS:
                raise BadInput("--kind", f"unknown kind {kind!r} (expected one of {', '.join(KINDS)})")
            clauses.append("e.kind = ?")
            params.append(kind)
        return "".join(f" AND {c}" for c in clauses), params

    def _arch_vendor(self, arch: str) -> str | None:
        """The vendor an arch id implies (sm_* -> nvidia, gfx* -> amd), from the alias table."""
        for row in self.aliases.rows:
            if row.field == "arch" and row.canonical == arch:
                return row.vendor
        return "nvidia" if arch.startswith("sm_") else "amd" if arch.startswith("gfx") else None
