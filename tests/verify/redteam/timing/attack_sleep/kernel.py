import time

import torch


def run(x, w, y):
    # Off-CPU time: a CPU-time clock does not see it; the verdict must say so (off_cpu).
    time.sleep(0.005)
    y.copy_(x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w)
