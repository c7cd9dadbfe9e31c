"""Writes the contest tasks' generated files: definition.json (from the definition parts and each
task's reference.py), workloads.jsonl (CPU-sized), workloads_gpu.jsonl (contest-sized), the
safetensors files of structured inputs, and every solution.json.

    .venv/bin/python examples/contest/make.py      # rewrites the generated files in place

Structured inputs (page tables, sequence lengths, cu_seqlens) cannot be drawn at random, so they
are fixed per workload in data/*.safetensors, seeded, and those tasks draw no held-out workloads
(`kloop.heldout.count = 0`) until kloop's importer can draw structured inputs itself.
"""

from __future__ import annotations

import json
import math
import uuid
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

HERE = Path(__file__).resolve().parent
NS = uuid.UUID("6f1c2a10-3c51-4d2e-9d0a-27c0a0b5e001")


def _uuid(name: str, tag: str) -> str:
    return str(uuid.uuid5(NS, f"{name}:{tag}"))


def _write_workloads(task: str, name: str, rows: list[tuple[str, dict, dict]], file: str) -> None:
    lines = []
    for tag, axes, inputs in rows:
        workload = {"uuid": _uuid(name, tag), "axes": axes, "inputs": inputs}
        lines.append(json.dumps({"definition": name, "solution": None, "workload": workload, "evaluation": None}))
    (HERE / task / file).write_text("\n".join(lines) + "\n")


def _solution(task: str, folder: str, name: str, definition: str, language: str, dps: bool, text: str) -> None:
    hardware = ["cuda", "rocm", "cpu"] if language == "triton" else ["cpu", "cuda", "rocm"]
    solution = {
        "name": name, "definition": definition, "author": "kloop-examples", "description": text,
        "spec": {"language": language, "target_hardware": hardware, "entry_point": "main.py::run",
                 "dependencies": [], "destination_passing_style": dps},
        "sources": [{"path": "main.py"}],
    }
    (HERE / task / folder / "solution.json").write_text(json.dumps(solution, indent=2) + "\n")


def _definition(task: str, body: dict[str, Any]) -> None:
    body = dict(body)
    body["reference"] = (HERE / task / "reference.py").read_text()
    (HERE / task / "definition.json").write_text(json.dumps(body, indent=2) + "\n")


def _random(names: list[str]) -> dict[str, dict]:
    return {n: {"type": "random"} for n in names}


def _tensors(task: str, tag: str, tensors: dict[str, torch.Tensor]) -> dict[str, dict]:
    (HERE / task / "data").mkdir(exist_ok=True)
    path = f"data/{tag}.safetensors"
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(HERE / task / path))
    return {k: {"type": "safetensors", "path": path, "tensor_key": k} for k in tensors}


def _common_solutions(task: str, name: str, baseline: str, vectorized: str, reordered: str) -> None:
    _solution(task, "baseline", f"{name}_triton_naive", name, "triton", True, baseline)
    _solution(task, "solutions/vectorized", f"{name}_torch_vectorized", name, "python", False, vectorized)
    _solution(task, "solutions/reordered", f"{name}_torch_reordered", name, "python", False, reordered)



# ------------------------------------------------------------------------------------ GDN decode
GDN_DECODE = "gdn_decode_qk4_v8_d128_k_last"
GDN_SCALE = {"type": "scalar", "value": 1.0 / math.sqrt(128)}


def gdn_decode() -> None:
    task = GDN_DECODE
    body = json.loads((HERE / task / "public.json").read_text())  # the contest's definition, verbatim
    body.pop("reference")
    body["kloop"] = {
        "flops": "batch_size * num_v_heads * head_size * head_size * 8",
        # as the public init draws them (flashinfer tests/gdn): A_log, a, dt_bias ~ 0.1*randn, k L2-normalized
        "input_ranges": {"A_log": {"low": -0.2, "high": 0.2}, "a": {"low": -0.2, "high": 0.2},
                         "dt_bias": {"low": -0.2, "high": 0.2}, "k": {"low": -0.15, "high": 0.15}},
        "heldout": {"count": 2, "axes": {"batch_size": {"min": 1, "max": 8}}},
    }
    _definition(task, body)
    names = ["q", "k", "v", "state", "A_log", "a", "dt_bias", "b"]
    rows = lambda sizes: [(f"b{b}", {"batch_size": b}, {**_random(names), "scale": GDN_SCALE}) for b in sizes]  # noqa: E731
    _write_workloads(task, task, rows([1, 2, 4]), "workloads.jsonl")
    _write_workloads(task, task, rows([1, 2, 4, 16, 64, 256, 1024]), "workloads_gpu.jsonl")
    _common_solutions(task, task,
                      "Naive Triton: one program per (batch, value head, 32 V rows); the state slice read once.",
                      "The reference's per-(batch, head) loops as batched einsums (honest rewrite).",
                      "Batched, with K-dot products summed in two halves and the update as g*S + beta*(v - k.gS) k^T.")


# ----------------------------------------------------------------------------------- GDN prefill
GDN_PREFILL = "gdn_prefill_qk4_v8_d128_k_last"


def _cu_seqlens(lens: list[int]) -> torch.Tensor:
    return torch.tensor([0, *torch.tensor(lens).cumsum(0).tolist()], dtype=torch.int64)


def gdn_prefill() -> None:
    task = GDN_PREFILL
    body = json.loads((HERE / task / "public.json").read_text())  # flashinfer's gdn_prefill_qk4_v8_d128
    for key in ("reference", "init"):
        body.pop(key, None)
    body["name"] = task
    body["tags"] = [*body["tags"], "layout:k-last"]
    # Adapted to the k-last decode definition's conventions: its dtypes for the `unknown` inputs, and
    # A_log / dt_bias passed raw (the reference computes g from them), so they are not optional here.
    for name, dtype in {"state": "float32", "A_log": "float32", "dt_bias": "float32", "a": "bfloat16", "b": "bfloat16"}.items():
        body["inputs"][name]["dtype"] = dtype
    for name in ("A_log", "dt_bias"):
        body["inputs"][name].pop("optional", None)
        body["inputs"][name]["description"] = f"{'Log decay' if name == 'A_log' else 'Decay bias'} (learnable), as in the decode definition."
    body["inputs"]["a"]["description"] = "Input-dependent decay from projection: g = exp(-exp(A_log) * softplus(a + dt_bias))."
    body["inputs"]["b"]["description"] = "Update gate input from projection: beta = sigmoid(b)."
    # a constraint over a tensor's values, which kloop's axis constraints cannot evaluate; the
    # workloads' cu_seqlens files satisfy it by construction
    body["constraints"].remove("total_seq_len == cu_seqlens[-1].item()")
    body["kloop"] = {
        "flops": "total_seq_len * num_v_heads * head_size * head_size * 8",
        "input_ranges": {"A_log": {"low": -0.2, "high": 0.2}, "a": {"low": -0.2, "high": 0.2},
                         "dt_bias": {"low": -0.2, "high": 0.2}, "k": {"low": -0.08, "high": 0.08}},
        "heldout": {"count": 0},
    }
    _definition(task, body)
    names = ["q", "k", "v", "state", "A_log", "a", "dt_bias", "b"]
    gen = torch.Generator().manual_seed(27)

    def rows(sizes: list[list[int]]) -> list[tuple[str, dict, dict]]:
        out = []
        for lens in sizes:
            tag = "s" + "_".join(map(str, lens)) if len(lens) < 6 else f"n{len(lens)}_t{sum(lens)}"
            inputs = {**_random(names), **_tensors(task, tag, {"cu_seqlens": _cu_seqlens(lens)}), "scale": GDN_SCALE}
            axes = {"total_seq_len": sum(lens), "num_seqs": len(lens), "len_cu_seqlens": len(lens) + 1}
            out.append((tag, axes, inputs))
        return out

    small = [[8], [5, 20, 12]]
    big = [[1024] * 4, torch.randint(256, 2048, (8,), generator=gen).tolist(), [4096] * 4]
    _write_workloads(task, task, rows(small), "workloads.jsonl")
    _write_workloads(task, task, rows(small + big), "workloads_gpu.jsonl")
    _common_solutions(task, task,
                      "Naive Triton: one program per (sequence, value head, 32 V rows) walking the tokens in order.",
                      "The reference's per-head work batched; one loop over each sequence's tokens.",
                      "Batched, with the update as g*S + beta*(v - k.gS) k^T and K-dots summed in two halves.")


# --------------------------------------------------------------------------------- DSA indexer
DSA_INDEXER = "dsa_topk_indexer_fp8_h64_d128_topk2048_ps64"


def dsa_indexer() -> None:
    task = DSA_INDEXER
    tensor = lambda shape, dtype, text: {"shape": shape, "dtype": dtype, "description": text}  # noqa: E731
    body = {
        "name": task,
        "op_type": "dsa_paged",
        "description": ("DeepSeek Sparse Attention (DSA) indexer: FP8 ReLU scores of one query per sequence against "
                        "its paged FP8 key cache (deep_gemm packing: per page, 64x128 fp8 values then 64 float32 "
                        "scales), weighted over 64 index heads; returns the global token indices "
                        "(page * 64 + offset) of the top-2048, -1 padded. Written by kloop from flashinfer-bench's "
                        "docs/op-types/dsa-paged.mdx and tests/bench/test_dsa_topk_indexer_evaluator.py."),
        "tags": ["stage:decode", "model:deepseek-v3.2", "quantization:float8_e4m3fn", "contest:mlsys26"],
        "axes": {
            "batch_size": {"type": "var"},
            "num_index_heads": {"type": "const", "value": 64},
            "index_head_dim": {"type": "const", "value": 128},
            "page_size": {"type": "const", "value": 64},
            "topk": {"type": "const", "value": 2048},
            "max_num_pages": {"type": "var", "description": "Columns of block_table."},
            "num_pages": {"type": "var", "description": "Pages in the key cache."},
            "kv_cache_num_heads": {"type": "const", "value": 1},
            "head_dim_with_scale": {"type": "const", "value": 132},
        },
        "constraints": ["num_index_heads == 64", "index_head_dim == 128", "head_dim_with_scale == 132"],
        "inputs": {
            "q_index_fp8": tensor(["batch_size", "num_index_heads", "index_head_dim"], "float8_e4m3fn", "FP8 index queries."),
            "k_index_cache_fp8": tensor(["num_pages", "page_size", "kv_cache_num_heads", "head_dim_with_scale"], "int8",
                                        "Packed deep_gemm FP8 key cache: per page 64*128 fp8 bytes, then 64 float32 scales."),
            "weights": tensor(["batch_size", "num_index_heads"], "float32", "Per-head weights."),
            "seq_lens": tensor(["batch_size"], "int32", "Tokens of each sequence."),
            "block_table": tensor(["batch_size", "max_num_pages"], "int32", "Page ids of each sequence, in order."),
        },
        "outputs": {"topk_indices": tensor(["batch_size", "topk"], "int32",
                                           "Global token indices (page * page_size + offset) of the top-k scores, any order, -1 padded.")},
        "kloop": {
            # the top-k is a set: order within a row is free; ties are not drawn (see README)
            "comparators": {"topk_indices": "set_equal"},
            "flops": "batch_size * max_num_pages * page_size * num_index_heads * index_head_dim * 2",
            # bytes 56..63: fp8 values in [1, 1.875] and float32 scales in [2^-15, 2^-1): finite, positive
            # and spread, as deep_gemm packing makes them; any other byte may be NaN or inf
            "input_ranges": {"k_index_cache_fp8": {"low": 56, "high": 63}},
            "coverage": {"declared_only": ["q_index_fp8"],
                         "reason": ("fp8 e4m3 queries drawn at the small or tiny scale (2^-9, 2^-16) flush to zero, every score "
                                    "is then 0 and the top-k of a sequence longer than 2048 is a free choice among ties, "
                                    "which an index-set comparator cannot judge; the weights still take every regime")},
            "heldout": {"count": 0},
        },
    }
    _definition(task, body)
    gen = torch.Generator().manual_seed(2048)

    def row(batch: int, num_pages: int, max_pages: int, lens: list[int]) -> tuple[str, dict, dict]:
        pages = torch.randperm(num_pages, generator=gen)[: batch * max_pages].view(batch, max_pages).to(torch.int32)
        tag = f"b{batch}_p{num_pages}_m{max_pages}"
        data = _tensors(task, tag, {"seq_lens": torch.tensor(lens, dtype=torch.int32), "block_table": pages})
        axes = {"batch_size": batch, "num_pages": num_pages, "max_num_pages": max_pages}
        return tag, axes, {**_random(["q_index_fp8", "k_index_cache_fp8", "weights"]), **data}

    small = [row(1, 36, 36, [2200]), row(2, 8, 4, [256, 97])]  # first: a real selection (tests verify only it)
    big = [row(16, 2048, 128, torch.randint(2049, 8193, (16,), generator=gen).tolist()),
           row(64, 4096, 64, torch.randint(1024, 4097, (64,), generator=gen).tolist())]
    _write_workloads(task, task, small, "workloads.jsonl")
    _write_workloads(task, task, small + big, "workloads_gpu.jsonl")
    _common_solutions(task, task,
                      "Naive Triton: scores of one (sequence, page) per program over all 64 heads; torch.topk selects.",
                      "The reference's per-sequence loop batched: dequant, scores and top-k for all sequences at once.",
                      "Batched, with the head-weighted sum taken over heads in reverse halves.")


# ------------------------------------------------------------------------- DSA sparse attention
DSA_ATTN = "dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64"


def dsa_attention() -> None:
    task = DSA_ATTN
    tensor = lambda shape, dtype, text: {"shape": shape, "dtype": dtype, "description": text}  # noqa: E731
    body = {
        "name": task,
        "op_type": "dsa_paged",
        "description": ("DSA (DeepSeek Sparse Attention): MLA latent layout + per-query top-K selection via "
                        "sparse_indices (-1 = padding), 16 heads, ckv 512, kpe 64, page size 64. From flashinfer's "
                        "dsa_paged trace template (flashinfer/trace/templates/attention.py) with the contest's constants."),
        "tags": ["status:verified", "sparse:topk", "contest:mlsys26"],
        "axes": {
            "num_tokens": {"type": "var", "description": "Number of tokens (batch_size for decode, total_num_tokens for prefill)."},
            "num_qo_heads": {"type": "const", "value": 16},
            "head_dim_ckv": {"type": "const", "value": 512},
            "head_dim_kpe": {"type": "const", "value": 64},
            "topk": {"type": "const", "value": 2048},
            "page_size": {"type": "const", "value": 64},
            "num_pages": {"type": "var", "description": "Total number of allocated pages in the KV cache."},
        },
        "constraints": ["num_pages * page_size >= 4096"],
        "inputs": {
            "q_nope": tensor(["num_tokens", "num_qo_heads", "head_dim_ckv"], "bfloat16", "Query without positional encoding."),
            "q_pe": tensor(["num_tokens", "num_qo_heads", "head_dim_kpe"], "bfloat16", "Query positional encoding."),
            "ckv_cache": tensor(["num_pages", "page_size", "head_dim_ckv"], "bfloat16", "Compressed key-value cache."),
            "kpe_cache": tensor(["num_pages", "page_size", "head_dim_kpe"], "bfloat16", "Key positional encoding cache."),
            "sparse_indices": tensor(["num_tokens", "topk"], "int32", "Global token indices (page*64+offset) per query; -1 = padding."),
            "sm_scale": {"shape": None, "dtype": "float32", "description": "Softmax scale, 1/sqrt(128 + 64) for MLA pre-absorption."},
        },
        "outputs": {
            "output": tensor(["num_tokens", "num_qo_heads", "head_dim_ckv"], "bfloat16", "Attention output."),
            "lse": tensor(["num_tokens", "num_qo_heads"], "float32", "The 2-based log-sum-exp of attention logits."),
        },
        "kloop": {
            "flops": "num_tokens * num_qo_heads * topk * (head_dim_ckv * 2 + head_dim_kpe) * 2",
            # indices drawn over the first 4096 cache slots (every workload has >= 64 pages): padding (-1)
            # and repeated slots occur, and the reference's semantics cover both (padding ignored, a
            # repeated slot counted each time it is listed)
            "input_ranges": {"sparse_indices": {"low": -1, "high": 4095}},
            "heldout": {"count": 2, "axes": {"num_tokens": {"min": 1, "max": 4}, "num_pages": {"min": 64, "max": 96}}},
        },
    }
    _definition(task, body)
    names = ["q_nope", "q_pe", "ckv_cache", "kpe_cache", "sparse_indices"]
    scale = {"type": "scalar", "value": 1.0 / math.sqrt(192)}
    rows = lambda sizes: [(f"t{t}_p{p}", {"num_tokens": t, "num_pages": p}, {**_random(names), "sm_scale": scale}) for t, p in sizes]  # noqa: E731
    small = [(1, 64), (3, 72)]
    _write_workloads(task, task, rows(small), "workloads.jsonl")
    _write_workloads(task, task, rows(small + [(1, 2048), (32, 2048), (128, 4096)]), "workloads_gpu.jsonl")
    _common_solutions(task, task,
                      "Naive Triton: one program per (token, head), online softmax over 64-index blocks.",
                      "The reference's per-token loop batched: one gather, masked softmax, two batched matmuls.",
                      "Batched, with the logits' ckv and kpe parts summed in the other order and the softmax as exp2.")


# ---------------------------------------------------------------------------------------- MoE
MOE = "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048"
MOE_MINI = "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h256_i128"
MOE_SCALARS = {"top_k": 8, "n_group": 8, "topk_group": 4, "local_expert_offset": 0, "routed_scaling_factor": 2.5}


COVERAGE_REASON = ("hidden states and their block scales keep their declared draw: fp8 e4m3 saturates at 448 and "
                   "flushes below 2^-9, so the regimes' scales make them +-448 or 0, and a block scale (amax / 448) is "
                   "never negative; at x128 values times x128 scales, squared by SwiGLU, outputs reach ~1e8, atol is void "
                   "and a cancelling element is held to rtol of itself, which an honest blocked fp32 sum misses (the Triton "
                   "baseline was 1 % off where torch's order used < 1/16 of the tolerance); routing logits take every regime, "
                   "the weights and their scales the signed one")


def _moe_body(hidden: int, inter: int, scales: dict[str, tuple[float, float]], name: str) -> dict:
    body = json.loads((HERE / MOE / "public.json").read_text())  # flashinfer's definition, verbatim
    for key in ("reference", "init", "check"):
        body.pop(key, None)
    body["name"] = name
    axes = body["axes"]
    axes["hidden_size"]["value"] = hidden
    axes["intermediate_size"]["value"] = inter
    axes["gemm1_out_size"]["value"] = 2 * inter
    axes["num_hidden_blocks"]["value"] = hidden // 128
    axes["num_intermediate_blocks"]["value"] = inter // 128
    axes["num_gemm1_out_blocks"]["value"] = 2 * inter // 128
    body["tags"] = [*body["tags"], "contest:mlsys26"]
    body["kloop"] = {
        "flops": "seq_len * top_k * (2 * hidden_size * gemm1_out_size + 2 * intermediate_size * hidden_size)",
        # block scales are positive in practice (amax / 448); their ranges keep the output O(1).
        # routing_bias is one draw for every token: at N(0, 1) it outweighs the sigmoid scores' spread, so
        # mostly the same groups win for all tokens and a fifth of the 32-token draws never pick group 0 (the
        # 32 local experts): output 0, where no scale or routing error can show. At +-0.1 it still changes 99 %
        # of the tokens' top-8 and each token picks group 0 about half the time (32 tokens: none in 0 of 400 draws).
        "input_ranges": {**{k: {"low": lo, "high": hi} for k, (lo, hi) in scales.items()},
                         "routing_bias": {"low": -0.1, "high": 0.1}},
        "coverage": {"declared_only": ["hidden_states", "hidden_states_scale"], "reason": COVERAGE_REASON},
        "heldout": {"count": 2, "axes": {"seq_len": {"min": 1, "max": 16}}},
    }
    return body


def moe() -> None:
    names = ["routing_logits", "routing_bias", "hidden_states", "hidden_states_scale", "gemm1_weights",
             "gemm1_weights_scale", "gemm2_weights", "gemm2_weights_scale"]
    scalars = {k: {"type": "scalar", "value": v} for k, v in MOE_SCALARS.items()}
    rows = lambda name, sizes: [(f"t{t}", {"seq_len": t}, {**_random(names), **scalars}) for t in sizes]  # noqa: E731
    big = _moe_body(7168, 2048, {"hidden_states_scale": (0.05, 0.15), "gemm1_weights_scale": (0.05, 0.15),
                                 "gemm2_weights_scale": (0.02, 0.06)}, MOE)
    big["tags"].append("gpu")
    (HERE / MOE / "definition.json").write_text(json.dumps({**big, "reference": (HERE / MOE / "reference.py").read_text()}, indent=2) + "\n")
    _write_workloads(MOE, MOE, rows(MOE, [8, 1, 64, 512]), "workloads.jsonl")
    _write_workloads(MOE, MOE, rows(MOE, [8, 1, 64, 512]), "workloads_gpu.jsonl")
    mini = _moe_body(256, 128, {"hidden_states_scale": (0.2, 0.3), "gemm1_weights_scale": (0.2, 0.3),
                                "gemm2_weights_scale": (0.15, 0.25)}, MOE_MINI)
    mini["description"] += " CPU-sized sibling of the contest's h7168_i2048 definition: same reference, same routing, smaller hidden and intermediate sizes."
    (HERE / MOE_MINI).mkdir(exist_ok=True)
    (HERE / MOE_MINI / "definition.json").write_text(json.dumps({**mini, "reference": (HERE / MOE / "reference.py").read_text()}, indent=2) + "\n")
    _write_workloads(MOE_MINI, MOE_MINI, rows(MOE_MINI, [32, 7, 1]), "workloads.jsonl")
    for task, name in ((MOE, MOE), (MOE_MINI, MOE_MINI)):
        for folder in ("baseline", "solutions/vectorized", "solutions/reordered"):
            (HERE / task / folder).mkdir(parents=True, exist_ok=True)
            if task == MOE_MINI:  # the same code: every size comes from the tensors' shapes
                (HERE / task / folder / "main.py").write_text((HERE / MOE / folder / "main.py").read_text())
        _common_solutions(task, name,
                          "Naive Triton: routing in torch; one program per (token, expert slot, output block) for each "
                          "block-scaled FP8 GEMM, scales applied per 128-block.",
                          "Routing as the reference; experts as one gather + batched matmuls over (token, slot) pairs.",
                          "Routing as the reference; each GEMM accumulated block by block over K (per-block scales "
                          "applied to partial sums), slots summed in reverse.")


CLAIMS = {
    GDN_DECODE: "Batch the reference's per-(batch, head) Python loops into two einsums over all heads: one pass over the state.",
    GDN_PREFILL: "Batch all value heads of a token into one einsum per step instead of a loop per head.",
    DSA_INDEXER: "Score every sequence at once (one gather of its pages, one einsum over heads, one batched top-k) instead of a loop per sequence.",
    DSA_ATTN: "Gather all selected slots of every token at once and run masked softmax + two batched matmuls instead of a loop per token.",
    MOE_MINI: "Dequantize only the experts that are used, with scales broadcast over 128x128 views instead of repeat_interleave copies.",
}


def campaigns() -> None:
    """One replay round per CPU task: the honest vectorized rewrite, as a writer would submit it."""
    folder = HERE.parent / "campaigns" / "contest"  # not examples/campaigns/*.jsonl: tests/agents maps those to examples/<stem>
    folder.mkdir(exist_ok=True)
    for task, claim in CLAIMS.items():
        source = HERE / task / "solutions" / "vectorized"
        files = {name: (source / name).read_text() for name in ("main.py", "solution.json")}
        line = json.dumps({"claim": claim, "files": files, "delete": []})
        (folder / f"{task}.jsonl").write_text(line + "\n")


if __name__ == "__main__":
    for make in (gdn_decode, gdn_prefill, dsa_indexer, dsa_attention, moe, campaigns):
        make()
    print("wrote", sorted(p.name for p in HERE.iterdir() if p.is_dir()))
