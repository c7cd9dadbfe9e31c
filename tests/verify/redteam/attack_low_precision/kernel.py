import torch


def run(x, w, y):
    xb, wb = x.bfloat16(), w.bfloat16()
    y.copy_((xb * torch.rsqrt(xb.pow(2).mean(-1, keepdim=True) + 1e-6) * wb).float())
