"""How much of a question a commit title, or one file the commit created, spells.

A question's content words become groups of spellings (an alias span: the typed words and all
their synonyms). A title covers a group when it spells one of them. A created file covers it when
its path words do, each file on its own: a release that created
`sm90_gemm_tma_warpspecialized_pingpong.hpp` among hundreds of files spells "ping-pong
warp-specialized TMA GEMM kernel for sm90" in that one file, however long its other paths are.
Words match on their first STEM letters (a cheap stemmer that also folds plurals), and a
multi-word spelling also matches its concatenation (`ping pong` = `pingpong`), because
identifiers and file names join words.
"""

from __future__ import annotations

from kloop.wiki.aliases import tokens_of

STEM = 5
Group = list[list[str]]  # the spellings of one content word or alias span, each a token list
MAX_FILES = 2000  # created files read per candidate


def _spells(stems: set[str], joined: str, words: set[str], spelling: list[str]) -> bool:
    """Whether text with these stems / joined stems / whole words spells `spelling`."""
    if len(spelling) == 1:
        return spelling[0][:STEM] in stems
    phrase = " ".join(w[:STEM] for w in spelling)
    return f" {phrase} " in joined or "".join(spelling) in words


def _covered(words: list[str], groups: list[Group]) -> int:
    """How many groups the word sequence spells."""
    stems = {w[:STEM] for w in words}
    joined = " " + " ".join(w[:STEM] for w in words) + " "
    whole = set(words)
    return sum(any(_spells(stems, joined, whole, s) for s in group) for group in groups)


def title_coverage(title: str, groups: list[Group]) -> float:
    """Share of the question's content groups the title spells."""
    return _covered(tokens_of(title), groups) / len(groups) if groups else 0.0


def file_coverage(files: list[str], groups: list[Group]) -> float:
    """The best share of content groups that one created file's path words spell."""
    if not groups or not files:
        return 0.0
    best = 0
    for path in files[:MAX_FILES]:
        best = max(best, _covered(tokens_of(path.rsplit(".", 1)[0] if "." in path[-8:] else path), groups))
        if best == len(groups):
            break
    return best / len(groups)
