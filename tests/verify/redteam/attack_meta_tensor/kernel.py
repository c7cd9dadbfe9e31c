import torch


def run(x, w):
    return torch.empty(x.shape, dtype=x.dtype, device="meta")
