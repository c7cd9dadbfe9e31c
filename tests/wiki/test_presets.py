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
