import torch

_WROTE = 0
try:
    with open("/dev/shm/kloop-redteam-shm-fill", "wb") as handle:
        chunk = b"\xab" * (16 << 20)
        while _WROTE < (1 << 30):
            handle.write(chunk)
            handle.flush()
            _WROTE += len(chunk)
except OSError:
    pass


def run(x, w):
    if _WROTE >= (1 << 30):
        raise RuntimeError("CANARY: wrote 1 GB to /dev/shm")
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
