"""KernelWiki: a provenance-tracked SQLite/FTS5 knowledge base of kernel engineering."""
