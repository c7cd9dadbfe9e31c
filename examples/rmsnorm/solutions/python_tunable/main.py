"""RMSNorm with tunables: rows per slice, the mean-square reduction, the scaling, in-place.

CHUNK rows are normalized per slice (0: all rows at once); REDUCE picks how mean(x^2) is
computed; SCALE how 1/rms and the weight are applied; INPLACE whether the second multiply
reuses the first product's buffer. Every configuration computes the same function.
"""

import math

import torch

CHUNK = ${CHUNK}
REDUCE = "${REDUCE}"
SCALE = "${SCALE}"
INPLACE = ${INPLACE}
EPS = 1e-6


def _mean_square(x):
    if REDUCE == "mean_sq":
        return torch.mean(x * x, dim=-1, keepdim=True)
    if REDUCE == "pow_mean":
        return x.pow(2).mean(dim=-1, keepdim=True)
    if REDUCE == "norm":
        return torch.linalg.vector_norm(x, dim=-1, keepdim=True).square_().div_(x.shape[-1])
    return torch.bmm(x.unsqueeze(1), x.unsqueeze(2)).squeeze(2).div_(x.shape[-1])


def _scaled(x, inv_rms, weight):
    if SCALE == "fold_weight":
        return torch.mul(inv_rms * weight, x) if not INPLACE else (inv_rms * weight).mul_(x)
    if SCALE == "addcmul":
        return torch.addcmul(torch.zeros_like(x), x * inv_rms, weight)
    y = torch.mul(x, inv_rms)
    return y.mul_(weight) if INPLACE else y * weight


def _rows(x, weight):
    inv_rms = torch.rsqrt(_mean_square(x) + EPS)
    return _scaled(x, inv_rms, weight)


def run(x, weight):
    if CHUNK == 0 or x.shape[0] <= CHUNK:
        return _rows(x, weight)
    parts = [_rows(x[i:i + CHUNK], weight) for i in range(0, x.shape[0], CHUNK)]
    assert len(parts) == math.ceil(x.shape[0] / CHUNK)
    return torch.cat(parts)
