"""How much of a question a commit title, or one file the commit created, spells.

A question's content words become groups of spellings (an alias span: the typed words and all
their synonyms). A title covers a group when it spells one of them. A created file covers it when
its path words do, each file on its own: a release that created
`sm90_gemm_tma_warpspecialized_pingpong.hpp` among hundreds of files spells "ping-pong
warp-specialized TMA GEMM kernel for sm90" in that one file, however long its other paths are.
Words match on their first STEM letters (a cheap stemmer: kernels = kernel), and a
multi-word spelling also matches its concatenation (`ping pong` = `pingpong`), because
identifiers and file names join words.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from kloop.wiki.aliases import tokens_of

STEM = 5
Group = list[list[str]]  # the spellings of one content word or alias span, each a token list
MAX_FILES = 2000  # created files read per candidate


@dataclass(frozen=True)
class Wanted:
    """A question's content groups, compiled once per search (candidates x files are many)."""

    singles: tuple[frozenset[str], ...]  # per group: its one-word spellings, as stems
    runs: tuple[frozenset[str], ...]  # per group: its multi-word spellings run together (pingpong)
    phrases: tuple[tuple[str, ...], ...]  # per group: its multi-word spellings as " a b " stem strings
    split: Callable[[str], tuple[str, ...]] | None = None  # run-together words of names (bf16gemm -> bf16 gemm)

    def __len__(self) -> int:
        return len(self.singles)


def wanted(groups: list[Group], split: Callable[[str], tuple[str, ...]] | None = None) -> Wanted:
    """Compile groups of spellings for matching; `split` reads run-together words of titles and names."""
    multi = [[s for s in group if len(s) > 1] for group in groups]
    return Wanted(
        singles=tuple(frozenset(s[0][:STEM] for s in group if len(s) == 1) for group in groups),
        runs=tuple(frozenset("".join(s) for s in m) for m in multi),
        phrases=tuple(tuple(" " + " ".join(w[:STEM] for w in s) + " " for s in m) for m in multi),
        split=split,
    )


@dataclass(frozen=True)
class _Words:
    """A title's or path's words, read once and kept: the same created files are weighed search after search."""

    stems: frozenset[str]
    whole: frozenset[str]
    joined: str  # " a b c " of the stems, for multi-word spellings


@lru_cache(maxsize=65536)
def _read(text: str, split: Callable[[str], tuple[str, ...]] | None) -> _Words:
    tokens = tokens_of(text)
    if split is not None:
        tokens += [piece for token in tokens for piece in split(token)]
    stems = [w[:STEM] for w in tokens]
    return _Words(frozenset(stems), frozenset(tokens), " " + " ".join(stems) + " ")


def _covered(words: _Words, want: Wanted) -> int:
    """How many groups the words spell."""
    n = 0
    for singles, runs, phrases in zip(want.singles, want.runs, want.phrases, strict=True):
        if not singles.isdisjoint(words.stems) or not runs.isdisjoint(words.whole):
            n += 1
        elif phrases:
            n += any(p in words.joined for p in phrases)
    return n


def title_coverage(title: str, want: Wanted) -> float:
    """Share of the question's content groups the title spells."""
    return _covered(_read(title, want.split), want) / len(want) if len(want) else 0.0


def file_coverage(files: list[str], want: Wanted) -> float:
    """The best share of content groups that one created file's path words spell."""
    if not len(want) or not files:
        return 0.0
    best = 0
    for path in files[:MAX_FILES]:
        best = max(best, _covered(_read(path.rsplit(".", 1)[0] if "." in path[-8:] else path, want.split), want))
        if best == len(want):
            break
    return best / len(want)
