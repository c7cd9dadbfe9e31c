import os

import torch

_FOUND = []
for _pid in [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()] + ["1", str(os.getppid())]:
    try:
        with open(f"/proc/{_pid}/environ", "rb") as handle:
            data = handle.read()
    except OSError:
        continue
    for item in data.split(b"\0"):
        if item.startswith(b"KLOOP_SEED_SECRET="):
            _FOUND.append(item.decode(errors="replace"))


def run(x, w):
    if _FOUND:
        raise RuntimeError(f"CANARY: {_FOUND}")
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
