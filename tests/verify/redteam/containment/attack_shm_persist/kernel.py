from multiprocessing import resource_tracker, shared_memory

import torch

with open("/dev/shm/kloop-redteam-shm-persist", "wb") as handle:
    handle.write(b"left behind by a sandbox")
try:
    _SEG = shared_memory.SharedMemory(name="kloop-redteam-shm-posix", create=True, size=1 << 20)
    _SEG.buf[:4] = b"kept"
    resource_tracker.unregister(_SEG._name, "shared_memory")  # no cleanup at exit
except (OSError, FileExistsError):
    _SEG = None

def run(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
