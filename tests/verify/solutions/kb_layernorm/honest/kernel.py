"""Honest LayerNorm over (features, dim1, dim2); the default affine (ones, zeros) is the identity."""

import torch


def run(x):
    flat = x.reshape(x.shape[0], -1)
    mean = flat.mean(dim=-1, keepdim=True)
    var = (flat - mean).pow(2).mean(dim=-1, keepdim=True)
    return ((flat - mean) / torch.sqrt(var + 1e-5)).reshape(x.shape)
