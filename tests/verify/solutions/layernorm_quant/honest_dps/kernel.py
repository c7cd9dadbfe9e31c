"""Honest LayerNorm + fp8 e4m3fn quantize (destination-passing)."""

import torch


def run(hidden_states, weight, bias, scale, out):
    x = hidden_states.float()
    mean = x.mean(dim=-1, keepdim=True)
    var = (x - mean).pow(2).mean(dim=-1, keepdim=True)
    y = (x - mean) * torch.rsqrt(var + 1e-6) * weight + bias
    q = (y / scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    out.copy_(q)
