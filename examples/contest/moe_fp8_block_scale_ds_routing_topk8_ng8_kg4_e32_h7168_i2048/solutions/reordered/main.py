"""Honest rewrite with another summation order, as block-scaled FP8 GEMMs are written on the GPU:
each GEMM accumulated 128-block by 128-block over K, the FP8 values multiplied first and the
activation and weight block scales applied to each partial sum; slots summed in reverse order."""

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


def _block_gemm(x, x_scale, w, w_scale):
    """x: [n, K] fp8 values (as float), x_scale: [n, K/128]; w: [R, K], w_scale: [R/128, K/128]."""
    n, k = x.shape
    r = w.shape[0]
    out = torch.zeros(n, r, dtype=torch.float32, device=x.device)
    row_scale = w_scale.float().repeat_interleave(BLOCK, dim=0)  # [R, K/128]
    for kb in reversed(range(k // BLOCK)):
        part = x[:, kb * BLOCK:(kb + 1) * BLOCK] @ w[:, kb * BLOCK:(kb + 1) * BLOCK].t()
        out += part * x_scale[:, kb:kb + 1] * row_scale[None, :, kb]
    return out


@torch.no_grad()
def run(routing_logits, routing_bias, hidden_states, hidden_states_scale, gemm1_weights, gemm1_weights_scale,
        gemm1_alpha, gemm1_beta, gemm1_clamp_limit, gemm2_weights, gemm2_weights_scale, top_k, n_group,
        topk_group, local_expert_offset, routed_scaling_factor):
    t, h = hidden_states.shape
    e_local = gemm1_weights.shape[0]
    inter_size = gemm1_weights.shape[1] // 2
    weights, topk_idx = _route(routing_logits, routing_bias, int(top_k), int(n_group), int(topk_group),
                               float(routed_scaling_factor))
    x = hidden_states.float()
    x_scale = hidden_states_scale.float().t()  # [T, H/128]
    per_slot = torch.zeros(int(top_k), t, h, dtype=torch.float32, device=hidden_states.device)
    local = topk_idx - int(local_expert_offset)
    for slot in range(int(top_k)):
        for e in torch.unique(local[:, slot]).tolist():
            if not 0 <= e < e_local:
                continue
            tok = torch.nonzero(local[:, slot] == e, as_tuple=True)[0]
            g1 = _block_gemm(x[tok], x_scale[tok], gemm1_weights[e].float(), gemm1_weights_scale[e])
            x1, x2 = g1[:, :inter_size], g1[:, inter_size:]
            act = x2 * torch.sigmoid(x2) * x1
            ones = torch.ones(act.shape[0], inter_size // BLOCK, device=act.device)
            y = _block_gemm(act, ones, gemm2_weights[e].float(), gemm2_weights_scale[e])
            per_slot[slot, tok] = y * weights[tok, slot][:, None]
    out = torch.zeros(t, h, dtype=torch.float32, device=hidden_states.device)
    for slot in reversed(range(int(top_k))):
        out += per_slot[slot]
    return out.to(torch.bfloat16)
