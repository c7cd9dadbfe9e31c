"""Turning what a user or agent types into a safe FTS5 MATCH expression.

Every term is re-tokenized and double-quoted, so punctuation, quotes, `AND`/`NEAR`, colons or
unbalanced parentheses in a query can never become FTS5 syntax (and never crash a search).
Alias spans become OR-groups from the shared alias table; inline `key:value` words become filters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kloop.wiki.aliases import AliasTable, tokens_of
from kloop.wiki.symptoms import SymptomTable

# Words that carry no kernel meaning in a question; dropped unless nothing else is left.
STOPWORDS = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how", "i", "if", "in", "into", "is", "it", "its", "my", "of", "on", "or", "our", "should", "so", "than", "that", "the", "their", "then", "there", "these", "this", "to", "use", "using", "was", "we", "what", "when", "where", "which", "while", "who", "why", "will", "with", "without", "you", "your", "me", "make", "makes", "get", "gets", "via", "vs", "versus", "about", "any", "all", "more", "most", "less", "just", "also", "only", "other", "some", "such", "way", "ways", "best", "help", "helps", "fast", "faster"]
)

# Inline filters a query may carry, e.g. `vendor:amd arch:gfx942 tag:gemm kind:card finding:tail_effect`.
INLINE_KEYS = ("vendor", "arch", "tag", "kind", "finding")
_INLINE = re.compile(r"(?<!\S)(" + "|".join(INLINE_KEYS) + r"):([A-Za-z0-9_.\-]+)(?!\S)")


# A hyphenated word of two or three parts: code and commit titles often write it joined (all-reduce: allreduce).
_COMPOUND = re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z0-9]+(?:-[A-Za-z0-9]+){1,2}(?![A-Za-z0-9_-])")


def compounds(text: str) -> list[list[str]]:
    """The parts of each hyphenated word in `text` ("per-channel" -> [per, channel])."""
    return [tokens_of(word) for word in _COMPOUND.findall(text)]


def adjacent_pairs(tokens: list[str], drop: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """Neighbouring content words, which names and titles often write as one ("Maxpool", "groupnorm", "allgather")."""
    content = [len(t) > 1 and t.isalpha() and t not in STOPWORDS and t not in drop for t in tokens]
    return [(tokens[i], tokens[i + 1]) for i in range(len(tokens) - 1) if content[i] and content[i + 1]]


@dataclass
class ParsedQuery:
    """A query split into quoted FTS5 phrases (typed words, alias alternatives) and inline filters."""

    clauses: list[str] = field(default_factory=list)
    alternatives: list[str] = field(default_factory=list)  # related terms of alias rows
    filters: dict[str, str] = field(default_factory=dict)
    findings: list[str] = field(default_factory=list)
    terms: list[str] = field(default_factory=list)
    synonyms: list[str] = field(default_factory=list)  # other spellings of what was typed
    mechanisms: list[str] = field(default_factory=list)  # what fixes of the symptoms named say (symptoms.yaml)


def quote(phrase_tokens: list[str] | tuple[str, ...]) -> str:
    """One FTS5 phrase from already-alphanumeric tokens."""
    return '"' + " ".join(phrase_tokens) + '"'


def parse_query(
    text: str, aliases: AliasTable | None, *, expand: bool = True, drop: frozenset[str] = frozenset(),
    symptoms: SymptomTable | None = None,
) -> ParsedQuery:
    """Build the MATCH expressions: the user's own terms, and (separately) their alias spellings and
    the mechanisms of the symptoms they name.

    Keeping the alternatives apart lets search weigh a match on the words typed above a match on
    a synonym, and a synonym above a mechanism, so expansion adds recall without drowning precision.
    """
    filters: dict[str, str] = {}
    findings: list[str] = []
    for key, value in _INLINE.findall(text):
        if key == "finding":
            findings.append(value.lower())
        else:
            filters[key] = value
    free = _INLINE.sub(" ", text)
    tokens = tokens_of(free)
    clauses: list[str] = []
    alternatives: list[str] = []
    synonyms: list[str] = []
    terms: list[str] = []
    covered: set[int] = set()
    if expand and aliases is not None:
        for start, end, typed, other, related in aliases.expansion_groups(tokens):
            clauses.append(quote(tokens[start:end]))
            synonyms += [quote(tokens_of(s)) for s in other if tokens_of(s)]
            alternatives += [quote(tokens_of(s)) for s in related if tokens_of(s)]
            terms.extend([typed, *other, *related])
            covered.update(range(start, end))
    rest = [t for i, t in enumerate(tokens) if i not in covered]
    kept = [t for t in rest if t not in STOPWORDS and t not in drop] or ([] if clauses else rest)
    for token in kept:
        clauses.append(quote([token]))
        terms.append(token)
    for parts in compounds(free):
        if (joined := "".join(parts)) not in tokens:
            clauses.append(quote([joined]))
            terms.append(joined)
    for finding in findings:
        clauses.append("labels : " + quote(["finding", *tokens_of(finding)]))
    clauses = list(dict.fromkeys(clauses))
    synonyms = [a for a in dict.fromkeys(synonyms) if a not in clauses]
    alternatives = [a for a in dict.fromkeys(alternatives) if a not in clauses and a not in synonyms]
    mechanisms: list[str] = []
    if expand and symptoms is not None:
        taken = {*clauses, *synonyms, *alternatives}
        mechanisms = [m for m in dict.fromkeys(quote(tokens_of(x)) for x in symptoms.expansions(free)) if m not in taken]
    return ParsedQuery(clauses, alternatives, filters, findings, terms, synonyms, mechanisms)
