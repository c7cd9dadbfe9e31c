"""Honest rewrite with another summation order: logits as kpe part + ckv part, the softmax in base 2
(exp2 of log2(e)-scaled logits, lse = max + log2(sum))."""

import torch

LOG2E = 1.4426950408889634


@torch.no_grad()
def run(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale):
    dc, dp = q_nope.shape[-1], q_pe.shape[-1]
    kc_all = ckv_cache.reshape(-1, dc).float()
    kp_all = kpe_cache.reshape(-1, dp).float()
    valid = sparse_indices != -1
    idx = sparse_indices.clamp(min=0).long()
    kc = kc_all[idx]
    logits2 = torch.einsum("thd,tkd->thk", q_pe.float(), kp_all[idx]) + torch.einsum("thd,tkd->thk", q_nope.float(), kc)
    logits2 = (logits2 * (sm_scale * LOG2E)).masked_fill(~valid[:, None, :], float("-inf"))
    top = logits2.amax(dim=-1, keepdim=True)
    safe = torch.where(torch.isinf(top), torch.zeros_like(top), top)
    p = torch.exp2(logits2 - safe)
    total = p.sum(dim=-1, keepdim=True)
    out = torch.einsum("thk,tkd->thd", p / total.clamp(min=torch.finfo(torch.float32).tiny), kc)
    lse = (safe + torch.log2(total)).squeeze(-1)
    lse = torch.where(total.squeeze(-1) > 0, lse, torch.full_like(lse, float("-inf")))
    return out.to(torch.bfloat16), lse
