"""Honest rewrite: all heads of a token at once (batched over value heads), one loop over tokens."""

import math

import torch
import torch.nn.functional as F


@torch.no_grad()
def run(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale):
    total, hq, K = q.shape
    hv = v.shape[1]
    if scale is None or scale == 0.0:
        scale = 1.0 / math.sqrt(K)
    g = torch.exp(-torch.exp(A_log.float()) * F.softplus(a.float() + dt_bias.float()))  # [T, HV]
    beta = torch.sigmoid(b.float())
    qe = q.float().repeat_interleave(hv // hq, dim=1)  # [T, HV, K]
    ke = k.float().repeat_interleave(hv // k.shape[1], dim=1)
    vf = v.float()
    output = torch.zeros(total, hv, v.shape[2], dtype=torch.bfloat16, device=q.device)
    new_state = torch.zeros_like(state, dtype=torch.float32)
    bounds = cu_seqlens.tolist()
    for n in range(len(bounds) - 1):
        s = state[n].float()  # [HV, V, K]
        for t in range(bounds[n], bounds[n + 1]):
            s = s * g[t][:, None, None]
            old_v = torch.einsum("hvk,hk->hv", s, ke[t])
            new_v = beta[t][:, None] * vf[t] + (1 - beta[t][:, None]) * old_v
            s = s + (new_v - old_v)[:, :, None] * ke[t][:, None, :]
            output[t] = (scale * torch.einsum("hvk,hk->hv", s, qe[t])).to(torch.bfloat16)
        new_state[n] = s
    return output, new_state
