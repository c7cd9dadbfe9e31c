"""`kloop wiki search` without typer: the command's body, callable from the typer app and from the CLI's fast path.

`echo` is the caller's writer (typer.echo, or the fast path's byte-identical copy of it), so both
print the same bytes; the store, the ranking and the output format are the command's own.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kloop.wiki.schema import Hit


def run_search(query: str, *, k: int = 10, vendor: str | None = None, arch: str | None = None, tag: str | None = None,
               kind: str | None = None, no_aliases: bool = False, semantic: bool = False, db: Path | None = None,
               as_json: bool = False, echo: Callable[[str], None]) -> None:  # fmt: skip
    """BM25 search with alias expansion and filters; the evidence, then the cards apart as guidance."""
    from kloop.wiki.store import WikiStore

    with WikiStore(db) as store:
        if semantic:
            from kloop.wiki.semantic import SemanticReranker

            reranker = SemanticReranker.load()
            hits = reranker.search(store, query, k=k, vendor=vendor, arch=arch, tag=tag, kind=kind)
        else:
            hits = store.search(query, k=k, vendor=vendor, arch=arch, tag=tag, kind=kind, expand=not no_aliases)
        # cards take at most one of the first five hits: the rest of the guidance is listed apart, labelled
        guidance = [] if kind or tag else store.guidance(query, vendor=vendor, arch=arch, shown=frozenset(h.id for h in hits))
    if as_json:
        payload = {"hits": [h.contract_dict() for h in hits], "guidance": [h.contract_dict() for h in guidance]}
        echo(json.dumps(payload, ensure_ascii=False))
        return
    if not hits and not guidance:
        echo("no matches")
        return
    for hit in hits:
        _echo_hit(hit, echo)
    if guidance:
        echo("guidance (cards for the same question):")
        for hit in guidance:
            _echo_hit(hit, echo)


def _echo_hit(hit: Hit, echo: Callable[[str], None]) -> None:
    where = hit.source.url or hit.source.repo or ""
    echo(f"{hit.score:7.2f}  {hit.id}  [{hit.kind.value}/{hit.vendor.value}/{hit.confidence.value}]  {hit.title}")
    echo(f"         {hit.snippet}")
    if where:
        echo(f"         {where}")
