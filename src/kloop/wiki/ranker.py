"""RankModel: the weighing of a history question's candidates, learned from real repository history.

BM25 finds candidates; which of them is the commit a history question asks about depends on
signals BM25 cannot see: the title spells the question, a created file names it, it is the
oldest of its kind, it lives in the repository asked about. Until 2026-12-02 those signals
were multiplied by factors set by hand, one at a time, and generalised poorly (blind recall@1
0.33 and 0.54 on two question sets written after the tuning). Here they are the features of a
linear model fitted by listwise softmax (bench/wiki_real/train_ranker.py) on the questions of
bench/wiki_real, never on the set kept blind; `ranker.json` holds the weights with how they
were fitted and what cross-validation measured.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path

MODEL_PATH = Path(__file__).with_name("ranker.json")
# Path words longer than this (a release, a tree-wide cleanup) count as breadth.
BREADTH_FROM = 400


@dataclass(frozen=True)
class Candidate:
    """What the weighing knows of one candidate entry, read once per search."""

    rowid: int
    bm25: float  # fused BM25 over the passes (positive, higher is better)
    kind: str = "commit"
    adds_kernel: bool = False
    history_only: bool = False  # a build / CI / tooling commit, kept only as history
    mechanical: bool = False  # a move / format / lint commit, under a question not about a move
    same_vendor: bool = False  # the question names a vendor and this entry is of it
    same_repo: bool = False  # the question names repositories and this entry lives in one
    other_repo: bool = False  # the question names repositories and this commit lives in another
    older: float = 0.0  # 1 for the oldest dated candidate, 0 for the newest (0 when undated)
    title: float = 0.0  # share of the question's content groups the title spells
    title_words: int = 0  # words in the title: the commit that introduces a technique is often terse
    file: float = 0.0  # best share one created file's path spells
    first: bool = False  # the oldest of the commits whose created files spell the question best
    breadth: int = 0  # length of the entry's path words
    body: int = 0  # length of its body
    spelled: float = 0.0  # share of the question's content groups it spells anywhere
    names: float = 0.0  # share of the identifiers the question gives that its diff, paths or files spell
    first_named: bool = False  # the oldest of the candidates that spell most of those identifiers
    mechanism: float = 0.0  # BM25 of the pass over the mechanisms of the symptoms the question names (positive)
    fix: bool = False  # its title says it fixes something (symptoms.yaml `fix_words`)
    title_symptom: float = 0.0  # share of the question's symptoms its title names in a user's terms ("hangs")
    title_mechanism: float = 0.0  # ... and by a mechanism their fixes name ("int32 overflow", "deadlock")
    howto: bool = False  # the question asks how to do something: the capability's commit, not the feature's first
    symptom: bool = False  # the question names a symptom (symptoms.yaml): the answer is a fix whose title
    # rarely spells the user's words, so title, body and fix signals weigh differently there

    @property
    def is_card(self) -> bool:
        return self.kind in ("card", "doc")


def features(c: Candidate, introduction: bool) -> dict[str, float]:
    """The model's inputs for one candidate: signals, and their interactions with an introduction question."""
    intro = 1.0 if introduction else 0.0
    commit = 0.0 if c.is_card else 1.0
    values = {
        "bm25": math.log(max(c.bm25, 1e-9)),
        "card": 1.0 - commit,
        "title": commit * c.title,
        "title_all": commit * float(c.title >= 1.0),
        "title_words": commit * math.log1p(c.title_words),
        "spelled": c.spelled,
        "spelled_all": float(c.spelled >= 1.0),
        "names": c.names,
        "first_named": float(c.first_named),
        "file": commit * c.file,
        "first": float(c.first),
        "older": commit * c.older,
        "adds_kernel": float(c.adds_kernel),
        "history_only": float(c.history_only),
        "mechanical": float(c.mechanical),
        "broad": commit * math.log2(c.breadth / BREADTH_FROM) if c.breadth > BREADTH_FROM else 0.0,
        "body": commit * math.log1p(c.body),
        "vendor": float(c.same_vendor),
        "repo": float(c.same_repo),
        "other_repo": float(c.other_repo),
    }
    values["fix"] = commit * float(c.fix)
    values["mechanism"] = math.log1p(max(c.mechanism, 0.0))
    values["title_symptom"] = commit * c.title_symptom
    values["title_mechanism"] = commit * c.title_mechanism
    for name in ("older", "adds_kernel", "title", "spelled"):
        values[f"intro_{name}"] = intro * values[name]
    howto = 1.0 if c.howto else 0.0
    for name in ("older", "first_named", "title_words", "title", "bm25"):
        values[f"howto_{name}"] = howto * values[name]
    symptom = 1.0 if c.symptom else 0.0
    for name in ("bm25", "title", "spelled", "fix", "older"):  # (mechanism is non-zero only under a symptom)
        values[f"symptom_{name}"] = symptom * values[name]
    return values


FEATURES = tuple(features(Candidate(rowid=0, bm25=1.0), introduction=True))


@dataclass(frozen=True)
class RankModel:
    """A linear score over `features`; a missing weight counts zero."""

    weights: dict[str, float]

    def score(self, c: Candidate, introduction: bool) -> float:
        return sum(w * value for w, value in zip(self._aligned, features(c, introduction).values(), strict=True) if w)

    @cached_property
    def _aligned(self) -> tuple[float, ...]:
        """The weights in FEATURES order (features() yields them in that order), read once per model."""
        return tuple(self.weights.get(name, 0.0) for name in FEATURES)


@cache
def shipped_model() -> RankModel | None:
    """The model fitted on bench/wiki_real, or None when the package ships none (hand weights then apply)."""
    if not MODEL_PATH.exists():
        return None
    return RankModel({k: float(v) for k, v in json.loads(MODEL_PATH.read_text())["weights"].items()})
