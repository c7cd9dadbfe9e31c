"""`build_preset` on real git clones: which paths each known repository reads, and its vendor."""

from __future__ import annotations

from pathlib import Path

from kloop.wiki.build import build_preset
from kloop.wiki.provenance import KernelPathRules
from kloop.wiki.store import WikiStore
from tests.wiki.conftest import GitRepo


def test_rocm_triton_reads_amd_perf_kernels_and_its_commits_default_to_amd(tmp_path: Path, store: WikiStore) -> None:
    triton = GitRepo(tmp_path / "clones" / "ROCm+triton" / "repo")  # the fetch mirrors' layout
    perf = triton.commit("Add Layernorm kernel", {"python/perf-kernels/layernorm.py": "# ln\n"})
    build_preset(store, tmp_path / "clones", "amd")
    entry = store.get(f"ROCm/triton@{perf[:12]}")
    assert entry is not None  # main_perf's AMD Triton kernels are kernel history too
    assert entry.vendor.value == "amd"  # the message names no vendor: the preset's


def test_a_directory_named_like_perf_kernels_holds_kernels() -> None:
    is_kernel = KernelPathRules().matcher()
    assert is_kernel("python/perf-kernels/rmsnorm.py") and is_kernel("python/triton_kernels/routing.py")
    assert not is_kernel("python/perf-tools/plot.py") and not is_kernel("docs/kernels.md")


def test_every_source_file_of_a_compiler_backend_counts_in_its_preset(tmp_path: Path, store: WikiStore) -> None:
    """ROCm/triton's AMD backend (third_party/amd/lib) is C++ named like host code: its preset counts it whole."""
    triton = GitRepo(tmp_path / "clones" / "ROCm+triton" / "repo")
    buffer_ops = triton.commit("[AMD] Introduce amdgpu.buffer_load and amdgpu.buffer_store (#4)",
                               {"third_party/amd/lib/TritonAMDGPUToLLVM/BufferOpsEmitter.cpp": "// emit\n"})
    docs = triton.commit("Explain the AMD backend", {"third_party/amd/README.md": "# amd\n"})
    tests = triton.commit("Test buffer ops", {"third_party/amd/test/lib/test_buffer.cpp": "// t\n"})
    aiter = GitRepo(tmp_path / "clones" / "ROCm+aiter" / "repo")
    host = aiter.commit("Add a helper", {"aiter/utility/lib/helper_emitter.cpp": "// h\n", "setup/lib/emitter.cpp": "// e\n"})
    build_preset(store, tmp_path / "clones", "amd")
    assert store.get(f"ROCm/triton@{buffer_ops[:12]}") is not None
    for outside in (docs, tests):  # not kernel code: kept only as history, out of how-to answers and topics
        assert store.get(f"ROCm/triton@{outside[:12]}").stats.get("history_only") == 1
    assert store.get(f"ROCm/aiter@{host[:12]}").source.paths == ["aiter/utility/lib/helper_emitter.cpp"]  # not aiter's
    rules = KernelPathRules(kernel_globs=["third_party/amd/**"]).matcher()
    assert rules("third_party/amd/lib/Dialect/TritonAMDGPU/IR/Dialect.cpp") and not rules("lib/Analysis/Alias.cpp")
    assert not KernelPathRules().matcher()("third_party/amd/lib/TritonAMDGPUToLLVM/BufferOpsEmitter.cpp")


def test_presets_read_the_layouts_a_repository_had_before(tmp_path: Path, store: WikiStore) -> None:
    """CK kept its kernels under composable_kernel/ until 2022, flashinfer its headers in include/ until 2023:
    the commits that introduced magic-number division or FP8 vector types live there, and were never ingested."""
    ck = GitRepo(tmp_path / "clones" / "ROCm+composable_kernel" / "repo")
    magic = ck.commit("Initial implementation of magic number division (#28)",
                      {"composable_kernel/include/utility/magic_division.hpp": "// magic\n"})
    generator = ck.commit("Make the library which generates CK instances for inductor",
                          {"python/ck4inductor/universal_gemm/gen_instances.py": "# gen\n"})
    script = ck.commit("Outside the preset paths", {"script/tool.cpp": "t\n"})
    flashinfer = GitRepo(tmp_path / "clones" / "flashinfer-ai+flashinfer" / "repo")
    e4m3 = flashinfer.commit("initial support of e4m3", {"include/vec_dtypes.cuh": "// e4m3\n"})
    tutorial_repo = GitRepo(tmp_path / "clones" / "ROCm+triton" / "repo")
    tutorial = tutorial_repo.commit("[TUTORIALS] persistent kernel - fp8 matmul (#4099)",
                                    {"python/tutorials/09-persistent-fp8-matmul.py": "# t\n"})
    build_preset(store, tmp_path / "clones", "amd")
    build_preset(store, tmp_path / "clones", "nvidia")
    assert store.get(f"ROCm/composable_kernel@{magic[:12]}") is not None
    assert store.get(f"ROCm/composable_kernel@{generator[:12]}") is not None  # a kernel library's instance generator
    assert store.get(f"ROCm/composable_kernel@{script[:12]}").stats.get("history_only") == 1
    assert "history_only" not in store.get(f"ROCm/composable_kernel@{magic[:12]}").stats
    assert store.get(f"flashinfer-ai/flashinfer@{e4m3[:12]}") is not None
    assert store.get(f"ROCm/triton@{tutorial[:12]}") is not None  # every tutorial is a Triton kernel


def test_history_only_commits_answer_history_questions_not_how_to_questions(tmp_path: Path, store: WikiStore) -> None:
    """A preset keeps build and CI commits too ("When did CK start compiling with --offload-compress?"), but a
    how-to question is answered by kernel work first, and no topic page lists them."""
    ck = GitRepo(tmp_path / "clones" / "ROCm+composable_kernel" / "repo")
    kernel = ck.commit("Add an MFMA GEMM tile for MI300 with wider LDS tiles",
                       {"include/ck/gemm_mfma_tile.hpp": "// tile\n"}, date="2024-01-01T00:00:00Z")
    flag = ck.commit("add --offload-compress to the MFMA GEMM tile build for MI300 (#1433)",
                     {"CMakeLists.txt": "set(FLAGS --offload-compress)\n"}, date="2024-02-01T00:00:00Z")
    build_preset(store, tmp_path / "clones", "amd")
    history = store.search("When did CK start compiling its instance library with offload compression?", k=2)
    assert history[0].id == f"ROCm/composable_kernel@{flag[:12]}"
    how_to = store.search("MFMA GEMM tile MI300", k=2)
    assert how_to[0].id == f"ROCm/composable_kernel@{kernel[:12]}"
    assert store.get(f"ROCm/composable_kernel@{flag[:12]}").stats.get("history_only") == 1


def test_the_first_layouts_are_kernel_history_too(tmp_path: Path, store: WikiStore) -> None:
    """CK's first layout (2018-19: src/include/ gridwise kernels, driver/ launchers) and Triton's MLIR passes
    (lib/Dialect/.../Transforms) are kernel code: their commits carry diffs, not history-only titles."""
    ck = GitRepo(tmp_path / "clones" / "ROCm+composable_kernel" / "repo")
    gridwise = ck.commit("implicit gemm v2", {"src/include/gridwise_implicit_gemm_convolution_2.hip.hpp": "// g\n",
                                              "driver/driver.hip.cpp": "// d\n"})
    build_preset(store, tmp_path / "clones", "amd")
    entry = store.get(f"ROCm/composable_kernel@{gridwise[:12]}")
    assert entry is not None and "history_only" not in entry.stats
    assert set(entry.source.paths) == {"src/include/gridwise_implicit_gemm_convolution_2.hip.hpp", "driver/driver.hip.cpp"}
    plain = KernelPathRules().matcher()
    assert plain("lib/Dialect/TritonGPU/Transforms/WSPipeline.cpp")
    assert plain("lib/Conversion/TritonGPUToLLVM/ElementwiseOpToLLVM.cpp")
    assert not plain("lib/Analysis/Alias.cpp") and not plain("python/setup.py")
