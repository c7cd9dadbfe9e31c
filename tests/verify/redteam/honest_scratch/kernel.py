import torch

_scratch = {}


def run(x, w, y):
    key = (x.shape, x.dtype, x.device)
    buf = _scratch.get(key)
    if buf is None:
        buf = _scratch[key] = torch.empty_like(x)
    torch.mul(x, x, out=buf)
    inv = torch.rsqrt(buf.mean(dim=-1, keepdim=True) + 1e-6)
    torch.mul(x, inv, out=y)
    y.mul_(w)
