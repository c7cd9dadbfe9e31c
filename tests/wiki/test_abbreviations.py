"""A repository's own shorthand, learned from its history: its titles say `car`, its code says `custom_all_reduce`.

The question says "custom all reduce"; the commit that answers it says only "car" in its title and
none of those words in its diff (aiter writes "[fix]: car 6 rank coredump"). The pair is learned at ingest from the repository itself (no
alias table row is added by hand), and a search then reads the title as spelling the question.
"""

from __future__ import annotations

from kloop.wiki.abbreviations import abbreviates, identifier_runs, learn, stored
from kloop.wiki.git_ingest import GitIngester
from kloop.wiki.store import WikiStore
from tests.wiki.conftest import GitRepo


def test_an_abbreviation_takes_a_prefix_of_every_word_in_order() -> None:
    assert abbreviates("pa", ("paged", "attention"))
    assert abbreviates("car", ("custom", "all", "reduce"))
    assert abbreviates("fmoe", ("fused", "moe"))
    assert not abbreviates("ap", ("paged", "attention"))  # order matters
    assert not abbreviates("pa", ("paged", "decode", "attention"))  # every word gives a letter
    assert not abbreviates("pag", ("paged", "attention"))  # "g" begins no later word


def test_identifiers_are_read_in_snake_and_camel_case() -> None:
    runs = identifier_runs("void paged_attention_decode(); class ConvolutionFwdInstance; x_1")
    assert ("paged", "attention") in runs and ("paged", "attention", "decode") in runs
    assert ("convolution", "fwd", "instance") in runs
    assert not any("onvolution" in run for run in runs)  # a camelCase name is read from its first letter


def test_a_pair_needs_commits_that_say_both_and_a_lift_over_chance() -> None:
    rows = [(f"pa: tune case {i}", "csrc/pa.cu paged_attention_v2 launch_bounds") for i in range(3)]
    rows += [(f"gemm: case {i}", "csrc/gemm.cu launch_bounds_check tile_config") for i in range(9)]
    found = {(a.short, a.long) for a in learn(rows, "kernels")}
    assert ("pa", "paged attention") in found
    assert not any(short == "lb" for short, _ in found)  # never a title word
    # two commits are not enough evidence
    assert ("pa", "paged attention") not in {(a.short, a.long) for a in learn(rows[1:], "kernels")}
    # a title word every commit uses, beside code every commit has, is chance, not an abbreviation
    common = [(f"pa {i}", "paged_attention") for i in range(6)]
    assert not learn(common, "kernels")


def _history(repo: GitRepo) -> str:
    """Four `car` commits whose code says custom_all_reduce, distractors that spell the question's other words,
    and the answer: a title with only the shorthand, a diff with no word of the question."""
    for i, part in enumerate(["twoshot", "oneshot", "graph", "barrier"]):
        repo.commit(f"car: {part} tuning", {f"csrc/comm/{part}.cu": (
            f"__global__ void custom_all_reduce_{part}_kernel(float* o) {{ o[{i}] = 0.f; }}\n")},
            date=f"2024-0{i + 1}-02T00:00:00+00:00")
    for i, name in enumerate(["rmsnorm", "silu", "gemm", "topk", "rope", "sampling", "layernorm", "softmax", "gelu", "argmax", "cumsum"]):
        repo.commit(f"{name}: vectorize loads", {f"csrc/{name}.cu": (
            f"__global__ void {name}_vec_kernel(float* x) {{ x[{i}] *= 2.f; }}\n")},
            date=f"2024-05-0{i + 1}T00:00:00+00:00")
    repo.commit("fp8 payload for custom rope kernels", {"csrc/rope.cu": (
        "__global__ void rope_vec_kernel(float* x) { x[0] *= 3.f; }  // fp8 payload\n")},
        date="2024-06-02T00:00:00+00:00")
    return repo.commit("car: fp8 payload", {"csrc/comm/fp8.cu": (
        "__global__ void pack_fp8(const uint8_t* q, float* o) { o[0] = q[0]; }\n")},
        date="2024-07-02T00:00:00+00:00")


def test_a_learned_abbreviation_lets_the_long_words_find_the_short_title(repo: GitRepo, tmp_path) -> None:
    answer = _history(repo)
    question = "custom all reduce with an fp8 payload"
    with WikiStore(tmp_path / "wiki.sqlite", seed_cards=False) as store:
        report = GitIngester(store).ingest(repo.path, repo="kernels")
        assert report.abbreviations and ("car", "custom all reduce") in {(a.short, a.long) for a in stored(store.db)}
        learned = [h.source.commit for h in store.search(question, k=5)]
        store.db.execute("DELETE FROM learned_aliases")
    with WikiStore(tmp_path / "wiki.sqlite", seed_cards=False) as store:  # the same wiki, nothing learned
        plain = [h.source.commit for h in store.search(question, k=20)]
    assert learned[0] == answer, learned
    assert plain.index(answer) > 0, plain


def test_an_ingest_that_adds_nothing_keeps_what_was_learned(repo: GitRepo, tmp_path) -> None:
    _history(repo)
    with WikiStore(tmp_path / "wiki.sqlite", seed_cards=False) as store:
        GitIngester(store).ingest(repo.path, repo="kernels")
        before = stored(store.db)
        again = GitIngester(store).ingest(repo.path, repo="kernels")
        assert again.entries_added == 0 and again.abbreviations is None
        assert stored(store.db) == before and before
