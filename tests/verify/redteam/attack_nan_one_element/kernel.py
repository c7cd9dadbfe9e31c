import torch


def _rms(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def run(x, w, y):
    y.copy_(_rms(x, w))
    y[-1, -1] = float("nan")
