"""Honest rewrite: routing as the definition computes it; experts over the (token, slot) pairs that chose a
local expert, one expert at a time, with the FP8 block scales broadcast over 128x128 views instead
of materialized repeat_interleave copies, and only the experts that are used dequantized."""

import torch

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


def _dequant(w, scale):
    e, rows, cols = w.shape
    blocks = w.float().view(e, rows // BLOCK, BLOCK, cols // BLOCK, BLOCK)
    return (blocks * scale.float()[:, :, None, :, None]).view(e, rows, cols)


@torch.no_grad()
def run(routing_logits, routing_bias, hidden_states, hidden_states_scale, gemm1_weights, gemm1_weights_scale,
        gemm1_alpha, gemm1_beta, gemm1_clamp_limit, gemm2_weights, gemm2_weights_scale, top_k, n_group,
        topk_group, local_expert_offset, routed_scaling_factor):
    t, h = hidden_states.shape
    e_local = gemm1_weights.shape[0]
    inter_size = gemm1_weights.shape[1] // 2
    weights, topk_idx = _route(routing_logits, routing_bias, int(top_k), int(n_group), int(topk_group),
                               float(routed_scaling_factor))
    a = (hidden_states.float().view(t, h // BLOCK, BLOCK) * hidden_states_scale.float().t()[:, :, None]).view(t, h)
    out = torch.zeros(t, h, dtype=torch.float32, device=hidden_states.device)
    local = topk_idx - int(local_expert_offset)
    for e in torch.unique(local[(local >= 0) & (local < e_local)]).tolist():
        tok, slot = torch.nonzero(local == e, as_tuple=True)
        w13 = _dequant(gemm1_weights[e:e + 1], gemm1_weights_scale[e:e + 1])[0]
        w2 = _dequant(gemm2_weights[e:e + 1], gemm2_weights_scale[e:e + 1])[0]
        g1 = a[tok] @ w13.t()
        x1, x2 = g1[:, :inter_size], g1[:, inter_size:]
        y = (x2 * torch.sigmoid(x2) * x1) @ w2.t()
        out.index_add_(0, tok, y * weights[tok, slot][:, None])
    return out.to(torch.bfloat16)
