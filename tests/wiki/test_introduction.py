"""History questions on real git histories: the commit that introduced a thing, however terse or big it is."""

from __future__ import annotations

import sys
from pathlib import Path

from kloop.wiki.coverage import file_coverage, title_coverage, wanted
from kloop.wiki.git_ingest import GitIngester
from kloop.wiki.store import WikiStore
from tests.wiki.conftest import GitRepo

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "wiki_corpus"))
from generate import Commit, write_history  # noqa: E402  (real repositories through one git fast-import)

KERNEL = "include/cutlass/gemm/kernel/"
OTHER_FILES = [
    "include/cutlass/epilogue/collective/sm90_epilogue_tma_warpspecialized.hpp",
    "include/cutlass/pipeline/sm90_pipeline.hpp",
    "include/cute/container/cuda_types.hpp",
    "include/cutlass/transform/collective/sm90_wgmma_transpose.hpp",
    *(f"include/cutlass/conv/kernel/conv_variant_{i}.hpp" for i in range(30)),
]


def _release_then_reworks(repo: GitRepo) -> str:
    """A release that created the ping-pong kernel among many files, then focused commits naming it."""
    release = repo.commit(
        "CUTLASS 3.1 (#915)",
        {f"{KERNEL}sm90_gemm_tma_warpspecialized_pingpong.hpp": "// pp\n",
         f"{KERNEL}sm90_gemm_tma_warpspecialized_cooperative.hpp": "// coop\n",
         **{p: f"// {p}\n" for p in OTHER_FILES}},
        date="2023-04-18T00:00:00Z",
    )
    repo.commit("Allow SM90 pingpong kernel to use custom tile schedulers (#1)",
                {f"{KERNEL}sm90_gemm_tma_warpspecialized_pingpong.hpp": "// pp 2\n"}, date="2023-11-15T00:00:00Z")
    repo.commit("Support PDL in the SM90 pingpong GEMM kernel (#2)",
                {f"{KERNEL}sm90_gemm_tma_warpspecialized_pingpong.hpp": "// pp 3\n"}, date="2025-10-23T00:00:00Z")
    repo.commit("Add pingpong ptr-array GEMM with a TMA epilogue (#3)",
                {"include/cutlass/epilogue/collective/sm90_epilogue_array_tma_warpspecialized.hpp": "// e\n"},
                date="2024-09-11T00:00:00Z")
    return release


def test_the_release_that_created_the_file_asked_about_ranks_first(repo: GitRepo, tmp_path: Path) -> None:
    release = _release_then_reworks(repo)
    with WikiStore(tmp_path / "w.sqlite") as store:
        GitIngester(store).ingest(repo.path, repo="NVIDIA/cutlass")
        assert f"{KERNEL}sm90_gemm_tma_warpspecialized_pingpong.hpp" in store.get(f"NVIDIA/cutlass@{release[:12]}").added_files
        hits = store.search("Which release introduced the ping-pong warp-specialized TMA GEMM kernel for sm90?", k=3)
    assert hits[0].id == f"NVIDIA/cutlass@{release[:12]}"


def test_one_created_file_spelling_the_question_covers_it_whatever_else_was_created() -> None:
    groups = wanted([[["ping", "pong"]], [["warp", "specialized"]], [["gemm"]], [["sm90"]]])
    files = [*OTHER_FILES, f"{KERNEL}sm90_gemm_tma_warpspecialized_pingpong.hpp"]
    assert file_coverage(files, groups) == 1.0  # joined words: pingpong, warpspecialized
    assert file_coverage(OTHER_FILES, groups) == 0.5  # no single other file spells more than sm90 and warp specialized
    assert title_coverage("Fp8 blockscale gemm (#156)", wanted([[["block", "scale"]], [["gemm"]]])) == 1.0


def test_a_data_format_is_not_a_formatting_commit(repo: GitRepo, store: WikiStore) -> None:
    noun = repo.commit("Maximum representable value in FP8 E4M3 format", {"csrc/fp8.cu": "float m = 448;\n"})
    verb = repo.commit("Code format", {"csrc/fp8.cu": "float m = 448.f;\n"})
    GitIngester(store).ingest(repo.path, repo="deepseek-ai/DeepGEMM")
    assert "mechanical" not in store.get(f"deepseek-ai/DeepGEMM@{noun[:12]}").stats
    assert store.get(f"deepseek-ai/DeepGEMM@{verb[:12]}").stats.get("mechanical") == 1


def test_the_first_of_many_reaches_the_weighing_though_newer_commits_match_more_words(repo: GitRepo, tmp_path: Path) -> None:
    first = repo.commit("Add Triton MoE Kernel (#106)", {"aiter/ops/triton/moe_op.py": "# moe\n"}, date="2025-02-12T00:00:00Z")
    for i in range(70):  # newer commits that spell "Triton kernel" and create nothing, and unrelated ones
        when = f"2025-{3 + i // 28:02d}-{1 + i % 28:02d}"
        repo.commit(f"[TRITON] Tune Triton kernel configs, round {i} (#{200 + i})",
                    {"aiter/ops/triton/moe_op.py": f"# moe {i}\n"}, date=f"{when}T00:00:00Z")
        repo.commit(f"Tune CK GEMM tile {i} (#{300 + i})", {f"csrc/ck_gemm/tile_{i}.cu": f"// {i}\n"}, date=f"{when}T01:00:00Z")
    with WikiStore(tmp_path / "w.sqlite") as store:
        GitIngester(store).ingest(repo.path, repo="ROCm/aiter")
        hits = store.search("When was the first Triton kernel added to aiter?", k=5)
    assert hits[0].id == f"ROCm/aiter@{first[:12]}"  # 70 wordier commits outrank it on words alone


def test_composable_kernel_spelling_f8_is_fp8(repo: GitRepo, store: WikiStore) -> None:
    intro = repo.commit("Add 8-bit float GEMM and an example for it (#767)",
                        {"example/01_gemm/gemm_xdl_f8.cpp": "// f8\n"}, date="2023-07-04T00:00:00Z")
    for i in range(6):
        repo.commit(f"Add GEMM example variant {i} (#{800 + i})", {f"example/01_gemm/gemm_xdl_v{i}.cpp": "// g\n"},
                    date=f"2023-08-0{1 + i}T00:00:00Z")
    GitIngester(store).ingest(repo.path, repo="ROCm/composable_kernel")
    assert "fp8" in store.get(f"ROCm/composable_kernel@{intro[:12]}").tags
    assert store.search("When was an fp8 GEMM example added?", k=1)[0].id == f"ROCm/composable_kernel@{intro[:12]}"


def test_the_oldest_commit_whose_created_file_spells_the_question_is_the_introduction(repo: GitRepo, tmp_path: Path) -> None:
    release = repo.commit(
        "Release v4.0.0 (#2294)",
        {"python/CuTeDSL/cutlass/base_dsl/dsl.py": "# dsl\n",
         **{f"include/cutlass/gemm/collective/sm100_variant_{i}.hpp": "// v\n" for i in range(40)}},
        date="2025-05-13T00:00:00Z",
    )
    repo.commit("fix performance regression in cute-dsl examples for Python (#2990)",
                {"python/CuTeDSL/cutlass/base_dsl/dsl.py": "# dsl 2\n"}, date="2026-01-30T00:00:00Z")
    repo.commit("Add CuTe DSL hopper grouped GEMM example in Python (#3000)",
                {"examples/python/CuTeDSL/hopper/grouped_gemm.py": "# g\n"}, date="2026-03-17T00:00:00Z")
    repo.commit("PR update (#3103)", {"python/CuTeDSL/cutlass/cute/nvgpu/tcgen05/mma.py": "# m\n"},
                date="2026-04-02T00:00:00Z")
    with WikiStore(tmp_path / "w.sqlite") as store:  # with the shipped cards, as users have it
        GitIngester(store).ingest(repo.path, repo="NVIDIA/cutlass")
        store.use_ranker(None)  # the hand factors' first-creator rule (the shipped ranker: tests/wiki/test_ranker.py)
        hits = store.search("When was the CuTe DSL for Python released?", k=3)
    assert hits[0].id == f"NVIDIA/cutlass@{release[:12]}"  # not the newer commits that name it, or create under it


def test_the_first_creator_is_the_earliest_in_utc_whatever_offsets_the_dates_carry(repo: GitRepo, tmp_path: Path) -> None:
    """DeepGEMM's "Add SM90 kernels (#200)" landed at 17:00+08:00, "Add SM100 kernels (#201)" at 02:07-07:00 the same
    day: seven minutes LATER, though its date string sorts first."""
    sm90 = repo.commit("Add SM90 kernels (#200)", {"deep_gemm/include/sm90_fp8_mqa_logits.cuh": "// 90\n"},
                       date="2025-09-29T17:00:23+08:00")
    sm100 = repo.commit("Add SM100 kernels (#201)", {"deep_gemm/include/sm100_fp8_mqa_logits.cuh": "// 100\n"},
                        date="2025-09-29T02:07:28-07:00")
    for i in range(12):
        repo.commit(f"Tune the grouped GEMM heuristics, round {i} (#{210 + i})", {f"deep_gemm/jit/tune_{i}.py": "# t\n"},
                    date=f"2025-10-{1 + i:02d}T00:00:00+08:00")
    with WikiStore(tmp_path / "w.sqlite", seed_cards=False) as store:
        GitIngester(store).ingest(repo.path, repo="deepseek-ai/DeepGEMM")
        hits = store.search("When did the FP8 MQA logits kernels land?", k=2)
    assert [h.id for h in hits] == [f"deepseek-ai/DeepGEMM@{sm90[:12]}", f"deepseek-ai/DeepGEMM@{sm100[:12]}"]


def test_an_auxiliary_verb_is_no_word_a_file_must_spell(repo: GitRepo, tmp_path: Path) -> None:
    """"When WERE the FP8 MQA logits kernels added?": no file is named 'were', so the first creator still counts."""
    first = repo.commit("Add SM90 kernels (#200)", {"deep_gemm/include/sm90_fp8_mqa_logits.cuh": "// 90\n",
                        **{f"deep_gemm/include/sm90_variant_{i}.cuh": "// v\n" for i in range(60)}},
                        date="2025-09-29T17:00:23+08:00")
    for i in range(12):
        repo.commit(f"Tune the grouped GEMM heuristics, round {i} (#{210 + i})", {f"deep_gemm/jit/tune_{i}.py": "# t\n"},
                    date=f"2025-10-{1 + i:02d}T00:00:00+08:00")
    repo.commit("Add paged FP8 MQA logits kernels (#230)\n\nFP8 MQA logits kernels for a paged KV cache: the MQA logits of the indexer.", {"deep_gemm/include/sm90_fp8_mqa_logits.cuh": "// 90 b\n",
                "deep_gemm/include/sm90_paged_fp8_mqa_logits.cuh": "// p\n"}, date="2025-11-19T00:00:00+08:00")
    with WikiStore(tmp_path / "w.sqlite", seed_cards=False) as store:
        GitIngester(store).ingest(repo.path, repo="deepseek-ai/DeepGEMM")
        hits = store.search("When were the FP8 MQA logits kernels added?", k=1)
    assert hits[0].id == f"deepseek-ai/DeepGEMM@{first[:12]}"


def test_the_oldest_creator_joins_the_candidates_when_bm25_ranks_it_below_the_pool(tmp_path: Path) -> None:
    """More than a pass's worth of newer commits spell "Triton kernel" better than aiter's first one did."""
    day = 86400
    history = [Commit("Add Triton MoE Kernel (#106)", {"aiter/ops/triton/moe_op.py": "# moe\n"}, 1739318400)]
    for i in range(110):  # more than a pass keeps, each spelling the question better than the first one
        history.append(Commit(f"[TRITON] Tune the Triton kernel configs of the Triton kernel suite, round {i} (#{200 + i})",
                              {"aiter/ops/triton/moe_op.py": f"# moe {i}\n"}, 1739318400 + (i + 1) * day))
        history += [Commit(f"Tune the CK GEMM tile {i}.{j} (#{400 + 3 * i + j})", {f"csrc/ck_gemm/tile_{i}_{j}.cu": "// t\n"},
                           1739318400 + (i + 1) * day + 3600 * (j + 1)) for j in range(3)]  # so those words stay rare
    first = write_history(tmp_path / "aiter", history)[0]
    with WikiStore(tmp_path / "w.sqlite", seed_cards=False) as store:
        GitIngester(store).ingest(tmp_path / "aiter", repo="ROCm/aiter")
        hits = store.search("When was the first Triton kernel added to aiter?", k=3)
    assert hits[0].id == f"ROCm/aiter@{first[:12]}"
