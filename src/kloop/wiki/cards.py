"""CardIngester's half: reading curated markdown cards (YAML front matter + sections) into entries.

A card's entry id is `card/<id>`; `WikiStore.get` and the evaluation also accept the bare id.
Front matter is validated where it enters: a missing field, an unknown vendor, confidence or
finding id is a BadInput naming the card file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kloop.errors import BadInput
from kloop.wiki.aliases import AliasTable, default_alias_table
from kloop.wiki.schema import Confidence, EntryKind, Source, Vendor, WikiEntry, finding_ids

CARD_PREFIX = "card/"
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)(.*)\Z", re.S)
_CARD_ID = re.compile(r"^[a-z0-9][a-z0-9._\-]*$")


class CardSource(BaseModel):
    """A document a card cites."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(..., min_length=1, description="Where the claim can be checked.")
    title: str | None = Field(None, description="What the document is.")


class CardFrontMatter(BaseModel):
    """The YAML front matter of a card (keys beyond these are ignored)."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(..., description="Stable card id, lower-case, e.g. hopper-tma.")
    title: str = Field(..., min_length=1, description="One-line title.")
    vendor: Vendor = Field(..., description="nvidia, amd or any.")
    arch: list[str] = Field(default_factory=list, description="Architectures; may be empty.")
    tags: list[str] = Field(default_factory=list, description="Topic tags.")
    techniques: list[str] = Field(default_factory=list, description="Techniques the card teaches.")
    findings: list[str] = Field(default_factory=list, description="Profiler finding ids that point here.")
    confidence: Confidence = Field(..., description="verified, source-reported or inferred.")
    sources: list[CardSource] = Field(..., min_length=1, description="Documents the card cites.")
    license: str | None = Field(None, description="Licence of the card text.")

    @field_validator("id")
    @classmethod
    def _card_id(cls, value: str) -> str:
        if not _CARD_ID.match(value):
            raise ValueError(f"card id {value!r} must be lower-case letters, digits, '-', '_' or '.'")
        return value

    @field_validator("arch", "tags", "techniques", "findings", mode="before")
    @classmethod
    def _list(cls, value: object) -> object:
        return [] if value is None else value

    @field_validator("findings")
    @classmethod
    def _known_findings(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - finding_ids())
        if unknown:
            raise ValueError(f"unknown finding id(s) {', '.join(unknown)} (DESIGN.md's vocabulary)")
        return value


def _validation_line(exc: ValidationError) -> str:
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first["loc"]) or "front matter"
    kind = first["type"]
    if kind == "missing":
        return f"missing required field {loc!r}"
    allowed = {"vendor": "nvidia, amd, any", "confidence": "verified, source-reported, inferred"}
    if kind == "enum" and loc in allowed:
        return f"unknown {loc} {first.get('input')!r} (expected one of {allowed[loc]})"
    return f"{loc}: {first['msg'].removeprefix('Value error, ')}"


def parse_card(text: str, where: str, aliases: AliasTable | None = None) -> WikiEntry:
    """One card file's text -> a validated entry (BadInput names `where`)."""
    m = _FRONT.match(text.lstrip("\ufeff"))
    if not m:
        raise BadInput(where, "no YAML front matter (the file must start with a '---' block)")
    try:
        raw = yaml.safe_load(m.group(1))
    except yaml.YAMLError as exc:
        raise BadInput(where, f"front matter is not valid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(raw, dict):
        raise BadInput(where, "front matter must be a mapping of keys to values")
    try:
        card = CardFrontMatter.model_validate(raw)
    except ValidationError as exc:
        raise BadInput(where, _validation_line(exc)) from None
    body = m.group(2).strip()
    if not body:
        raise BadInput(where, "card has no body")
    table = aliases or default_alias_table()
    found = table.classify(" ".join([card.title, *card.tags, *card.techniques]))
    techniques = list(dict.fromkeys([*(t.lower() for t in card.techniques), *found.techniques]))
    tags = list(dict.fromkeys([*(t.lower() for t in card.tags), *found.tags]))
    first = card.sources[0]
    return WikiEntry(
        id=CARD_PREFIX + card.id,
        kind=EntryKind.card,
        title=card.title,
        body=body,
        tags=[*tags, *(f"finding:{f}" for f in card.findings)],
        vendor=card.vendor,
        arch=card.arch,
        techniques=techniques,
        source=Source(repo="kloop-cards", url=first.url, title=first.title, paths=[where], license=card.license),
        sources=[Source(url=s.url, title=s.title) for s in card.sources],
        confidence=card.confidence,
    )


def _walk(root: Traversable, prefix: str) -> Iterable[tuple[str, Traversable]]:
    for child in sorted(root.iterdir(), key=lambda c: c.name):
        if child.is_dir():
            yield from _walk(child, f"{prefix}{child.name}/")
        elif child.name.endswith(".md") and child.name.lower() != "readme.md":
            yield f"{prefix}{child.name}", child


def load_cards(root: Traversable | Path, label: str, aliases: AliasTable | None = None) -> list[WikiEntry]:
    """Every `*.md` card under `root` (README.md files excepted); duplicate ids are an error."""
    if not root.is_dir():
        raise BadInput(label, "no such card directory")
    entries: list[WikiEntry] = []
    seen: dict[str, str] = {}
    for relative, item in _walk(root, f"{label.rstrip('/')}/"):
        entry = parse_card(item.read_text(encoding="utf-8"), relative, aliases)
        if entry.id in seen:
            raise BadInput(relative, f"card id {entry.id.removeprefix(CARD_PREFIX)!r} already used by {seen[entry.id]}")
        seen[entry.id] = relative
        entries.append(entry)
    return entries


def shipped_cards(aliases: AliasTable | None = None) -> list[WikiEntry]:
    """kloop's own curated cards (src/kloop/wiki/cards/), read through importlib.resources."""
    root = resources.files("kloop.wiki").joinpath("cards")
    if not root.is_dir():
        return []
    return load_cards(root, "kloop/wiki/cards", aliases)
