"""Known kernel repositories and the paths worth mining in each, grouped by vendor preset.

`kloop wiki build --preset amd|nvidia CLONES_DIR` looks for these repositories among the
folders of CLONES_DIR (by name: `aiter`, `ROCm+aiter`, `aiter.git`; a `repo/` git dir inside is
accepted too, the layout mirrors use) and ingests each with its own pathspecs. The table is data.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kloop.errors import BadInput


@dataclass(frozen=True)
class KnownRepo:
    """One upstream repository: its full name, the preset it belongs to, and what to read."""

    name: str  # OWNER/NAME, used as --repo (entry ids, provenance, web URLs)
    preset: str  # amd | nvidia
    paths: tuple[str, ...]  # git pathspec globs (empty: kloop's kernel-path rules alone decide)
    since: str | None = None
    kernel_paths: tuple[str, ...] = ()  # every source file under these counts as kernel code (a compiler backend)


KNOWN: tuple[KnownRepo, ...] = (
    KnownRepo("ROCm/aiter", "amd", ("aiter/**", "csrc/**", "hsa/**", "gradlib/**")),
    KnownRepo("ROCm/composable_kernel", "amd",  # composable_kernel/, device_operation/, host/: the layout until 2022;
              # src/include/ and driver/: the first one (2018-19, the gridwise convolutions and their launchers)
              ("include/ck/**", "include/ck_tile/**", "library/**", "example/**", "client_example/**",
               "composable_kernel/**", "device_operation/**", "host/**", "profiler/**", "codegen/**", "python/**",
               "src/**", "driver/**"),
              kernel_paths=("include/**", "library/**", "composable_kernel/**", "device_operation/**", "codegen/**",
                            "python/**", "src/include/**", "driver/**")),  # instance generators are kernel work too
    KnownRepo("ROCm/rocWMMA", "amd", ("library/include/**", "samples/**")),
    KnownRepo("ROCm/hipBLASLt", "amd", ("library/src/**", "tensilelite/**")),
    KnownRepo("ROCm/triton", "amd",  # python/perf-kernels: AMD's Triton kernels on its main_perf branch
              ("third_party/amd/**", "python/triton/**", "python/tutorials/**", "python/perf-kernels/**", "lib/**",
               "include/triton/**"),
              # the AMD backend's passes (LDS, pipelining, buffer ops), the compiler's own passes (as in
              # triton-lang/triton's preset: a fork shares them); every tutorial is a Triton kernel
              kernel_paths=("third_party/amd/**", "python/tutorials/**", "lib/**", "include/triton/**")),
    KnownRepo("ROCm/flash-attention", "amd", ("csrc/**", "flash_attn/**")),
    KnownRepo("NVIDIA/cutlass", "nvidia",
              ("include/cutlass/**", "include/cute/**", "examples/**", "python/**", "tools/library/**",
               "tools/profiler/**", "cutlass_compiler/**"),
              kernel_paths=("include/**", "cutlass_compiler/**")),  # the CuTe IR compiler since 2026
    KnownRepo("flashinfer-ai/flashinfer", "nvidia",  # include/*.cuh and python/: the layout of 2023-2024
              ("include/**", "csrc/**", "flashinfer/**", "python/**")),
    KnownRepo("deepseek-ai/DeepGEMM", "nvidia", ()),
    KnownRepo("Dao-AILab/flash-attention", "nvidia", ("csrc/**", "hopper/**", "flash_attn/**")),
    KnownRepo("HazyResearch/ThunderKittens", "nvidia", ("include/**", "kernels/**")),
    KnownRepo("triton-lang/triton", "nvidia",
              ("lib/**", "third_party/nvidia/**", "python/triton/**", "python/tutorials/**"),
              kernel_paths=("lib/**", "third_party/nvidia/**")),
    KnownRepo("vllm-project/vllm", "nvidia",
              ("csrc/**", "vllm/attention/**", "vllm/v1/attention/**", "vllm/model_executor/layers/**"), "2023-06-01"),
    KnownRepo("sgl-project/sglang", "nvidia", ("sgl-kernel/**", "python/sglang/srt/layers/**")),
)
PRESETS = ("amd", "nvidia")


def preset_repos(preset: str) -> list[KnownRepo]:
    """The repositories of one preset; BadInput for an unknown preset name."""
    if preset not in PRESETS:
        raise BadInput("--preset", f"unknown preset {preset!r} (expected one of {', '.join(PRESETS)})")
    return [r for r in KNOWN if r.preset == preset]


def _spellings(repo: KnownRepo) -> set[str]:
    owner, name = repo.name.lower().split("/")
    return {name, f"{owner}+{name}", f"{owner}_{name}", f"{owner}-{name}", name.replace("_", "-")}


def _git_dir(folder: Path) -> Path | None:
    """The folder itself when it is a clone (work tree or bare), or its `repo/` git dir."""
    for candidate in (folder, folder / "repo"):
        if (candidate / ".git").exists() or (candidate / "HEAD").is_file():
            return candidate
    return None


def find_clones(clones_dir: Path, preset: str) -> list[tuple[KnownRepo, Path]]:
    """(known repo, clone path) for every repository of the preset found in `clones_dir`."""
    if not clones_dir.is_dir():
        raise BadInput(clones_dir, "no such directory (expected a folder of clones)")
    wanted = preset_repos(preset)
    found: list[tuple[KnownRepo, Path]] = []
    for folder in sorted(p for p in clones_dir.iterdir() if p.is_dir()):
        key = folder.name.lower().removesuffix(".git")
        for repo in wanted:
            if key in _spellings(repo) and (git_dir := _git_dir(folder)) is not None:
                found.append((repo, git_dir))
    return found
