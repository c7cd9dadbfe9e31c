"""Splitting run-together words of kernel file names into the words they join.

Kernel file names glue words together: `bf16gemm`, `topksoftmax`, `pertokenFp8`, `i8gemm`,
`cktile2stages`. A question says "bf16 GEMM" or "top-k softmax", so BM25 and the per-file
coverage see no match unless the name is also read as its parts. A token is split only when it
is covered entirely by known words (the alias table's single-word spellings, at least one of
them three letters or longer) and short type-like pieces (one letter and digits: `a8`, `w8`,
`g1`; or digits after a word: `gqa16`); the split with the fewest pieces wins. Tile shapes
(`32x128`, `m16x4`) and anything not wholly covered stay one word, so `paged` never becomes
`pa` + `ged`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from kloop.wiki.aliases import AliasTable, tokens_of
from kloop.wiki.query import STOPWORDS

_TYPE_PIECE = re.compile(r"[a-z]\d+")  # a8, w8, g1, u1, f4, i8, v3
_DIGITS = re.compile(r"\d+")
_SHAPE = re.compile(r"[a-z]{0,2}\d+(?:x\d+)*[a-z]{0,2}(?:x\d+)+")  # 32x128, m16x4, 16mx4, 256x128x64
MIN_WORD = 2  # shortest vocabulary piece
ANCHOR = 3  # a split needs one vocabulary piece at least this long


class CompoundSplitter:
    """`split(token)` -> the words a run-together token joins, or [] when it is not one."""

    def __init__(self, vocabulary: Iterable[str]) -> None:
        self.vocabulary = frozenset(w for w in vocabulary if len(w) >= MIN_WORD and not w.isdigit())
        self.split = lru_cache(maxsize=131072)(self._split)

    def _split(self, token: str) -> tuple[str, ...]:
        if len(token) < 5 or token in self.vocabulary or _SHAPE.fullmatch(token):
            return ()
        n = len(token)
        best: list[tuple[str, ...] | None] = [None] * (n + 1)
        best[0] = ()
        for i in range(n):
            head = best[i]
            if head is None:
                continue
            for j in range(i + 1, n + 1):
                piece = token[i:j]
                if not self._piece(piece, first=i == 0):
                    continue
                candidate = (*head, piece)
                if best[j] is None or len(candidate) < len(best[j]):  # type: ignore[arg-type]
                    best[j] = candidate
        pieces = best[n]
        if not pieces or len(pieces) < 2 or not any(len(p) >= ANCHOR and p in self.vocabulary for p in pieces):
            return ()
        return pieces

    def _piece(self, piece: str, first: bool) -> bool:
        if piece in self.vocabulary:
            return True
        if _TYPE_PIECE.fullmatch(piece):
            return True
        return not first and bool(_DIGITS.fullmatch(piece))

    def expand(self, tokens: Iterable[str]) -> list[str]:
        """The tokens, each followed by its pieces when it is a run-together word."""
        out: list[str] = []
        for token in tokens:
            out.append(token)
            out.extend(self.split(token))
        return out


@lru_cache(maxsize=8)
def splitter_for(table: AliasTable) -> CompoundSplitter:
    """The splitter whose vocabulary is the table's one-word spellings (synonyms and related terms)."""
    words = {t for row in table.rows for s in (*row.synonyms, *row.related) for t in tokens_of(s)}
    return CompoundSplitter(words - STOPWORDS)
