"""KernelWiki: a provenance-tracked SQLite/FTS5 knowledge base of kernel engineering.

Public API: `WikiStore` (search/get/add), `default_db_path`, `render_for_agent`, the entry
schema (`WikiEntry`, `Source`, `Hit`) and the two ingesters. Names load on first use, so
importing a submodule (the CLI's `kloop.wiki.commands`) does not pay for all of them.
"""

from __future__ import annotations

from kloop.lazy import lazy_exports

_EXPORTS = {
    "GitIngester": "kloop.wiki.git_ingest",
    "IngestReport": "kloop.wiki.git_ingest",
    "Hit": "kloop.wiki.schema",
    "Source": "kloop.wiki.schema",
    "WikiEntry": "kloop.wiki.schema",
    "WikiStore": "kloop.wiki.store",
    "default_db_path": "kloop.wiki.location",
    "load_cards": "kloop.wiki.cards",
    "parse_card": "kloop.wiki.cards",
    "shipped_cards": "kloop.wiki.cards",
    "render_entry": "kloop.wiki.render",
    "render_for_agent": "kloop.wiki.render",
    "build_topics": "kloop.wiki.topics",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)
