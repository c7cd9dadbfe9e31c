"""Resolve each question's ground truth with git itself and write questions.jsonl.

Every question names the git command that finds its answer (run in a clone of the repository);
the answer is that command's FIRST output line (a full sha). Re-run this after fetching newer
mirrors: `python bench/wiki_real/build_questions.py --mirrors /work/.mirror`.
Questions were written before retrieval was tuned; every third one (index % 3 == 2) is held back.
FRESH (split "fresh") was written later, before any further change, and is never tuned on;
FRESH2 (split "fresh2") later still, before the next session changed anything; FRESH3 (split
"fresh3") by a third session, committed before it was first scored, and never used to change retrieval;
FRESH4 (split "fresh4") by a fourth session before it changed anything; it changed nothing, and
fresh4 was scored once, blind, on the code it found.
FRESH5 (split "fresh5") was written by a fifth session on 2026-12-02 and committed alone before it
was ever scored.
FRESH6 (split "fresh6") was written by a sixth session on 2026-12-02 and committed alone before it
was ever scored.
FRESH7 (split "fresh7") was written by a seventh session on 2026-12-02 and committed alone before it
was ever scored.
FRESH8 (split "fresh8") was written by an eighth session on 2026-12-02 and committed alone before it
was ever scored.
FRESH9 (split "fresh9") was written by a ninth session on 2026-12-02 and committed alone before it
was ever scored.
FRESH10 (split "fresh10") was written by a tenth session on 2026-12-02 and committed alone before it
was ever scored.
FRESH11 (split "fresh11") was written by an eleventh session on 2026-12-02 and committed alone before
it was ever scored.
FRESH12 (split "fresh12") was written by a twelfth session on 2026-12-02 and committed alone before
it was ever scored.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

HERE = Path(__file__).parent
# repo -> (vendor, mirror folder)
REPOS = {
    "ROCm/aiter": ("amd", "ROCm+aiter"),
    "ROCm/composable_kernel": ("amd", "ROCm+composable_kernel"),
    "flashinfer-ai/flashinfer": ("nvidia", "flashinfer-ai+flashinfer"),
    "NVIDIA/cutlass": ("nvidia", "NVIDIA+cutlass"),
    "deepseek-ai/DeepGEMM": ("nvidia", "deepseek-ai+DeepGEMM"),
    "ROCm/triton": ("amd", "ROCm+triton"),
}


def added(path: str) -> str:
    """The oldest commit that added a file under `path`."""
    return f"git log --reverse --format=%H --diff-filter=A HEAD -- {path}"


def pickaxe(token: str, *paths: str) -> str:
    """The oldest commit whose diff changes the number of occurrences of `token`."""
    return f"git log --reverse --format=%H -S{token} HEAD -- {' '.join(paths)}".rstrip(" -")


Q = [
    # ROCm/aiter
    ("ROCm/aiter", "When were the MI300 (gfx942) flash attention forward assembly kernels first enabled?", added("hsa/gfx942/fmha_v3_fwd")),
    ("ROCm/aiter", "Which commit added quick allreduce to aiter?", added("aiter/ops/quick_all_reduce.py")),
    ("ROCm/aiter", "Where was DeepGEMM integrated into aiter?", added("aiter/ops/deepgemm.py")),
    ("ROCm/aiter", "Which commit added the greedy and random sampling kernels?", added("csrc/kernels/sample_kernels.cu")),
    ("ROCm/aiter", "When did aiter get fused rotary embedding forward and backward kernels?", added("aiter/ops/rope.py")),
    ("ROCm/aiter", "Which commit added an MXFP4 quantize kernel?", added("csrc/kernels/quant_mxfp4.cu")),
    ("ROCm/aiter", "When was the first assembly FP4 GEMM added for gfx950?", added("hsa/gfx950/f4gemm")),
    ("ROCm/aiter", "Which commit first added FP8 block-scale GEMM?", added("csrc/ck_gemm_a8w8_blockscale")),
    ("ROCm/aiter", "When was the MLA prefill assembly kernel added?", added("hsa/mla")),
    ("ROCm/aiter", "When was the fmha v3 backward asm kernel first integrated?", added("hsa/fmha_v3_bwd")),
    ("ROCm/aiter", "When was the first Triton kernel added to aiter?", added("aiter/ops/triton")),
    ("ROCm/aiter", "Which commit moved the assembly kernels into per-chip folders for gfx942 and gfx950?", added("hsa/gfx942/pa")),
    ("ROCm/aiter", "When were the gfx950 fmha backward assembly kernels added?", added("hsa/gfx950/fmha_v3_bwd")),
    ("ROCm/aiter", "Which commit added the two-stage MoE assembly kernels?", added("hsa/fmoe_2stages")),
    ("ROCm/aiter", "When was an fp8 blockscale GEMM assembly kernel added for MI300?", added("hsa/gfx942/fp8gemm_blockscale")),
    ("ROCm/aiter", "Which commit introduced the Opus bf16 GEMM?", added("aiter/ops/opus")),
    ("ROCm/aiter", "When were causal conv1d prefill kernels for gated delta net added?", added("aiter/ops/causal_conv1d_update.py")),
    ("ROCm/aiter", "Which commit added MHA backward for MI400 (gfx1250)?", added("hsa/gfx1250")),
    ("ROCm/aiter", "Which commit added the topk per row decode assembly kernels?", added("hsa/gfx942/topk_per_row_decode")),
    ("ROCm/aiter", "Where were top-k top-p sampling ops added?", added("aiter/ops/sampling.py")),
    ("ROCm/aiter", "When were bf16 GEMM assembly kernels for MI300 added?", added("hsa/gfx942/bf16gemm")),
    # ROCm/composable_kernel
    ("ROCm/composable_kernel", "Which commit introduced ck_tile?", added("example/ck_tile/01_fmha")),
    ("ROCm/composable_kernel", "When was the universal GEMM device operation (DeviceGemm_Xdl_CShuffleV3) added?", pickaxe("DeviceGemm_Xdl_CShuffleV3", "include")),
    ("ROCm/composable_kernel", "Which commit added WMMA instructions for Navi3 (RDNA3)?", pickaxe("wmma_f32_16x16x16_f16", "include")),
    ("ROCm/composable_kernel", "When did composable_kernel add an fp8 GEMM using the MFMA fp8 instructions?", pickaxe("__builtin_amdgcn_mfma_f32_32x32x16_fp8_fp8", "include")),
    ("ROCm/composable_kernel", "Which commit introduced the multi-ABD API for grouped convolution forward?", pickaxe("DeviceGroupedConvFwdMultipleABD", "include")),
    ("ROCm/composable_kernel", "Which commit added direct loads from global memory to LDS?", pickaxe("DeviceGemmMultipleD_Xdl_CShuffle_LdsDirectLoad", "include")),
    ("ROCm/composable_kernel", "When was the ck_tile FMHA backward (training) kernel added?", pickaxe("BlockFmhaBwd", "include")),
    ("ROCm/composable_kernel", "Which commit added fmha forward split-kv with a combine kernel?", pickaxe("fmha_fwd_splitkv", "include", "example")),
    ("ROCm/composable_kernel", "When was the bf8 data type added?", pickaxe("bf8_t", "include")),
    ("ROCm/composable_kernel", "Which commit added the fused GEMM+GEMM (batched gemm gemm) operation?", pickaxe("DeviceBatchedGemmGemm_Xdl_CShuffle", "include")),
    ("ROCm/composable_kernel", "When was the inter-wave producer-consumer (wavelet) GEMM introduced?", pickaxe("DeviceGemm_Xdl_WaveletModel", "include")),
    ("ROCm/composable_kernel", "Which commit added the DL (dot product, no xdlops) GEMM for Navi21?", pickaxe("DeviceGemmDl", "include")),
    ("ROCm/composable_kernel", "When was the DPP8 GEMM kernel redesigned around a warp-wise component?", pickaxe("DppSelector", "include")),
    ("ROCm/composable_kernel", "Which commit made readfirstlane work for class types?", pickaxe("amd_wave_read_first_lane", "include")),
    ("ROCm/composable_kernel", "When was a standalone softmax kernel added?", added("example/23_softmax")),
    ("ROCm/composable_kernel", "Which commit added ck_tile layernorm2d forward with welford?", added("include/ck_tile/ops/welford")),
    ("ROCm/composable_kernel", "When was the ck_tile GEMM example added?", added("example/ck_tile/03_gemm")),
    ("ROCm/composable_kernel", "Which commit added the fp8 GEMM multiply-multiply with row and column wise scales?", added("example/65_gemm_multiply_multiply")),
    ("ROCm/composable_kernel", "When was the column to image (col2im) kernel added?", added("example/52_im2col_col2im")),
    ("ROCm/composable_kernel", "Which commit added the first fp16 grouped GEMM?", added("example/15_grouped_gemm")),
    ("ROCm/composable_kernel", "Which commit added the initial stream-K GEMM implementation?", pickaxe("BlockToCTileMap_GemmStreamK", "include")),
    ("ROCm/composable_kernel", "When were XDL kernels disabled on hardware that does not support them?", pickaxe("is_xdl_supported", "include")),
    # flashinfer-ai/flashinfer
    ("flashinfer-ai/flashinfer", "Which commit added the AIR top-p sampling algorithm?", added("include/flashinfer/air_top_p.cuh")),
    ("flashinfer-ai/flashinfer", "When was SGLang's concat_mla_k kernel brought into flashinfer?", added("include/flashinfer/concat_mla.cuh")),
    ("flashinfer-ai/flashinfer", "Which commit added fast integer division (fastdiv) for uint32?", added("include/flashinfer/fastdiv.cuh")),
    ("flashinfer-ai/flashinfer", "When did flashinfer add ALiBi positional encoding?", added("include/flashinfer/pos_enc.cuh")),
    ("flashinfer-ai/flashinfer", "Which commit first added the fused sampling and normalization kernels?", added("include/flashinfer/sampling.cuh")),
    ("flashinfer-ai/flashinfer", "Where was the intra-kernel profiler added?", added("include/flashinfer/profiler.cuh")),
    ("flashinfer-ai/flashinfer", "Which commit brought the Blackwell FMHA decode cubins from TensorRT-LLM?", added("include/flashinfer/cubin_loader.h")),
    ("flashinfer-ai/flashinfer", "When was POD-Attention added?", added("flashinfer/pod.py")),
    ("flashinfer-ai/flashinfer", "Which commit integrated the xqa attention backend?", added("flashinfer/xqa.py")),
    ("flashinfer-ai/flashinfer", "When did flashinfer get green context support?", added("flashinfer/green_ctx.py")),
    ("flashinfer-ai/flashinfer", "Which commit added the FlashAttention-3 template for Hopper?", added("include/flashinfer/attention/hopper")),
    ("flashinfer-ai/flashinfer", "When was FA3-style MLA paged attention added?", added("include/flashinfer/attention/mla.cuh")),
    ("flashinfer-ai/flashinfer", "Which commit added the CUTLASS fused MoE kernels from TensorRT-LLM?", added("flashinfer/fp4_quantization.py")),
    ("flashinfer-ai/flashinfer", "When was the first cute-dsl kernel (masked fp4 GEMM) added?", added("flashinfer/cute_dsl")),
    ("flashinfer-ai/flashinfer", "Which commit added fragment layout swizzling with ptx?", added("include/flashinfer/frag_layout_swizzle.cuh")),
    ("flashinfer-ai/flashinfer", "When was the GDN decode kernel for Qwen3-Next added?", added("flashinfer/gdn_decode.py")),
    # NVIDIA/cutlass
    ("NVIDIA/cutlass", "Which commit added the stream-K example for the Ampere universal GEMM?", added("examples/47_ampere_gemm_universal_streamk")),
    ("NVIDIA/cutlass", "When did CUTLASS add the Hopper stream-K tile scheduler?", added("include/cutlass/gemm/kernel/sm90_tile_scheduler_stream_k.hpp")),
    ("NVIDIA/cutlass", "Which release introduced the ping-pong warp-specialized TMA GEMM kernel for sm90?", added("include/cutlass/gemm/kernel/sm90_gemm_tma_warpspecialized_pingpong.hpp")),
    ("NVIDIA/cutlass", "When was the Hopper fp8 GEMM with blockwise scaling example added?", added("examples/67_hopper_fp8_warp_specialized_gemm_with_blockwise_scaling")),
    ("NVIDIA/cutlass", "When did blockwise and groupwise GEMM for Blackwell land?", added("examples/81_blackwell_gemm_blockwise")),
    ("NVIDIA/cutlass", "Which commit introduced the UMMA (tcgen05 sm100) MMA atoms in CuTe?", added("include/cute/arch/mma_sm100_umma.hpp")),
    ("NVIDIA/cutlass", "Where was the Hopper mixed input dtype GEMM example added?", added("examples/55_hopper_mixed_dtype_gemm")),
    ("NVIDIA/cutlass", "Which commit added the Hopper sparse GEMM example?", added("examples/62_hopper_sparse_gemm")),
    ("NVIDIA/cutlass", "When was the CuTe DSL for Python released?", added("python/CuTeDSL")),
    ("NVIDIA/cutlass", "Which commit added the Hopper FMHA example?", added("examples/88_hopper_fmha")),
    ("NVIDIA/cutlass", "When was the fused multi-head attention example added?", added("examples/41_fused_multi_head_attention")),
    ("NVIDIA/cutlass", "Which commit added TMA copy traits for sm90 to CuTe?", added("include/cute/atom/copy_traits_sm90_tma.hpp")),
    # deepseek-ai/DeepGEMM
    ("deepseek-ai/DeepGEMM", "Which commit added TMA multicast on the B operand?", pickaxe("kNumTMAMulticastOnB")),
    ("deepseek-ai/DeepGEMM", "When was the STSM bank conflict solved with padding and 3D TMA?", pickaxe("BLOCK_N_PADDING")),
    ("deepseek-ai/DeepGEMM", "Which commit replaced shared memory padding with swizzling for the output?", pickaxe("kSwizzleDMode")),
    ("deepseek-ai/DeepGEMM", "When did DeepGEMM add NVRTC compilation?", pickaxe("NVRTC", "deep_gemm")),
    ("deepseek-ai/DeepGEMM", "Which commit added weight gradient (wgrad) kernels for MoE models?", pickaxe("wgrad_gemm_fp8_fp8_fp32_nt")),
    ("deepseek-ai/DeepGEMM", "When was the maximum FP8 E4M3 value constant introduced?", pickaxe("FP8_E4M3_MAX")),
    ("deepseek-ai/DeepGEMM", "Which commit introduced Mega MoE?", pickaxe("mega_moe")),
    ("deepseek-ai/DeepGEMM", "When were the FP8 MQA logits kernels added?", pickaxe("fp8_mqa_logits")),
    ("deepseek-ai/DeepGEMM", "Which commit added support for more GPU architectures such as sm100 with tcgen05?", pickaxe("tcgen05")),
    ("deepseek-ai/DeepGEMM", "When was the masked grouped FP8 GEMM renamed to m_grouped_fp8_gemm_nt_masked?", pickaxe("m_grouped_fp8_gemm_nt_masked")),
]


# The fresh set (split "fresh"): written on 2026-12-02, after the 81 above had been tuned on and
# before any further retrieval change; nobody has tuned on these. ROCm/triton's mirror lacks
# blobs, so its ground truth uses tree-only `--diff-filter=A` (pickaxe cannot read it).
FRESH = [
    # ROCm/aiter
    ("ROCm/aiter", "When did aiter get the Lean Attention kernel in Triton?", added("aiter/ops/triton/lean_atten.py")),
    ("ROCm/aiter", "Which commit added the first Gluon kernel to aiter?", added("aiter/ops/triton/gluon")),
    ("ROCm/aiter", "When was the CK int8/fp8 GEMM with a pre-shuffled weight layout added to aiter?", added("csrc/ck_gemm_a8w8_bpreshuffle")),
    ("ROCm/aiter", "Which commit added HIP kernels for the symmetric tridiagonal reduction (sytrd) used by eigensolvers?", added("csrc/kernels/solver")),
    ("ROCm/aiter", "When did aiter add a paged attention kernel for vLLM's V1 engine?", added("csrc/kernels/attention_v1.cu")),
    ("ROCm/aiter", "Which commit introduced grouped top-k routing with a correction bias, as DeepSeek-V3 uses?", added("csrc/kernels/topk_softmax_kernels_group.cu")),
    ("ROCm/aiter", "When was EAGLE tree speculative sampling added to aiter?", added("aiter/ops/speculative_sampling.py")),
    ("ROCm/aiter", "Which commit brought FlyDSL kernels into aiter?", added("aiter/ops/flydsl")),
    ("ROCm/aiter", "When did aiter add SageAttention (FA3-style attention with quantized QK) in Triton?", added("aiter/ops/triton/attention/fav3_sage.py")),
    # ROCm/composable_kernel
    ("ROCm/composable_kernel", "When did composable_kernel add multi-query and grouped-query attention forward for RDNA3 using WMMA?", pickaxe("DeviceMultiQueryAttentionForward_Wmma", "include")),
    ("ROCm/composable_kernel", "Which commit added a grouped GEMM variant where every group shares the same N and K?", pickaxe("DeviceGroupedGemm_Xdl_Fixed_NK", "include")),
    ("ROCm/composable_kernel", "When did CK add a GEMM that reads the B matrix straight from global memory without staging it in LDS?", pickaxe("DeviceGemmXdlSkipBLds", "include")),
    ("ROCm/composable_kernel", "Which commit introduced the two-stage kernel for grouped convolution weight gradients?", pickaxe("DeviceGroupedConvBwdWeightTwoStage_Xdl_CShuffle", "include")),
    ("ROCm/composable_kernel", "When did CK support grouped convolution forward on tensors larger than 2 GB?", pickaxe("DeviceGroupedConvFwdMultipleD_Xdl_CShuffle_Large_Tensor", "include")),
    ("ROCm/composable_kernel", "Which commit added the tile-loop (persistent) grouped GEMM with multiple D tensors?", pickaxe("DeviceGroupedGemmMultipleDXdlCShuffleTileLoop", "include")),
    ("ROCm/composable_kernel", "When was the CK wrapper, a CuTe-like layout and tensor API, introduced?", added("include/ck/wrapper")),
    ("ROCm/composable_kernel", "Which commit added complex GEMM computed with four real GEMMs?", pickaxe("DeviceCGemm_4Gemm_Xdl_CShuffle", "include")),
    ("ROCm/composable_kernel", "When did CK add the performance-optimized FP8 GEMM with A and B scales on the V3 pipeline?", pickaxe("DeviceGemmMultiD_ABScale_Xdl_CShuffle_V3", "include")),
    # ROCm/triton (AMD backend and AMD's perf kernels)
    ("ROCm/triton", "When did Triton's AMD backend get a pass that reduces LDS usage so kernels fit in shared memory?", added("third_party/amd/lib/TritonAMDGPUToLLVM/OptimizeLDSUsage.cpp")),
    ("ROCm/triton", "Which commit introduced version 2 of the AMD stream pipeliner?", added("third_party/amd/lib/TritonAMDGPUTransforms/StreamPipelineV2.cpp")),
    ("ROCm/triton", "When was pointer canonicalization (splitting base pointers from offsets) added to the AMD Triton backend?", added("third_party/amd/lib/TritonAMDGPUTransforms/CanonicalizePointers.cpp")),
    ("ROCm/triton", "Which commit gave the AMD backend control over instruction scheduling?", added("third_party/amd/lib/TritonAMDGPUToLLVM/SchedInstructions.cpp")),
    ("ROCm/triton", "When were buffer load and store operations introduced for AMD GPUs in Triton?", added("third_party/amd/lib/TritonAMDGPUToLLVM/BufferOpsEmitter.cpp")),
    ("ROCm/triton", "Which commit created the TritonAMDGPU MLIR dialect?", added("third_party/amd/include/Dialect/TritonAMDGPU")),
    ("ROCm/triton", "When was the explicit multiply-reduce GEMM for small shapes added to ROCm's Triton perf kernels?", added("python/perf-kernels/multreduce_matmul_kernel.py")),
    ("ROCm/triton", "Which commit added a Triton layernorm kernel to the AMD perf kernels?", added("python/perf-kernels/layernorm.py")),
    # flashinfer-ai/flashinfer
    ("flashinfer-ai/flashinfer", "When did flashinfer support custom attention masks in prefill?", added("include/flashinfer/attention/mask.cuh")),
    ("flashinfer-ai/flashinfer", "Which commit first added grouped GEMM (segment GEMM for LoRA) to flashinfer?", added("include/flashinfer/group_gemm")),
    ("flashinfer-ai/flashinfer", "When was the CUTLASS-based MLA backend for Blackwell added?", added("include/flashinfer/attention/cutlass_mla.cuh")),
    ("flashinfer-ai/flashinfer", "Which commit added an MLA decode kernel written with CuTe for Ampere (SM80)?", added("include/flashinfer/attention/decode_mla_cute_sm80.cuh")),
    ("flashinfer-ai/flashinfer", "Which commit let flashinfer's attention kernels be JIT-compiled for Apache TVM?", added("flashinfer/jit/attention/tvm.py")),
    ("flashinfer-ai/flashinfer", "Which commit added an API for fusing logits processing steps (temperature, top-k, top-p) in flashinfer?", added("flashinfer/logits_processor")),
    ("flashinfer-ai/flashinfer", "When did flashinfer add the Mamba selective state update kernel?", added("csrc/selective_state_update.cu")),
    ("flashinfer-ai/flashinfer", "Which commit added batched FP8 matrix multiplication (bmm_fp8)?", added("include/flashinfer/bmm_fp8.cuh")),
    ("flashinfer-ai/flashinfer", "When was TensorRT-LLM's multi-node NVLink all-reduce brought into flashinfer?", added("include/flashinfer/comm/trtllm_mnnvl_allreduce.cuh")),
    ("flashinfer-ai/flashinfer", "Which commit added FP8 prefill with per-head quantization for Hopper?", added("include/flashinfer/attention/hopper/quantization")),
    # NVIDIA/cutlass
    ("NVIDIA/cutlass", "When was the dual GEMM example (two GEMMs sharing the A operand) added to CUTLASS?", added("examples/45_dual_gemm")),
    ("NVIDIA/cutlass", "Which commit added the distributed GEMM example for Hopper?", added("examples/65_distributed_gemm")),
    ("NVIDIA/cutlass", "When did CUTLASS add the 3xTF32 GEMM that emulates FP32 accuracy on tensor cores?", added("examples/27_ampere_3xtf32_fast_accurate_tensorop_gemm")),
    ("NVIDIA/cutlass", "Which release added the FP8 GEMM example for Ada (sm89)?", added("examples/58_ada_fp8_gemm")),
    ("NVIDIA/cutlass", "When was the Blackwell fused multi-head attention example added?", added("examples/77_blackwell_fmha")),
    ("NVIDIA/cutlass", "Which commit introduced CuTe's Hopper GMMA (warpgroup MMA) atoms?", added("include/cute/arch/mma_sm90_gmma.hpp")),
    ("NVIDIA/cutlass", "When did CUTLASS add a GEMM example for Blackwell GeForce (sm120) GPUs?", added("examples/79_blackwell_geforce_gemm")),
    ("NVIDIA/cutlass", "Which commit added the Hopper state space duality (Mamba-2 SSD) example?", added("examples/111_hopper_ssd")),
    ("NVIDIA/cutlass", "When was the BF16x9 emulated FP32 GEMM for Blackwell added?", added("examples/78_blackwell_emulated_bf16x9_gemm")),
    # deepseek-ai/DeepGEMM
    ("deepseek-ai/DeepGEMM", "When did DeepGEMM support TMA multicast when the number of blocks does not divide by the cluster size?", pickaxe("num_blocks_in_group")),
    ("deepseek-ai/DeepGEMM", "Which commit fixed the benchmark so the L2 cache is really flushed between iterations?", pickaxe("flush_l2_size")),
    ("deepseek-ai/DeepGEMM", "Which commit added the post-compilation pass that interleaves FFMA instructions in the SASS?", pickaxe("interleave_ffma")),
    ("deepseek-ai/DeepGEMM", "When was the TF32 GEMM with fused hyper-connection pre-norm added?", pickaxe("tf32_hc_prenorm_gemm")),
    ("deepseek-ai/DeepGEMM", "When did DeepGEMM add einsum-style batched GEMMs (bmk,bnk->mn)?", pickaxe("bmk_bnk_mn")),
    ("deepseek-ai/DeepGEMM", "Which commit added a BF16 Mega MoE kernel?", pickaxe("bf16_mega_moe")),
]


# The second fresh set (split "fresh2"): written on 2026-12-02 by the next session, after tune, held
# and fresh had all been read for misses, and before that session changed any retrieval code. Its
# score on the code of commit d83648a is the honest generalisation number of that session. A few
# answers are compiled kernels whose name, not directory, says what they are (aiter's hsa/**.co):
# those rows use a git pathspec glob (`*` spans directories), still `--diff-filter=A`.
FRESH2 = [
    # ROCm/aiter: assembly kernels (hsa/**.co), csrc and Triton ops
    ("ROCm/aiter", "When did aiter first ship a fused-MoE assembly kernel with int4 weights and fp8 activations?", added("hsa/*fmoe*int4*")),
    ("ROCm/aiter", "Which commit added the first int8 fused MoE kernel written in assembly?", added("hsa/*fmoe*_int8*")),
    ("ROCm/aiter", "When did the FA v3 backward assembly kernels gain sliding-window attention support?", added("hsa/*fmha_v3_bwd*swa*")),
    ("ROCm/aiter", "Which commit added head-dim 192 variants of the flash-attention v3 backward asm kernels?", added("hsa/*fmha_v3_bwd*hd192*")),
    ("ROCm/aiter", "When did the MLA decode assembly kernels learn to read a KV cache with 64-token pages for DeepSeek-V3.2?", added("hsa/*mla*page64*")),
    ("ROCm/aiter", "Which commit added an assembly version of the MoE top-k softmax gating kernel?", added("hsa/*topksoftmax*")),
    ("ROCm/aiter", "When did aiter get hand-written assembly kernels for int8 GEMM on MI300?", added("hsa/*i8gemm*")),
    ("ROCm/aiter", "Which commit brought NVFP4 GEMM assembly kernels for MI400 (gfx1250)?", added("hsa/*nvfp4*")),
    ("ROCm/aiter", "When did the persistent paged-attention asm kernels add per-block FP8 scales for the KV cache?", added("hsa/*pa_bf16_perblockFp8*")),
    ("ROCm/aiter", "Which commit added a batched int8 GEMM built on composable_kernel to aiter?", added("csrc/ck_batched_gemm_a8w8")),
    ("ROCm/aiter", "When was SGLang's fused MoE gating kernel with top-k selection ported to aiter?", added("csrc/kernels/moe_fused_gate.cu")),
    ("ROCm/aiter", "When did aiter get a plain-HIP (no CK, no asm) attention forward path for 64-wide heads?", added("csrc/kernels/mha_native")),
    ("ROCm/aiter", "When was HSTU attention for generative recommendation models added as a Triton op?", added("aiter/ops/triton/*hstu_attention*")),
    ("ROCm/aiter", "Which commit started Triton-based multi-GPU communication primitives built on Iris?", added("aiter/ops/triton/comms")),
    # ROCm/composable_kernel
    ("ROCm/composable_kernel", "When did CK first support batchnorm for training and inference?", added("example/34_batchnorm")),
    ("ROCm/composable_kernel", "Which commit added an embedding lookup fused with layer normalization to CK?", added("example/36_sparse_embedding")),
    ("ROCm/composable_kernel", "When was the backward pass of max pooling added to composable_kernel?", added("example/49_maxpool2d_bwd")),
    ("ROCm/composable_kernel", "Which commit added 3D pooling (forward) to CK?", added("example/48_pool3d_fwd")),
    ("ROCm/composable_kernel", "When did CK add convolution backward-data with extra D tensors fused into the epilogue?", pickaxe("DeviceGroupedConvBwdDataMultipleD_Xdl_CShuffle_v1", "include")),
    ("ROCm/composable_kernel", "Which commit implemented image-to-column in ck_tile?", added("example/ck_tile/04_img2col")),
    ("ROCm/composable_kernel", "When did CK's fused attention (batched GEMM, softmax, GEMM) learn to write its output in a permuted layout?", pickaxe("DeviceBatchedGemmSoftmaxGemmPermute_Xdl_CShuffle", "include")),
    # ROCm/triton
    ("ROCm/triton", "Which commit reworked how the AMD Triton backend picks MFMA instructions for a dot?", added("third_party/amd/lib/TritonAMDGPUTransforms/MfmaGroup.cpp")),
    ("ROCm/triton", "When did Triton start lowering dot operations to WMMA instructions on Navi31 / RDNA3?", added("third_party/amd/lib/TritonAMDGPUToLLVM/DotOpToLLVM/WMMA.cpp")),
    ("ROCm/triton", "Which commit made the AMD backend lower masked loads and stores to function calls that become branches at the end?", added("third_party/amd/lib/TritonAMDGPUToLLVM/BuiltinFuncToLLVM.cpp")),
    ("ROCm/triton", "When was an RMSNorm Triton kernel added to ROCm's perf-kernels?", added("python/perf-kernels/rmsnorm.py")),
    ("ROCm/triton", "Which commit added a softmax kernel to AMD's Triton perf-kernels?", added("python/perf-kernels/softmax.py")),
    ("ROCm/triton", "When did ROCm's Triton stream-K GEMM get a variant that accumulates partial tiles with atomics?", added("python/perf-kernels/streamk/streamk_kernel_atomic.py")),
    # flashinfer-ai/flashinfer
    ("flashinfer-ai/flashinfer", "When did flashinfer add a fast GEMM for the DeepSeek-V3 MoE router?", added("csrc/dsv3_router_gemm.cu")),
    ("flashinfer-ai/flashinfer", "Which commit brought a non-cuBLAS bf16 GEMM backend called TGV into flashinfer?", added("csrc/tgv_gemm.cu")),
    ("flashinfer-ai/flashinfer", "When could flashinfer first quantize the KV cache to FP4 and back?", added("csrc/fp4_kv_quantization.cu")),
    ("flashinfer-ai/flashinfer", "Which commit added sparse MLA attention for RTX-class Blackwell (sm120) GPUs?", added("csrc/sparse_mla_sm120.cu")),
    ("flashinfer-ai/flashinfer", "When did flashinfer add a peer-to-peer all-to-all for Ulysses-style sequence parallelism?", added("csrc/ulysses_all_to_all.cu")),
    ("flashinfer-ai/flashinfer", "Which commit added the SVDQuant NVFP4 GEMM with the low-rank branch fused, for B200?", added("csrc/nvfp4_svdquant_gemm_cutlass_sm100.cu")),
    # NVIDIA/cutlass
    ("NVIDIA/cutlass", "When did CUTLASS add an FP4 matrix-vector (GEMV) example?", added("examples/91_fp4_gemv")),
    ("NVIDIA/cutlass", "Which commit added a transposed 2D convolution (deconvolution) example to CUTLASS?", added("examples/34_transposed_conv2d")),
    ("NVIDIA/cutlass", "When was a mixture-of-experts GEMM example for Blackwell added to CUTLASS?", added("examples/92_blackwell_moe_gemm")),
    ("NVIDIA/cutlass", "Which CUTLASS release introduced quaternion-valued GEMM?", added("examples/21_quaternion_gemm")),
    # deepseek-ai/DeepGEMM
    ("deepseek-ai/DeepGEMM", "Which commit let DeepGEMM print the kernel configuration it selected, through an environment variable?", pickaxe("DG_PRINT_CONFIGS")),
    ("deepseek-ai/DeepGEMM", "When did DeepGEMM add a way to override the C++ standard NVCC uses for its JIT kernels?", pickaxe("DG_NVCC_OVERRIDE_CPP_STANDARD")),
]


# The third fresh set (split "fresh3"): written on 2026-12-02 by a third session, after fresh2 had
# been used as a gate, and committed alone before it was scored. No retrieval change is made with
# it: its score is the blind number of the code it was first scored on. No answer is shared with
# the first 171 (checked by sha), and none asks about a thing they ask about. Both forms again:
# file creation (--diff-filter=A) and the first diff that adds an identifier (-S, never on the
# ROCm/triton snapshot, which cannot run pickaxe).
FRESH3 = [
    # ROCm/aiter
    ("ROCm/aiter", "Which commit added an activation kernel that fuses SiLU, the gate multiply and a scaling factor?", pickaxe("scaled_silu_and_mul", "aiter", "csrc")),
    ("ROCm/aiter", "Which commit added the fp8 fused-MoE assembly kernels that apply the top-k routing weight in the first GEMM instead of the second?", pickaxe("fmoe_g1u1_tkw1", "aiter", "csrc")),
    ("ROCm/aiter", "Where did aiter get an MLA decode kernel written with HipKittens for models with 128 heads?", added("csrc/kernels/mla/hk")),
    ("ROCm/aiter", "When did composable_kernel's flash attention first become callable as an aiter op?", added("aiter/ops/mha.py")),
    ("ROCm/aiter", "Which commit added a paged attention path for SGLang's ragged KV-cache layout?", added("csrc/kernels/attention_ragged.cu")),
    ("ROCm/aiter", "When did aiter first ship an all-reduce implemented in hand-written assembly?", added("csrc/include/communication_asm.h")),
    ("ROCm/aiter", "What added a Triton kernel that computes a whole feed-forward block (gate/up GEMM, activation, down GEMM) end to end?", added("aiter/ops/triton/ff_a16w16.py")),
    ("ROCm/aiter", "When was a kernel added for Qwen-VL that fuses Q/K normalization, multimodal rotary embedding and quantized KV-cache writes?", added("csrc/kernels/fused_qk_norm_mrope_cache_quant.cu")),
    ("ROCm/aiter", "When did aiter first ship version-4 flash-attention forward assembly kernels?", added("hsa/gfx942/fmha_v4_fwd")),
    # ROCm/composable_kernel
    ("ROCm/composable_kernel", "When did CK get a 4-bit integer type that kernels can compute with?", pickaxe("int4_t", "include")),
    ("ROCm/composable_kernel", "What first fused layer normalization into a GEMM as a single CK kernel?", pickaxe("DeviceGemmLayerNorm_Xdl_CShuffle", "include")),
    ("ROCm/composable_kernel", "When did the universal GEMM gain a split-K variant whose partial results are summed by a separate reduction?", pickaxe("DeviceGemm_Xdl_CShuffleV3R1", "include")),
    ("ROCm/composable_kernel", "Which commit added a standalone tensor permute (transpose) device operation to CK?", pickaxe("DevicePermute", "include")),
    ("ROCm/composable_kernel", "When could CK compute the input gradient of layer normalization and group normalization?", added("example/53_layernorm2d_bwd")),
    ("ROCm/composable_kernel", "Which commit first added per-channel int8 quantized GEMM and convolution to composable_kernel?", added("example/14_gemm_quantization")),
    ("ROCm/composable_kernel", "When did CK add a fused kernel that runs two back-to-back 1x1 convolutions?", added("example/41_grouped_conv_conv_fwd")),
    # ROCm/triton
    ("ROCm/triton", "What moved the AMD backend into Triton's own tree under third_party?", added("third_party/amd/backend/compiler.py")),
    ("ROCm/triton", "Which commit made the AMD Triton backend parse and use its gfx target name consistently?", added("third_party/amd/lib/TritonAMDGPUToLLVM/TargetUtils.cpp")),
    ("ROCm/triton", "When did Triton kernels on AMD GPUs get libdevice math functions?", added("python/triton/language/extra/hip")),
    ("ROCm/triton", "When did ROCm's Triton perf kernels first include a split-K attention kernel for decoding?", added("python/perf-kernels/06-attention-decode.py")),
    ("ROCm/triton", "Which commit brought the AMDGCN control-flow-graph and layout plotting tools to the main_perf branch?", added("python/perf-kernels/tools/amdgcn-cfg")),
    ("ROCm/triton", "When was a CI check for matmul performance regressions added to ROCm's Triton perf kernels?", added("python/perf-kernels/tools/tune_gemm/test_regression.py")),
    # flashinfer-ai/flashinfer
    ("flashinfer-ai/flashinfer", "When did flashinfer support cascade attention with more than two levels of shared prefixes?", pickaxe("MultiLevelCascadeAttentionWrapper", "python", "flashinfer")),
    ("flashinfer-ai/flashinfer", "Which commit changed how flashinfer's prefill kernel arranges its warps for short query lengths, to speed up GQA?", added("include/flashinfer/attention/warp_layout.cuh")),
    ("flashinfer-ai/flashinfer", "When did flashinfer add an RMSNorm kernel fused with the residual addition?", pickaxe("fused_add_rmsnorm", "include", "python", "flashinfer")),
    ("flashinfer-ai/flashinfer", "Which commit added rotary embeddings with Llama 3.1's frequency scaling?", pickaxe("apply_llama31_rope", "include", "python", "flashinfer")),
    ("flashinfer-ai/flashinfer", "When did flashinfer add a cuDNN-based attention backend?", added("csrc/cudnn_sdpa_kernel_launcher.cu")),
    # NVIDIA/cutlass
    ("NVIDIA/cutlass", "When did CUTLASS add an example that fuses softmax with a GEMM?", added("examples/35_gemm_softmax")),
    ("NVIDIA/cutlass", "Which CUTLASS release first showed fusing two back-to-back GEMMs or convolutions into one kernel?", added("examples/13_two_tensor_op_fusion")),
    ("NVIDIA/cutlass", "Which commit added the example that runs general tensor contractions (GETT) with CUTLASS 3's Hopper GEMM kernels?", added("examples/51_hopper_gett")),
    ("NVIDIA/cutlass", "When could the Hopper persistent tile scheduler be told to rasterize along M or along N?", pickaxe("RasterOrderOptions", "include")),
    ("NVIDIA/cutlass", "Which CUTLASS release added a persistent tile scheduler for grouped GEMM on Hopper?", pickaxe("PersistentTileSchedulerSm90Group", "include")),
    # deepseek-ai/DeepGEMM
    ("deepseek-ai/DeepGEMM", "When did DeepGEMM stop hand-writing its WGMMA wrappers and use CUTLASS's MMA atoms instead?", pickaxe("mma_sm90_gmma_ext")),
    ("deepseek-ai/DeepGEMM", "Which commit made the contiguous grouped GEMM skip the padded rows of experts whose M is not block-aligned?", pickaxe("aligned_end")),
    ("deepseek-ai/DeepGEMM", "When could DeepGEMM launch its JIT kernels through the CUDA driver API, for toolkits older than 12.8?", pickaxe("DG_JIT_USE_DRIVER_API")),
    ("deepseek-ai/DeepGEMM", "When did DeepGEMM add Triton versions of its grouped BF16 GEMMs as legacy kernels?", added("deep_gemm/legacy")),
]


# The fourth fresh set (split "fresh4"): written on 2026-12-02 by a fourth session before it changed anything,
# scored once on the code it found, blind (that session made no retrieval change); its misses are never
# printed or read and no retrieval decision uses it. No answer sha is shared with the first
# 207 (checked), and none asks about a thing they ask about. 18 rows by -S (an identifier added to files that
# mostly existed; 6 of them name the identifier as an engineer holding it would, 12 describe it), 19 by
# file creation (ROCm/triton's 5 all by creation: its snapshot cannot run pickaxe).
FRESH4 = [
    # ROCm/aiter
    ("ROCm/aiter", "When did aiter's custom all-reduce communicator also learn to do an all-gather?", pickaxe("all_gather_reg", "aiter", "csrc")),
    ("ROCm/aiter", "When did aiter's Triton flash-attention kernels in mha.py, forward and backward, gain gpt-oss-style attention sinks?", pickaxe("ENABLE_SINK", "aiter", "csrc")),
    ("ROCm/aiter", "When could users override the tuned configs of aiter's Triton flash-attention forward with a JSON file named in an environment variable?", pickaxe("FLASH_ATTENTION_FWD_TRITON_AMD_CONFIG_JSON", "aiter")),
    ("ROCm/aiter", "Which commit fused the all-reduce with the RMSNorm that follows it into one kernel in aiter's communication ops?", pickaxe("fused_allreduce_rmsnorm", "aiter", "csrc")),
    ("ROCm/aiter", "Which commit introduced aiter's `paged_attention_common` entry point, which picks between the assembly and HIP paged-attention kernels?", pickaxe("paged_attention_common", "aiter", "csrc")),
    ("ROCm/aiter", "When did aiter's Triton kernels get shared helpers that remap program ids across the XCDs of an MI300?", added("aiter/ops/triton/utils/pid_preprocessing.py")),
    ("ROCm/aiter", "When did aiter get a Triton attention kernel that prefills in chunks against a paged KV cache?", added("aiter/ops/triton/chunked_pa_prefill.py")),
    ("ROCm/aiter", "When was SGLang's Triton extend attention (cached prefix plus new tokens) imported into aiter?", added("aiter/ops/triton/extend_attention.py")),
    ("ROCm/aiter", "Which commit added a Triton kernel that gathers a request's prefix from the paged MLA latent cache and up-projects it into K and V with block-scaled FP8 weights?", added("aiter/ops/triton/gather_kv_b_proj.py")),
    # ROCm/composable_kernel
    ("ROCm/composable_kernel", "Which commit made CK's default float-to-bf16 conversion truncate, keeping round-to-nearest-even as a separate conversion?", pickaxe("bf16_convert_rtn", "include")),
    ("ROCm/composable_kernel", "Which commit added `f8_convert_sr`, CK's fp8 conversion with stochastic rounding?", pickaxe("f8_convert_sr", "include")),
    ("ROCm/composable_kernel", "When did CK get a fast tanh-approximated GELU element-wise operation for GEMM epilogues?", pickaxe("FastGelu", "include")),
    ("ROCm/composable_kernel", "Which commit introduced `AmdBufferCoherence`, letting CK set the GLC/SLC cache bits of buffer loads and stores?", pickaxe("AmdBufferCoherence", "include")),
    ("ROCm/composable_kernel", "When did CK add a GEMM whose epilogue computes alpha*(A*B) + beta*D with an extra input tensor D?", added("example/02_gemm_bilinear")),
    ("ROCm/composable_kernel", "Which commit gave CK a standalone element-wise kernel that adds two tensors with broadcasting?", added("example/19_binary_elementwise")),
    ("ROCm/composable_kernel", "When could a batched GEMM in CK also compute row sums and sums of squares of its output in the same kernel?", added("example/18_batched_gemm_reduce")),
    # ROCm/triton
    ("ROCm/triton", "When did Triton kernels get a seeded, counter-based random number generator for in-kernel dropout?", added("python/triton/language/random.py")),
    ("ROCm/triton", "Which commit first let Triton kernels run in an interpreter on the host for debugging instead of being compiled?", added("python/triton/debugger")),
    ("ROCm/triton", "When did Triton's matmul op get an analytical performance model to prune its autotuning configurations?", added("python/triton/ops/matmul_perf_model.py")),
    ("ROCm/triton", "Which commit added a fused softmax cross-entropy loss op to Triton?", added("python/triton/ops/cross_entropy.py")),
    ("ROCm/triton", "When was a flash-attention implementation first shipped inside triton.ops?", added("python/triton/ops/flash_attention.py")),
    # flashinfer-ai/flashinfer
    ("flashinfer-ai/flashinfer", "Which commit let flashinfer's batch decode run on the prefill kernel's tensor-core path when many query heads share one KV head?", pickaxe("use_tensor_cores", "include", "csrc", "python", "flashinfer")),
    ("flashinfer-ai/flashinfer", "When did flashinfer's Python API get attention over a block-sparse (BSR) mask?", pickaxe("BlockSparseAttentionWrapper", "include", "csrc", "python", "flashinfer")),
    ("flashinfer-ai/flashinfer", "Which commit added the `window_left` argument, i.e. sliding-window attention, to flashinfer?", pickaxe("window_left", "include", "csrc", "python", "flashinfer")),
    ("flashinfer-ai/flashinfer", "When was flashinfer's `BatchAttention`, one persistent kernel for mixed prefill and decode batches, introduced?", pickaxe("BatchAttention", "include", "csrc", "python", "flashinfer")),
    ("flashinfer-ai/flashinfer", "Which commit added an all-reduce for single-node GPUs connected only over PCIe, without NVLink?", added("csrc/pcie_ipc_all_reduce.cu")),
    ("flashinfer-ai/flashinfer", "When did flashinfer get fused gate, residual, LayerNorm and modulation kernels for video diffusion transformers such as WAN?", added("include/flashinfer/norm/fused_dit_layernorm.cuh")),
    ("flashinfer-ai/flashinfer", "Which commit added DeepSeek-V4's table-lookup expert routing (hash MoE) to flashinfer?", added("csrc/fused_moe/hash_topk.cu")),
    # NVIDIA/cutlass
    ("NVIDIA/cutlass", "Which CUTLASS release introduced `CacheHintSm90` for TMA loads?", pickaxe("CacheHintSm90", "include")),
    ("NVIDIA/cutlass", "When did CUTLASS's Hopper epilogues get a fused linear combination with a per-column bias, beside the per-row one?", pickaxe("Sm90LinCombPerColBias", "include")),
    ("NVIDIA/cutlass", "Which commit stopped CUTLASS from linking libcuda directly, fetching driver functions through the runtime API instead?", pickaxe("cudaGetDriverEntryPoint", "include")),
    ("NVIDIA/cutlass", "Which CUTLASS release added planar-complex GEMM, where real and imaginary parts live in separate arrays?", added("examples/10_planar_complex")),
    ("NVIDIA/cutlass", "When did CUTLASS start computing convolutions as implicit GEMMs?", added("examples/09_turing_tensorop_conv2dfprop")),
    ("NVIDIA/cutlass", "Which commit added an example that reduces one of a GEMM's input operands along K while the GEMM runs?", added("examples/23_ampere_gemm_operand_reduction_fusion")),
    # deepseek-ai/DeepGEMM
    ("deepseek-ai/DeepGEMM", "Which commit first let DeepGEMM's FP8 GEMM use 256-row (BLOCK_M = 256) block tiles?", pickaxe("SM90_64x256x32_F32E4M3E4M3_SS")),
    ("deepseek-ai/DeepGEMM", "When did DeepGEMM's FP8 GEMM first allow a block N wider than 128, with a 160-wide WGMMA?", pickaxe("SM90_64x160x32_F32E4M3E4M3_SS")),
    ("deepseek-ai/DeepGEMM", "When did DeepGEMM add a CMake project just so IDEs such as CLion can index its CUDA headers?", added("indexing/main.cu")),
]


# The fifth fresh set (split "fresh5"): written on 2026-12-02 by a fifth session and committed alone
# before it was ever scored; nobody read a search result while writing it. No answer sha is shared with
# the first 244 rows (checked), no two fresh5 rows share one, and none asks about a thing they ask
# about. 16 rows by -S (an identifier added to files that mostly existed), 24 by file creation
# (ROCm/triton's 5 all by creation: its snapshot cannot run pickaxe).
FRESH5 = [
    # ROCm/aiter
    ("ROCm/aiter", "When did aiter add the `AITER_REBUILD` environment variable that forces its JIT-built modules to be compiled again?", pickaxe("AITER_REBUILD", "aiter", "csrc")),
    ("ROCm/aiter", "Since which commit can aiter's Triton kernels be launched from JAX through jax-triton, not only from PyTorch?", pickaxe("jax", "aiter")),
    ("ROCm/aiter", "Which commit introduced `torch_compile_guard`, the wrapper that lets torch.compile trace aiter's GEMM and other ops without graph breaks?", pickaxe("torch_compile_guard", "aiter", "csrc")),
    ("ROCm/aiter", "When did aiter get a composable_kernel operator for video sparse attention (VSA)?", added("aiter/ops/vsa_sparse_attention.py")),
    ("ROCm/aiter", "Which commit gave aiter a Triton implementation of `moe_align_block_size`, the step that pads and sorts token ids per expert before a fused MoE?", added("aiter/ops/triton/moe_align_block_size.py")),
    ("ROCm/aiter", "When did aiter first carry a Triton port of vLLM's unified attention kernel, which handles a batch's prefill and decode requests in one launch?", added("aiter/ops/triton/unified_attention.py")),
    ("ROCm/aiter", "Which commit added a fused kernel for DeepSeek-V4 that undoes RoPE on the attention output and quantizes it per group to FP8 for the following projection GEMM?", added("aiter/ops/inverse_rope_group_quant.py")),
    ("ROCm/aiter", "When did aiter get a fused-MoE entry point that splits the shared expert's tokens across data-parallel ranks?", added("aiter/fused_moe_dp_shared_expert.py")),
    # ROCm/composable_kernel
    ("ROCm/composable_kernel", "When did composable_kernel start replacing integer division in its index transforms with multiply-and-shift by precomputed magic numbers?", pickaxe("MagicDivision")),
    ("ROCm/composable_kernel", "Which commit introduced CK's `SpaceFillingCurve` utility for ordering the accesses of a threadwise copy?", pickaxe("SpaceFillingCurve")),
    ("ROCm/composable_kernel", "When was composable_kernel first made to build and run on MI300 (gfx940)?", pickaxe("gfx940")),
    ("ROCm/composable_kernel", "Which commit added CK wrappers for the `smfmac` sparse matrix-core instructions used for 2:4 structured-sparsity GEMM?", pickaxe("smfmac", "include")),
    ("ROCm/composable_kernel", "When did CK first get generic tensor reduction kernels (sum, max, average over chosen dimensions), with blockwise and multiblock variants?", added("example/13_reduce_blockwise")),
    ("ROCm/composable_kernel", "Which commit created the `ck4inductor` Python package that generates CK GEMM instances for PyTorch Inductor's CK backend?", added("python/ck4inductor")),
    ("ROCm/composable_kernel", "When did CK first let an outside application link against its prebuilt instance library, with client examples showing how?", added("client_example")),
    # ROCm/triton
    ("ROCm/triton", "Which commit added `tl.associative_scan` (prefix scans such as cumsum) to Triton?", added("lib/Conversion/TritonGPUToLLVM/ScanOpToLLVM.cpp")),
    ("ROCm/triton", "When did Triton get the `tl.histogram` op?", added("lib/Conversion/TritonGPUToLLVM/HistogramOpToLLVM.cpp")),
    ("ROCm/triton", "Which commit added the optimizer pass that keeps a reduction's partial sums in each thread's registers across loop iterations instead of reducing every iteration?", added("lib/Dialect/TritonGPU/Transforms/OptimizeThreadLocality.cpp")),
    ("ROCm/triton", "When did Triton's rewritten backend, built on MLIR with the TritonGPU dialect, replace the legacy one on the main branch?", added("lib/Dialect/TritonGPU")),
    ("ROCm/triton", "Which commit added the tutorial comparing a persistent FP8 matmul kernel, with and without TMA, against cuBLAS?", added("python/tutorials/09-persistent-fp8-matmul.py")),
    # flashinfer-ai/flashinfer
    ("flashinfer-ai/flashinfer", "When did flashinfer first learn to load and convert FP8 (e4m3) values in its vector types, the groundwork for an FP8 KV cache?", pickaxe("__nv_fp8_e4m3", "include", "python", "flashinfer", "csrc")),
    ("flashinfer-ai/flashinfer", "Which commit introduced `CUDAGraphBatchDecodeWithPagedKVCacheWrapper`?", pickaxe("CUDAGraphBatchDecodeWithPagedKVCacheWrapper", "include", "python", "flashinfer", "csrc")),
    ("flashinfer-ai/flashinfer", "When could flashinfer's API calls be logged by setting `FLASHINFER_LOGLEVEL`?", pickaxe("FLASHINFER_LOGLEVEL", "include", "python", "flashinfer", "csrc")),
    ("flashinfer-ai/flashinfer", "When did flashinfer first get a paged KV-cache data structure so decode could run over a batch of requests?", added("include/flashinfer/page.cuh")),
    ("flashinfer-ai/flashinfer", "Which commit let flashinfer's attention kernels soft-cap the attention logits (tanh capping at 30, as Grok uses) inside the kernel?", added("include/flashinfer/attention/logits_post_hook.cuh")),
    ("flashinfer-ai/flashinfer", "Where were NVSHMEM Python bindings added to flashinfer?", added("flashinfer/comm/nvshmem.py")),
    ("flashinfer-ai/flashinfer", "When did flashinfer's JIT learn to target SM103, SM110, SM120 and SM121 GPUs?", added("flashinfer/compilation_context.py")),
    ("flashinfer-ai/flashinfer", "Which commit added a CuTe DSL GEMM that overlaps a two-shot all-reduce of its output using multimem instructions?", added("flashinfer/cute_dsl/gemm_allreduce_two_shot.py")),
    # NVIDIA/cutlass
    ("NVIDIA/cutlass", "When did CUTLASS get an epilogue that fuses a ResNet-style residual block (bias and activation, then the residual add, then another op) into a convolution or GEMM?", pickaxe("LinearCombinationResidualBlock", "include")),
    ("NVIDIA/cutlass", "Which commit added a CuTe copy atom for the `movmatrix` (m8n8 transpose) instruction?", pickaxe("movmatrix", "include")),
    ("NVIDIA/cutlass", "When could CuTe draw a TiledMMA's thread and value layout with `print_svg`?", pickaxe("print_svg", "include")),
    ("NVIDIA/cutlass", "Which release introduced `cutlass_profiler`, the command-line tool that benchmarks CUTLASS's kernel library?", added("tools/profiler")),
    ("NVIDIA/cutlass", "When did CUTLASS first support the tensor cores of NVIDIA Ampere (sm80) GPUs?", added("include/cutlass/arch/mma_sm80.h")),
    ("NVIDIA/cutlass", "Which CUTLASS release added an example of grouped symmetric rank-2k updates (SYR2K)?", added("examples/38_syr2k_grouped")),
    ("NVIDIA/cutlass", "When did CUTLASS start its own MLIR-based compiler with a CuTe IR dialect?", added("cutlass_compiler")),
    # deepseek-ai/DeepGEMM
    ("deepseek-ai/DeepGEMM", "When did DeepGEMM's JIT start compiling its Blackwell kernels for the `sm_100f` family target instead of `sm_100a`?", pickaxe("100f")),
    ("deepseek-ai/DeepGEMM", "Which commit made DeepGEMM's config heuristic also choose how many SMs to launch on, to shrink the last-wave tail?", pickaxe("best_n_block")),
    ("deepseek-ai/DeepGEMM", "When did DeepGEMM's JIT stop asking ATen for the GPU's device properties and query the CUDA runtime itself?", pickaxe("cudaGetDeviceProperties")),
    ("deepseek-ai/DeepGEMM", "Which commit set up GitHub Actions workflows that build and publish DeepGEMM wheels?", added(".github")),
    ("deepseek-ai/DeepGEMM", "When did DeepGEMM get a `pyproject.toml` that declares torch as a build dependency?", added("pyproject.toml")),
]


# The sixth fresh set (split "fresh6"): written on 2026-12-02 by a sixth session and committed alone
# before it was ever scored; no search was run while writing it. No answer sha is shared with the first
# 284 rows (checked), no two fresh6 rows share one, and none asks about a thing they ask about. 16 rows
# by -S (an identifier added to files that mostly existed), 24 by file creation (ROCm/triton's 5 all by
# creation: its snapshot cannot run pickaxe).
FRESH6 = [
    # ROCm/aiter
    ("ROCm/aiter", "When did aiter get its own HIP kernel for group normalization?", added("aiter/ops/groupnorm.py")),
    ("ROCm/aiter", "Which commit hooked the MORI library into aiter's distributed package for expert-parallel all-to-all (MoE dispatch and combine)?", added("aiter/dist/device_communicators/all2all.py")),
    ("ROCm/aiter", "When could aiter's Triton kernels first be compiled ahead of time into code that a C++ program launches without Python?", added("aiter/aot")),
    ("ROCm/aiter", "Where did aiter add per-model GEMM shape lists (Llama 70B and 405B, Qwen 32B) with a guide for tuning GEMMs at the model level?", added("aiter/configs/model_configs")),
    ("ROCm/aiter", "When did aiter add `reshape_and_cache_with_pertoken_quant`, which quantizes keys and values per token while writing them into the paged KV cache?", pickaxe("reshape_and_cache_with_pertoken_quant", "aiter", "csrc")),
    ("ROCm/aiter", "Since which commit can aiter be built without composable_kernel at all, by setting `ENABLE_CK=0`?", pickaxe("ENABLE_CK", "aiter", "csrc", "setup.py")),
    ("ROCm/aiter", "Which commit gave aiter an RMSNorm that also quantizes its output to int8 with per-token scales computed on the fly, in the same kernel?", pickaxe("rmsnorm2d_fwd_with_dynamicquant", "aiter", "csrc")),
    # ROCm/composable_kernel
    ("ROCm/composable_kernel", "When did CK device operations get `GetTypeIdName()` and `GetTypeIdHashCode()`, so a client can tell one kernel instance from another?", added("client_example/14_instance_id")),
    ("ROCm/composable_kernel", "When did ck_tile's attention get a step that appends new keys and values, optionally rotated with RoPE, to the KV cache before the forward pass?", pickaxe("fmha_fwd_appendkv", "include", "example")),
    ("ROCm/composable_kernel", "When did composable_kernel first get code paths for RDNA4 (gfx12) GPUs?", pickaxe("gfx12", "include", "library")),
    ("ROCm/composable_kernel", "Which commit added double-precision (FP64) GEMM to CK, built on the FP64 MFMA instruction?", added("library/src/tensor_operation_instance/gpu/gemm/device_gemm_xdl_f64_f64_f64_mk_nk_mn_instance.cpp")),
    ("ROCm/composable_kernel", "Since when can composable_kernel be built for only a chosen set of data types, through the `DTYPES` CMake option?", pickaxe("DTYPES", "CMakeLists.txt")),
    ("ROCm/composable_kernel", "When did composable_kernel first run 3D convolution forward?", added("example/10_conv3d_fwd_xdl")),
    ("ROCm/composable_kernel", "Which commit added CK's codegen host library, which emits GEMM kernel source at runtime for a client such as MIGraphX to compile?", added("codegen")),
    ("ROCm/composable_kernel", "When did CK first write its output through a C-shuffle epilogue, reordering the output tile in LDS before storing it to global memory?", pickaxe("CShuffle")),
    # ROCm/triton
    ("ROCm/triton", "When were block pointers (`tl.make_block_ptr` with `tl.advance`) added to Triton?", added("lib/Dialect/Triton/Transforms/RewriteTensorPointer.cpp")),
    ("ROCm/triton", "Which commit introduced linear layouts, one representation meant to replace Triton's many special-case GPU layouts?", added("lib/Dialect/TritonGPU/IR/LinearLayoutConversions.cpp")),
    ("ROCm/triton", "When did Triton stop zero-filling a dot's accumulator before the loop and instead tell the MMA to ignore the accumulator on the first iteration?", added("lib/Dialect/TritonGPU/Transforms/OptimizeAccumulatorInit.cpp")),
    ("ROCm/triton", "Which commit added `tl.dot_scaled`, a matmul on microscaled (MX) FP8 operands with their block scales?", added("third_party/nvidia/lib/TritonNVIDIAGPUToLLVM/UpcastMXFPToLLVM.cpp")),
    ("ROCm/triton", "When could Triton first print the SASS disassembly of a compiled kernel?", added("python/triton/tools/disasm.py")),
    # flashinfer-ai/flashinfer
    ("flashinfer-ai/flashinfer", "When did flashinfer's prefill get `allow_fp16_qk_reduction`, which accumulates the query-key dot products in fp16 for speed at some cost in accuracy?", pickaxe("allow_fp16_qk_reduction", "include", "csrc", "python", "flashinfer")),
    ("flashinfer-ai/flashinfer", "When did flashinfer first let its kernels use programmatic dependent launch, overlapping a kernel's prologue with the end of the previous kernel on Hopper and later?", pickaxe("enable_pdl", "include", "csrc", "python", "flashinfer")),
    ("flashinfer-ai/flashinfer", "Since which commit can flashinfer's decode use a different data type for the queries than for the KV cache?", pickaxe("q_data_type", "include", "csrc", "python", "flashinfer")),
    ("flashinfer-ai/flashinfer", "Which commit let flashinfer's decode kernel read a KV cache laid out heads-first (HND) as well as tokens-first (NHD)?", added("include/flashinfer/layout.cuh")),
    ("flashinfer-ai/flashinfer", "When did flashinfer replace CUDA's cp.async intrinsics with its own inline-PTX wrappers for asynchronous global-to-shared-memory copies?", added("include/flashinfer/cp_async.cuh")),
    ("flashinfer-ai/flashinfer", "When did flashinfer add GEMM kernels written in cuTile (CUDA Tile Python) as a backend?", added("flashinfer/gemm/kernels/cutile")),
    ("flashinfer-ai/flashinfer", "Which commit added `flashinfer collect-env`, a report of the GPU, driver, CUDA and library versions to attach to bug reports?", added("flashinfer/collect_env.py")),
    ("flashinfer-ai/flashinfer", "Which commit added a persistent Triton GEMM that can be confined to a chosen number of SMs, so other work can run beside it on the same GPU (NanoFlow-style)?", added("flashinfer/triton/sm_constraint_gemm.py")),
    # NVIDIA/cutlass
    ("NVIDIA/cutlass", "When did CUTLASS first drive Volta's tensor cores with the mma.sync 8x8x4 instruction instead of WMMA?", added("cutlass/gemm/volta884_gemm_traits.h")),
    ("NVIDIA/cutlass", "When did CUTLASS get SiLU and HardSwish as GEMM epilogue activations?", added("include/cutlass/epilogue/thread/linear_combination_silu.h")),
    ("NVIDIA/cutlass", "Which commit added an example showing how another CMake project imports an installed CUTLASS with `find_package`?", added("examples/60_cutlass_import")),
    ("NVIDIA/cutlass", "When did CUTLASS's collective builder learn to build a SIMT (CUDA-core, FP32) GEMM mainloop for Blackwell sm100?", pickaxe("sm100_make_simt_f32_tiled_mma", "include")),
    ("NVIDIA/cutlass", "Which commit added a CuTe DSL FP8 GEMM for Hopper that periodically promotes partial sums into a second FP32 accumulator (2xAcc)?", added("examples/python/CuTeDSL/hopper/dense_gemm_fp8_2xacc.py")),
    ("NVIDIA/cutlass", "When did CUTLASS ship its Operator API (`cutlass.operators`), a Python registry for finding and running CuTe DSL kernels?", added("operators")),
    ("NVIDIA/cutlass", "Where did CUTLASS start its step-by-step Blackwell GEMM tutorial in CuTe DSL, beginning with fp16_gemm_0?", added("examples/python/CuTeDSL/blackwell/tutorial_gemm")),
    # deepseek-ai/DeepGEMM
    ("deepseek-ai/DeepGEMM", "When did DeepGEMM start memoizing `get_best_configs`, so a GEMM shape seen before skips the config search?", pickaxe("lru_cache", "deep_gemm/jit_kernels/gemm.py")),
    ("deepseek-ai/DeepGEMM", "Which commit changed how DeepGEMM finds the kernel's name in a compiled CUBIN's symbol table, accepting only entry functions?", pickaxe("STO_ENTRY")),
    ("deepseek-ai/DeepGEMM", "Which commit fixed DeepGEMM's k-grouped FP8 GEMM on Hopper using the wrong group's TMA descriptor when the scheduler skips a group?", pickaxe("prefetched_next_group_idx")),
    ("deepseek-ai/DeepGEMM", "Where did DeepGEMM work around an ABI breakage by walking its include directories without `std::filesystem::recursive_directory_iterator`?", pickaxe("collect_files")),
    ("deepseek-ai/DeepGEMM", "Since which commit does `get_col_major_tma_aligned_tensor` accept plain 2-D scaling-factor tensors, not only batched 3-D ones?", pickaxe("x.shape[-2]")),
]


# The seventh fresh set (split "fresh7"): written on 2026-12-02 by a seventh session and committed alone
# before it was ever scored; no search was run while writing it. No answer sha is shared with the first
# 324 rows (checked), no two fresh7 rows share one, and none asks about a thing they ask about. 15 rows
# by -S (an identifier added to files that mostly existed), 25 by file creation (ROCm/triton's 5 all by
# creation: its snapshot cannot run pickaxe).
FRESH7 = [
    # ROCm/aiter
    ("ROCm/aiter", "When did aiter first ship a LayerNorm kernel written in hand-tuned assembly?", added("hsa/layer_norm.co")),
    ("ROCm/aiter", "Which commit let aiter's assembly paged-attention and fused-MoE kernels take fp16 inputs, not only bf16?", added("hsa/fmoe_f16.co")),
    ("ROCm/aiter", "When did aiter add element-wise unary operators such as sigmoid and tanh as HIP kernels?", added("csrc/kernels/unary_operator.cu")),
    ("ROCm/aiter", "Since which commit can aiter's fused MoE and MoE sorting take an `expert_mask`, so that under expert parallelism each GPU computes only its local experts?", pickaxe("expert_mask", "aiter", "csrc")),
    ("ROCm/aiter", "Which commit gave aiter's Triton flash attention a backward pass fused into a single kernel (`mha_onekernel_bwd`)?", added("aiter/ops/triton/mha_onekernel_bwd.py")),
    ("ROCm/aiter", "When did aiter add `get_mla_metadata_v1`, which plans how MLA decode splits each sequence's KV cache across work groups, with a reduce kernel that merges the partial results?", pickaxe("get_mla_metadata_v1", "aiter", "csrc")),
    ("ROCm/aiter", "Where did aiter get a `flash_attn_func` backend for RDNA4 consumer GPUs (gfx1201)?", added("aiter/ops/flydsl/kernels/flash_attn_func_gfx1201.py")),
    ("ROCm/aiter", "Which commit added a fused kernel for DeepSeek-V4's compressed attention (its CSA and HCA paths)?", added("aiter/ops/flydsl/kernels/fused_compress_attn.py")),
    # ROCm/composable_kernel
    ("ROCm/composable_kernel", "When did composable_kernel pull the main loop of its XDL GEMM out into a separate gridwise pipeline class (`GridwiseGemmPipeline_v1`)?", pickaxe("GridwiseGemmPipeline_v1")),
    ("ROCm/composable_kernel", "What first made composable_kernel drive AMD's matrix cores through MFMA (xdlops) instructions?", added("composable_kernel/include/utility/amd_xdlops.hpp")),
    ("ROCm/composable_kernel", "When did composable_kernel's unit tests move to the GoogleTest framework?", added("cmake/googletest.cmake")),
    ("ROCm/composable_kernel", "Which commit set up composable_kernel's documentation build with Sphinx and Doxygen?", added("docs/Doxyfile")),
    ("ROCm/composable_kernel", "Which commit introduced `DeviceGemm_Xdl_CShuffleV2`, a GEMM with a new blockwise pipeline tuned for MI200 and MI300?", pickaxe("DeviceGemm_Xdl_CShuffleV2", "include")),
    ("ROCm/composable_kernel", "When did CK add the `ConvScale` element-wise operation, which applies input, weight and output scales when a convolution writes FP8 output?", pickaxe("ConvScale", "include")),
    ("ROCm/composable_kernel", "When did CK's grouped convolution forward learn to merge several groups into one GEMM, to speed up convolutions with many small groups such as depthwise ones?", pickaxe("NumGroupsToMerge", "include")),
    # ROCm/triton
    ("ROCm/triton", "When did Triton replace Triton-C with kernels written as Python functions decorated with `@triton.jit`?", added("python/triton/code_gen.py")),
    ("ROCm/triton", "Which commit started ROCm support in Triton's MLIR-based backend, compiling a first (empty) kernel to an AMD HSACO code object?", added("lib/Target/HSACO/HSACOTranslation.cpp")),
    ("ROCm/triton", "When did Triton start emitting source line information in compiled kernels, so profilers can map instructions back to Python lines?", added("lib/Target/LLVMIR/LLVMDIScope.cpp")),
    ("ROCm/triton", "Which commit first brought NVIDIA Hopper support (wgmma, TMA, warp specialization) into Triton?", added("lib/Conversion/TritonGPUToLLVM/DotOpToLLVM/WGMMA.cpp")),
    ("ROCm/triton", "Where was the pass added that unrolls loops annotated with `tt.loop_unroll_factor` in Triton?", added("lib/Dialect/Triton/Transforms/LoopUnroll.cpp")),
    # flashinfer-ai/flashinfer
    ("flashinfer-ai/flashinfer", "When did flashinfer get its first prefill attention kernel, together with the permuted shared-memory layout (`permuted_smem.cuh`) it loads tiles through?", added("include/flashinfer/permuted_smem.cuh")),
    ("flashinfer-ai/flashinfer", "Which commit gave flashinfer its own inline-PTX fast-math helpers (approximate exp2, butterfly shuffle) for the softmax in its attention kernels?", added("include/flashinfer/math.cuh")),
    ("flashinfer-ai/flashinfer", "When did flashinfer first expose its single-request prefill and decode kernels to PyTorch?", added("python/flashinfer/ops")),
    ("flashinfer-ai/flashinfer", "When did flashinfer's decode stop relying on a cooperative kernel with a grid-wide sync, and instead split the KV cache along the sequence and merge the partial results in a second kernel?", pickaxe("partition_kv", "include", "csrc", "python", "flashinfer")),
    ("flashinfer-ai/flashinfer", "Which commit added a CUTLASS grouped GEMM for Blackwell that multiplies MXFP8 activations by MXFP4 weights?", added("csrc/group_gemm_mxfp4_groupwise_sm100.cu")),
    ("flashinfer-ai/flashinfer", "When did flashinfer start shipping its precompiled kernel modules as a separate `flashinfer-jit-cache` package?", added("flashinfer-jit-cache")),
    ("flashinfer-ai/flashinfer", "When did flashinfer add `top_k_page_table_transform`, a fused top-k that turns the sparse-attention indexer's scores (DeepSeek DSA) straight into page-table entries?", pickaxe("top_k_page_table_transform", "include", "csrc", "python", "flashinfer")),
    ("flashinfer-ai/flashinfer", "Which commit added `.fi_trace`, which describes a flashinfer API call as a portable JSON workload definition for replay and benchmarking?", pickaxe("fi_trace", "include", "csrc", "python", "flashinfer")),
    ("flashinfer-ai/flashinfer", "When did flashinfer add a weight-only GEMM with BF16 activations and FP4 weights (W4A16) for RTX Blackwell (SM120/SM121), with cuDNN and CuTe DSL backends?", added("flashinfer/gemm/gemm_bf16_fp4.py")),
    # NVIDIA/cutlass
    ("NVIDIA/cutlass", "Which CUTLASS release first supported strided batched GEMM?", added("examples/03_strided_batched_gemm")),
    ("NVIDIA/cutlass", "When did CUTLASS's fused multi-head attention example get a backward pass?", added("examples/41_fused_multi_head_attention/kernel_backward.h")),
    ("NVIDIA/cutlass", "When did CUTLASS start shipping version macros in `cutlass/version.h`, so user code can handle API changes between releases?", added("include/cutlass/version.h")),
    ("NVIDIA/cutlass", "Which CUTLASS release let CuTe DSL JIT functions be called through Apache TVM-FFI, to cut host-side launch overhead?", pickaxe("tvm_ffi", "python")),
    ("NVIDIA/cutlass", "When did CUTLASS add a CuTe DSL Blackwell GEMM example that prefetches with TMA to hide DRAM latency in latency-bound cases?", added("examples/python/CuTeDSL/blackwell/dense_gemm_persistent_prefetch.py")),
    ("NVIDIA/cutlass", "Which commit introduced CuTe DSL's experimental Primitives API, a lower-level layer beneath CuTe that wraps NVVM operations for programming tensor cores directly?", added("python/CuTeDSL/cutlass/experimental/primitives")),
    ("NVIDIA/cutlass", "When did CuTe get `SM75_16x8x8_F16F16F16F16_TN`, a Turing MMA atom that accumulates in fp16?", pickaxe("SM75_16x8x8_F16F16F16F16_TN", "include")),
    # deepseek-ai/DeepGEMM
    ("deepseek-ai/DeepGEMM", "Which commit let DeepGEMM's FP8 GEMM accept more K sizes by padding the shared-memory buffer of B scaling factors so the barriers placed after it stay aligned?", pickaxe("SMEM_SCALES_B_SIZE")),
    ("deepseek-ai/DeepGEMM", "When did DeepGEMM remove the runtime predicates its FP8 GEMM main loop needed when BLOCK_N does not divide the 128-wide scaling block, by fixing the number of iterations that use the first B scale at compile time?", pickaxe("outer_launch_k_iterations")),
    ("deepseek-ai/DeepGEMM", "When did DeepGEMM first use Blackwell's packed two-wide FP32 intrinsics (`__ffma2_rn`, `__fmul2_rn`)?", pickaxe("__ffma2_rn")),
    ("deepseek-ai/DeepGEMM", "Which commit added a cluster-wide sync to DeepGEMM that arrives with `barrier.cluster.arrive.relaxed`, slightly faster than `cute::cluster_sync`?", pickaxe("cluster_sync_with_relaxed_arrive")),
]


# The eighth fresh set (split "fresh8"): written on 2026-12-02 by an eighth session and committed alone
# before it was ever scored; no search was run while writing it. No answer sha is shared with the first
# 364 rows (checked), no two fresh8 rows share one, and none asks about a thing they ask about. 15 rows
# by -S (an identifier added to files that mostly existed), 25 by file creation (ROCm/triton's 5 all by
# creation: its snapshot cannot run pickaxe).
FRESH8 = [
    # ROCm/aiter
    ("ROCm/aiter", "When did aiter get Triton kernels for grouped matrix multiplication (`gmm`), the per-expert GEMM with a different row count for each group that MoE training needs?", added("aiter/ops/triton/gmm.py")),
    ("ROCm/aiter", "Which commit added `mha_batch_prefill`, composable_kernel's flash-attention prefill over a paged KV cache, to aiter?", added("csrc/py_itfs_ck/mha_batch_prefill_kernels.cu")),
    ("ROCm/aiter", "When did aiter's composable_kernel two-stage fused MoE learn the clamped SwiGLU activation that OpenAI's gpt-oss models use?", pickaxe("swiglu_oai", "aiter", "csrc")),
    ("ROCm/aiter", "Since which commit does aiter's setup.py compile all its kernels into one extension at install time only when `PREBUILD_KERNELS=1` is set, leaving them to the JIT otherwise?", pickaxe("PREBUILD_KERNELS", "setup.py")),
    ("ROCm/aiter", "Which commit brought Triton kernels for Kimi Delta Attention (a chunked forward pass ported from flash-linear-attention) into aiter?", added("aiter/ops/triton/_triton_kernels/chunk_delta_attn")),
    ("ROCm/aiter", "When did aiter first get 2D convolution kernels written in Triton, with 1x1, 3x3 and Winograd F(4,3) variants?", added("aiter/ops/triton/_triton_kernels/conv/conv_3x3.py")),
    ("ROCm/aiter", "When did aiter's distributed state get a process group for prefill context parallelism (PCP), a separate dimension beside tensor parallelism?", pickaxe("get_pcp_group", "aiter")),
    ("ROCm/aiter", "Which commit added aiter's first quantization kernels written in Triton, static and dynamic FP8 quantization per tensor and per token?", added("aiter/ops/triton/quant.py")),
    # ROCm/composable_kernel
    ("ROCm/composable_kernel", "When did composable_kernel first run a mixed-precision GEMM that multiplies an fp16 A matrix by an fp8 B matrix?", added("example/01_gemm/gemm_xdl_fp16_f8.cpp")),
    ("ROCm/composable_kernel", "Which commit started building CK's ck_tile flash-attention forward kernels into a static library that other projects can link against?", added("library/src/tensor_operation_instance/gpu/mha")),
    ("ROCm/composable_kernel", "Where did composable_kernel add a script that turns MIOpen driver command lines into ckProfiler runs?", added("script/convert_miopen_driver_to_profiler.py")),
    ("ROCm/composable_kernel", "When was continuous integration, a Jenkins pipeline building in a Docker image, first set up for composable_kernel?", added("Jenkinsfile")),
    ("ROCm/composable_kernel", "When did CK start compiling its instance library and ckProfiler with `--offload-compress`, to shrink the device code in the binaries?", pickaxe("offload-compress", "library")),
    ("ROCm/composable_kernel", "Which commit first let CK's grouped convolutions take tensors in the channels-first NGCHW layout?", pickaxe("NGCHW", "include")),
    ("ROCm/composable_kernel", "When did CK get element-wise operators that chain several unary operations, or apply a binary operation to inputs that first went through unary ones (`UnaryCombinedOp`, `BinaryWithUnaryCombinedOp`)?", added("include/ck/tensor_operation/gpu/element/combined_element_wise_operation.hpp")),
    # ROCm/triton
    ("ROCm/triton", "When was Proton, the lightweight profiler for Triton kernels, added to the Triton repository?", added("third_party/proton")),
    ("ROCm/triton", "Which commit added `triton-reduce`, a Triton build of mlir-reduce for shrinking failing IR test cases?", added("bin/triton-reduce.cpp")),
    ("ROCm/triton", "Which commit added the TritonGPU pass that removes a tensor `select` by moving it into an `scf.if` guarded by the same condition?", added("lib/Dialect/TritonGPU/Transforms/CombineTensorSelectAndIf.cpp")),
    ("ROCm/triton", "When did Triton first show block-sparse matrix multiplication, the kind sparse-attention transformers use?", added("python/examples/blocksparse.py")),
    ("ROCm/triton", "When did Triton gain the `triton.testing` module, with `do_bench` and the `perf_report` decorator for benchmarking kernels?", added("python/triton/testing.py")),
    # flashinfer-ai/flashinfer
    ("flashinfer-ai/flashinfer", "Since which commit can flashinfer's prefill attention use a value head dimension different from the query/key head dimension, as DeepSeek's 192/128 heads need?", pickaxe("head_dim_vo", "include", "csrc", "python", "flashinfer")),
    ("flashinfer-ai/flashinfer", "When did flashinfer add batch prefill attention over a ragged KV cache, where each request's keys and values are stored contiguously rather than in pages?", pickaxe("BatchPrefillWithRaggedKVCache", "include", "csrc", "python", "flashinfer")),
    ("flashinfer-ai/flashinfer", "Since which commit do flashinfer's attention wrappers use `plan()` and `run()` instead of `begin_forward()` and `forward()`?", pickaxe("run_return_lse", "include", "csrc", "python", "flashinfer")),
    ("flashinfer-ai/flashinfer", "When did flashinfer split the scratch workspace its wrappers need into a float buffer and an int buffer?", pickaxe("float_workspace_buffer", "include", "csrc", "python", "flashinfer")),
    ("flashinfer-ai/flashinfer", "Which commit added flashinfer's fused `silu_and_mul` activation kernel, SiLU of one half of the input times the other half?", added("include/flashinfer/activation.cuh")),
    ("flashinfer-ai/flashinfer", "When did flashinfer add TensorRT-LLM's FMHAv2 as a backend for context (prefill) attention?", added("csrc/fmha_v2")),
    ("flashinfer-ai/flashinfer", "Where did flashinfer add one command-line driver that benchmarks its attention and GEMM routines from a list of test cases?", added("benchmarks/flashinfer_benchmark.py")),
    ("flashinfer-ai/flashinfer", "When did flashinfer add attention that quantizes its inputs to NVFP4 and computes with them on RTX Blackwell (SM120) GPUs?", added("csrc/nvfp4_attention_sm120")),
    ("flashinfer-ai/flashinfer", "Which commit gave flashinfer's autotuner an offline, GPU-aware blocklist of kernel tactics to skip while tuning?", added("flashinfer/tactics_blocklist.py")),
    # NVIDIA/cutlass
    ("NVIDIA/cutlass", "Which CUTLASS release first split a GEMM's K dimension across thread blocks (split-K) and reduced the partial results?", added("examples/06_splitK_gemm")),
    ("NVIDIA/cutlass", "When did CUTLASS get device-level kernels that reduce a tensor along one of its dimensions (`TensorReduction`)?", added("include/cutlass/reduction/device/tensor_reduce.h")),
    ("NVIDIA/cutlass", "Which CUTLASS release began caching reference results to speed up its convolution unit tests (`CUTLASS_TEST_ENABLE_CACHED_RESULTS`)?", added("test/unit/conv/device/cache_testbed_output.h")),
    ("NVIDIA/cutlass", "When did CUTLASS's utility library get a standalone RMSNorm kernel?", added("tools/util/include/cutlass/util/device_rmsnorm.h")),
    ("NVIDIA/cutlass", "When was CUTLASS's Python interface set up to be published on PyPI as `nvidia-cutlass`?", pickaxe("nvidia-cutlass", "pyproject.toml", "setup.cfg", "python")),
    ("NVIDIA/cutlass", "Since which commit can CUTLASS's unit tests link against a system-installed GoogleTest instead of fetching their own copy?", pickaxe("CUTLASS_USE_SYSTEM_GOOGLETEST", "CMakeLists.txt")),
    ("NVIDIA/cutlass", "When could the directory where the CuTe DSL dumps its compilation caches be chosen with an environment variable?", pickaxe("CUTE_DSL_CACHE_DIR", "python")),
    ("NVIDIA/cutlass", "Where did CUTLASS add CuTe DSL examples in which a Blackwell dense GEMM's epilogue is a custom Python function (an Epilogue Fusion Configuration, EFC)?", added("examples/python/CuTeDSL/blackwell/epilogue")),
    # deepseek-ai/DeepGEMM
    ("deepseek-ai/DeepGEMM", "When did DeepGEMM's FP8 GEMM epilogue start writing its output in two halves, issuing the store of each half to global memory as soon as it is in shared memory?", pickaxe("partition_idx")),
    ("deepseek-ai/DeepGEMM", "Which commit made DeepGEMM's config search settle on four pipeline stages for some BLOCK_N sizes that do not divide 128, because unrolling both the stages and the B-scale iterations made the code too large?", pickaxe("stage_candidates")),
    ("deepseek-ai/DeepGEMM", "Which commit changed how DeepGEMM's helper for running external commands such as the compiler reads their exit status, storing `pclose`'s result before applying `WEXITSTATUS`?", pickaxe("WEXITSTATUS(exit_code)")),
]


# The ninth fresh set (split "fresh9"): written on 2026-12-02 by a ninth session and committed alone
# before it was ever scored; no search was run while writing it. No answer sha is shared with the first
# 404 rows (checked), no two fresh9 rows share one, and none asks about a thing they ask about. 30 rows
# (18 AMD, 12 NVIDIA; DeepGEMM none: its candidates' answers were all taken). 7 rows
# by -S, 23 by file creation (ROCm/triton's 5 all by creation: its snapshot cannot run pickaxe).
FLASHINFER_SRC = ("include", "csrc", "python", "flashinfer")
FRESH9 = [
    # ROCm/aiter
    ("ROCm/aiter", "When did aiter's CI start linting its Python code with Ruff and checking its formatting with Black?", added(".github/workflows/ruff.yaml")),
    ("ROCm/aiter", "Which commit added a Triton MLA decode kernel to aiter that applies the rotary embedding inside the kernel?", added("aiter/ops/triton/mla_decode_rope.py")),
    ("ROCm/aiter", "When did aiter first get a scaled 8-bit GEMM (`gemm_a8w8`) written in Triton?", added("aiter/ops/triton/gemm_a8w8.py")),
    ("ROCm/aiter", "Which commit added a Triton fused-MoE kernel whose expert weights are in the microscaled 4-bit MXFP4 format?", added("aiter/ops/triton/moe_op_mxfp4.py")),
    ("ROCm/aiter", "When did aiter's custom all-reduce first get an implementation for MI400-series (gfx1250) GPUs?", added("csrc/kernels/custom_all_reduce_gfx1250.cu")),
    ("ROCm/aiter", "Where did aiter get paged-attention decode kernels written in Triton?", added("aiter/ops/triton/pa_decode.py")),
    # ROCm/composable_kernel
    ("ROCm/composable_kernel", "When did composable_kernel first support general N-dimensional tensor contractions?", added("example/26_contraction")),
    ("ROCm/composable_kernel", "Which commit first let a CK XDL GEMM fuse a bias add, a ReLU and the addition of another tensor into the way it writes its output?", added("example/2_gemm_xdl_bias_relu_add")),
    ("ROCm/composable_kernel", "When did composable_kernel set up pre-commit hooks for contributors, with formatting and copyright-year checks?", added(".pre-commit-config.yaml")),
    ("ROCm/composable_kernel", "Which commit introduced `BlockToCTileMap_M00_N0_M01Adapt`, a Tensile-style mapping of workgroups onto output tiles for CK's XDL GEMMs?", pickaxe("BlockToCTileMap_M00_N0_M01Adapt", "include")),
    ("ROCm/composable_kernel", "When did CK's fused attention (GEMM, softmax, GEMM) get a grouped version, where each group in one launch can have its own sizes?", pickaxe("DeviceGroupedGemmSoftmaxGemmPermute", "include")),
    ("ROCm/composable_kernel", "Since which commit can composable_kernel be compiled for MI100 (gfx908) and MI200 (gfx90a) targets?", pickaxe("gfx90a", "CMakeLists.txt", "include")),
    ("ROCm/composable_kernel", "When did composable_kernel get ckProfiler, together with its first device-level XDL GEMM operator?", added("profiler")),
    # ROCm/triton
    ("ROCm/triton", "When did Triton's software pipeliner learn to pipeline the outer loop around a matmul loop, overlapping the next tile's loads with the epilogue in persistent kernels?", added("lib/Dialect/TritonGPU/Transforms/Pipeliner/OuterLoopPipeline.cpp")),
    ("ROCm/triton", "Which commit made Triton pipeline TMA stores so they really run asynchronously?", added("lib/Dialect/TritonGPU/Transforms/Pipeliner/TMAStoresPipeline.cpp")),
    ("ROCm/triton", "When was continuous integration with GitHub Actions first set up for Triton?", added(".github/workflows")),
    ("ROCm/triton", "When did Triton's documentation first include the matrix multiplication tutorial?", added("python/tutorials/03-matrix-multiplication.py")),
    ("ROCm/triton", "Which commit gave Triton's common GPU-to-LLVM lowering a `TargetInfoBase` interface that the AMD and NVIDIA backends each implement?", added("include/triton/Conversion/TritonGPUToLLVM/TargetInfoBase.h")),
    # flashinfer-ai/flashinfer
    ("flashinfer-ai/flashinfer", "When did flashinfer add min-p sampling, which keeps only tokens whose probability is at least a fraction of the most likely token's?", pickaxe("min_p_sampling_from_probs", *FLASHINFER_SRC)),
    ("flashinfer-ai/flashinfer", "Which commit added Gemma's variant of RMSNorm, which scales by one plus the weight, to flashinfer?", pickaxe("gemma_rmsnorm", *FLASHINFER_SRC)),
    ("flashinfer-ai/flashinfer", "When did flashinfer first register its kernels as torch custom ops, so that torch.compile can trace through them?", pickaxe("register_custom_op", *FLASHINFER_SRC)),
    ("flashinfer-ai/flashinfer", "Which commit added a kernel that applies RoPE and quantizes to FP8 in one pass, to prepare the inputs of flashinfer's FP8 MLA attention?", pickaxe("rope_quantize", *FLASHINFER_SRC)),
    ("flashinfer-ai/flashinfer", "When did flashinfer switch to compiling its kernels just in time for the data types and shapes in use, instead of precompiling them all into the wheel?", added("python/flashinfer/jit")),
    ("flashinfer-ai/flashinfer", "Which commit set up flashinfer's Sphinx documentation and the workflow that builds it?", added("docs/conf.py")),
    ("flashinfer-ai/flashinfer", "When did flashinfer expose TensorRT-LLM's generated low-latency FP8 GEMMs for small batch sizes, which need the weights pre-shuffled into their own layout?", added("flashinfer/trtllm_low_latency_gemm.py")),
    ("flashinfer-ai/flashinfer", "Which commit brought MiniMax Sparse Attention (MSA) to consumer Blackwell (SM120/SM121) GPUs in flashinfer?", added("flashinfer/msa_ops")),
    ("flashinfer-ai/flashinfer", "When did flashinfer first include kernels written in Triton?", added("python/flashinfer/triton")),
    # NVIDIA/cutlass
    ("NVIDIA/cutlass", "When did CuTe get the complete set of Hopper GMMA (wgmma) instruction shapes, in the extended `mma_sm90_gmma_ext.hpp` header?", added("include/cute/arch/mma_sm90_gmma_ext.hpp")),
    ("NVIDIA/cutlass", "Since which commit can CUTLASS's (Ampere) structured-sparse GEMM use an epilogue visitor to fuse custom epilogues?", added("include/cutlass/gemm/kernel/default_gemm_sparse_with_visitor.h")),
    ("NVIDIA/cutlass", "Where did CUTLASS add a persistent CuTe DSL FP8 GEMM for Hopper that applies GELU in its epilogue?", added("examples/python/CuTeDSL/cute/hopper/kernel/dense_gemm/dense_gemm_fp8_gelu_persistent.py")),
]


# The tenth fresh set (split "fresh10"): written on 2026-12-02 by a tenth session and committed alone
# before it was ever scored; no search was run while writing it. No answer sha is shared with the first
# 434 rows (checked), no two fresh10 rows share one, and none asks about a thing they ask about. 40 rows
# (20 AMD: aiter 8, composable_kernel 6, ROCm/triton 6; 20 NVIDIA: flashinfer 9, cutlass 7, DeepGEMM 4).
# 16 rows by -S, 24 by file creation (ROCm/triton's 6 all by creation: its snapshot cannot run pickaxe).
FRESH10 = [
    # ROCm/aiter
    ("ROCm/aiter", "When did aiter first get a LayerNorm kernel written in Triton?", added("aiter/ops/triton/norm.py")),
    ("ROCm/aiter", "Which commit added a Triton GEMM to aiter that takes both the activations and the weights in MXFP4, the microscaled 4-bit float format?", added("aiter/ops/triton/gemm_afp4wfp4.py")),
    ("ROCm/aiter", "When did aiter get `gemm_a4w4_blockscale`, a composable_kernel GEMM on FP4 operands with block scales, together with its tuning script?", pickaxe("gemm_a4w4_blockscale", "aiter", "csrc")),
    ("ROCm/aiter", "Which commit added HIP kernels for the pre-mapping step of manifold-constrained hyper-connections (mHC), fusing its GEMM with the sum of squares used for normalization?", pickaxe("mhc_pre", "aiter", "csrc")),
    ("ROCm/aiter", "When did aiter get a Triton version of DeepGEMM's FP8 paged MQA logits kernel (`pa_mqa_logits`), the scoring step of DeepSeek-V3.2's sparse-attention indexer?", pickaxe("pa_mqa_logits", "aiter", "csrc")),
    ("ROCm/aiter", "Which commit added a standalone top-k selection kernel written in Triton to aiter?", added("aiter/ops/triton/topk.py")),
    ("ROCm/aiter", "When did aiter get Triton kernels for the gated delta rule (gated delta net linear attention), covering both chunked prefill and recurrent decode?", pickaxe("chunk_gated_delta_rule", "aiter", "csrc")),
    ("ROCm/aiter", "When was opus, aiter's single-header C++ layer over AMD GPU intrinsics and data types (`opus.hpp`), first added?", added("csrc/include/opus")),
    # ROCm/composable_kernel
    ("ROCm/composable_kernel", "Which commit first let a composable_kernel GEMM split its K dimension across workgroups (split-K)?", pickaxe("DeviceGemmXdlSplitK")),
    ("ROCm/composable_kernel", "When did composable_kernel first implement the backward-data pass of convolution, computing the input gradient as an implicit GEMM?", pickaxe("backward_data")),
    ("ROCm/composable_kernel", "Since which commit can ck_tile's flash-attention forward kernel apply ALiBi positional biases?", added("include/ck_tile/ops/fmha/block/block_position_encoding.hpp")),
    ("ROCm/composable_kernel", "When did composable_kernel add a group normalization kernel?", added("example/42_groupnorm")),
    ("ROCm/composable_kernel", "Which commit added `DeviceGroupedGemmXdlSplitKCShuffle`, a grouped GEMM that also splits each group's K dimension?", pickaxe("DeviceGroupedGemmXdlSplitKCShuffle", "include")),
    ("ROCm/composable_kernel", "Since which commit can CK's grouped convolution forward run on the pipelines of the universal GEMM (the XDL CShuffle V3 kernel)?", pickaxe("DeviceGroupedConvFwdMultipleABD_Xdl_CShuffle_V3", "include")),
    # ROCm/triton
    ("ROCm/triton", "When did Triton get the 3xTF32 trick, which emulates an fp32-accurate dot with three TF32 tensor-core products?", added("lib/Dialect/TritonGPU/Transforms/F32DotTC.cpp")),
    ("ROCm/triton", "Which commit added the Triton IR pass that moves broadcasts after elementwise operations, so the arithmetic runs on the smaller tensor?", added("lib/Dialect/Triton/Transforms/ReorderBroadcast.cpp")),
    ("ROCm/triton", "When did Triton get `triton-lsp`, a language server that lets editors highlight and navigate its MLIR dialects?", added("bin/triton-lsp.cpp")),
    ("ROCm/triton", "Which commit gave Triton's NVIDIA backend a minimal cuBLAS wrapper for FP8 matmul, to compare Triton kernels against cuBLAS?", added("third_party/nvidia/include/cublas_instance.h")),
    ("ROCm/triton", "When was the layer normalization tutorial added to Triton's documentation?", added("python/tutorials/05-layer-norm.py")),
    ("ROCm/triton", "Which commit added an experimental descriptor-based load to Triton that is lowered to a Hopper TMA copy?", added("lib/Dialect/TritonNvidiaGPU/Transforms/TMALowering.cpp")),
    # flashinfer-ai/flashinfer
    ("flashinfer-ai/flashinfer", "When did flashinfer add fused sampling kernels for speculative decoding that accept or reject a chain of draft tokens against the target model's probabilities (`chain_speculative_sampling`)?", pickaxe("chain_speculative_sampling", *FLASHINFER_SRC)),
    ("flashinfer-ai/flashinfer", "Which commit started packing flashinfer's custom attention masks into bit arrays (`packbits`) to shrink them?", pickaxe("packbits", *FLASHINFER_SRC)),
    ("flashinfer-ai/flashinfer", "When did flashinfer get `mm_fp4`, its dense FP4 matrix multiplication API, first backed by cuDNN?", pickaxe("mm_fp4", *FLASHINFER_SRC)),
    ("flashinfer-ai/flashinfer", "Which commit brought TensorRT-LLM's all-reduce fusion kernels, which fuse the all-reduce with the residual add, RMSNorm and quantization after it, into flashinfer?", added("include/flashinfer/comm/trtllm_allreduce_fusion.cuh")),
    ("flashinfer-ai/flashinfer", "When did flashinfer add `fmha_cutlass_sm100`, CUTLASS's Blackwell FMHA kernels for prefill attention?", added("csrc/fmha_cutlass_sm100.cu")),
    ("flashinfer-ai/flashinfer", "Which commit added a Triton kernel that pads a ragged tensor so every segment meets the alignment Blackwell kernels require?", added("flashinfer/triton/format_conversion.py")),
    ("flashinfer-ai/flashinfer", "When did flashinfer import DeepGEMM's FP8 grouped GEMM kernels as a prebuilt backend?", added("flashinfer/deep_gemm.py")),
    ("flashinfer-ai/flashinfer", "Which commit added CuTe DSL kernels that fuse RMSNorm, with or without the residual add, with FP4 quantization of the output?", added("flashinfer/cute_dsl/add_rmsnorm_fp4quant.py")),
    ("flashinfer-ai/flashinfer", "When did flashinfer get a Blackwell CuTe DSL kernel for the combined forward pass of Mamba-2's chunked state space duality (SSD)?", added("flashinfer/mamba/ssd_kernel.py")),
    # NVIDIA/cutlass
    ("NVIDIA/cutlass", "When did CUTLASS get a leaky ReLU epilogue (`LinearCombinationLeakyRelu`) for its GEMMs?", pickaxe("LinearCombinationLeakyRelu", "include")),
    ("NVIDIA/cutlass", "Which commit added warp-level tensor-core MMA with mixed input types (for example fp16 times int8) for Ampere to CUTLASS?", added("include/cutlass/gemm/warp/mma_mixed_input_tensor_op.h")),
    ("NVIDIA/cutlass", "When did CuTe get MMA atoms for Ada (sm89), including its FP8 tensor-core instructions?", added("include/cute/arch/mma_sm89.hpp")),
    ("NVIDIA/cutlass", "Which CUTLASS release first supported 2:4 structured-sparse tensor-core GEMM on Ampere?", added("examples/15_ampere_sparse_tensorop_gemm")),
    ("NVIDIA/cutlass", "Where did CUTLASS add CuTe DSL examples of distributed kernels, such as one-shot and two-shot all-reduce and an all-gather fused with a GEMM?", added("examples/python/CuTeDSL/distributed")),
    ("NVIDIA/cutlass", "When did CUTLASS's stream-K GEMM learn to fuse a broadcast bias and an elementwise operation into its epilogue?", added("include/cutlass/epilogue/threadblock/epilogue_streamk_with_broadcast.h")),
    ("NVIDIA/cutlass", "Which commit added a warp-specialized mainloop for mixed-input GEMM on Blackwell (sm100), where the two operands have different data types?", added("include/cutlass/gemm/collective/sm100_mma_warpspecialized_mixed_input.hpp")),
    # deepseek-ai/DeepGEMM
    ("deepseek-ai/DeepGEMM", "Which commit added a compile-time check, using a constexpr `gcd`, that one block of DeepGEMM's FP8 GEMM never needs more B scaling factors than it can hold?", pickaxe("gcd(T")),
    ("deepseek-ai/DeepGEMM", "Which commit fixed an int32 overflow in the shape checks of DeepGEMM's k-grouped GEMM when the summed K is large?", pickaxe("static_cast<uint64_t>(k)")),
    ("deepseek-ai/DeepGEMM", "Since which commit does DeepGEMM fall back to compiling for sm_100a when the NVCC or NVRTC in use is older than 12.9 and does not know the sm_100f target?", pickaxe("selected_arch")),
    ("deepseek-ai/DeepGEMM", "Which commit fixed how DeepGEMM's JIT turns Python launch arguments into C types, so that its kernels could be captured in a CUDA graph without an RNG check error?", pickaxe("hasattr(value,")),
]


# The eleventh fresh set (split "fresh11"): written on 2026-12-02 by an eleventh session and committed
# alone before it was ever scored; no search was run while writing it. No answer sha is shared with the
# first 474 rows (checked), no two fresh11 rows share one, and none asks about a thing they ask about.
# 40 rows (20 AMD: aiter 8, composable_kernel 6, ROCm/triton 6; 20 NVIDIA: flashinfer 10, cutlass 7,
# DeepGEMM 3). 14 rows by -S, 26 by file creation (ROCm/triton's 6 all by creation: its snapshot cannot
# run pickaxe).
FRESH11 = [
    # ROCm/aiter
    ("ROCm/aiter", "When did aiter get a softmax kernel written in Triton?", added("aiter/ops/triton/softmax.py")),
    ("ROCm/aiter", "Which commit added aiter's first flash-attention forward kernel written in Triton?", added("aiter/ops/triton/mha.py")),
    ("ROCm/aiter", "When did aiter get a Triton fused-MoE kernel that runs both expert GEMMs and the activation between them end to end?", added("aiter/ops/triton/moe_op_e2e.py")),
    ("ROCm/aiter", "Which commit added ck_tile-based two-stage MoE kernels to aiter, first for bf16 activations with FP4 weights (a16w4) on MI350?", added("csrc/ck_tile_gemm_moe_2stages")),
    ("ROCm/aiter", "When did aiter get a HIP kernel that fuses gated RMSNorm with per-group FP8 quantization, for Qwen3-Next and Qwen3.5?", pickaxe("gated_rmsnorm", "aiter", "csrc")),
    ("ROCm/aiter", "Which commit added `topk_softplus`, a MoE routing kernel that scores experts with softplus before picking the top k?", pickaxe("topk_softplus", "aiter", "csrc")),
    ("ROCm/aiter", "When did aiter get a Triton MoE GEMM for int8 weights and activations with SmoothQuant scales?", added("aiter/ops/triton/moe/moe_op_gemm_int8_smoothquant.py")),
    ("ROCm/aiter", "Which commit added `pa_decode_gluon`, a paged-attention decode kernel written in Gluon that can also be compiled ahead of time, for MI300 (CDNA3)?", pickaxe("pa_decode_gluon", "aiter", "csrc")),
    # ROCm/composable_kernel
    ("ROCm/composable_kernel", "When did composable_kernel add a kernel that applies an elementwise operation (such as adding two tensors) and then layer normalization in one pass (`DeviceElementwiseNormalization`)?", pickaxe("DeviceElementwiseNormalization", "include")),
    ("ROCm/composable_kernel", "Which commit added grouped convolution backward-data using WMMA instructions, for RDNA3 GPUs?", pickaxe("DeviceGroupedConvBwdDataMultipleD_Wmma", "include")),
    ("ROCm/composable_kernel", "When did composable_kernel get an example of contracting complex-valued tensors with a bilinear epilogue, in fp32 and fp64?", added("example/66_complex_contraction_bilinear")),
    ("ROCm/composable_kernel", "Which commit added a CK example that transposes and scales an fp16 tensor into fp8 while also computing its absolute maximum (amax)?", added("example/44_elementwise_permute/elementwise_scale_permute_amax_2D_fp16_fp8.cpp")),
    ("ROCm/composable_kernel", "Since which commit can CK's layernorm and groupnorm split a long normalized dimension across several workgroups (split-K), merging the partial statistics afterwards?", pickaxe("DeviceNormalizationSplitK", "include")),
    ("ROCm/composable_kernel", "When did composable_kernel get a batched GEMM with extra D tensors fused into its epilogue, such as a bias (`DeviceBatchedGemmMultiD`)?", pickaxe("DeviceBatchedGemmMultiD", "include")),
    # ROCm/triton
    ("ROCm/triton", "Which commit added `triton-tensor-layout`, a command-line tool that prints how a Triton tensor layout maps elements to threads and registers?", added("bin/triton-tensor-layout.cpp")),
    ("ROCm/triton", "When did Proton, Triton's profiler, learn to profile AMD GPUs through roctracer?", added("third_party/proton/csrc/include/Profiler/RoctracerProfiler.h")),
    ("ROCm/triton", "Since which commit can Triton kernels create and update TMA descriptors on the device, rather than only on the host?", added("third_party/nvidia/lib/TritonNVIDIAGPUToLLVM/TMAToLLVM.cpp")),
    ("ROCm/triton", "When was a grouped GEMM example added to Triton's tutorials?", added("python/tutorials/11-grouped-gemm.py")),
    ("ROCm/triton", "Which commit began instruction (PC) sampling support in Proton for NVIDIA GPUs, through CUPTI?", added("third_party/proton/csrc/include/Profiler/Cupti/CuptiPCSampling.h")),
    ("ROCm/triton", "When did `triton.ops` get a block-sparse softmax to go with its block-sparse matmul?", added("python/triton/ops/blocksparse/softmax.py")),
    # flashinfer-ai/flashinfer
    ("flashinfer-ai/flashinfer", "When did flashinfer add a fused GELU (tanh approximation) and multiply activation kernel for GeGLU feed-forward layers?", pickaxe("gelu_tanh_and_mul", *FLASHINFER_SRC)),
    ("flashinfer-ai/flashinfer", "Which commit added `top_k_mask_logits`, which keeps the k largest logits and masks the rest before the softmax?", pickaxe("top_k_mask_logits", *FLASHINFER_SRC)),
    ("flashinfer-ai/flashinfer", "When did flashinfer support block-sparse attention with variable block sizes and a different sparsity pattern for each head?", pickaxe("VariableBlockSparseAttentionWrapper", *FLASHINFER_SRC)),
    ("flashinfer-ai/flashinfer", "Since which commit does flashinfer offer a Hugging Face transformers-style RoPE interface that takes position ids (`apply_rope_pos_ids`)?", pickaxe("apply_rope_pos_ids", *FLASHINFER_SRC)),
    ("flashinfer-ai/flashinfer", "Which commit added a vLLM-style custom all-reduce to flashinfer whose communication kernels run on a limited number of SMs?", added("include/flashinfer/distributed/custom_all_reduce.cuh")),
    ("flashinfer-ai/flashinfer", "When did flashinfer get a multi-node NVLink all-to-all with variable sizes per rank, for MoE expert parallelism?", added("include/flashinfer/comm/trtllm_alltoall.cuh")),
    ("flashinfer-ai/flashinfer", "Which commit added CUTLASS FP8 GEMMs with blockwise and groupwise scaling for Blackwell (SM100) to flashinfer?", added("include/flashinfer/gemm/gemm_groupwise_sm100.cuh")),
    ("flashinfer-ai/flashinfer", "When did flashinfer get TensorRT-LLM's trtllm-gen fused MoE kernels for FP8 on Blackwell?", added("csrc/trtllm_batched_gemm_runner.cu")),
    ("flashinfer-ai/flashinfer", "Which commit added a fused FP8 blockwise MoE megakernel for very small batches (up to 8 tokens)?", added("flashinfer/fused_moe/monomoe.py")),
    ("flashinfer-ai/flashinfer", "When did flashinfer add an all-to-all kernel for reducing attention outputs across ranks under decode context parallelism (DCP)?", added("csrc/trtllm_dcp_alltoall.cu")),
    # NVIDIA/cutlass
    ("NVIDIA/cutlass", "Since which commit can CUTLASS's Hopper pointer-array and grouped GEMMs use a ping-pong kernel schedule, with a TMA epilogue?", added("include/cutlass/gemm/kernel/sm90_gemm_array_tma_warpspecialized_pingpong.hpp")),
    ("NVIDIA/cutlass", "When did CUTLASS add a persistent grouped GEMM for Hopper written in the CuTe DSL?", added("examples/python/CuTeDSL/hopper/grouped_gemm.py")),
    ("NVIDIA/cutlass", "Which commit added CuTe DSL block-scaled GEMM examples, persistent cooperative and ping-pong, for Blackwell GeForce (sm120) GPUs?", added("examples/python/CuTeDSL/cute/blackwell_geforce/kernel/blockscaled_gemm")),
    ("NVIDIA/cutlass", "When did CUTLASS add an example of a Blackwell GEMM confined to a partition of the SMs with CUDA green contexts?", added("examples/95_blackwell_gemm_green_context")),
    ("NVIDIA/cutlass", "Where did CUTLASS add Hopper examples that fuse an activation, or a gated activation, into the GEMM, including a grouped variant?", added("examples/113_hopper_gemm_activation_fusion")),
    ("NVIDIA/cutlass", "Which commit added structured-sparse GEMM examples for Blackwell datacenter GPUs (sm100)?", added("examples/83_blackwell_sparse_gemm")),
    ("NVIDIA/cutlass", "When did CUTLASS get a pointer-array TMA mainloop for sm120 that runs FP8 grouped GEMMs with per-tensor or per-token scales?", added("include/cutlass/gemm/collective/sm120_mma_array_tma.hpp")),
    # deepseek-ai/DeepGEMM
    ("deepseek-ai/DeepGEMM", "When did DeepGEMM's Blackwell FP8 MQA logits kernel move to 128-row UMMA with fewer math threads, keeping only part of the head weights in registers?", pickaxe("kNumWeightsInReg")),
    ("deepseek-ai/DeepGEMM", "Which commit removed DeepGEMM's runtime autotuner, leaving config choice to the heuristic, and renamed the variable that prints the chosen configs to `DG_PRINT_HEURISTIC`?", pickaxe("DG_PRINT_HEURISTIC")),
    ("deepseek-ai/DeepGEMM", "Which commit fixed an illegal memory access in DeepGEMM's contiguous grouped GEMM scheduler when padding rows carry a group index of -1?", pickaxe("max(0,")),
]


# The twelfth fresh set (split "fresh12"): written on 2026-12-02 by a twelfth session and committed
# alone before it was ever scored; no search was run while writing it. No answer sha is shared with the
# first 514 rows (checked), no two fresh12 rows share one, and none asks about a thing they ask about.
# 40 rows (20 AMD: aiter 7, composable_kernel 7, ROCm/triton 6; 20 NVIDIA: flashinfer 9, cutlass 8,
# DeepGEMM 3). 14 rows by -S, 26 by file creation (ROCm/triton's 6 all by creation: its snapshot cannot
# run pickaxe). Nine name an identifier in backticks.
FRESH12 = [
    # ROCm/aiter
    ("ROCm/aiter", "When did aiter get RMSNorm kernels written in Triton, including a variant fused with the residual add?", added("aiter/ops/triton/rmsnorm.py")),
    ("ROCm/aiter", "Which commit added a Triton fused-MoE kernel that applies a GELU activation inside the kernel?", added("aiter/ops/triton/moe_op_gelu.py")),
    ("ROCm/aiter", "When did aiter get a Triton GEMM that multiplies FP8 activations by MXFP4 (microscaled 4-bit) weights?", added("aiter/ops/triton/gemm_a8wfp4.py")),
    ("ROCm/aiter", "Which commit added `moe_sorting_opus`, a MoE token-sorting kernel built on aiter's opus layer with no composable_kernel dependency?", pickaxe("moe_sorting_opus", "aiter", "csrc")),
    ("ROCm/aiter", "When did aiter get a sparse paged-attention prefill kernel for DeepSeek-V4 on MI355 (gfx950), written with opus?", added("aiter/ops/pa_sparse_prefill_opus.py")),
    ("ROCm/aiter", "Which commit added `mla_decode_gluon`, a Gluon MLA decode kernel for gfx950 aimed at 64 or 128 heads and large batches?", pickaxe("mla_decode_gluon", "aiter", "csrc")),
    ("ROCm/aiter", "When did aiter get a HIP kernel for DeepSeek-V4 that applies RoPE and a Walsh-Hadamard rotation to activations and round-trips them through FP4 quantization in place?", pickaxe("rope_rotate_activation", "aiter", "csrc")),
    # ROCm/composable_kernel
    ("ROCm/composable_kernel", "When did composable_kernel first get a fused attention kernel that chains a batched GEMM, a softmax and a second GEMM in one launch?", pickaxe("DeviceBatchedGemmSoftmaxGemm_Xdl_CShuffle", "include")),
    ("ROCm/composable_kernel", "Which commit added composable_kernel's first standalone layer normalization kernel, one not fused into a GEMM?", added("example/27_layernorm")),
    ("ROCm/composable_kernel", "When did CK add a GEMM that adds a bias and writes its output tensor directly in a permuted layout?", pickaxe("DeviceGemmBiasCPermute", "include")),
    ("ROCm/composable_kernel", "Which commit added a fused batched GEMM-GEMM to CK in which each of the two GEMMs can also fuse extra D tensors (such as a bias add and a ReLU) into its epilogue?", pickaxe("DeviceBatchedGemmMultipleDGemmMultipleD_Xdl_CShuffle", "include")),
    ("ROCm/composable_kernel", "When did composable_kernel get convolution backward-data for Navi21 (RDNA2) GPUs, computed with dot-product (DL) instructions instead of matrix cores?", pickaxe("DeviceConvNdBwdDataNwcKxcNwk_Dl", "include")),
    ("ROCm/composable_kernel", "Which commit implemented the backward pass of batch normalization in composable_kernel?", pickaxe("DeviceBatchNormBwd", "include")),
    ("ROCm/composable_kernel", "When did CK's XDL GEMMs get an inter-wave loop scheduler (`LoopScheduler::Interwave`) that interleaves the MAC clusters of two waves using s_setprio?", pickaxe("LoopScheduler", "include")),
    # ROCm/triton
    ("ROCm/triton", "When could Triton kernels first call element-wise math functions from an external LLVM bitcode library such as CUDA's libdevice?", added("python/triton/language/extern.py")),
    ("ROCm/triton", "Since which commit can Triton's loops use 64-bit indices when their bounds need them, instead of always 32-bit ones?", added("lib/Conversion/TritonGPUToLLVM/ArithToIndexPass.cpp")),
    ("ROCm/triton", "When could a Triton kernel first read the GPU's nanosecond global timer register (`globaltimer`)?", added("python/triton/language/extra/cuda.py")),
    ("ROCm/triton", "Which commit let Proton profile an unmodified Python script from the command line, without instrumenting the code?", added("third_party/proton/proton/proton.py")),
    ("ROCm/triton", "Which commit moved Triton's Volta-specific MMA (v1) layout fix-ups into a pass of their own that updates the MMA encodings after the combine pass?", added("lib/Dialect/TritonGPU/Transforms/UpdateMmaForVolta.cpp")),
    ("ROCm/triton", "When was the fused softmax tutorial first added to Triton, originally as a Jupyter notebook?", added("python/tutorials/02-fused-softmax.ipynb")),
    # flashinfer-ai/flashinfer
    ("flashinfer-ai/flashinfer", "When did flashinfer get fused routing kernels for DeepSeek-V3 that pick experts by grouped top-k over bias-corrected scores, the auxiliary-loss-free scheme?", pickaxe("noAuxTc", *FLASHINFER_SRC)),
    ("flashinfer-ai/flashinfer", "Which commit added CUTLASS NVFP4 GEMM kernels with schedulers specific to SM103 (Blackwell Ultra, B300) to flashinfer?", added("csrc/fp4_gemm_cutlass_sm103.cu")),
    ("flashinfer-ai/flashinfer", "When did flashinfer add `mm_mxfp8`, a dense GEMM on MXFP8 operands backed by CUTLASS?", added("csrc/mxfp8_gemm_cutlass.cu")),
    ("flashinfer-ai/flashinfer", "Which commit added `fused_rmsnorm_silu`, a kernel that applies RMSNorm and then SiLU in one pass, tuned for the WAN VAE decoder?", pickaxe("rmsnorm_silu", *FLASHINFER_SRC)),
    ("flashinfer-ai/flashinfer", "When did flashinfer get a recurrent decode kernel for Kimi Delta Attention (KDA), with a gate per key channel?", added("flashinfer/kda_decode.py")),
    ("flashinfer-ai/flashinfer", "Which commit added BGMV kernels that apply each token's own LoRA adapter inside the MoE experts, for multi-LoRA serving?", added("csrc/bgmv_moe")),
    ("flashinfer-ai/flashinfer", "When did flashinfer add a fused kernel that applies RMSNorm to the queries and keys and then RoPE, for the WAN video diffusion model?", added("include/flashinfer/norm/fused_qk_rmsnorm_rope.cuh")),
    ("flashinfer-ai/flashinfer", "Which commit added an all-reduce that quantizes its data to FP8 for a two-shot exchange over symmetric memory?", added("flashinfer/comm/quantized_allreduce.py")),
    ("flashinfer-ai/flashinfer", "When did flashinfer first get a chunked prefill kernel for gated delta net (GDN) linear attention, built with CUTLASS for Hopper?", added("csrc/flat")),
    # NVIDIA/cutlass
    ("NVIDIA/cutlass", "When did CUTLASS's back-to-back GEMM fusion example get a grouped version, where each problem in the group has its own sizes?", added("examples/13_two_tensor_op_fusion/fused_two_gemms_grouped_f16_sm80_rf.cu")),
    ("NVIDIA/cutlass", "Which commit added a Blackwell MLA forward (prefill) kernel for DeepSeek's head shapes, 192-dim queries and keys with 128-dim values, to the FMHA example?", added("examples/77_blackwell_fmha/77_blackwell_mla_fwd.cu")),
    ("NVIDIA/cutlass", "Since which commit can CUTLASS's Ampere mixed-input GEMM multiply int4 by int8 operands?", added("test/unit/gemm/device/gemm_universal_s4t_s8n_s32t_mixed_input_tensor_op_s32_sm80.cu")),
    ("NVIDIA/cutlass", "When did CUTLASS add a block-scaled grouped GEMM for MoE on Blackwell whose groups are ragged slices of one contiguous tensor?", added("include/cutlass/gemm/collective/sm100_blockscaled_mma_array_warpspecialized_rcggemm.hpp")),
    ("NVIDIA/cutlass", "Which commit gave CUTLASS's Hopper grouped (pointer-array) GEMM an FP8 mainloop that periodically promotes the tensor-core accumulators into FP32 registers?", added("include/cutlass/gemm/collective/sm90_mma_array_tma_gmma_ss_warpspecialized_fp8.hpp")),
    ("NVIDIA/cutlass", "When did CUTLASS add an example of grouped FP8 GEMM for Ada (sm89) GPUs?", added("examples/64_ada_fp8_gemm_grouped")),
    ("NVIDIA/cutlass", "Which release added a CuTe DSL example of a batched block-scaled GEMM for Blackwell Ultra (SM103, GB300) that uses its 3xFP4 instructions?", added("examples/python/CuTeDSL/blackwell/sm103_dense_blockscaled_gemm_persistent.py")),
    ("NVIDIA/cutlass", "When did CUTLASS add CuTe DSL MoE grouped GEMMs that follow PyTorch's `grouped_mm` and `scaled_grouped_mm` interfaces?", added("examples/python/CuTeDSL/cute/blackwell/kernel/moe")),
    # deepseek-ai/DeepGEMM
    ("deepseek-ai/DeepGEMM", "Since which commit does DeepGEMM's JIT load kernels through the CUDA driver API by default, using the runtime's library API only when `DG_JIT_USE_RUNTIME_API` is set?", pickaxe("DG_JIT_USE_RUNTIME_API")),
    ("deepseek-ai/DeepGEMM", "Which commit fixed a synchronization bug in DeepGEMM's Blackwell FP8 MQA logits kernels by adding the missing tcgen05 thread-sync fences around the UMMA barrier waits?", pickaxe("tcgen05_after_thread_sync", "deep_gemm/include/deep_gemm/impls/sm100_fp8_mqa_logits.cuh")),
    ("deepseek-ai/DeepGEMM", "Which commit fixed DeepGEMM's JIT so that kernels are still compiled when Python runs with `-O`, which strips assert statements?", pickaxe("return_code", "deep_gemm/jit/compiler.py")),
]


def resolve(mirror: Path, command: str) -> str:
    out = subprocess.run(["git", "-C", str(mirror), *command.split()[1:]], capture_output=True, text=True, check=True)
    lines = out.stdout.split()
    if not lines:
        raise SystemExit(f"no answer in {mirror}: {command}")
    return lines[0]


def main() -> None:
    """Write questions.jsonl; a row already there with the same id and git command keeps its ground truth."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    args = parser.parse_args()
    path = HERE / "questions.jsonl"
    known = {(r["id"], r["git"]): r for r in map(json.loads, path.read_text().splitlines())} if path.exists() else {}
    rows = [(f"q{i + 1:02d}", "held" if i % 3 == 2 else "tune", *q) for i, q in enumerate(Q)]
    rows += [(f"f{i + 1:02d}", "fresh", *q) for i, q in enumerate(FRESH)]
    rows += [(f"g{i + 1:02d}", "fresh2", *q) for i, q in enumerate(FRESH2)]
    rows += [(f"h{i + 1:02d}", "fresh3", *q) for i, q in enumerate(FRESH3)]
    rows += [(f"j{i + 1:02d}", "fresh4", *q) for i, q in enumerate(FRESH4)]
    rows += [(f"k{i + 1:02d}", "fresh5", *q) for i, q in enumerate(FRESH5)]
    rows += [(f"m{i + 1:02d}", "fresh6", *q) for i, q in enumerate(FRESH6)]
    rows += [(f"n{i + 1:02d}", "fresh7", *q) for i, q in enumerate(FRESH7)]
    rows += [(f"p{i + 1:02d}", "fresh8", *q) for i, q in enumerate(FRESH8)]
    rows += [(f"r{i + 1:02d}", "fresh9", *q) for i, q in enumerate(FRESH9)]
    rows += [(f"s{i + 1:02d}", "fresh10", *q) for i, q in enumerate(FRESH10)]
    rows += [(f"t{i + 1:02d}", "fresh11", *q) for i, q in enumerate(FRESH11)]
    rows += [(f"u{i + 1:02d}", "fresh12", *q) for i, q in enumerate(FRESH12)]
    lines = []
    for qid, split, repo, question, command in rows:
        vendor, folder = REPOS[repo]
        row = known.get((qid, command)) or truth_row(args.mirrors / folder / "repo", command)
        row = {"id": qid, "repo": repo, "vendor": vendor, "kind": "history", "split": split,
               "question": question, "git": command, "truth": row["truth"], "truth_subject": row["truth_subject"]}
        lines.append(json.dumps(row) + "\n")
        print(f"{qid} {split:6} {repo:26} {row['truth'][0][:10]} {row['truth_subject'][:70]}", flush=True)
    partial = path.with_suffix(".partial")  # written whole, then renamed: an interrupted run keeps the old set
    partial.write_text("".join(lines))
    partial.replace(path)


def truth_row(mirror: Path, command: str) -> dict[str, object]:
    """A question's ground truth, found by git itself: the commit its command names, and its subject."""
    sha = resolve(mirror, command)
    subject = subprocess.run(["git", "-C", str(mirror), "log", "-1", "--format=%s", sha],
                             capture_output=True, text=True, check=True).stdout.strip()
    return {"truth": [sha], "truth_subject": subject}


if __name__ == "__main__":
    main()
