"""Wrong LayerNorm: variance computed as E[x^2] (the mean never subtracted)."""

import torch


def run(hidden_states, weight, bias):
    x = hidden_states.float()
    mean = x.mean(dim=-1, keepdim=True)
    var = x.pow(2).mean(dim=-1, keepdim=True)
    y = (x - mean) / torch.sqrt(var + 1e-6) * weight + bias
    return y.to(hidden_states.dtype)
