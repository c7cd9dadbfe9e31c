"""Naive Triton FP8 block-scale MoE with DeepSeek-V3 routing. Routing runs in torch (as the
definition does); the experts run as two Triton kernels over (token, expert slot) pairs: GEMM1 + SwiGLU
per 128-wide intermediate block, then GEMM2 per 128-wide hidden block, each applying the FP8
block scales per 128x128 weight block and per (token, 128-block) activation block. No grouping of
tokens by expert, no tensor cores: every pair re-reads its expert's weights."""

import torch
import triton
import triton.language as tl

BLOCK = 128


def _route(routing_logits, routing_bias, top_k, n_group, topk_group, routed_scaling_factor):
    """DeepSeek-V3 routing exactly as the definition computes it: sigmoid scores, biased group top-2 sums, the best
    topk_group groups, then the top_k experts of those; weights from the unbiased scores."""
    t, e = routing_logits.shape
    s = 1.0 / (1.0 + torch.exp(-routing_logits.to(torch.float32)))
    s_with_bias = s + routing_bias.to(torch.float32).reshape(-1)
    group_scores = torch.topk(s_with_bias.view(t, n_group, e // n_group), k=2, dim=2, largest=True, sorted=False)[0].sum(dim=2)
    group_idx = torch.topk(group_scores, k=topk_group, dim=1, largest=True, sorted=False)[1]
    group_mask = torch.zeros_like(group_scores).scatter_(1, group_idx, 1.0)
    score_mask = group_mask.unsqueeze(2).expand(t, n_group, e // n_group).reshape(t, e)
    pruned = s_with_bias.masked_fill(score_mask == 0, torch.finfo(torch.float32).min)
    topk_idx = torch.topk(pruned, k=top_k, dim=1, largest=True, sorted=False)[1]
    chosen = torch.zeros_like(s).scatter_(1, topk_idx, 1.0)
    raw = s * chosen
    weights = raw / (raw.sum(dim=1, keepdim=True) + 1e-20) * routed_scaling_factor
    return weights.gather(1, topk_idx), topk_idx


@triton.jit
def _gemm1_swiglu(a_ptr, as_ptr, w_ptr, ws_ptr, idx_ptr, inter_ptr, T, offset, E_LOCAL, H, INTER,
                  TOPK: tl.constexpr, BLOCK: tl.constexpr):
    pair = tl.program_id(0)
    nb = tl.program_id(1)
    t = pair // TOPK
    e = tl.load(idx_ptr + pair).to(tl.int32) - offset
    rows = nb * BLOCK + tl.arange(0, BLOCK)
    cols = tl.arange(0, BLOCK)
    x1 = tl.zeros([BLOCK], dtype=tl.float32)
    x2 = tl.zeros([BLOCK], dtype=tl.float32)
    if (e >= 0) & (e < E_LOCAL):
        nkb = H // BLOCK
        w_base = e.to(tl.int64) * (2 * INTER) * H
        for kb in range(0, nkb):
            a = tl.load(a_ptr + t.to(tl.int64) * H + kb * BLOCK + cols).to(tl.float32) * tl.load(as_ptr + kb * T + t)
            w1 = tl.load(w_ptr + w_base + rows[:, None].to(tl.int64) * H + kb * BLOCK + cols[None, :]).to(tl.float32)
            w2 = tl.load(w_ptr + w_base + (rows[:, None] + INTER).to(tl.int64) * H + kb * BLOCK + cols[None, :]).to(tl.float32)
            s1 = tl.load(ws_ptr + (e * (2 * INTER // BLOCK) + nb) * nkb + kb)
            s2 = tl.load(ws_ptr + (e * (2 * INTER // BLOCK) + nb + INTER // BLOCK) * nkb + kb)
            x1 += tl.sum(w1 * a[None, :], axis=1) * s1
            x2 += tl.sum(w2 * a[None, :], axis=1) * s2
    h = x2 / (1.0 + tl.exp(-x2)) * x1
    tl.store(inter_ptr + pair.to(tl.int64) * INTER + rows, h)


@triton.jit
def _gemm2(inter_ptr, w_ptr, ws_ptr, idx_ptr, wt_ptr, out_ptr, offset, E_LOCAL, H, INTER,
           BLOCK: tl.constexpr):
    pair = tl.program_id(0)
    hb = tl.program_id(1)
    e = tl.load(idx_ptr + pair).to(tl.int32) - offset
    rows = hb * BLOCK + tl.arange(0, BLOCK)
    cols = tl.arange(0, BLOCK)
    y = tl.zeros([BLOCK], dtype=tl.float32)
    if (e >= 0) & (e < E_LOCAL):
        nib = INTER // BLOCK
        w_base = e.to(tl.int64) * H * INTER
        for ib in range(0, nib):
            x = tl.load(inter_ptr + pair.to(tl.int64) * INTER + ib * BLOCK + cols)
            w = tl.load(w_ptr + w_base + rows[:, None].to(tl.int64) * INTER + ib * BLOCK + cols[None, :]).to(tl.float32)
            y += tl.sum(w * x[None, :], axis=1) * tl.load(ws_ptr + (e * (H // BLOCK) + hb) * nib + ib)
        y = y * tl.load(wt_ptr + pair)
    tl.store(out_ptr + pair.to(tl.int64) * H + rows, y)


def run(routing_logits, routing_bias, hidden_states, hidden_states_scale, gemm1_weights, gemm1_weights_scale,
        gemm1_alpha, gemm1_beta, gemm1_clamp_limit, gemm2_weights, gemm2_weights_scale, top_k, n_group,
        topk_group, local_expert_offset, routed_scaling_factor, output):
    if gemm1_alpha is not None or gemm1_beta is not None or gemm1_clamp_limit is not None:
        raise NotImplementedError("the MxFp8-only SwiGLU alpha/beta/clamp inputs are not supported")
    t, h = hidden_states.shape
    e_local, gemm1_out, _ = gemm1_weights.shape
    inter_size = gemm1_out // 2
    weights, topk_idx = _route(routing_logits, routing_bias, int(top_k), int(n_group), int(topk_group),
                               float(routed_scaling_factor))
    pairs = t * int(top_k)
    idx = topk_idx.to(torch.int32).contiguous()
    inter = torch.empty(pairs, inter_size, dtype=torch.float32, device=hidden_states.device)
    partial = torch.empty(pairs, h, dtype=torch.float32, device=hidden_states.device)
    if pairs:
        _gemm1_swiglu[(pairs, inter_size // BLOCK)](hidden_states, hidden_states_scale.contiguous(), gemm1_weights,
                                                    gemm1_weights_scale.contiguous(), idx, inter, t,
                                                    int(local_expert_offset), e_local, h, inter_size,
                                                    TOPK=int(top_k), BLOCK=BLOCK)
        _gemm2[(pairs, h // BLOCK)](inter, gemm2_weights, gemm2_weights_scale.contiguous(), idx,
                                    weights.contiguous(), partial, int(local_expert_offset), e_local, h, inter_size,
                                    BLOCK=BLOCK)
    output.copy_(partial.view(t, int(top_k), h).sum(dim=1).to(torch.bfloat16))
