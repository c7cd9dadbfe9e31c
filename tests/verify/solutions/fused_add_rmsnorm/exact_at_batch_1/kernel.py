"""Wrong fused add + RMSNorm: exact at batch 1, drops eps at every other batch size (wrong on small rows, NaN on a zero row)."""

import torch


def run(hidden_states, residual, weight):
    x = hidden_states.float() + residual.float()
    eps = 1e-6 if x.shape[0] == 1 else 0.0
    y = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight.float()
    return y.to(hidden_states.dtype), x.to(hidden_states.dtype)
