"""KernelWiki's data shapes: an entry, where it came from, and a search hit.

These are the contract of DESIGN.md's KernelWiki section; everything that enters the store
(git history, cards, documents) is validated into a `WikiEntry` first.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator

_WHITESPACE = re.compile(r"\s")


class EntryKind(StrEnum):
    """What an entry was mined from."""

    pr = "pr"
    commit = "commit"
    card = "card"
    doc = "doc"


class Vendor(StrEnum):
    """Which hardware vendor an entry is about; `any` is vendor-neutral."""

    nvidia = "nvidia"
    amd = "amd"
    any = "any"


class Confidence(StrEnum):
    """How far the entry's claim has been checked."""

    verified = "verified"
    source_reported = "source-reported"
    inferred = "inferred"


def finding_ids() -> frozenset[str]:
    """The finding vocabulary (`kloop.findings`, shared with the profiler)."""
    from kloop.findings import FindingId

    return frozenset(str(member.value) for member in FindingId)


def utc_now() -> str:
    """An ISO-8601 UTC timestamp, the form every `captured_at` uses."""
    return datetime.now(UTC).replace(microsecond=0).isoformat()


class Source(BaseModel):
    """Where an entry came from: enough to find the original and to honour its licence."""

    model_config = ConfigDict(extra="forbid")

    repo: str | None = Field(None, description="Repository name, e.g. 'cutlass' or 'ROCm/aiter'.")
    url: str | None = Field(None, description="Web address of the commit, PR or document.")
    commit: str | None = Field(None, description="Full commit sha for git entries.")
    pr: int | None = Field(None, description="Pull/merge request number when the history names one.")
    paths: list[str] = Field(default_factory=list, description="Changed kernel files (git) or the card file.")
    date: str | None = Field(None, description="Author date (git) as ISO-8601.")
    license: str | None = Field(None, description="SPDX id of the upstream licence, when detected.")
    title: str | None = Field(None, description="Human title of the source (cards cite documents).")


class WikiEntry(BaseModel):
    """One unit of kernel knowledge with its provenance."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # built on first use: searches never need it

    id: str = Field(..., min_length=1, description="Stable id: 'card/<card-id>' or '<repo>@<sha12>'.")
    kind: EntryKind = Field(..., description="pr, commit, card or doc.")
    title: str = Field(..., description="One-line summary (commit subject, card title).")
    body: str = Field("", description="Full text: commit message or card markdown.")
    tags: list[str] = Field(default_factory=list, description="Topic tags; 'finding:<id>' links profiler findings.")
    vendor: Vendor = Field(Vendor.any, description="nvidia, amd or any.")
    arch: list[str] = Field(default_factory=list, description="Architectures, e.g. sm_90, gfx942.")
    techniques: list[str] = Field(default_factory=list, description="Canonical technique names (alias table).")
    source: Source = Field(default_factory=Source, description="Provenance.")
    sources: list[Source] = Field(default_factory=list, description="Further sources a card cites.")
    confidence: Confidence = Field(Confidence.source_reported, description="How far the claim is checked.")
    captured_at: str = Field(default_factory=utc_now, description="When kloop stored this entry (UTC).")
    excerpt: str = Field("", description="Short excerpt of the kernel diff (git entries).")
    stats: dict[str, int] = Field(default_factory=dict, description="Diff statistics: files, added, deleted.")
    path_terms: str = Field("", description="Searchable words of every changed kernel path (git entries).")
    added_terms: str = Field("", description="Words of the kernel files the commit created (git entries).")
    added_files: list[str] = Field(
        default_factory=list, description="Kernel files the commit created, each scored on its own for introductions."
    )

    @field_validator("id")
    @classmethod
    def _no_whitespace(cls, value: str) -> str:
        if _WHITESPACE.search(value):
            raise ValueError("an entry id has no whitespace")
        return value

    @property
    def findings(self) -> list[str]:
        """Profiler finding ids this entry answers (from its `finding:` tags)."""
        return [t.split(":", 1)[1] for t in self.tags if t.startswith("finding:")]


class Hit(BaseModel):
    """One search result, shaped exactly as the `kloop wiki search --json` contract."""

    id: str = Field(..., description="Entry id, cite it.")
    title: str = Field(..., description="Entry title.")
    kind: EntryKind = Field(..., description="pr, commit, card or doc.")
    score: float = Field(..., description="Relevance, higher is better (negated FTS5 bm25).")
    snippet: str = Field(..., description="Matching text with the matched terms in [brackets].")
    source: Source = Field(..., description="Provenance of the entry.")
    vendor: Vendor = Field(Vendor.any, exclude=True, description="Kept for rendering; not in the JSON.")
    confidence: Confidence = Field(Confidence.source_reported, exclude=True, description="For rendering.")

    def contract_dict(self) -> dict[str, object]:
        """The JSON object of the contract: id, title, kind, score, snippet, source."""
        return self.model_dump(mode="json")
