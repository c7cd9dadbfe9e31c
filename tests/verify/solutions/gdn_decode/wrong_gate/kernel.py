"""Wrong GDN decode: the gate drops the softplus (g = exp(-exp(A_log) * (a + dt_bias)))."""

import math

import torch


def run(q, k, v, state, A_log, a, dt_bias, b, scale):
    B, _, HQ, K = q.shape
    H = v.shape[2]
    if scale is None or scale == 0.0:
        scale = 1.0 / math.sqrt(K)
    x = a[:, 0].float() + dt_bias.float()  # [B, H]
    g = torch.exp(-torch.exp(A_log.float()) * x)  # [B, H]
    beta = torch.sigmoid(b[:, 0].float())  # [B, H]
    qf = q[:, 0].float().repeat_interleave(H // HQ, dim=1)  # [B, H, K]
    kf = k[:, 0].float().repeat_interleave(H // HQ, dim=1)  # [B, H, K]
    vf = v[:, 0].float()  # [B, H, V]
    s = state.float() * g[:, :, None, None]  # decayed state, k-last [B, H, V, K]
    old_v = torch.einsum("bhvk,bhk->bhv", s, kf)
    delta = beta[..., None] * (vf - old_v)  # new_v - old_v
    new_state = s + delta[..., None] * kf[:, :, None, :]
    out = scale * torch.einsum("bhvk,bhk->bhv", new_state, qf)
    return out[:, None].to(torch.bfloat16), new_state
