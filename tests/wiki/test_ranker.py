"""The shipped history ranker (ranker.json), and what history questions now read: phrasing, named repos, hyphens."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kloop.wiki.aliases import default_alias_table
from kloop.wiki.git_ingest import GitIngester
from kloop.wiki.intent import read_intent
from kloop.wiki.ranker import FEATURES, MODEL_PATH, features, shipped_model
from kloop.wiki.search import named_identifiers
from kloop.wiki.store import WikiStore
from tests.wiki.conftest import GitRepo


def test_the_shipped_model_weighs_every_feature_and_was_never_fitted_on_the_blind_split() -> None:
    model = json.loads(MODEL_PATH.read_text())
    assert set(model["weights"]) == set(FEATURES)  # a feature added or renamed since the fit needs a refit
    assert model["fitted"]["blind"] and set(model["fitted"]["splits"]).isdisjoint(model["fitted"]["blind"])
    held_out = model["cross_validation"]["all"]
    assert held_out["amd"]["n"] > 100 and held_out["nvidia"]["n"] > 80  # fitted on the real questions, not a toy
    assert shipped_model() is not None


# What a question asks, read from its phrasing: (reads as it, does not). History whatever the verb; a how-to
# anywhere in the question.
PHRASINGS = {
    "history": (("When did CK support grouped convolution forward on tensors larger than 2 GB?",
                 "When could DeepGEMM launch its JIT kernels through the CUDA driver API?",
                 "What first fused layer normalization into a GEMM as a single CK kernel?",
                 "What moved the AMD backend into Triton's own tree?"),
                ("When should I use stream-K?", "what tile size should I use for split-k on MI300",
                 "what is the fastest fp8 gemm", "how do I avoid LDS bank conflicts")),
    "howto": (("How do I split one GPU into green contexts with FlashInfer?",
               "Using rmsnorm2d_fwd_with_add_smoothquant in aiter, how do I also get the normalized tensor?",
               "Is there a way to get every timing sample from do_bench?",
               "can the grouped conv forward device op take NGCHW input directly?"),
              ("When did CK support grouped convolution forward on tensors larger than 2 GB?",
               "top-k sampling spins forever on -inf logits", "ck tile fp8 gemm", "how the split-k kernel scales")),
}


@pytest.mark.parametrize("flag", sorted(PHRASINGS))
def test_what_a_question_asks_is_read_from_its_phrasing(flag: str) -> None:
    aliases = default_alias_table()
    reads, does_not = PHRASINGS[flag]
    for question in reads:
        assert getattr(read_intent(question, aliases), flag), question
    for question in does_not:
        assert not getattr(read_intent(question, aliases), flag), question


def test_every_repository_a_question_names_counts() -> None:
    intent = read_intent("When did DeepGEMM stop hand-writing its WGMMA wrappers and use CUTLASS's MMA atoms?",
                         default_alias_table())
    assert {r.lower() for r in intent.repos} >= {"deepgemm", "cutlass"}


def test_a_hyphenated_word_finds_the_commit_that_writes_it_joined(repo: GitRepo, tmp_path: Path) -> None:
    """composable_kernel's "gemm, conv perchannel quantization (#503)", asked about as "per-channel"."""
    for i in range(12):  # older commits about quantized GEMMs, none per channel
        repo.commit(f"Tune the int8 quantized GEMM, round {i} (#{400 + i})", {f"include/ck/gemm_q_{i}.hpp": "// q\n"},
                    date=f"2022-10-{1 + i:02d}T00:00:00Z")
    answer = repo.commit("gemm, conv perchannel quantization (#503)", {"include/ck/gemm_pc.hpp": "// p\n"},
                         date="2022-12-01T00:00:00Z")
    with WikiStore(tmp_path / "w.sqlite", seed_cards=False) as store:
        GitIngester(store).ingest(repo.path, repo="ROCm/composable_kernel")
        hits = store.search("Which commit added per-channel quantized GEMM to composable_kernel?", k=3)
    assert hits[0].id == f"ROCm/composable_kernel@{answer[:12]}"


def test_a_history_question_is_answered_by_the_model_with_probabilities(repo: GitRepo, tmp_path: Path) -> None:
    """The ranker's scores are each candidate's softmax probability of being the answer; a card is not the commit."""
    answer = repo.commit("Add the split-K GEMM with a separate reduction kernel (#1341)",
                         {"include/ck/gemm_splitk_reduce.hpp": "// k\n"}, date="2024-07-19T00:00:00Z")
    repo.commit("Tidy the GEMM examples (#1400)", {"example/gemm_xdl.cpp": "// e\n"}, date="2024-09-01T00:00:00Z")
    with WikiStore(tmp_path / "w.sqlite") as store:  # with the shipped cards (a split-K card among them)
        GitIngester(store).ingest(repo.path, repo="ROCm/composable_kernel")
        hits = store.search("Which commit added a split-K GEMM whose partial results are summed by a reduction?", k=5)
    assert hits[0].id == f"ROCm/composable_kernel@{answer[:12]}"
    assert all(0.0 <= h.score <= 1.0 for h in hits) and sum(h.score for h in hits) <= 1.0 + 1e-6


def test_the_commit_whose_diff_added_a_name_the_question_gives_is_a_candidate_marked_first(
    repo: GitRepo, tmp_path: Path
) -> None:
    """A name in the question (`get_best_configs`) brings the oldest commits whose diffs added it, however far
    BM25 ranks them; the oldest is marked for the ranker (`first_named`), not the newer ones that only call it."""
    repo.commit("Initial JIT tuner", {"deep_gemm/jit/tuner.py": "def get_config(m, n):\n    return (m, n)\n"},
                date="2025-02-25T00:00:00Z")
    answer = repo.commit("add lru-cache to avoid repeated calculation",
                         {"deep_gemm/jit/tuner.py": "import functools\n\n@functools.lru_cache\n"
                          "def get_best_configs(m, n):\n    return (m, n)\n"}, date="2025-03-01T00:00:00Z")
    caller = repo.commit("Call the tuner from the GEMM", {"deep_gemm/gemm.py": "cfg = get_best_configs(64, 128)\n"},
                         date="2025-03-05T00:00:00Z")
    for i in range(30):  # newer commits whose titles say more about configs and shapes
        repo.commit(f"Support more shapes in the configs search, round {i}",
                    {f"deep_gemm/jit/shapes_{i}.py": f"SHAPES_{i} = [(64, {i})]\n"},
                    date=f"2025-04-{1 + i % 28:02d}T{i % 24:02d}:00:00Z")
    with WikiStore(tmp_path / "w.sqlite", seed_cards=False) as store:
        GitIngester(store).ingest(repo.path, repo="deepseek-ai/DeepGEMM")
        assert "get_best_configs" in store.get(f"deepseek-ai/DeepGEMM@{answer[:12]}").excerpt
        _, _, found = store.candidates("When did DeepGEMM start memoizing `get_best_configs`?")
    marked = {sha[:12]: c for sha, c in found}
    assert marked[answer[:12]].names == 1.0 and marked[answer[:12]].first_named
    assert marked[caller[:12]].names == 1.0 and not marked[caller[:12]].first_named
    assert sum(c.first_named for c in marked.values()) == 1


def test_names_a_question_gives_are_read_from_backticks_and_code_shapes() -> None:
    assert named_identifiers("by setting `ENABLE_CK=0`?") == [("enable", "ck")]
    assert named_identifiers("When were block pointers (`tl.make_block_ptr`) added?") == [("make", "block", "ptr")]
    assert named_identifiers("CK's SpaceFillingCurve utility for threadwise_copy") == [("spacefillingcurve",),
                                                                                       ("threadwise", "copy")]
    assert named_identifiers("When did CK add an fp8 GEMM for MI300?") == []
    assert named_identifiers("version macros in `cutlass/version.h`") == [("cutlass", "version", "h")]
    assert named_identifiers("When did DeepGEMM use `get_best_configs`?", frozenset(["deepgemm"])) == [
        ("get", "best", "configs")]


def test_the_ranker_reads_how_many_words_each_title_has(repo: GitRepo, tmp_path: Path) -> None:
    """Commits that introduce a technique are often a few words ("Pool3d fwd (#697)") and the reworks after
    them explain themselves at length; on the real questions the title's length moved held-out r@1 from
    0.606 to 0.636 (AMD) and 0.645 to 0.695 (NVIDIA). A card's title says nothing of the kind."""
    terse = repo.commit("Pool3d fwd (#697)", {"include/ck/pool3d_fwd.hpp": "// p\n"}, date="2023-05-01T00:00:00Z")
    wordy = repo.commit("Add max pooling 3d forward instances for bf16 and fp8, with profiler entries and tests (#900)",
                        {"include/ck/pool3d_fwd_instances.hpp": "// i\n"}, date="2023-09-01T00:00:00Z")
    with WikiStore(tmp_path / "w.sqlite") as store:
        GitIngester(store).ingest(repo.path, repo="ROCm/composable_kernel")
        _, intro, found = store.candidates("Which commit added 3D max pooling forward to composable_kernel?")
    words = {sha: c.title_words for sha, c in found}
    assert words[terse] == 3 and words[wordy] == 16
    cards = [c for sha, c in found if c.is_card]
    assert cards and all(features(c, intro)["title_words"] == 0.0 for c in cards)
    weights = shipped_model().weights
    assert weights["title_words"] < 0  # fitted, not set: a refit that loses the lesson shows here
