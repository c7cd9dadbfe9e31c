"""Honest rewrite with another summation order: update as g*S + beta*(v - k.gS) k^T, K-dots summed
in two halves (high half first)."""

import math

import torch
import torch.nn.functional as F


def _dot_halves(s, x):
    half = x.shape[-1] // 2
    return torch.einsum("hvk,hk->hv", s[..., half:], x[..., half:]) + torch.einsum("hvk,hk->hv", s[..., :half], x[..., :half])


@torch.no_grad()
def run(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale):
    total, hq, K = q.shape
    hv = v.shape[1]
    if scale is None or scale == 0.0:
        scale = 1.0 / math.sqrt(K)
    decay = torch.exp(A_log.float()) * F.softplus(a.float() + dt_bias.float())
    g = torch.exp(-decay)
    beta = torch.sigmoid(b.float())
    qe = q.float().repeat_interleave(hv // hq, dim=1)
    ke = k.float().repeat_interleave(hv // k.shape[1], dim=1)
    vf = v.float()
    output = torch.zeros(total, hv, v.shape[2], dtype=torch.bfloat16, device=q.device)
    new_state = torch.zeros_like(state, dtype=torch.float32)
    bounds = cu_seqlens.tolist()
    for n in range(len(bounds) - 1):
        s = state[n].float()
        for t in range(bounds[n], bounds[n + 1]):
            s = g[t][:, None, None] * s
            delta = beta[t][:, None] * (vf[t] - _dot_halves(s, ke[t]))
            s = s + delta[:, :, None] * ke[t][:, None, :]
            output[t] = (_dot_halves(s, qe[t]) * scale).to(torch.bfloat16)
        new_state[n] = s
    return output, new_state
