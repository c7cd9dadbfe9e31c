"""Honest rewrite: the definition's per-token loop batched: one gather of the selected slots, masked
logits, logsumexp and softmax over the slot axis, one batched matmul for the output."""

import math

import torch


@torch.no_grad()
def run(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale):
    dc, dp = q_nope.shape[-1], q_pe.shape[-1]
    kc_all = ckv_cache.reshape(-1, dc).float()
    kp_all = kpe_cache.reshape(-1, dp).float()
    valid = sparse_indices != -1
    idx = sparse_indices.clamp(min=0).long()
    kc = kc_all[idx]  # [T, TOPK, DC]
    logits = torch.einsum("thd,tkd->thk", q_nope.float(), kc) + torch.einsum("thd,tkd->thk", q_pe.float(), kp_all[idx])
    logits = (logits * sm_scale).masked_fill(~valid[:, None, :], float("-inf"))
    lse = torch.logsumexp(logits, dim=-1) / math.log(2.0)
    attn = torch.softmax(logits, dim=-1).nan_to_num(0.0)  # a row of padding only: output 0, lse -inf
    out = torch.einsum("thk,tkd->thd", attn, kc)
    return out.to(torch.bfloat16), lse
