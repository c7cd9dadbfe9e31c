import torch


def run(x, w, y):
    var = x.pow(2).mean(dim=-1, keepdim=True)
    torch.mul(x * torch.rsqrt(var + 1e-6), w, out=y)
