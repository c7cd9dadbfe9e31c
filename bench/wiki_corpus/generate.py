"""Synthetic kernel-repository histories for KernelWiki's evaluation and scale benchmarks.

Real git repositories are written through `git fast-import` (one process per repository, so
100k commits take seconds). Histories mix realistic kernel PR messages (CUTLASS / CK / aiter /
vLLM / FlashInfer / SGLang style), merges, docs and CI commits, and the hand-written landmark PRs
of landmarks.jsonl that the evaluation's questions ask about. `python generate.py OUT` writes
the evaluation corpus and prints its manifest.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
START = 1_640_995_200  # 2022-01-01T00:00:00Z

# Per-repository style: title prefixes, the vendors it covers, its kernel files and licence.
REPOS: dict[str, dict[str, list[str]]] = {
    "cutlass": {
        "prefixes": ["[Hopper]", "[SM90]", "[Blackwell]", "[CuTe]", "[Ampere]", ""],
        "vendors": ["nvidia"],
        "files": ["include/cutlass/gemm/collective/sm90_mma_tma.hpp", "include/cutlass/epilogue/thread/linear_combination.h",
                  "include/cute/atom/mma_traits_sm90_gmma.hpp", "include/cutlass/gemm/kernel/sm90_gemm_tma_warpspecialized.hpp",
                  "examples/48_hopper_warp_specialized_gemm/48_hopper_warp_specialized_gemm.cu", "tools/profiler/src/gemm_operation_profiler.cu"],
        "license": ["BSD-3-Clause"],
    },
    "composable_kernel": {
        "prefixes": ["[CK]", "[CK_TILE]", "[gfx942]", "[gfx950]", ""],
        "vendors": ["amd"],
        "files": ["include/ck_tile/ops/gemm/pipeline/gemm_pipeline_agmem_bgmem_creg_v1.hpp", "include/ck/utility/amd_buffer_addressing.hpp",
                  "include/ck_tile/ops/fmha/kernel/fmha_fwd_kernel.hpp", "library/src/tensor_operation_instance/gpu/gemm/device_gemm_xdl_instance.cpp",
                  "example/ck_tile/03_gemm/gemm_basic.cpp"],
        "license": ["MIT"],
    },
    "aiter": {
        "prefixes": ["[ROCm]", "[MI300]", "[Triton]", ""],
        "vendors": ["amd"],
        "files": ["aiter/ops/triton/gemm_a8w8.py", "csrc/kernels/activation_kernels.cu", "aiter/ops/triton/mha.py",
                  "csrc/kernels/quant_kernels.cu", "aiter/fused_moe.py"],
        "license": ["MIT"],
    },
    "vllm": {
        "prefixes": ["[Kernel]", "[ROCm]", "[Perf]", "[Bugfix]", "[Hardware][AMD]", "[Misc]"],
        "vendors": ["nvidia", "amd"],
        "files": ["csrc/attention/attention_kernels.cu", "csrc/layernorm_kernels.cu", "csrc/quantization/fp8/common.cu",
                  "vllm/model_executor/layers/fused_moe/fused_moe.py", "csrc/rocm/attention.cu", "csrc/moe/topk_softmax_kernels.cu"],
        "license": ["Apache-2.0"],
    },
    "flashinfer": {
        "prefixes": ["[Attention]", "[Sampling]", "perf:", "feat:", "fix:", ""],
        "vendors": ["nvidia"],
        "files": ["include/flashinfer/attention/prefill.cuh", "include/flashinfer/attention/decode.cuh", "include/flashinfer/norm.cuh",
                  "include/flashinfer/sampling.cuh", "csrc/batch_prefill.cu"],
        "license": ["Apache-2.0"],
    },
    "sglang": {
        "prefixes": ["[Kernel]", "[AMD]", "[Perf]", "[Fix]", ""],
        "vendors": ["nvidia", "amd"],
        "files": ["sgl-kernel/csrc/gemm/fp8_gemm_kernel.cu", "sgl-kernel/csrc/moe/moe_fused_gate.cu",
                  "python/sglang/srt/layers/attention/triton_ops/extend_attention.py", "sgl-kernel/csrc/elementwise/activation.cu"],
        "license": ["Apache-2.0"],
    },
}

VERBS = ["Optimize", "Tune", "Refactor", "Fix", "Add", "Support", "Enable", "Improve", "Speed up", "Clean up", "Port", "Simplify"]
TECHNIQUES = {
    "nvidia": ["TMA loads", "wgmma", "cp.async prefetch", "mma.sync", "ldmatrix", "cluster launch", "mbarrier waits", "tcgen05 MMA",
               "warp-specialized mainloop", "CUDA graph capture", "PTX inline asm", "CuTe layouts"],
    "amd": ["MFMA", "LDS layout", "buffer loads", "waves_per_eu", "ds_read_b128", "XCD mapping", "s_setprio", "wave64 reductions",
            "rocWMMA", "HIP graph capture", "amdgcn intrinsics", "CK tile distribution"],
    "any": ["split-K", "stream-K", "tile swizzle", "persistent scheduler", "vectorized loads", "epilogue fusion", "autotune configs",
            "online softmax", "block scaling", "double buffering", "loop unrolling", "launch bounds", "warp shuffles", "num_stages"],
}
OPS = ["GEMM", "grouped GEMM", "decode attention", "prefill attention", "fused MoE", "RMSNorm", "LayerNorm", "softmax",
       "top-k sampling", "rotary embedding", "KV cache write", "all-reduce", "conv2d", "GEMV", "fp8 quantization", "MLA decode"]
DTYPES = ["fp16", "bf16", "fp8", "int8", "int4", "fp32", "e4m3"]
GPUS = {"nvidia": ["H100", "A100", "B200", "L40S", "H200", "sm_90", "sm_80"], "amd": ["MI300X", "MI250", "MI355X", "gfx942", "MI325X"]}
BODIES = [
    "Benchmarked on {gpu}: {n}% faster on {dtype} shapes from Llama-3-70B.",
    "No functional change; the old path is kept behind a flag.",
    "Fixes #{issue}. The previous version read out of bounds for ragged batches.",
    "Co-authored-by: Kernel Dev <dev@example.com>",
    "Unit tests cover {dtype} and odd sizes. Perf is within noise elsewhere.",
    "This mostly helps small batch sizes where the kernel was latency bound.",
    "",
]
NON_KERNEL = [
    ("Remove builds on legacy OSs from CI", ".github/workflows/build.yml"),
    ("Update README with install holds and field notes", "README.md"),
    ("Bump version to {n}.{issue}", "setup.py"),
    ("Docs: fix typos in the contributor guide", "docs/contributing.md"),
    ("CI: pin cmake in the docker image", "docker/Dockerfile"),
]


@dataclass
class Commit:
    """One commit to write: message, files (path -> content), author time, merge or not."""

    message: str
    files: dict[str, str] = field(default_factory=dict)
    time: int = START
    merge_branch: str | None = None


def filler_commit(rng: random.Random, repo: str, index: int, time: int) -> Commit:
    """A plausible commit of `repo`: mostly kernel work, sometimes docs/CI, sometimes a merged PR."""
    style = REPOS[repo]
    if rng.random() < 0.12:
        text, path = rng.choice(NON_KERNEL)
        return Commit(text.format(n=rng.randint(1, 9), issue=rng.randint(1, 99)), {path: f"rev {index}\n"}, time)
    vendor = rng.choice(style["vendors"])
    technique = rng.choice(TECHNIQUES[vendor] + TECHNIQUES["any"])
    op, dtype, gpu = rng.choice(OPS), rng.choice(DTYPES), rng.choice(GPUS[vendor])
    prefix = rng.choice(style["prefixes"])
    verb = rng.choice(VERBS)
    title = f"{prefix} {verb} {technique} in {op} for {dtype} on {gpu}".strip()
    pr = 100 + index
    body = rng.choice(BODIES).format(gpu=gpu, n=rng.randint(2, 40), dtype=dtype, issue=rng.randint(10, 9999))
    path = rng.choice(style["files"])
    content = f"// {title}\n// revision {index}\nconstexpr int kTile{index % 7} = {rng.choice([64, 128, 256])};\n"
    if rng.random() < 0.1:
        return Commit(f"Merge pull request #{pr} from dev{index % 13}/topic-{index}\n\n{title}\n\n{body}".strip(),
                      {path: content}, time, merge_branch=f"topic-{index}")
    return Commit(f"{title} (#{pr})\n\n{body}".strip(), {path: content}, time)


def _data(text: str) -> bytes:
    raw = text.encode()
    return b"data %d\n" % len(raw) + raw + b"\n"


def write_history(path: Path, commits: list[Commit], license_text: str | None = None) -> list[str]:
    """Write `commits` as a real repository with one `git fast-import`; return each commit's sha."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    marks_file = path / ".git" / "kloop-marks"
    proc = subprocess.Popen(
        ["git", "-C", str(path), "fast-import", "--quiet", f"--export-marks={marks_file}"],
        stdin=subprocess.PIPE,
    )
    assert proc.stdin is not None
    out = proc.stdin
    mark = 0
    main_mark: int | None = None
    commit_marks: list[int] = []
    for i, commit in enumerate(commits):
        files = dict(commit.files)
        if i == 0 and license_text:
            files["LICENSE"] = license_text
        who = b"Kernel Dev <dev@example.com> %d +0000\n" % commit.time
        mods = b"".join(b"M 100644 inline " + p.encode() + b"\n" + _data(c) for p, c in files.items())
        if commit.merge_branch and main_mark is not None:
            mark += 1
            side = mark
            out.write(b"commit refs/heads/side\nmark :%d\nauthor %scommitter %s" % (side, who, who))
            out.write(_data(commit.message.split("\n\n", 1)[-1]) + b"from :%d\n" % main_mark + mods + b"\n")
            mark += 1
            out.write(b"commit refs/heads/main\nmark :%d\nauthor %scommitter %s" % (mark, who, who))
            out.write(_data(commit.message) + b"from :%d\nmerge :%d\n" % (main_mark, side) + mods + b"\n")
        else:
            mark += 1
            out.write(b"commit refs/heads/main\nmark :%d\nauthor %scommitter %s" % (mark, who, who))
            out.write(_data(commit.message) + (b"from :%d\n" % main_mark if main_mark else b"") + mods + b"\n")
        main_mark = mark
        commit_marks.append(mark)
    out.close()
    if proc.wait() != 0:
        raise RuntimeError(f"git fast-import failed in {path}")
    marks = dict(line.split() for line in marks_file.read_text().splitlines())
    subprocess.run(["git", "-C", str(path), "checkout", "-q", "-f", "main"], check=True)
    return [marks[f":{m}"] for m in commit_marks]


LICENSES = {
    "Apache-2.0": "Apache License\nVersion 2.0, January 2004\nhttp://www.apache.org/licenses/\n",
    "MIT": "MIT License\n\nPermission is hereby granted, free of charge, to any person obtaining a copy\n",
    "BSD-3-Clause": "Redistribution and use in source and binary forms, with or without modification, are permitted.\n"
    "Neither the name of the copyright holder nor the names of its contributors may be used.\n",
}


def load_landmarks() -> list[dict]:
    return [json.loads(line) for line in (HERE / "landmarks.jsonl").read_text().splitlines() if line.strip()]


def build_eval_corpus(root: Path, fillers_per_repo: int = 600, seed: int = 7) -> dict[str, str]:
    """One repository per upstream style, landmarks spread among fillers; returns landmark -> entry id."""
    rng = random.Random(seed)
    landmarks = load_landmarks()
    manifest: dict[str, str] = {}
    for repo in REPOS:
        own = [lm for lm in landmarks if lm["repo"] == repo]
        commits = [filler_commit(rng, repo, i, START + i * 3600) for i in range(fillers_per_repo)]
        slots = sorted(rng.sample(range(1, len(commits) + len(own)), len(own)))
        for slot, lm in zip(slots, own, strict=True):
            content = f"// {lm['title']}\n" + "".join(f"// step {k}\n" for k in range(3))
            commits.insert(slot, Commit(f"{lm['title']}\n\n{lm['body']}", dict.fromkeys(lm["paths"], content)))
        for i, commit in enumerate(commits):
            commit.time = START + i * 3600
        shas = write_history(root / repo, commits, LICENSES[REPOS[repo]["license"][0]])
        for slot, lm in zip(slots, own, strict=True):
            manifest[lm["key"]] = f"{repo}@{shas[slot][:12]}"
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def build_scale_repo(path: Path, count: int, seed: int = 11) -> None:
    """One repository of `count` commits (mixed repo styles) for the scale benchmark."""
    rng = random.Random(seed)
    names = list(REPOS)
    commits = [filler_commit(rng, names[i % len(names)], i, START + i * 60) for i in range(count)]
    write_history(path, commits, LICENSES["Apache-2.0"])


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "wiki-eval-corpus")
    print(json.dumps(build_eval_corpus(target), indent=1))
