"""The alias table: canonical kernel-engineering names, their spellings, and what they imply.

One table (aliases.yaml, beside this module) serves two jobs, so they can never drift apart:
classifying commit text into techniques / tags / arch / vendor, and expanding search queries
(`wgmma` <-> `warpgroup mma`, `lds` <-> `shared memory`). Matching is on token boundaries:
a match may not touch a letter or digit on either side, so `lds` never fires inside `builds`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kloop.errors import BadInput
from kloop.wiki.schema import finding_ids

AliasField = Literal["technique", "tag", "arch", "vendor", "learned"]  # learned: search expansion only

_TOKEN = re.compile(r"[a-z0-9]+")
# Inflections a text token may carry beyond a synonym's last token, with the shortest stem
# each may leave: 'tmas' -> 'tma', 'swizzled' -> 'swizzle', but 'cked' is never 'ck'.
_INFLECTIONS: tuple[tuple[str, int], ...] = (("s", 2), ("es", 4), ("ed", 4), ("d", 4), ("ing", 4))


def tokens_of(text: str) -> list[str]:
    """Lower-case alphanumeric tokens: '_', '-', '.', '/' and spaces all separate."""
    return _TOKEN.findall(text.lower())


_UNSEEN: list[int] = []  # sentinel for the first-token cache (an identity check, never mutated)


@lru_cache(maxsize=65536)
def stems(token: str) -> tuple[str, ...]:
    """The token and what it could be with an inflection removed (cached: tokens repeat)."""
    out = [token]
    for suffix, shortest in _INFLECTIONS:
        if token.endswith(suffix) and len(token) - len(suffix) >= shortest:
            out.append(token[: -len(suffix)])
    return tuple(out)


class AliasRow(BaseModel):
    """One canonical name and everything that spells or implies it."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # validators built only when a YAML is parsed

    canonical: str = Field(..., description="Name stored on entries.")
    field: AliasField = Field(..., description="Which entry field a match fills.")
    vendor: Literal["nvidia", "amd"] | None = Field(None, description="Vendor a match implies.")
    arch: list[str] = Field(
        default_factory=list, description="Usual architectures (documentation; a technique is no arch claim)."
    )
    findings: list[str] = Field(default_factory=list, description="Profiler finding ids it answers.")
    synonyms: list[str] = Field(..., min_length=1, description="Spellings that classify text as this row.")
    related: list[str] = Field(default_factory=list, description="Query-expansion-only terms.")
    expand: bool = Field(True, description="Whether queries are expanded with this row.")


class AliasFile(BaseModel):
    """The whole alias file."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    repos: dict[str, Literal["nvidia", "amd"]] = Field(default_factory=dict, description="Repo -> vendor.")
    aliases: list[AliasRow] = Field(..., description="The rows.")


@dataclass
class Classification:
    """What the alias table read out of a piece of text."""

    techniques: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    arch: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    nvidia_votes: int = 0
    amd_votes: int = 0

    def vendor(self, default: str = "any") -> str:
        """Majority of vendor signals; a tie or no signal falls back to `default`."""
        if self.nvidia_votes > self.amd_votes:
            return "nvidia"
        if self.amd_votes > self.nvidia_votes:
            return "amd"
        return default


class TokenMatcher:
    """Longest-first matching of token n-grams: boundaries hold by construction."""

    def __init__(self, terms: list[tuple[str, int]]) -> None:
        self.keys: dict[tuple[str, ...], int] = {}
        for term, row in terms:
            parts = tokens_of(term)
            if not parts:
                continue
            self.keys.setdefault(tuple(parts), row)
            if len(parts) > 1:  # 'split k' also spells 'splitk'
                self.keys.setdefault(("".join(parts),), row)
        lengths: dict[str, set[int]] = {}
        for key in self.keys:
            lengths.setdefault(key[0], set()).add(len(key))
        # the n-gram lengths worth trying after each first token, longest first
        self.lengths = {first: sorted(ns, reverse=True) for first, ns in lengths.items()}
        self._first_cache: dict[str, list[int] | None] = {}

    def scan(self, tokens: list[str]) -> list[tuple[int, int, int]]:
        """(first token, end token, row) of each match, left to right, longest first."""
        found: list[tuple[int, int, int]] = []
        cache = self._first_cache
        i, count = 0, len(tokens)
        while i < count:
            lengths = cache.get(tokens[i], _UNSEEN)
            if lengths is _UNSEEN:
                lengths = self._lengths_for(tokens[i])
            hit = self._match_at(tokens, i, lengths) if lengths else None
            if hit is None:
                i += 1
                continue
            found.append((i, i + hit[0], hit[1]))
            i += hit[0]
        return found

    def _lengths_for(self, token: str) -> list[int] | None:
        """N-gram lengths worth trying from this token (memoized: most tokens start nothing)."""
        lengths = self.lengths.get(token)
        if lengths is None:
            lengths = next((self.lengths[s] for s in stems(token)[1:] if s in self.lengths), None)
        if len(self._first_cache) < 200_000:
            self._first_cache[token] = lengths
        return lengths

    def _match_at(self, tokens: list[str], i: int, lengths: list[int]) -> tuple[int, int] | None:
        for n in lengths:
            if i + n > len(tokens):
                continue
            head = tuple(tokens[i : i + n - 1])
            for last in stems(tokens[i + n - 1]):
                row = self.keys.get((*head, last))
                if row is not None:
                    return n, row
        return None


class AliasTable:
    """The compiled table: `classify(text)` for ingest, `expansions(query)` for search."""

    def __init__(self, spec: AliasFile) -> None:
        self.spec = spec
        self.rows = spec.aliases
        self.repo_vendor = {k.lower(): v for k, v in spec.repos.items()}
        self._classifier = TokenMatcher([(s, i) for i, r in enumerate(self.rows) for s in r.synonyms])
        self._expander = TokenMatcher(
            [(s, i) for i, r in enumerate(self.rows) if r.expand for s in [*r.synonyms, *r.related]]
        )

    def classify(self, text: str) -> Classification:
        """Techniques, tags, arch, findings and vendor votes found in `text`."""
        out = Classification()
        seen: set[int] = set()
        for _, _, index in self._classifier.scan(tokens_of(text)):
            row = self.rows[index]
            if row.vendor == "nvidia":
                out.nvidia_votes += 1
            elif row.vendor == "amd":
                out.amd_votes += 1
            if index in seen:
                continue
            seen.add(index)
            target = {"technique": out.techniques, "tag": out.tags, "arch": out.arch}.get(row.field)
            if target is not None and row.canonical not in target:
                target.append(row.canonical)
            out.findings.extend(f for f in row.findings if f not in out.findings)
        return out

    def expansions(self, tokens: list[str]) -> list[tuple[int, int, list[str]]]:
        """(first, end, terms) per alias span of query tokens: the span may be any of `terms`."""
        return [(a, b, [tokens_of_span, *syn, *rel]) for a, b, tokens_of_span, syn, rel in self.expansion_groups(tokens)]

    def expansion_groups(self, tokens: list[str]) -> list[tuple[int, int, str, list[str], list[str]]]:
        """(first, end, typed span, other synonyms, related terms) per alias span of query tokens."""
        spans = []
        for a, b, index in self._expander.scan(tokens):
            row = self.rows[index]
            typed = " ".join(tokens[a:b])
            synonyms = [t for t in dict.fromkeys(row.synonyms) if tokens_of(t) != tokens[a:b]]
            related = [t for t in dict.fromkeys(row.related) if t not in synonyms and tokens_of(t) != tokens[a:b]]
            spans.append((a, b, typed, synonyms, related))
        return spans

    def with_abbreviations(self, pairs: list[tuple[str, str]]) -> AliasTable:
        """This table with each (short, long) pair spelling the same thing in a search: the short form joins the
        row that already spells the long one (or the long form joins the short one's), else the two make a row
        of their own, field `learned`, which labels no entry (kloop.wiki.abbreviations learns the pairs)."""
        rows = list(self.rows)
        for short, long in pairs:
            index = self._expander.keys.get(tuple(tokens_of(long)), self._expander.keys.get((short,)))
            if index is not None and rows[index].expand:
                row = rows[index]
                rows[index] = row.model_copy(update={"synonyms": list(dict.fromkeys([*row.synonyms, long, short]))})
            else:
                rows.append(AliasRow.model_construct(
                    canonical=long, field="learned", vendor=None, arch=[], findings=[], synonyms=[long, short],
                    related=[], expand=True))
        return AliasTable(AliasFile.model_construct(repos=self.spec.repos, aliases=rows))

    def vendor_for_repo(self, repo: str) -> str | None:
        """The vendor a whole repository is about (cutlass -> nvidia), when the table knows it."""
        return self.repo_vendor.get(repo.lower().rsplit("/", 1)[-1])


def load_alias_table(text: str, where: str) -> AliasTable:
    """Parse and validate an alias file; BadInput names `where` on any problem."""
    return AliasTable(_parse_alias_file(text, where))


def _parse_alias_file(text: str, where: str, cache_as: str | None = None) -> AliasFile:
    """Validate the YAML (parsed through kloop.wiki.yamlcache when `cache_as` names the cache entry)."""
    from kloop.wiki.yamlcache import YamlError, load_yaml, parse_yaml

    try:
        raw = parse_yaml(text) if cache_as is None else load_yaml(text, cache_as)
        spec = AliasFile.model_validate(raw)
    except YamlError as exc:
        raise BadInput(where, f"not valid YAML: {exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise BadInput(where, f"{loc}: {first['msg']}") from None
    known = finding_ids()
    for row in spec.aliases:
        if unknown := sorted(set(row.findings) - known):
            raise BadInput(where, f"alias {row.canonical!r}: unknown finding id(s) {', '.join(unknown)}")
    return spec


@lru_cache(maxsize=1)
def default_alias_table() -> AliasTable:
    """kloop's shipped alias table (its YAML parse read back from kloop.wiki.yamlcache after the first)."""
    ref = resources.files("kloop.wiki").joinpath("aliases.yaml")
    return AliasTable(_parse_alias_file(ref.read_text(encoding="utf-8"), "kloop/wiki/aliases.yaml", cache_as="aliases"))
