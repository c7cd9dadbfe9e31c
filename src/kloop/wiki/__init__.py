"""KernelWiki: a provenance-tracked SQLite/FTS5 knowledge base of kernel engineering.

Public API: `WikiStore` (search/get/add), `default_db_path`, `render_for_agent`, the entry
schema (`WikiEntry`, `Source`, `Hit`) and the two ingesters. Names load on first use, so
importing a submodule (the CLI's `kloop.wiki.commands`) does not pay for all of them.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "GitIngester": "kloop.wiki.git_ingest",
    "IngestReport": "kloop.wiki.git_ingest",
    "Hit": "kloop.wiki.schema",
    "Source": "kloop.wiki.schema",
    "WikiEntry": "kloop.wiki.schema",
    "WikiStore": "kloop.wiki.store",
    "default_db_path": "kloop.wiki.store",
    "load_cards": "kloop.wiki.cards",
    "parse_card": "kloop.wiki.cards",
    "shipped_cards": "kloop.wiki.cards",
    "render_entry": "kloop.wiki.render",
    "render_for_agent": "kloop.wiki.render",
    "build_topics": "kloop.wiki.topics",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """PEP 562: import the module that defines `name` when it is first asked for."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kloop.wiki' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
