"""What a question asks for, read from its words: a first introduction, a move, a vendor, a repository.

Whether a question is phrased as history ("which commit added X") or as a how-to, a symptom or a
few keywords no longer decides how it is searched: every phrasing takes the same retrieval and the
same ranker (search.py), so a paraphrase finds the same evidence. `history` is kept as what the
words say, for reports and tests. Introduction questions ("when was X added", "first") favour
commits that added kernel files. The word lists are data; the factors were set on the training
splits of bench/wiki_real (see docs/wiki.md), never on a blind one.
"""

from __future__ import annotations

from dataclasses import dataclass

from kloop.wiki.aliases import AliasTable, tokens_of

# History: a word that only history questions use, or a wh-word with an action on the code base
# ("when was X added", "which commit moved Y"); "which instruction should I use" is a how-to.
HISTORY_ONLY = frozenset(
    ["commit", "commits", "pr", "prs", "history", "introduced", "introduce", "introduces", "introducing", "landed",
     "merged", "release", "released"]
)
WH_WORDS = frozenset(["when", "which", "where", "who"])
ACTIONS = frozenset(
    ["added", "add", "enabled", "integrated", "brought", "moved", "renamed", "redesigned", "replaced", "disabled",
     "first", "land", "lands", "removed", "rewritten", "rewrote", "switched", "ported", "get", "got", "solved", "fixed"]
)
HISTORY_WORDS = HISTORY_ONLY | WH_WORDS | ACTIONS  # words that name the question, not its subject
INTRO_WORDS = frozenset(
    ["added", "add", "introduced", "introduce", "introduces", "introducing", "first", "initial", "land",
     "landed", "new", "when", "enabled", "integrated", "brought", "released"]
)
# A question about a move or rename asks for the commit a history question otherwise weighs down.
MOVE_WORDS = frozenset(["moved", "move", "moving", "renamed", "rename", "relocated", "reorganized", "reorganised",
                        "restructured"])
# "When did / could / was X ..." asks about the past whatever the verb ("When did CK support ...");
# so does "What first / added / moved X", where a how-to "what" asks what to do ("what tile size").
PAST_AUXILIARIES = frozenset(["did", "could", "was", "were"])
PRESENT_ACTIONS = frozenset(["add", "get", "land", "lands"])
# A how-to ("How do I ...", "Is there a way to ...", "Can the op take ..."): the answer is the commit that added
# the capability asked about, often a later extension of an older feature rather than its first commit.
HOWTO_OPENINGS = (("how", "do"), ("how", "can"), ("how", "should"), ("how", "would"), ("is", "there"),
                  ("can", "i"), ("can", "we"), ("can", "you"), ("can", "the"), ("can", "it"))
# Words that name the question, not the answer: dropped from history queries.
QUESTION_ONLY = frozenset(["commit", "commits", "pr", "prs", "history"])


@dataclass(frozen=True)
class Intent:
    """How to weigh kinds of entries for one query."""

    history: bool = False  # phrased as a history question (read, not acted on: every phrasing is searched alike)
    introduction: bool = False
    intro_boost: float = 0.0
    vendor: str | None = None  # the vendor the question names (MI300, gfx950, mfma -> amd)
    repos: tuple[str, ...] = ()  # the repositories the question names (lower-case short names)
    moves: bool = False  # the question asks about a move or rename: such commits are not down-weighted
    howto: bool = False  # the question asks how to do something (HOWTO_OPENINGS), anywhere in it


# Scores multiply: an entry that adds kernel files under an introduction question.
INTRO_BOOST = 0.3
# An entry of the vendor / repository the question names counts this much more.
VENDOR_BOOST = 0.5
REPO_BOOST = 0.5
# Short names people use for a repository, beyond the alias table's `repos:` keys.
REPO_WORDS = {"ck": "composable_kernel", "ck_tile": "composable_kernel", "cute": "cutlass"}


def read_intent(query: str, aliases: AliasTable | None = None) -> Intent:
    """History when the question asks which commit / when / where; introduction when it asks for a first.

    The vendor comes from the alias table's vendor signals in the question (arch names, vendor
    words, vendor-only techniques); repositories from their names in the question (all of them:
    "When did DeepGEMM use CUTLASS's MMA atoms" asks about DeepGEMM, "CK's attention as an aiter op"
    about aiter).
    """
    tokens = tokens_of(query)
    words = set(tokens)
    opening = tokens[:2]
    asks_past = len(opening) == 2 and opening[0] in WH_WORDS | {"what"} and opening[1] in PAST_AUXILIARIES
    asks_what = bool(opening) and opening[0] == "what" and bool(words & (ACTIONS - PRESENT_ACTIONS))
    history = bool(words & HISTORY_ONLY) or bool(words & WH_WORDS and words & ACTIONS) or asks_past or asks_what
    intro = history and bool(words & INTRO_WORDS)
    vendor = None
    repos: tuple[str, ...] = ()
    if aliases is not None:
        found = aliases.classify(query)
        vendor = found.vendor(None) if (found.nvidia_votes or found.amd_votes) else None
        names = {name.replace("-", "_"): name for name in aliases.repo_vendor}
        joined = "_".join(tokens)
        named = [names[n] for n in names if n in words or f"_{n}_" in f"_{joined}_"]
        named += [REPO_WORDS[w] for w in tokens if w in REPO_WORDS]
        repos = tuple(dict.fromkeys(named))
    return Intent(
        history=history, introduction=intro, intro_boost=INTRO_BOOST if intro else 0.0,
        vendor=vendor, repos=repos, moves=bool(words & MOVE_WORDS),
        howto=any(tuple(tokens[i:i + 2]) in HOWTO_OPENINGS for i in range(len(tokens) - 1)),
    )
