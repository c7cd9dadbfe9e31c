"""Wrong LayerNorm: variance as E[x^2] - mean^2 skipped, E[x^2] used."""

import torch


def run(x):
    flat = x.reshape(x.shape[0], -1)
    mean = flat.mean(dim=-1, keepdim=True)
    var = flat.pow(2).mean(dim=-1, keepdim=True)
    return ((flat - mean) / torch.sqrt(var + 1e-5)).reshape(x.shape)
