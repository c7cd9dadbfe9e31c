"""Kernel file names as evidence: run-together words, compiled kernels, on real git histories."""

from __future__ import annotations

from pathlib import Path

from kloop.wiki.aliases import default_alias_table
from kloop.wiki.compound import splitter_for
from kloop.wiki.git_ingest import GitIngester
from kloop.wiki.store import WikiStore
from tests.wiki.conftest import GitRepo

CO = b"\x7fELF\x02\x01\x01@\x00"  # the start of an AMDGPU code object


def test_run_together_words_of_kernel_names_split_into_known_words_only() -> None:
    split = splitter_for(default_alias_table()).split
    assert split("bf16gemm") == ("bf16", "gemm")
    assert split("topksoftmax") == ("topk", "softmax")
    assert split("pertokenfp8") == ("per", "token", "fp8")
    assert split("i8gemm") == ("i8", "gemm")
    for whole in ("paged", "32x128", "m16x4", "a8w8", "gfx942", "attention", "fabric", "page64"):
        assert split(whole) == (), whole  # not wholly known words, a tile shape, or a word itself


def test_an_assembly_gemm_named_bf16gemm_answers_bf16_gemm(repo: GitRepo, tmp_path: Path) -> None:
    """aiter's "[MI35x]Gating bf16gemm (#1048)" created hsa/gfx942/bf16gemm/*.co: no word of it says "bf16 GEMM"."""
    intro = repo.commit(
        "[MI35x]Gating bf16gemm (#1048)",
        {"hsa/gfx942/bf16gemm/bf16gemm_outf32_tn_32x64_pf3.co": CO, "hsa/gfx942/bf16gemm/bf16gemm_outf32_tn_64x64_pf3.co": CO},
        date="2025-10-11T00:00:00Z",
    )
    repo.commit("Update MI300 FA fwd kernel (#655)", {"hsa/gfx942/fmha_v3_fwd/fwd_hd128_bf16.co": CO}, date="2025-07-16T00:00:00Z")
    repo.commit("Introduce asm 64x256 kernels for mi300 (#2404)", {"hsa/gfx942/fmoe/fmoe_bf16_64x256.co": CO},
                date="2026-03-21T00:00:00Z")
    repo.commit("mha bwd v3: bf16 kernels for MI300 (#1040)", {"hsa/gfx942/fmha_v3_bwd/bwd_hd128_bf16.co": CO},
                date="2025-09-24T00:00:00Z")
    with WikiStore(tmp_path / "w.sqlite", seed_cards=False) as store:
        GitIngester(store).ingest(repo.path, repo="ROCm/aiter")
        assert store.search("bf16 gemm", k=1)[0].id == f"ROCm/aiter@{intro[:12]}"  # the path words, indexed
        hits = store.search("When were bf16 GEMM assembly kernels for MI300 added?", k=3)
    assert hits[0].id == f"ROCm/aiter@{intro[:12]}"


def test_a_compiled_amd_code_object_reads_as_an_assembly_kernel(repo: GitRepo, tmp_path: Path) -> None:
    """aiter ships its assembly kernels as hsa/**.co; the commit's subject rarely says "asm"."""
    asm = repo.commit("Moe 2stages (#228)", {"hsa/fmoe_2stages/fmoe_stage1_bf16_pertokenFp8_g1u1_128x128.co": CO},
                      date="2025-04-13T00:00:00Z")
    ck = repo.commit("Add CK two-stage MoE kernels (#300)", {"csrc/ck_moe_2stages/moe_stage1.cu": "// ck\n"},
                     date="2025-03-01T00:00:00Z")
    repo.commit("Tune the two-stage MoE heuristics (#320)", {"aiter/fused_moe.py": "# tune\n"}, date="2025-05-01T00:00:00Z")
    with WikiStore(tmp_path / "w.sqlite", seed_cards=False) as store:
        GitIngester(store).ingest(repo.path, repo="ROCm/aiter")
        assert "asm" in store.get(f"ROCm/aiter@{asm[:12]}").path_terms.split()
        assert "asm" not in store.get(f"ROCm/aiter@{ck[:12]}").path_terms.split()
        hits = store.search("Which commit added the two-stage MoE assembly kernels?", k=2)
    assert hits[0].id == f"ROCm/aiter@{asm[:12]}"


def test_kernel_is_no_file_name_word_so_the_first_creator_is_found_without_it(repo: GitRepo, tmp_path: Path) -> None:
    """aiter's first Gluon kernel created aiter/ops/triton/gluon/*.py; a later one the first _gluon_kernels/ file."""
    first = repo.commit("[TRITON]: Add Gluon Blockscale A8W8 GEMM (#886)",
                        {"aiter/ops/triton/gluon/gemm_a8w8_blockscale.py": "# g\n"}, date="2025-08-28T00:00:00Z")
    later = repo.commit("[TRITON] Add Gluon-optimized MoE Int8 SmoothQuant kernel (#2900)",
                        {"aiter/ops/triton/_gluon_kernels/moe/moe_int8_smoothquant.py": "# m\n"}, date="2026-04-23T00:00:00Z")
    for i in range(4):
        repo.commit(f"[TRITON][GLUON] Add gluon kernel variant {i} (#{3000 + i})",
                    {f"aiter/ops/triton/_gluon_kernels/variant_{i}.py": "# v\n"}, date=f"2026-05-0{1 + i}T00:00:00Z")
    with WikiStore(tmp_path / "w.sqlite", seed_cards=False) as store:
        GitIngester(store).ingest(repo.path, repo="ROCm/aiter")
        store.use_ranker(None)  # the hand factors' first-creator rule (the shipped ranker: tests/wiki/test_ranker.py)
        hits = store.search("Which commit added the first Gluon kernel to aiter?", k=3)
    assert hits[0].id == f"ROCm/aiter@{first[:12]}" and hits[0].id != f"ROCm/aiter@{later[:12]}"


def test_amd_spellings_preshuffle_and_f4(repo: GitRepo, tmp_path: Path) -> None:
    """aiter names weight pre-shuffling 'bpreshuffle' / 'weightpreshuffle' and FP4 'f4' (f4gemm), as CK names FP8 'f8'."""
    pre = repo.commit("Gemm weightpreshuffle (#513)", {"csrc/ck_gemm_a8w8_bpreshuffle/gemm_a8w8_bpreshuffle.cu": "// b\n"},
                      date="2025-06-07T00:00:00Z")
    f4 = repo.commit("A4w4 asm pro (#649)", {"hsa/gfx950/f4gemm/f4gemm_bf16_per1x32_256x256.co": CO}, date="2025-07-24T00:00:00Z")
    repo.commit("Gemm_c_shuffle (4 layouts) X (fp32 bf16 int8) (#131)", {"csrc/ck_gemm/gemm_c_shuffle.cu": "// c\n"},
                date="2025-03-22T00:00:00Z")
    repo.commit("Unify scale and weight shuffling (#3900)", {"csrc/ck_gemm_a8w8/gemm_a8w8_common.cu": "// s\n"},
                date="2026-07-03T00:00:00Z")
    repo.commit("Add FP4 quantization for MI350 GEMM inputs (#700)", {"csrc/kernels/quant_fp4.cu": "// q\n"},
                date="2025-08-01T00:00:00Z")
    repo.commit("Tune the int8 GEMM layouts for gfx950 (#710)", {"csrc/ck_gemm_a8w8/gemm_a8w8_tune.cu": "// t\n"},
                date="2025-08-02T00:00:00Z")
    with WikiStore(tmp_path / "w.sqlite", seed_cards=False) as store:
        GitIngester(store).ingest(repo.path, repo="ROCm/aiter")
        assert "preshuffle" in store.get(f"ROCm/aiter@{pre[:12]}").techniques
        shuffled = store.search("pre-shuffled GEMM", k=1)
        fp4 = store.search("When did the first assembly FP4 GEMM for gfx950 land?", k=1)
    assert shuffled[0].id == f"ROCm/aiter@{pre[:12]}"
    assert fp4[0].id == f"ROCm/aiter@{f4[:12]}"


def test_a_question_about_a_move_does_not_weigh_move_commits_down(repo: GitRepo, tmp_path: Path) -> None:
    """aiter's "Asm extend chip arch (#332)" moved hsa/*.co into hsa/gfx942/ and hsa/gfx950/: a move, and the answer."""
    kernels = [f"{kind}_{i}.co" for kind in ("pa_bf16", "fmoe_int8", "mla_dec") for i in range(4)]
    repo.commit("Add asm kernels", {f"hsa/{name}": CO for name in kernels}, date="2025-03-01T00:00:00Z")
    for path in kernels:
        for chip in ("gfx942", "gfx950"):
            repo.write(f"hsa/{chip}/{path}", CO)
        (repo.path / "hsa" / path).unlink()
    moved = repo.commit("Asm extend chip arch (#332)", date="2025-05-01T00:00:00Z")
    repo.commit("Enable gfx942 FA fwd asm kernels (#619)", {"hsa/gfx942/fmha_v3_fwd/fwd_hd128_bf16.co": CO},
                date="2025-07-10T00:00:00Z")
    repo.commit("Update gfx942 & gfx950 PA asm kernels (#900)", {"hsa/gfx942/pa_bf16_0.co": b"\x7fELF\x03",
                "hsa/gfx950/pa_bf16_0.co": b"\x7fELF\x03"}, date="2025-09-10T00:00:00Z")
    for i in range(24):  # unrelated history, so that the words asked about are rare, as in a real repository
        repo.commit(f"Tune the rmsnorm HIP kernel, round {i} (#{1100 + i})", {f"csrc/kernels/rmsnorm_{i}.cu": "// r\n"},
                    date=f"2025-12-{1 + i:02d}T00:00:00Z")
    repo.commit("Add gfx950 fmoe int8 asm kernels (#950)", {"hsa/gfx950/fmoe_int8_9.co": CO}, date="2025-10-01T00:00:00Z")
    repo.commit("gfx942 mla asm kernel update (#1000)", {"hsa/gfx942/mla_dec_1.co": b"\x7fELF\x05"},
                date="2025-11-01T00:00:00Z")
    with WikiStore(tmp_path / "w.sqlite", seed_cards=False) as store:
        GitIngester(store).ingest(repo.path, repo="ROCm/aiter")
        assert store.get(f"ROCm/aiter@{moved[:12]}").stats.get("mechanical") == 1
        store.use_ranker(None)  # the hand factors' move rule (the shipped ranker: tests/wiki/test_ranker.py)
        hits = store.search("Which commit moved the assembly kernels into per-chip folders for gfx942 and gfx950?", k=2)
    assert hits[0].id == f"ROCm/aiter@{moved[:12]}"


def test_the_first_of_two_commits_spelling_the_question_is_its_introduction(repo: GitRepo, tmp_path: Path) -> None:
    """aiter's "add mla for prefill (#266)" created the MLA prefill asm kernel; a newer commit names MLA, asm, prefill."""
    first = repo.commit("add mla for prefill (#266)", {"hsa/mla/mla_pfl_a16w16_bf16_causal.co": CO,
                        "csrc/py_itfs_cu/asm_mla.cu": "// mla\n"}, date="2025-04-08T00:00:00Z")
    for i in range(24):
        repo.commit(f"Tune the rmsnorm HIP kernel, round {i} (#{300 + i})", {f"csrc/kernels/rmsnorm_{i}.cu": "// r\n"},
                    date=f"2025-{5 + i // 12:02d}-{1 + i % 12:02d}T00:00:00Z")
    repo.commit("feat(mla_prefill): enable asm mla_prefill with persistent mode (#1800)",
                {"hsa/gfx942/mla/mla_a16w16_ps.co": CO},
                date="2026-01-19T00:00:00Z")
    with WikiStore(tmp_path / "w.sqlite", seed_cards=False) as store:
        GitIngester(store).ingest(repo.path, repo="ROCm/aiter")
        hits = store.search("When was the MLA prefill assembly kernel added?", k=2)
    assert hits[0].id == f"ROCm/aiter@{first[:12]}"
