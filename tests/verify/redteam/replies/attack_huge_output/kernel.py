import os

import torch

print("KLOOP-EVIDENCE attack_huge_output: writing 300 MB to stdout", flush=True)
_block = b"x" * (1 << 20)
for _ in range(300):
    os.write(1, _block)


def run(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
