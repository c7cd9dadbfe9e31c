"""KernelWiki: a provenance-tracked SQLite/FTS5 knowledge base of kernel engineering.

Public API: `WikiStore` (search/get/add), `default_db_path`, `render_for_agent`, the entry
schema (`WikiEntry`, `Source`, `Hit`) and the two ingesters.
"""

from __future__ import annotations

from kloop.wiki.cards import load_cards, parse_card, shipped_cards
from kloop.wiki.git_ingest import GitIngester, IngestReport
from kloop.wiki.render import render_entry, render_for_agent
from kloop.wiki.schema import Hit, Source, WikiEntry
from kloop.wiki.store import WikiStore, default_db_path

__all__ = [
    "GitIngester",
    "Hit",
    "IngestReport",
    "Source",
    "WikiEntry",
    "WikiStore",
    "default_db_path",
    "load_cards",
    "parse_card",
    "render_entry",
    "render_for_agent",
    "shipped_cards",
]
