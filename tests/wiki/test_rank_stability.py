"""Ranks a user can page through: `-k` never reorders the head, and guidance never hides the evidence."""

from __future__ import annotations

import random

from kloop.wiki.schema import Source, WikiEntry
from kloop.wiki.search import CANDIDATES, GUIDANCE_SLOTS, TOP_SLOTS, evidence_first
from kloop.wiki.store import WikiStore

WORDS = ["swizzle", "tile", "scheduler", "stream", "split", "persistent", "gemm", "epilogue", "pipeline", "tma"]


def _commits(n: int, seed: int = 7) -> list[WikiEntry]:
    """`n` commits over a few shared words, dated apart: many more matches than the candidate pool holds."""
    rng = random.Random(seed)
    entries = []
    for i in range(n):
        title = " ".join(rng.sample(WORDS, 3)) + f" change {i}"
        body = " ".join(rng.choices(WORDS, k=rng.randint(3, 30)))
        date = f"20{18 + i % 8:02d}-{1 + i % 12:02d}-{1 + i % 27:02d}T00:00:00+00:00"
        sha = f"{i:040x}"
        entries.append(WikiEntry(id=f"r@{sha[-12:]}", kind="commit", title=title, body=body, vendor="nvidia",
                                 source=Source(repo="r", commit=sha, date=date, paths=[f"kernels/k{i}.cu"])))
    return entries


def test_the_first_five_of_a_long_page_are_the_five_of_a_short_one(store: WikiStore) -> None:
    store.add(_commits(6 * CANDIDATES, seed=4))  # with the pool sized by -k, 5 of these 6 questions reordered
    questions = ["when was the persistent tile scheduler first added", "stream split gemm epilogue",
                 "which commit added swizzle to the tma pipeline", "when did split gemm land",
                 "which commit introduced the stream pipeline", "tile scheduler"]
    for question in questions:
        short = [h.id for h in store.search(question, k=5)]
        assert len(short) == 5
        for k in (50, 100, 2 * CANDIDATES + 17):
            long = [h.id for h in store.search(question, k=k)]
            assert long[:5] == short, (question, k)
            assert len(long) == len(set(long)) == k  # past the pool the page goes on, without repeats


def _card(cid: str, title: str) -> WikiEntry:
    return WikiEntry(id=f"card/{cid}", kind="card", title=title, body=title, vendor="any")


def test_cards_never_push_the_commits_out_of_the_top_five(store: WikiStore) -> None:
    """Six cards spell the question better than any commit (which, weighed alone, puts them all first); the
    commits still lead, one card among them."""
    store.add([_card(f"c{i}", "Swizzle the persistent tile scheduler") for i in range(6)])
    store.add([WikiEntry(id=f"r@{i:012x}", kind="commit", title=f"Persistent kernels for {word}", body=word,
                         source=Source(repo="r", commit=f"{i:040x}")) for i, word in enumerate(WORDS)])
    hits = store.search("persistent tile scheduler swizzle", k=10)
    kinds = [h.kind.value for h in hits]
    assert kinds[0] != "card"
    assert kinds[:TOP_SLOTS].count("card") == GUIDANCE_SLOTS
    assert kinds.count("card") >= 5  # the cards displaced from the top follow right after it
    cards_only = [h.id for h in store.search("persistent tile scheduler swizzle", k=10, kind="card")]
    assert len(cards_only) == 6  # asked for guidance alone, guidance is all there is


def test_evidence_first_keeps_the_weighed_order_otherwise() -> None:
    ranked = [(1, 9.0), (2, 8.0), (3, 7.0), (4, 6.0), (5, 5.0), (6, 4.0), (7, 3.0)]
    assert evidence_first(ranked, frozenset()) == ranked
    assert evidence_first(ranked, frozenset(range(1, 8))) == ranked  # all guidance: nothing to protect
    assert [r for r, _ in evidence_first(ranked, frozenset({1, 2}))] == [3, 1, 4, 5, 6, 2, 7]
    assert [r for r, _ in evidence_first(ranked, frozenset({4}))] == [1, 2, 3, 4, 5, 6, 7]
    assert [r for r, _ in evidence_first(ranked, frozenset({6, 7}))] == [1, 2, 3, 4, 5, 6, 7]
