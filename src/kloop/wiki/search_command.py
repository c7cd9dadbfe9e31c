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
    from kloop.wiki.store import WikiStore


def run_search(query: str, *, k: int = 10, vendor: str | None = None, arch: str | None = None, tag: str | None = None,
               kind: str | None = None, no_aliases: bool = False, semantic: bool = False, db: Path | None = None,
               as_json: bool = False, echo: Callable[[str], None]) -> None:  # fmt: skip
    """BM25 search with alias expansion and filters; the evidence, then the cards apart as guidance.

    A `kloop wiki serve` of this wiki answers it when one runs (kloop.wiki.resident), with the same lines."""
    request = {"query": query, "k": k, "vendor": vendor, "arch": arch, "tag": tag, "kind": kind,
               "no_aliases": no_aliases, "as_json": as_json}
    if not semantic:
        from kloop.wiki.resident import ask

        if ask(db, request, echo):
            return
    from kloop.wiki.store import WikiStore

    with WikiStore(db) as store:
        lines = search_lines(store, **request, semantic=semantic)
    for line in lines:
        echo(line)


def search_lines(store: WikiStore, query: str, *, k: int = 10, vendor: str | None = None, arch: str | None = None,
                 tag: str | None = None, kind: str | None = None, no_aliases: bool = False, semantic: bool = False,
                 as_json: bool = False) -> list[str]:  # fmt: skip
    """What `kloop wiki search` prints for this search of an open wiki, line by line."""
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
        return [json.dumps(payload, ensure_ascii=False)]
    if not hits and not guidance:
        return ["no matches"]
    lines: list[str] = []
    for hit in hits:
        lines += _hit_lines(hit)
    if guidance:
        lines.append("guidance (cards for the same question):")
        for hit in guidance:
            lines += _hit_lines(hit)
    return lines


def _hit_lines(hit: Hit) -> list[str]:
    where = hit.source.url or hit.source.repo or ""
    lines = [f"{hit.score:7.2f}  {hit.id}  [{hit.kind.value}/{hit.vendor.value}/{hit.confidence.value}]  {hit.title}",
             f"         {hit.snippet}"]
    return lines + ([f"         {where}"] if where else [])
