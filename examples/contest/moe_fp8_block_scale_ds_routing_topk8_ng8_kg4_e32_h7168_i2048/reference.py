from __future__ import annotations
import math
import torch
import torch.nn.functional as F

# ----- reference dependencies -----
@torch.no_grad()
def _fp8_moe_run_experts(
    hidden_states,
    hidden_states_scale,
    gemm1_weights,
    gemm1_weights_scale,
    gemm2_weights,
    gemm2_weights_scale,
    weights,
    topk_idx,
    local_expert_offset,
    E_global,
    gemm1_alpha=None,
    gemm1_beta=None,
    gemm1_clamp_limit=None,
):
    """FP8 block-scale dequantization + SwiGLU + GEMM for all routing types.

    ``weights``   : [T, TOP_K] float32 — per-token expert weights (already normalised)
    ``topk_idx``  : [T, TOP_K] int64   — selected global expert indices
    """
    T, H = hidden_states.shape
    E_local, gemm1_out_size, _ = gemm1_weights.shape
    I = gemm1_out_size // 2
    BLOCK = 128
    if gemm1_out_size != 2 * I:
        raise ValueError(
            f"gemm1_weights.shape[1]={gemm1_out_size} is not 2*intermediate_size; "
            "SwiGLU requires gemm1_out_size == 2 * intermediate_size."
        )
    device = hidden_states.device

    A_fp32 = hidden_states.to(torch.float32)
    A_scale = hidden_states_scale.to(torch.float32)  # [H/128, T]
    A_scale_TH = A_scale.permute(1, 0).contiguous()  # [T, H/128]
    A_scale_expanded = (
        A_scale_TH.unsqueeze(-1).repeat(1, 1, BLOCK).reshape(T, H).contiguous()
    )
    A = A_fp32 * A_scale_expanded

    W13_fp32 = gemm1_weights.to(torch.float32)
    S13 = gemm1_weights_scale.to(torch.float32)
    S13_expanded = torch.repeat_interleave(S13, BLOCK, dim=1)
    S13_expanded = torch.repeat_interleave(S13_expanded, BLOCK, dim=2)
    W13 = W13_fp32 * S13_expanded

    W2_fp32 = gemm2_weights.to(torch.float32)
    S2 = gemm2_weights_scale.to(torch.float32)
    S2_expanded = torch.repeat_interleave(S2, BLOCK, dim=1)
    S2_expanded = torch.repeat_interleave(S2_expanded, BLOCK, dim=2)
    W2 = W2_fp32 * S2_expanded

    output = torch.zeros((T, H), dtype=torch.float32, device=device)
    local_start = int(local_expert_offset)

    for le in range(E_local):
        ge = local_start + le
        if ge < 0 or ge >= E_global:
            continue
        # tokens that selected this expert
        sel_mask = (topk_idx == ge).any(dim=1)
        if not sel_mask.any():
            continue
        token_idx = torch.nonzero(sel_mask, as_tuple=False).squeeze(1)
        A_e = A.index_select(0, token_idx)
        G1 = A_e.matmul(W13[le].t())
        X1, X2 = G1[:, :I], G1[:, I:]
        if gemm1_clamp_limit is not None:
            limit = gemm1_clamp_limit[le].to(device=X1.device, dtype=torch.float32)
            X1 = torch.clamp(X1, min=-limit, max=limit)
            X2 = torch.clamp(X2, max=limit)
        alpha = (
            1.0
            if gemm1_alpha is None
            else gemm1_alpha[le].to(device=X2.device, dtype=torch.float32)
        )
        beta = (
            0.0
            if gemm1_beta is None
            else gemm1_beta[le].to(device=X1.device, dtype=torch.float32)
        )
        silu_X2 = X2 * torch.sigmoid(alpha * X2)
        O = (silu_X2 * (X1 + beta)).matmul(W2[le].t())
        # per-expert contribution weight for each token
        w_tok = weights.index_select(0, token_idx)
        # find which slot in topk_idx[token_idx] corresponds to ge
        match = (topk_idx.index_select(0, token_idx) == ge).float()
        w_e = (w_tok * match).sum(dim=1)
        output.index_add_(0, token_idx, O * w_e.unsqueeze(1))

    return output.to(torch.bfloat16)

# ----- reference -----
@torch.no_grad()
def _trtllm_fp8_block_scale_moe_ds_routing_reference(
    routing_logits,
    routing_bias,
    hidden_states,
    hidden_states_scale,
    gemm1_weights,
    gemm1_weights_scale,
    gemm2_weights,
    gemm2_weights_scale,
    top_k,
    n_group,
    topk_group,
    local_expert_offset,
    routed_scaling_factor,
    *,
    num_fused_shared_experts=0,
    gemm1_alpha=None,
    gemm1_beta=None,
    gemm1_clamp_limit=None,
):
    """
    FP8 block-scale MoE with DeepSeek-V3 routing:
        s = sigmoid(logits)
        s_with_bias = s + bias
        group by n_group; per group take top-2 sum → pick topk_group groups
        on the kept groups, take global top_k experts
        combine with weights derived from s (without bias), normalised and
        scaled by routed_scaling_factor

    With ``S > 0``, append ids ``[E, E + S)`` at weight ``1.0``. Weight
    tensors contain ``E + S`` rows.
    """
    E_global = routing_logits.shape[1]
    T = routing_logits.shape[0]
    TOP_K = int(top_k)
    N_GROUP = int(n_group)
    TOPK_GROUP = int(topk_group)

    logits = routing_logits.to(torch.float32)
    bias = routing_bias.to(torch.float32).reshape(-1)

    s = 1.0 / (1.0 + torch.exp(-logits))
    s_with_bias = s + bias

    group_size = E_global // N_GROUP
    s_wb_grouped = s_with_bias.view(T, N_GROUP, group_size)
    top2_vals, _ = torch.topk(s_wb_grouped, k=2, dim=2, largest=True, sorted=False)
    group_scores = top2_vals.sum(dim=2)

    _, group_idx = torch.topk(
        group_scores, k=TOPK_GROUP, dim=1, largest=True, sorted=False
    )
    group_mask = torch.zeros_like(group_scores)
    group_mask.scatter_(1, group_idx, 1.0)
    score_mask = (
        group_mask.unsqueeze(2).expand(T, N_GROUP, group_size).reshape(T, E_global)
    )

    neg_inf = torch.finfo(torch.float32).min
    scores_pruned = s_with_bias.masked_fill(score_mask == 0, neg_inf)
    _, topk_idx = torch.topk(scores_pruned, k=TOP_K, dim=1, largest=True, sorted=False)

    M = torch.zeros_like(s)
    M.scatter_(1, topk_idx, 1.0)
    raw_w = s * M
    weights_sum = raw_w.sum(dim=1, keepdim=True) + 1e-20
    weights = (raw_w / weights_sum) * routed_scaling_factor

    # Gather per-row weights into [T, TOP_K] for the shared GEMM helper
    w_topk = weights.gather(1, topk_idx)

    # Append shared ids [E, E + S) at weight 1.0.
    S = int(num_fused_shared_experts or 0)
    if S > 0:
        shared_ids = torch.arange(
            E_global, E_global + S, device=topk_idx.device, dtype=topk_idx.dtype
        ).expand(T, S)
        topk_idx = torch.cat((topk_idx, shared_ids), dim=1)
        # Allocate explicitly: a w_topk[:, :S] slice silently yields
        # min(TOP_K, S) columns, which is wrong whenever S exceeds TOP_K.
        shared_w = torch.ones((T, S), device=w_topk.device, dtype=w_topk.dtype)
        w_topk = torch.cat((w_topk, shared_w), dim=1)

    return _fp8_moe_run_experts(
        hidden_states,
        hidden_states_scale,
        gemm1_weights,
        gemm1_weights_scale,
        gemm2_weights,
        gemm2_weights_scale,
        w_topk,
        topk_idx,
        local_expert_offset,
        E_global + S,
        gemm1_alpha=gemm1_alpha,
        gemm1_beta=gemm1_beta,
        gemm1_clamp_limit=gemm1_clamp_limit,
    )


# ----- kloop: bind by name -----
# kloop (like FlashInfer-Bench) calls `run` with the inputs in the definition's order; the public
# reference takes them in another order (gemm2_* before the optional gemm1_alpha/beta/clamp), so
# this wrapper takes the definition's order and passes every argument by keyword.
def run(routing_logits, routing_bias, hidden_states, hidden_states_scale, gemm1_weights, gemm1_weights_scale, gemm1_alpha, gemm1_beta, gemm1_clamp_limit, gemm2_weights, gemm2_weights_scale, top_k, n_group, topk_group, local_expert_offset, routed_scaling_factor):
    return _trtllm_fp8_block_scale_moe_ds_routing_reference(
        routing_logits=routing_logits,
        routing_bias=routing_bias,
        hidden_states=hidden_states,
        hidden_states_scale=hidden_states_scale,
        gemm1_weights=gemm1_weights,
        gemm1_weights_scale=gemm1_weights_scale,
        gemm1_alpha=gemm1_alpha,
        gemm1_beta=gemm1_beta,
        gemm1_clamp_limit=gemm1_clamp_limit,
        gemm2_weights=gemm2_weights,
        gemm2_weights_scale=gemm2_weights_scale,
        top_k=top_k,
        n_group=n_group,
        topk_group=topk_group,
        local_expert_offset=local_expert_offset,
        routed_scaling_factor=routed_scaling_factor,
    )
