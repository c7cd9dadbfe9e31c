import torch


def _rms(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


class Deferred(torch.Tensor):
    pass


def run(x, w):
    return _rms(x, w).as_subclass(Deferred)
