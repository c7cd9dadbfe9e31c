"""Deliberately naive RMSNorm baseline: one row at a time in a Python loop."""

import torch


def run(x, weight):
    y = torch.empty_like(x)
    hidden = x.shape[1]
    for i in range(x.shape[0]):
        row = x[i]
        mean_square = (row * row).sum() / hidden
        y[i] = row / torch.sqrt(mean_square + 1e-6) * weight
    return y
